/**
 * Kill-and-resume: `grpo train` is started as a child process and killed with SIGKILL once it has
 * written a mid-run checkpoint (and while it is still working); `grpo train --resume` then finishes
 * the run. Its metrics (timing fields aside), samples and final weights must equal those of the
 * same run left alone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

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

function startTrain(extra: string[]) {
  // `node --import tsx` keeps the trainer in this one process, so SIGKILL hits the trainer itself
  // (the tsx wrapper binary would leave its child running).
  const args = [
    '--import',
    'tsx',
    'src/cli/bin.ts',
    'train',
    '--quiet',
    ...overrides.flatMap((o) => ['--set', o]),
    ...extra,
  ];
  return spawn(process.execPath, args, {
    cwd: repositoryRoot,
    env: { ...process.env, GRPO_QUIET: '1' },
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

describe('kill and resume', () => {
  it('a run killed with SIGKILL mid-run and resumed ends exactly like an uninterrupted run', async () => {
    const reference = await finished(startTrain(['--run-name', 'uninterrupted']));
    expect(reference.code, reference.stderr).toBe(0);

    const victim = startTrain(['--run-name', 'killed']);
    const exit = finished(victim);
    const killedRun = join(scratch, 'killed');
    // Kill as soon as a GRPO-phase checkpoint exists (step 8 = 6 SFT + 2 GRPO): mid-run, mid-work.
    await new Promise<void>((resolve, reject) => {
      const poll = setInterval(() => {
        if (existsSync(join(killedRun, 'checkpoints', 'step-8', 'trainer-state.json'))) {
          clearInterval(poll);
          victim.kill('SIGKILL');
          resolve();
        }
      }, 5);
      victim.on('exit', () => {
        clearInterval(poll);
        reject(new Error('the run finished before it could be killed'));
      });
    });
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
});
