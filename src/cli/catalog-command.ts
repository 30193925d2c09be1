/**
 * The part of `grpo list` beyond the algorithm registries: built-in rewards, tasks and presets.
 * Is not: the algorithms listing (list-command.ts).
 */
import { taskRegistry } from '../data/index.js';
import { rewardFactories, type RewardFactory } from '../rewards/index.js';
import { presetList } from '../trainer/index.js';

/** The row columns a reward reads with its default options (an option such as answerColumn renames them). */
function reads(factory: RewardFactory): string {
  let columns: string[];
  try {
    columns = factory.columns().map(({ column }) => column);
  } catch {
    return ''; // it needs options first (regex's pattern); its columns follow them
  }
  return columns.length > 0 ? `; reads ${columns.join(', ')}` : '';
}

export function runCatalogCommand(): string {
  const lines: string[] = [];
  const section = (title: string, rows: { name: string; description: string; citation?: string }[]) => {
    lines.push(`${title}:`);
    for (const row of rows)
      lines.push(`  ${row.name.padEnd(24)} ${row.description}${row.citation ? ` [${row.citation}]` : ''}`);
    lines.push('');
  };
  section(
    'rewards',
    rewardFactories.list().map((factory) => ({ ...factory, description: factory.description + reads(factory) })),
  );
  section('tasks', taskRegistry.list());
  section('presets', presetList());
  return `${lines.join('\n')}`;
}
