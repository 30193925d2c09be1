/**
 * Kill-and-resume: `grpo train` is started as a child process and killed with SIGKILL (or stopped
 * with SIGINT, as Ctrl-C does) once it has written a mid-run checkpoint (and while it is still
 * working); `grpo train --resume` then finishes the run. Its metrics (timing fields aside), samples
 * and final weights must equal those of the same run left alone. On the webgpu backend too (lavapipe in
 * CI): killed and resumed there it ends like its own uninterrupted run, and a run killed on webgpu
 * resumes on the CPU (checkpoints do not depend on the backend).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { webgpuUnderTest } from '../tensor/test-backends.js';
import { cliArguments } from '../../test/helpers/cli.js';

const repositoryRoot = new URL('../../', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'grpo-resume-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const overrides = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=6',
  'sft.batchSize=8',
  'grpo.steps=8',
  'grpo.promptsPerStep=4',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=4',
  'evaluation.examples=8',
  'checkpoint.every=2',
  'checkpoint.keepLast=3',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
  'algorithm.klCoefficient=0.04',
];

function startTrain(extra: string[], env: Record<string, string> = {}) {
  // One process (test/helpers/cli.ts), so SIGKILL hits the trainer itself.
  const args = [...cliArguments(), 'train', '--quiet', ...overrides.flatMap((o) => ['--set', o]), ...extra];
  return spawn(process.execPath, args, {
    cwd: repositoryRoot,
    env: { ...process.env, GRPO_QUIET: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function finished(
  child: ReturnType<typeof spawn>,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
}

const timingFields = /^time\/|^tokensPerSecond$/;
function metricsWithoutTiming(runDirectory: string): unknown[] {
  return readFileSync(join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(record).filter(([key]) => !timingFields.test(key)));
    });
}

/** The run left alone, started once for both tests. */
let referenceRun: Promise<{ code: number | null; stderr: string }> | undefined;
const uninterrupted = () => (referenceRun ??= finished(startTrain(['--run-name', 'uninterrupted'])));

/** Sends `signal` to the child as soon as `checkpoint` of `run` is complete. */
function signalAtCheckpoint(child: ReturnType<typeof spawn>, run: string, checkpoint: string, signal: NodeJS.Signals) {
  return new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (existsSync(join(run, 'checkpoints', checkpoint, 'trainer-state.json'))) {
        clearInterval(poll);
        child.kill(signal);
        resolve();
      }
    }, 5);
    child.on('exit', () => {
      clearInterval(poll);
      reject(new Error('the run finished before it could be signalled'));
    });
  });
}

describe('kill and resume', () => {
  it('a run killed with SIGKILL mid-run and resumed ends exactly like an uninterrupted run', async () => {
    const reference = await uninterrupted();
    expect(reference.code, reference.stderr).toBe(0);

    const victim = startTrain(['--run-name', 'killed']);
    const exit = finished(victim);
    const killedRun = join(scratch, 'killed');
    // Kill as soon as a GRPO-phase checkpoint exists (step 8 = 6 SFT + 2 GRPO): mid-run, mid-work.
    await signalAtCheckpoint(victim, killedRun, 'step-8', 'SIGKILL');
    const killed = await exit;
    expect(killed.signal).toBe('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300)); // nothing may still be writing
    const survivors = readdirSync(join(killedRun, 'checkpoints')).filter((name) => name.startsWith('step-'));
    expect(survivors).not.toContain('step-14'); // really killed mid-run, not after the end
    expect(JSON.parse(readFileSync(join(killedRun, 'summary.json'), 'utf8')).status).toBe('running');

    const resumed = await finished(startTrain(['--resume', killedRun]));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricsWithoutTiming(killedRun)).toEqual(metricsWithoutTiming(join(scratch, 'uninterrupted')));
    expect(readFileSync(join(killedRun, 'samples.jsonl'), 'utf8')).toBe(
      readFileSync(join(scratch, 'uninterrupted', 'samples.jsonl'), 'utf8'),
    );
    const finalWeights = (run: string) =>
      readFileSync(join(scratch, run, 'checkpoints', 'step-14', 'model.safetensors'));
    expect(finalWeights('killed').equals(finalWeights('uninterrupted'))).toBe(true);
    const summary = JSON.parse(readFileSync(join(killedRun, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('finished');
    expect(readdirSync(join(killedRun, 'checkpoints')).filter((name) => name.startsWith('.'))).toEqual([]); // no temporary or aside folder left
  }, 180_000);

  it('Ctrl-C (SIGINT) mid-run: exit 130, summary.json says interrupted, the checkpoint resumes exactly', async () => {
    const reference = await uninterrupted();
    expect(reference.code, reference.stderr).toBe(0);
    const victim = startTrain(['--run-name', 'ctrl-c']);
    const exit = finished(victim);
    const run = join(scratch, 'ctrl-c');
    await signalAtCheckpoint(victim, run, 'step-8', 'SIGINT');
    const stopped = await exit;
    // Stopped by the trainer itself (an exit code), not killed by the signal's default action.
    expect([stopped.code, stopped.signal], stopped.stderr).toEqual([130, null]);
    expect(stopped.stderr).toContain('run interrupted by SIGINT after step');
    const summary = JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('interrupted');
    expect(summary.reason).toMatch(/^stopped by SIGINT after step \d+; the last checkpoint is kept/);
    const survivors = readdirSync(join(run, 'checkpoints')).filter((name) => name.startsWith('step-'));
    expect(survivors).not.toContain('step-14'); // stopped mid-run

    const resumed = await finished(startTrain(['--resume', run]));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricsWithoutTiming(run)).toEqual(metricsWithoutTiming(join(scratch, 'uninterrupted')));
    const finalWeights = (name: string) =>
      readFileSync(join(scratch, name, 'checkpoints', 'step-14', 'model.safetensors'));
    expect(finalWeights('ctrl-c').equals(finalWeights('uninterrupted'))).toBe(true);
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
  }, 180_000);
});

describe('kill and resume with a moving reference (algorithm.referenceSync)', () => {
  // Every GRPO step moves the KL reference halfway to the policy; the checkpoint keeps the moved one.
  const sync = ['--set', 'algorithm.referenceSync={"every":1,"mixupAlpha":0.5}'];
  it('a run killed with SIGKILL and resumed ends exactly like its uninterrupted run', async () => {
    const alone = await finished(startTrain([...sync, '--run-name', 'sync-uninterrupted']));
    expect(alone.code, alone.stderr).toBe(0);
    const victim = startTrain([...sync, '--run-name', 'sync-killed']);
    const exit = finished(victim);
    const killedRun = join(scratch, 'sync-killed');
    await signalAtCheckpoint(victim, killedRun, 'step-8', 'SIGKILL');
    expect((await exit).signal).toBe('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(join(killedRun, 'checkpoints', 'step-8', 'training-state', 'reference.safetensors'))).toBe(true);
    const resumed = await finished(startTrain([...sync, '--resume', killedRun]));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricsWithoutTiming(killedRun)).toEqual(metricsWithoutTiming(join(scratch, 'sync-uninterrupted')));
    const final = (run: string, file: string) => readFileSync(join(scratch, run, 'checkpoints', 'step-14', file));
    for (const file of ['model.safetensors', 'training-state/reference.safetensors'])
      expect(final('sync-killed', file).equals(final('sync-uninterrupted', file)), file).toBe(true);
  }, 180_000);
});

// Asked for here only to know whether an adapter opens; the runs are child processes of their own.
const webgpuOpens = (() => {
  const found = webgpuUnderTest();
  found?.backend.dispose();
  return found !== null;
})();

describe.runIf(webgpuOpens)('kill and resume on webgpu', () => {
  const onGpu = { GRPO_BACKEND: 'webgpu' };
  let gpuReference: Promise<{ code: number | null; stderr: string }> | undefined;
  const uninterruptedOnGpu = () =>
    (gpuReference ??= finished(startTrain(['--run-name', 'uninterrupted-webgpu'], onGpu)));

  it('killed with SIGKILL on webgpu and resumed there, it ends exactly like its uninterrupted run', async () => {
    const reference = await uninterruptedOnGpu();
    expect(reference.code, reference.stderr).toBe(0);
    const victim = startTrain(['--run-name', 'killed-webgpu'], onGpu);
    const exit = finished(victim);
    const run = join(scratch, 'killed-webgpu');
    await signalAtCheckpoint(victim, run, 'step-8', 'SIGKILL');
    expect((await exit).signal).toBe('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(readdirSync(join(run, 'checkpoints'))).not.toContain('step-14');
    const resumed = await finished(startTrain(['--resume', run], onGpu));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(metricsWithoutTiming(run)).toEqual(metricsWithoutTiming(join(scratch, 'uninterrupted-webgpu')));
    const finalWeights = (name: string) =>
      readFileSync(join(scratch, name, 'checkpoints', 'step-14', 'model.safetensors'));
    expect(finalWeights('killed-webgpu').equals(finalWeights('uninterrupted-webgpu'))).toBe(true);
  }, 600_000);

  it('a run killed on webgpu resumes on the CPU and finishes from its checkpoint', async () => {
    const reference = await uninterruptedOnGpu();
    expect(reference.code, reference.stderr).toBe(0);
    const victim = startTrain(['--run-name', 'webgpu-to-cpu'], onGpu);
    const exit = finished(victim);
    const run = join(scratch, 'webgpu-to-cpu');
    await signalAtCheckpoint(victim, run, 'step-8', 'SIGKILL');
    expect((await exit).signal).toBe('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const resumed = await finished(startTrain(['--resume', run], { GRPO_BACKEND: 'js' }));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    expect(existsSync(join(run, 'checkpoints', 'step-14', 'model.safetensors'))).toBe(true);
    // Up to the checkpoint it resumed from, the log is the webgpu run's own.
    const steps = (name: string) =>
      (metricsWithoutTiming(join(scratch, name)) as { step: number }[]).filter((record) => record.step <= 8);
    expect(steps('webgpu-to-cpu')).toEqual(steps('uninterrupted-webgpu'));
  }, 600_000);
});
