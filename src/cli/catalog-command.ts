/**
 * The part of `grpo list` beyond the algorithm registries: built-in rewards, tasks and presets.
 * Is not: the algorithms listing (list-command.ts).
 */
import { taskRegistry } from '../data/index.js';
import { rewardFactories } from '../rewards/index.js';
import { presetList } from '../trainer/index.js';

export function runCatalogCommand(): string {
  const lines: string[] = [];
  const section = (title: string, rows: { name: string; description: string; citation?: string }[]) => {
    lines.push(`${title}:`);
    for (const row of rows)
      lines.push(`  ${row.name.padEnd(24)} ${row.description}${row.citation ? ` [${row.citation}]` : ''}`);
    lines.push('');
  };
  section('rewards', rewardFactories.list());
  section('tasks', taskRegistry.list());
  section('presets', presetList());
  return `${lines.join('\n')}`;
}
