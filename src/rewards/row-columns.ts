/**
 * The check that rows have the columns the rewards read (`NamedReward.columns`, which each built-in
 * factory declares for its options): a run calls it on its first training rows before any model
 * loads, so a reward that would throw on every row fails with one line per missing column instead
 * of after the SFT phase and the first rollouts. `grpo reward` calls it on each input row.
 *
 * Is not: a check of the values (a reward still refuses a malformed cell when it scores), nor of
 * columns a reward can do without (those are not declared).
 */
import type { NamedReward } from './types.js';

/** One reward column that a row lacks. */
export interface MissingRewardColumn {
  /** The reward's position in the list (the config's `rewards[position]`). */
  position: number;
  reward: string;
  column: string;
  /** The option that named the column, if one did. */
  option?: string;
  /** The first row without it. */
  rowIndex: number;
  /** That row's columns, for the message. */
  rowColumns: string[];
}

/** Each reward's declared column that some row lacks (undefined or null), with the first such row. */
export function missingRewardColumns(
  rewards: readonly Pick<NamedReward, 'name' | 'columns'>[],
  rows: readonly Readonly<Record<string, unknown>>[],
): MissingRewardColumn[] {
  return rewards.flatMap((reward, position) =>
    (reward.columns ?? []).flatMap(({ column, option }) => {
      const rowIndex = rows.findIndex((row) => row[column] === undefined || row[column] === null);
      if (rowIndex < 0) return [];
      return [{ position, reward: reward.name, column, option, rowIndex, rowColumns: Object.keys(rows[rowIndex]!) }];
    }),
  );
}

/** `"char-f1" reads column "reference" (its referenceColumn), which ROW does not have (columns: …)`. */
export function describeMissingColumn(missing: MissingRewardColumn, row: string): string {
  const option = missing.option ? ` (its ${missing.option})` : '';
  return `"${missing.reward}" reads column "${missing.column}"${option}, which ${row} does not have (columns: ${missing.rowColumns.join(', ')})`;
}

/**
 * Throws one `rewards[i]: …` line per reward that scores an agent episode's tool calls when the run's
 * rollout makes none (a single-turn run): every sample would fail at the first step, after SFT.
 */
export function checkRewardToolCalls(rewards: readonly NamedReward[], rolloutMakesToolCalls: boolean): void {
  if (rolloutMakesToolCalls) return;
  const problems = rewards.flatMap((reward, position) =>
    reward.needsToolCalls
      ? [
          `- rewards[${position}]: "${reward.name}" scores an agent episode's tool calls, and this run's rollout is single-turn (set agent, or run a recipe with an environment)`,
        ]
      : [],
  );
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
}

/** Throws one `rewards[i]: …` line per missing column, naming the training row, when the rows lack any. */
export function checkRewardColumns(
  rewards: readonly NamedReward[],
  rows: readonly Readonly<Record<string, unknown>>[],
): void {
  const problems = missingRewardColumns(rewards, rows).map(
    (missing) =>
      `- rewards[${missing.position}]: ${describeMissingColumn(missing, `training row ${missing.rowIndex}`)}`,
  );
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
}
