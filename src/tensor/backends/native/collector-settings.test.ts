/**
 * The native backend's V8 collector setting (garbage.ts keepCollectorOffWorkerThreads), in child processes
 * so the process-wide flag stays out of the other tests: a child allocates 1 MiB arrays (about 600 MiB in
 * all, 32 alive at a time) under --trace-gc and counts the collections that ended an incremental marking
 * (V8 prints "since start of marking" for those). With a pool on every core there must be none; with
 * GRPO_NATIVE_SERIAL_GC=0, or a pool on fewer threads than cores, V8 keeps marking incrementally.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeAddonStatus } from './native-backend.js';

const here = (file: string) => JSON.stringify(fileURLToPath(new URL(file, import.meta.url)));
const child = `
import { loadNativeBackend } from ${here('./native-backend.ts')};
const backend = loadNativeBackend({ threads: Number(process.env.CHILD_THREADS) });
let alive = [];
for (let i = 0; i < 600; i++) {
  alive.push(new Float32Array(1 << 18).fill(i));
  if (alive.length > 32) alive = alive.slice(1);
}
backend.dispose();
console.log('done');
`;

const folder = mkdtempSync(join(tmpdir(), 'grpo-collector-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The child's trace: how many collections it ran and how many of those ended an incremental marking. */
function collections(threads: number, serial?: string): { total: number; incremental: number; stderr: string } {
  const script = join(folder, 'child.mts');
  writeFileSync(script, child);
  const run = spawnSync(process.execPath, ['--trace-gc', '--import', 'tsx', script], {
    encoding: 'utf8',
    env: { ...process.env, CHILD_THREADS: String(threads), GRPO_NATIVE_SERIAL_GC: serial, GRPO_QUIET: '1' },
  });
  const lines = run.stdout.split('\n').filter((line) => /: (Mark-Compact|Scavenge)/.test(line));
  return {
    total: lines.length,
    incremental: lines.filter((line) => line.includes('since start of marking')).length,
    stderr: run.status === 0 ? '' : run.stderr,
  };
}

if (!nativeAddonStatus().available) {
  describe('native backend collector setting', () => {
    it('is only checked with the addon (set GRPO_REQUIRE_NATIVE=1 to require it)', () => {
      expect(process.env.GRPO_REQUIRE_NATIVE === '1').toBe(false);
    });
  });
} else {
  describe('native backend collector setting', () => {
    const cores = availableParallelism();

    it('collects in one pause on the JS thread when the pool takes every core', () => {
      const trace = collections(cores);
      expect(trace.stderr).toBe('');
      expect(trace.total).toBeGreaterThan(3);
      expect(trace.incremental).toBe(0);
    });

    it('leaves V8 marking incrementally with GRPO_NATIVE_SERIAL_GC=0', () => {
      const trace = collections(cores, '0');
      expect(trace.stderr).toBe('');
      expect(trace.incremental).toBeGreaterThan(0);
    });

    it.runIf(cores > 1)('leaves V8 marking incrementally when the pool leaves a core free', () => {
      expect(collections(cores - 1).incremental).toBeGreaterThan(0);
    });

    it('refuses a GRPO_NATIVE_SERIAL_GC that is neither 0 nor 1, naming it', () => {
      expect(collections(cores, 'off').stderr).toMatch(/GRPO_NATIVE_SERIAL_GC must be 0 .* or 1, got 'off'/);
    });
  });
}
