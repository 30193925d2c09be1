/**
 * `grpo list`: prints every registered advantage estimator, policy loss, loss aggregation, KL
 * estimator, group filter and prompt selector with its one-line description and citation.
 *
 * Is: a pure function returning the text. Is not: argument parsing or the CLI wiring (cli/main.ts).
 */
import { algorithmOptions, algorithmRegistries } from '../algorithms/index.js';

interface Row {
  name: string;
  description: string;
  citation: string;
  /** The part's option schema (a zod object), when it has one: its keys are listed. */
  options?: unknown;
  needs?: readonly string[];
}

/** "options: a, b; needs: strata" for a row whose part takes options or declares needs. */
function details(row: Row): string {
  const shape = (row.options as { shape?: Record<string, unknown> } | undefined)?.shape;
  const parts = [
    shape && Object.keys(shape).length > 0 ? `options: ${Object.keys(shape).join(', ')}` : '',
    row.needs?.length ? `needs: ${row.needs.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? `; ${parts.join('; ')}` : '';
}

function section(title: string, rows: readonly Row[]): string {
  const width = Math.max(...rows.map((row) => row.name.length));
  const lines = rows.map(
    (row) =>
      `  ${row.name.padEnd(width)}  ${row.description}\n  ${' '.repeat(width)}  [${row.citation}]${details(row)}`,
  );
  return `${title} (${rows.length})\n${lines.join('\n')}`;
}

/** "policy loss" → "Policy losses", "KL estimator" → "KL estimators". */
function plural(kind: string): string {
  const word = kind.endsWith('s') ? `${kind}es` : `${kind}s`;
  return word[0].toUpperCase() + word.slice(1);
}

/** The text of `grpo list`: one section per registry, then the loss options. */
export function runListCommand(): string {
  const sections = algorithmRegistries.map((registry) => section(plural(registry.kind), registry.list()));
  sections.push(section('Step options, by config field', algorithmOptions));
  return `${sections.join('\n\n')}\n`;
}
