/**
 * The backends every backend-dependent test runs on: js (the spec), wasm with 1 and 2 threads, native
 * when its addon is built (required when GRPO_REQUIRE_NATIVE=1, as in CI), and webgpu when an adapter
 * opens (required when GRPO_REQUIRE_WEBGPU=1, as in CI, where it is Mesa's lavapipe).
 * Is not: production selection logic (backends/select.ts).
 * Keeps the backends it creates so the test setup can dispose them after each file
 * (disposeBackendsUnderTest): test files that share a process would otherwise pile up worker threads
 * and wasm memories that only the end of a process used to free.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Backend } from './backend.js';
import { createBackend, getBackend, setBackend } from './backends/select.js';

export interface BackendUnderTest {
  name: string;
  backend: Backend;
}

/** Every backend made here since the last disposeBackendsUnderTest. */
const created: Backend[] = [];

function kept(backend: Backend): Backend {
  created.push(backend);
  return backend;
}

/** Disposes the backends made here (the per-file test setup calls it after a file's last test). */
export function disposeBackendsUnderTest(): void {
  for (const backend of created.splice(0)) backend.dispose();
}

export function backendsUnderTest(): BackendUnderTest[] {
  const list: BackendUnderTest[] = [
    { name: 'js', backend: kept(createBackend('js')) },
    { name: 'wasm (1 thread)', backend: kept(createBackend('wasm', { threads: 1 })) },
    { name: 'wasm (2 threads)', backend: kept(createBackend('wasm', { threads: 2 })) },
  ];
  try {
    list.push({ name: 'native', backend: kept(createBackend('native', { threads: 2 })) });
  } catch (error) {
    if (process.env.GRPO_REQUIRE_NATIVE === '1') throw error;
  }
  const webgpu = webgpuUnderTest();
  if (webgpu) list.push(webgpu);
  return list;
}

/** The webgpu backend when an adapter opens here (required when GRPO_REQUIRE_WEBGPU=1), else null. */
export function webgpuUnderTest(): BackendUnderTest | null {
  try {
    return { name: 'webgpu', backend: kept(createBackend('webgpu')) };
  } catch (error) {
    if (process.env.GRPO_REQUIRE_WEBGPU === '1') throw error;
    return null;
  }
}

/** Makes `backend` the process-wide one for the enclosing describe block and restores the previous one after it. */
export function useBackendInSuite(backend: Backend): void {
  let previous: Backend;
  beforeAll(() => {
    previous = getBackend();
    setBackend(backend);
  });
  afterAll(() => setBackend(previous));
}
