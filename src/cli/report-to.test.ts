/**
 * `logging.reportTo: ['tensorboard']`, end to end: the event files a short `grpo train` run writes
 * are read back with the tests' own decoder (test/helpers/tensorboard-events.ts: TFRecord framing
 * with both CRC-32Cs checked, then the Event and Summary protobuf fields), and must hold exactly the numeric
 * fields of metrics.jsonl: same steps, tags and values (as float32), in order. After a crash past a
 * checkpoint and a resume, the steps the resume replays appear once; a run that reported nothing
 * before its resume gets its whole history rebuilt. Unknown targets and wandb are refused naming
 * the field. Not here: TensorBoard's own reader (neither tensorboard nor tensorflow is installed), and
 * kills at each file-system step (fault-injection.test.ts runs with TensorBoard reporting on).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunContext, resolveConfig, RunFolder, train } from '../trainer/index.js';
import { runTrainCommand } from './train-command.js';
import { crc32c, eventFiles, metricsScalars, scalarsOf, tfRecords } from '../../test/helpers/tensorboard-events.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-report-to-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const small = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=2',
  'sft.batchSize=4',
  'grpo.steps=3',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=4',
  'sampling.groupSize=2',
  'sampling.maxNewTokens=4',
  'evaluation.examples=4',
  'evaluation.every=2',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
  'logging.reportTo=["tensorboard"]',
];

describe('the decoder', () => {
  it('computes the CRC-32C test vector', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});

describe("logging.reportTo ['tensorboard']", () => {
  const run = join(scratch, 'tb');
  it('writes one events file holding exactly metrics.jsonl’s numbers (SFT, GRPO and evaluations)', async () => {
    const started = Date.now() / 1000;
    expect(await runTrainCommand({ set: small, runName: 'tb', quiet: true })).toBe(0);
    const files = eventFiles(run);
    expect(files).toHaveLength(1);
    expect(files[0].name).toMatch(/^events\.out\.tfevents\.\d{10}\.[\w.-]+$/);
    const [version, ...records] = files[0].events;
    expect(version.fileVersion).toBe('brain.Event:2');
    for (const event of files[0].events) {
      expect(event.wallTime).toBeGreaterThanOrEqual(Math.floor(started));
      expect(event.wallTime).toBeLessThanOrEqual(Date.now() / 1000);
    }
    expect(records.every((event) => event.scalars && event.scalars.length > 0)).toBe(true);

    const expected = metricsScalars(run);
    expect(scalarsOf(run)).toEqual(expected);
    // The run logged all three kinds of record, so all three are compared.
    const tags = new Set(expected.map(([, tag]) => tag));
    for (const tag of ['loss/sft', 'reward/mean', 'eval/accuracy']) expect(tags).toContain(tag);
    expect(new Set(expected.map(([step]) => step)).size).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('the decoder refuses a flipped byte and a cut record, so the comparison checks the framing', () => {
    const [{ name }] = eventFiles(run);
    const bytes = readFileSync(join(run, 'tensorboard', name));
    const check = (damaged: Buffer) => () => tfRecords(damaged);
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] ^= 1;
      return copy;
    };
    expect(check(flipped(0))).toThrow(/length CRC wrong/);
    expect(check(flipped(9))).toThrow(/length CRC wrong/);
    expect(check(flipped(20))).toThrow(/data CRC wrong/);
    expect(check(flipped(bytes.length - 1))).toThrow(/data CRC wrong/);
    expect(check(bytes.subarray(0, bytes.length - 3))).toThrow(/cut/);
  });

  it('refuses unknown targets and wandb naming the field, before any compute', () => {
    expect(() => resolveConfig({ logging: { reportTo: ['tensorbord'] } })).toThrow(
      '- logging.reportTo: unknown target "tensorbord"; known: tensorboard',
    );
    expect(() => resolveConfig({ logging: { reportTo: ['wandb'] } })).toThrow(
      /- logging\.reportTo: wandb's JavaScript SDK .* `wandb sync runs\/<run>\/tensorboard`; known: tensorboard/,
    );
  });
});

describe('resume', () => {
  const config = (reportTo: string[]) =>
    resolveConfig({
      model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
      sft: { steps: 2, batchSize: 4 },
      grpo: { steps: 4, promptsPerStep: 2, microBatchSize: 4 },
      sampling: { groupSize: 2, maxNewTokens: 4 },
      evaluation: { examples: 4 },
      checkpoint: { every: 2, keepLast: 2 },
      logging: { reportTo },
    });
  /** Trains (or resumes) until the record of step 5 is logged, then fails as a crash would (checkpoint step-4 stays). */
  const crashAfterStep5 = async (runDirectory: string, reportTo: string[], resume = false) =>
    expect(
      train(createRunContext(config(reportTo)), {
        runDirectory,
        quiet: true,
        resume,
        onStep: (record) => {
          if (record.step === 5) throw new Error('crash');
        },
      }),
    ).rejects.toThrow('crash');
  const rewardsAtStep5 = (runDirectory: string) =>
    scalarsOf(runDirectory).filter(([step, tag]) => step === 5 && tag === 'reward/mean');

  it('after crashes past a checkpoint, the replayed steps appear once: the events files are cut back with metrics.jsonl', async () => {
    const runDirectory = join(scratch, 'crashed');
    await crashAfterStep5(runDirectory, ['tensorboard']);
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1); // the crashed session wrote past step-4
    expect(scalarsOf(runDirectory)).toEqual(metricsScalars(runDirectory));
    // Resumed from step-4 and crashed again at 5: its file, newer than the checkpoint, must go too.
    await crashAfterStep5(runDirectory, ['tensorboard'], true);
    expect(eventFiles(runDirectory)).toHaveLength(2);
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1);

    await train(createRunContext(config(['tensorboard'])), { runDirectory, quiet: true, resume: true });
    const after = scalarsOf(runDirectory);
    expect(after).toEqual(metricsScalars(runDirectory));
    expect(rewardsAtStep5(runDirectory)).toHaveLength(1);
    const files = eventFiles(runDirectory);
    expect(files).toHaveLength(2); // the first session's, cut back to step-4, and the last session's
    expect(files[0].events.at(-1)!.step).toBeLessThanOrEqual(4);
    expect(files[1].events[1].step).toBe(5);
  }, 120_000);

  it('a run that reported nothing before its resume gets its whole history rebuilt from metrics.jsonl', async () => {
    const runDirectory = join(scratch, 'enabled-on-resume');
    await crashAfterStep5(runDirectory, []);
    expect(readdirSync(runDirectory)).not.toContain('tensorboard');
    await train(createRunContext(config(['tensorboard'])), { runDirectory, quiet: true, resume: true });
    const after = scalarsOf(runDirectory);
    expect(after).toEqual(metricsScalars(runDirectory));
    expect(after.filter(([step]) => step === 1).length).toBeGreaterThan(0); // steps from before the resume too
  }, 120_000);

  it('a checkpoint whose tensorboardBytes names a path outside tensorboard/ counts as damaged', () => {
    const runDirectory = join(scratch, 'crashed');
    const stateFile = join(runDirectory, 'checkpoints', 'step-6', 'trainer-state.json');
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(state.tensorboardBytes as object)).toHaveLength(2);
    expect(new RunFolder(runDirectory).checkpointProblem(6)).toBeNull();
    writeFileSync(stateFile, JSON.stringify({ ...state, tensorboardBytes: { '../metrics.jsonl': 0 } }));
    expect(new RunFolder(runDirectory).checkpointProblem(6)).toMatch(/tensorboardBytes.*must be an events file name/);
  });
});
