/**
 * Vitest setup file of both projects (vitest.config.ts): test files run one after another in reused
 * worker processes, so after a file's last test this puts back the process-level state a file may
 * change and a fresh process used to drop — `process.env` (a test's variables, or TSX_TSCONFIG_PATH
 * that the CLI sets for a recipe outside any project) and `process.exitCode` (the CLI's failures).
 * Is not: the library's own process-wide state (backend, registries): per-file-state.ts, for the
 * `shared` project, whose files also share one module graph.
 */
import { afterAll } from 'vitest';

const environmentAtStart = { ...process.env };
const exitCodeAtStart = process.exitCode;

afterAll(() => {
  for (const name of Object.keys(process.env)) if (!(name in environmentAtStart)) delete process.env[name];
  for (const [name, value] of Object.entries(environmentAtStart))
    if (process.env[name] !== value) process.env[name] = value;
  process.exitCode = exitCodeAtStart;
});
