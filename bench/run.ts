/**
 * Benchmark dispatcher: `npm run bench -- <scenario> [flags]` runs bench/<scenario>.ts.
 * Each scenario file exports `main(argv: string[]): Promise<void>` and prints what it measured
 * (one JSON line per measurement with --json). Benchmarks are never part of `npm test`.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const scenarios = readdirSync(here)
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts' && !file.startsWith('_'))
  .map((file) => file.slice(0, -3));

const [scenario, ...rest] = process.argv.slice(2);
if (!scenario || !scenarios.includes(scenario)) {
  console.error(`usage: npm run bench -- <scenario> [flags]\nknown scenarios: ${scenarios.join(', ')}`);
  process.exit(scenario ? 1 : 0);
}
const module = (await import(join(here, `${scenario}.ts`))) as { main(argv: string[]): Promise<void> };
await module.main(rest);
