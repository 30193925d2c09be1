/**
 * `grpo list`: prints every registered advantage estimator, policy loss, loss aggregation, KL
 * estimator, group filter and prompt selector with its one-line description and citation, then the
 * image generators' sampler steps, trainers and image rewards with the flow-recipe fields they read.
 *
 * Is: a pure function returning the text. Is not: argument parsing or the CLI wiring (cli/main.ts).
 */
import { algorithmOptions, algorithmRegistries } from '../algorithms/index.js';
import { flowSteps } from '../algorithms/flow-steps.js';
import { flowStepOptions, flowTrainers, imageRewardCatalog } from '../flow/catalog.js';

interface Row {
  name: string;
  description: string;
  citation: string;
  /** The part's option schema (a zod object), when it has one: its keys are listed. */
  options?: unknown;
  /** Option names given directly (the flow parts: fields of a flow recipe's `flow.rl`). */
  optionNames?: readonly string[];
  needs?: readonly string[];
}

/** "options: a, b; needs: strata" for a row whose part takes options or declares needs. */
function details(row: Row): string {
  const shape = (row.options as { shape?: Record<string, unknown> } | undefined)?.shape;
  const names = row.optionNames ?? (shape ? Object.keys(shape) : []);
  const parts = [
    names.length > 0 ? `options: ${names.join(', ')}` : '',
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
  // Image generators (docs/image-models.md): options are fields of a flow recipe's flow.rl.
  const flowStepRows = flowSteps.list().map((entry) => ({ ...entry, optionNames: flowStepOptions[entry.name] }));
  sections.push(section('Flow sampler steps, flow.rl.sampler', flowStepRows));
  sections.push(
    section(
      'Flow trainers, flow.rl of a flow recipe',
      flowTrainers.map((entry) => ({ ...entry, optionNames: entry.options })),
    ),
  );
  sections.push(
    section(
      'Image rewards, flow.rl.rewards',
      imageRewardCatalog().map((entry) => ({ ...entry, optionNames: entry.options })),
    ),
  );
  return `${sections.join('\n\n')}\n`;
}
