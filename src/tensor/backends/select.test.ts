/**
 * Backend selection: names, errors, setBackend ownership, and (in child processes, where the
 * once-per-process state and stderr are fresh) the env variables, the printed line and that
 * wasm worker threads never keep a finished process alive.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../backend.js';
import { nativeAddonStatus } from './native/native-addon.js';
import { backendNames, createBackend, getBackend, setBackend } from './select.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs a snippet with tsx in a fresh Node process; returns its stderr, stdout and exit status. */
function runChild(
  code: string,
  env: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const { VITEST: _vitest, GRPO_BACKEND: _backend, GRPO_THREADS: _threads, GRPO_QUIET: _quiet, ...rest } = process.env;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    env: { ...rest, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const selectModule = './src/tensor/backends/select.ts';

describe('backend selection', () => {
  it('creates backends by name and lists the known names for an unknown one', () => {
    expect(backendNames).toEqual(['js', 'wasm', 'native', 'webgpu']);
    const js = createBackend('js');
    expect(js.name).toBe('js');
    const wasm = createBackend('wasm', { threads: 1 });
    expect([wasm.name, wasm.threads]).toEqual(['wasm', 1]);
    wasm.dispose();
    expect(() => createBackend('cuda')).toThrow('unknown backend "cuda"; known backends: js, wasm, native');
    expect(() => createBackend('toString')).toThrow(/unknown backend "toString"/);
  });

  it('setBackend installs a given instance as is and a named one it creates', () => {
    const previous = getBackend();
    const mine: Backend = { name: 'mine', threads: 1, matmul() {}, dispose() {} };
    try {
      expect(setBackend(mine)).toBe(mine);
      expect(getBackend()).toBe(mine);
      const named = setBackend('js');
      expect(named.name).toBe('js');
      expect(getBackend()).toBe(named);
    } finally {
      setBackend(previous);
    }
  });

  it('reads GRPO_BACKEND and GRPO_THREADS, prints the choice once, and exits with workers running', () => {
    const code = `
      const { getBackend } = await import('${selectModule}');
      const backend = getBackend();
      getBackend();
      const n = 200; const a = new Float32Array(n * n).fill(1);
      const out = new Float32Array(n * n);
      backend.matmul(a, a, out, { batch: 1, M: n, K: n, N: n, transposeA: false, transposeB: false,
        aBatchStride: 0, bBatchStride: 0, accumulate: false });
      console.log(backend.name, backend.threads, out[0]);`; // no dispose(): the workers must not hold the process
    const child = runChild(code, { GRPO_BACKEND: 'wasm', GRPO_THREADS: '2' });
    expect(child.status).toBe(0);
    expect(child.stdout.trim()).toBe('wasm 2 200');
    expect(child.stderr.match(/grpo: backend/g)).toEqual(['grpo: backend']);
    expect(child.stderr).toContain('grpo: backend wasm (2 threads)');
  });

  it('stays quiet with GRPO_QUIET=1, defaults to the fastest available, and rejects bad env values', () => {
    const quiet = runChild(`const { getBackend } = await import('${selectModule}'); console.log(getBackend().name);`, {
      GRPO_QUIET: '1',
    });
    expect(quiet.status).toBe(0);
    expect(['native', 'wasm']).toContain(quiet.stdout.trim());
    expect(quiet.stderr).not.toContain('grpo: backend');
    const unknown = runChild(`const { getBackend } = await import('${selectModule}'); getBackend();`, {
      GRPO_BACKEND: 'gpu',
    });
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('unknown backend "gpu"; known backends: js, wasm, native');
    const threads = runChild(`const { getBackend } = await import('${selectModule}'); getBackend();`, {
      GRPO_THREADS: 'two',
    });
    expect(threads.stderr).toContain('GRPO_THREADS must be a positive integer, got "two"');
    // A bad native setting is refused by name, not taken as "native unavailable" (falling back to wasm).
    const retain = runChild(`const { getBackend } = await import('${selectModule}'); getBackend();`, {
      GRPO_NATIVE_RETAIN_FREED: 'off',
    });
    if (nativeAddonStatus().available) {
      expect(retain.status).not.toBe(0);
      expect(retain.stderr).toContain("GRPO_NATIVE_RETAIN_FREED must be 0 (return freed memory) or 1, got 'off'");
    } else expect(retain.status).toBe(0); // no addon: native is unavailable, so its setting is never read
  });
});
