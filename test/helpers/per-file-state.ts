/**
 * Vitest setup file of the `shared` project (vitest.config.ts): its test files run one after another
 * in a reused process with one module graph (`isolate: false`), so what one file leaves behind in
 * process-wide state would be seen by the next, and results would depend on which files a worker
 * happened to get. This file runs before each test file and, after the file's last test, puts back
 * what the file may have changed in the library's process-wide state: the tensor backend (setBackend), the
 * named registries (a recipe's parts, registerParts), and it disposes the backends the file made
 * through backendsUnderTest (their worker threads and wasm memories used to go with the process).
 * Is not: the process's own state (env, exit code; per-file-environment.ts), nor a reset of
 * everything: files that mock modules (vi.doMock, vi.resetModules) or need a fresh module graph for
 * another reason are in the `isolated` project.
 */
import { afterAll } from 'vitest';
// Loads every built-in part, reward factory and task first, so the checkpoint below has them.
import '../../src/index.js';
import '../../src/flow/image-rewards.js';
import { checkpointRegistries } from '../../src/registry/registry.js';
import type { Backend } from '../../src/tensor/backend.js';
import { getBackend, setBackend } from '../../src/tensor/backends/select.js';
import { disposeBackendsUnderTest } from '../../src/tensor/test-backends.js';

// The backend the process starts with (GRPO_BACKEND or the fastest), created once per process by its
// first test file and kept on globalThis so every later file restores the same instance.
const processWide = globalThis as { grpoDefaultTestBackend?: Backend };
// setBackend(instance) makes it caller-owned, so a file's setBackend('js') does not dispose it.
processWide.grpoDefaultTestBackend ??= setBackend(getBackend());
const defaultBackend = processWide.grpoDefaultTestBackend;

const restoreRegistries = checkpointRegistries();

afterAll(() => {
  if (getBackend() !== defaultBackend) setBackend(defaultBackend);
  disposeBackendsUnderTest();
  restoreRegistries();
});
