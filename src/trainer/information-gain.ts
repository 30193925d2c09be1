/**
 * IGPO's per-turn information gains, computed with the policy: before each model turn and after the
 * last one laid out, the policy's probability of the row's reference answer, teacher-forced right
 * where the model would write next — π(a | context) = exp(mean log-probability of the answer's
 * tokens), the geometric mean IGPO uses. A turn's gain is the probability before the next turn minus
 * the probability before it (the context of the next turn holds this turn and its observation);
 * the last turn's entry is 0 (IGPO replaces it by the outcome reward).
 *
 * Is not: the estimator (algorithms/turn-credit.ts `igpo`) or the rollout that records turns.
 * Contexts are the trained rows' own tokens: a turn after a history rewrite is measured in its row.
 */
import type { Transformer } from '../model/transformer.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import { frozenLogprobs, type StepSettings } from './optimize.js';
import type { RolloutRow } from '../rollout/rollout.js';
import { sampleRows, type StepBatch } from './step-batch.js';

/** Where each model turn starts: its row and the completion index of its first token, in turn order. */
function turnStarts(rows: readonly RolloutRow[]): { row: number; start: number }[] {
  const starts: { row: number; start: number }[] = [];
  rows.forEach((row, r) => {
    const turns = row.tokenTurns ?? [];
    turns.forEach((turn, t) => {
      if (turn >= 0 && (t === 0 || turns[t - 1] !== turn)) starts[turn] = { row: r, start: t };
    });
  });
  return starts;
}

/** [N][turns] information gain of every turn of every episode in the batch. */
export function informationGains(
  model: Transformer,
  tokenizer: TextTokenizer,
  batch: StepBatch,
  settings: Pick<StepSettings, 'microBatchSize'>,
): number[][] {
  const sequences: { promptIds: number[]; completionIds: number[] }[] = [];
  const owners: { sample: number; turn: number }[] = [];
  const turnCounts = batch.samples.map((sample, i) => {
    const rows = sampleRows(batch, i);
    const answer = batch.prompts[sample.promptIndex].example.answer;
    if (typeof answer !== 'string' || answer.length === 0)
      throw new Error(`algorithm.turnCredit: igpo needs the row's "answer" (sample ${i} has none)`);
    const answerIds = tokenizer.encode(answer, { addSpecialTokens: false });
    const starts = turnStarts(rows);
    // Probability before each turn: the context is the row's tokens up to that turn's first token.
    starts.forEach(({ row, start }, turn) => {
      sequences.push({
        promptIds: [...rows[row].promptIds, ...rows[row].completionIds.slice(0, start)],
        completionIds: answerIds,
      });
      owners.push({ sample: i, turn });
    });
    return starts.length;
  });
  const logprobs = frozenLogprobs(model, sequences, { microBatchSize: settings.microBatchSize, temperature: 1 });
  const probability: number[][] = turnCounts.map((count) => new Array<number>(count).fill(0));
  logprobs.forEach((values, k) => {
    const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    probability[owners[k].sample][owners[k].turn] = Math.exp(mean);
  });
  return probability.map((before) => before.map((p, turn) => (turn + 1 < before.length ? before[turn + 1] - p : 0)));
}
