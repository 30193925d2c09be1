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
}

function section(title: string, rows: readonly Row[]): string {
  const width = Math.max(...rows.map((row) => row.name.length));
  const lines = rows.map((row) => `  ${row.name.padEnd(width)}  ${row.description}\n  ${' '.repeat(width)}  [${row.citation}]`);
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
  sections.push(section('Loss options and shaping helpers', algorithmOptions));
  return `${sections.join('\n\n')}\n`;
}
