/**
 * Fault injection: a tiny `grpo train` run is killed with SIGKILL just before its N-th counted
 * file-system step (GRPO_FAULT_INJECT_AT, model/durable-files.ts): every mkdir, write, fsync,
 * rename, unlink and rmdir of its checkpoints, its KL reference and its summary. `--resume` must
 * then finish it, and its metrics (timing aside), samples and final weights must equal those of the
 * same run left alone, with no temporary left behind. TensorBoard reporting is on, so its events
 * files' writes, fsyncs and renames are killed too, and after each resume the events must hold
 * exactly metrics.jsonl's numbers (test/helpers/tensorboard-events.ts reads them).
 *
 * The tiny run saves step 2 twice (periodic, then end of SFT) and step 4 twice (periodic, then end
 * of GRPO) with keepLast 1, so replacement of a step and pruning are both on the path. By default a
 * sample of N is killed (see chosenSteps; about 20 of ~150, to keep the test near a minute on two
 * busy cores); with GRPO_FAULT_SWEEP=all every N is. Kills during recovery itself are tested on one
 * case.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArguments } from '../../test/helpers/cli.js';
import { metricsScalars, scalarsOf } from '../../test/helpers/tensorboard-events.js';

const repositoryRoot = new URL('../../', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'grpo-fault-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const overrides = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=2',
  'sft.batchSize=8',
  'grpo.steps=2',
  'grpo.promptsPerStep=4',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=4',
  'evaluation.examples=8',
  'checkpoint.every=2',
  'checkpoint.keepLast=1',
  'algorithm.klCoefficient=0.04',
  'logging.reportTo=["tensorboard"]',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

interface Exit {
  code: number | null;
  signal: string | null;
  stderr: string;
}

function runTrain(extra: string[], environment: Record<string, string> = {}, quiet = true): Promise<Exit> {
  // One process (test/helpers/cli.ts), so its SIGKILL ends the trainer itself.
  const args = [
    ...cliArguments(),
    'train',
    ...(quiet ? ['--quiet'] : []),
    ...overrides.flatMap((o) => ['--set', o]),
    ...extra,
  ];
  const child = spawn(process.execPath, args, {
    cwd: repositoryRoot,
    env: { ...process.env, GRPO_QUIET: '1', ...environment },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })));
}

const timingFields = /^time\/|^tokensPerSecond$/;
function metricsWithoutTiming(run: string): unknown[] {
  return readFileSync(join(scratch, run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(record).filter(([key]) => !timingFields.test(key)));
    });
}
const read = (run: string, ...path: string[]) => readFileSync(join(scratch, run, ...path));

/** The counted steps of the uninterrupted run, in order: `{ index, kind, path }`. */
let steps: { index: number; kind: string; path: string }[] = [];

beforeAll(async () => {
  const log = join(scratch, 'steps.log');
  const reference = await runTrain(['--run-name', 'uninterrupted'], { GRPO_FAULT_INJECT_LOG: log });
  expect(reference.code, reference.stderr).toBe(0);
  steps = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [index, kind, path] = line.split(' ');
      return { index: Number(index), kind, path };
    });
}, 60_000);

/**
 * The kills to inject: every N, or a sample that holds every kind of step, every rename but the
 * repeats of summary.json's, and a kill halfway through each folder removal (after its first
 * unlink: the shape of a half-deleted checkpoint).
 */
function chosenSteps(): number[] {
  if (process.env.GRPO_FAULT_SWEEP === 'all') return steps.map((step) => step.index);
  const chosen = new Set<number>();
  for (const kind of ['mkdir', 'write', 'fsync', 'fsync-dir', 'unlink', 'rmdir'])
    chosen.add(steps.find((step) => step.kind === kind)!.index);
  let summaryRenamed = false;
  for (const [position, step] of steps.entries()) {
    const previous = steps[position - 1];
    if (step.kind === 'rename' && !(summaryRenamed && step.path.endsWith('summary.json'))) chosen.add(step.index);
    if (step.kind === 'rename' && step.path.endsWith('summary.json')) summaryRenamed = true;
    if (step.kind === 'unlink' && previous.kind === 'unlink' && steps[position - 2].kind !== 'unlink')
      chosen.add(step.index);
  }
  return [...chosen].sort((a, b) => a - b);
}

/** Asserts that `run` ended exactly like the uninterrupted run and left nothing temporary. */
function expectSameAsUninterrupted(run: string): void {
  expect(metricsWithoutTiming(run)).toEqual(metricsWithoutTiming('uninterrupted'));
  expect(read(run, 'samples.jsonl').equals(read('uninterrupted', 'samples.jsonl'))).toBe(true);
  expect(
    read(run, 'checkpoints', 'step-4', 'model.safetensors').equals(
      read('uninterrupted', 'checkpoints', 'step-4', 'model.safetensors'),
    ),
  ).toBe(true);
  expect(
    read(run, 'checkpoints', 'reference', 'model.safetensors').equals(
      read('uninterrupted', 'checkpoints', 'reference', 'model.safetensors'),
    ),
  ).toBe(true);
  expect(JSON.parse(read(run, 'summary.json').toString()).status).toBe('finished');
  expect(readdirSync(join(scratch, run, 'checkpoints')).sort()).toEqual(['reference', 'step-4']);
  expect(readdirSync(join(scratch, run)).filter((name) => name.includes('.tmp-'))).toEqual([]);
  expect(scalarsOf(join(scratch, run))).toEqual(metricsScalars(join(scratch, run)));
  expect(readdirSync(join(scratch, run, 'tensorboard')).filter((name) => name.includes('.tmp-'))).toEqual([]);
}

/** Runs `task` over `items`, two at a time (the test machine has few cores). */
async function inPairs<T>(items: T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]);
  };
  await Promise.all([worker(), worker()]);
}

describe('fault injection at every file-system step of checkpointing', () => {
  it('a run killed before any one of its counted steps resumes to exactly the uninterrupted result', async () => {
    expect(steps.length).toBeGreaterThan(100); // the count itself worked
    const chosen = chosenSteps();
    const survived: number[] = [];
    await inPairs(chosen, async (index) => {
      const run = `kill-at-${index}`;
      const killed = await runTrain(['--run-name', run], { GRPO_FAULT_INJECT_AT: String(index) });
      expect(killed.signal, `kill at step ${index} (${steps[index - 1].kind} ${steps[index - 1].path})`).toBe(
        'SIGKILL',
      );
      let resumed = await runTrain(['--resume', join(scratch, run)]);
      if (!existsSync(join(scratch, run, 'config.json'))) {
        // Killed before the run's config.json was published: nothing to resume; starting it again is the remedy.
        expect(resumed.stderr).toMatch(/no config\.json there/);
        resumed = await runTrain(['--run-name', run]);
      }
      expect(resumed.code, `resume after kill at ${index}: ${resumed.stderr}`).toBe(0);
      expectSameAsUninterrupted(run);
      survived.push(index);
      rmSync(join(scratch, run), { recursive: true, force: true });
    });
    const kinds = new Set(chosen.map((index) => steps[index - 1].kind));
    expect([...kinds].sort()).toEqual(['fsync', 'fsync-dir', 'mkdir', 'rename', 'rmdir', 'unlink', 'write']);
    process.stderr.write(
      `fault injection: ${survived.length} kills survived of ${chosen.length} injected (${steps.length} counted steps)\n`,
    );
    expect(survived.length).toBe(chosen.length);
  }, 600_000);

  it('a kill between the two renames that replace a step, then kills during recovery, still resume exactly', async () => {
    // The second save of step 4 renames the old folder aside, then the new one in: kill before the latter.
    const renames = steps.filter((step) => step.kind === 'rename' && step.path.endsWith('/checkpoints/step-4'));
    expect(renames).toHaveLength(2);
    const run = 'kill-between-renames';
    expect((await runTrain(['--run-name', run], { GRPO_FAULT_INJECT_AT: String(renames[1].index) })).signal).toBe(
      'SIGKILL',
    );
    expect(existsSync(join(scratch, run, 'checkpoints', 'step-4'))).toBe(false); // only the aside copy holds step 4
    // Each resume is killed at its own first, second, third step: inside recovery (rename back, fsync, ...).
    for (const index of [1, 2, 3]) {
      expect((await runTrain(['--resume', join(scratch, run)], { GRPO_FAULT_INJECT_AT: String(index) })).signal).toBe(
        'SIGKILL',
      );
    }
    const resumed = await runTrain(['--resume', join(scratch, run)]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expectSameAsUninterrupted(run);
  }, 120_000);

  it('--resume of a finished run reports it and appends nothing', async () => {
    const before = read('uninterrupted', 'metrics.jsonl');
    const samplesBefore = read('uninterrupted', 'samples.jsonl');
    const resumed = await runTrain(['--resume', join(scratch, 'uninterrupted')], {}, false);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/finished already/);
    expect(read('uninterrupted', 'metrics.jsonl').equals(before)).toBe(true);
    expect(read('uninterrupted', 'samples.jsonl').equals(samplesBefore)).toBe(true);
  }, 60_000);
});
