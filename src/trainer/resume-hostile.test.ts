/**
 * Damaged run folders on resume (issue 36), on hand-made checkpoints of a tiny model (no
 * training): trainer-state.json fields of the wrong type or out of place, a flipped bit in
 * model.safetensors, every checkpoint damaged, a damaged summary.json, a folder that does not
 * exist. Each is refused naming the file and the field, a skipped checkpoint is explained even in a
 * quiet run, and nothing is wiped without `restartDamaged`. Old checkpoints without sums still load.
 * Kills at every file-system step are fault-injection.test.ts.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from '../cli/train-command.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { AdamW } from '../nn/index.js';
import { optimizedParameters } from './optimize.js';
import { createProgressReporter } from '../run/progress.js';
import { resumeFrom } from './restore.js';
import { isCompleteCheckpoint, RunFolder } from '../run/run-folder.js';
import { readTrainerState } from '../run/trainer-state.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-resume-hostile-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const config = createSmallConfig({ vocabSize: 8, hiddenSize: 4, numLayers: 1, numHeads: 1 });
const weightsAt = (step: number) => Transformer.random(config, step); // different weights per step

/** A run folder with checkpoints at `steps`, each with its own weights and one metrics line before it. */
function runWith(name: string, steps: number[]): RunFolder {
  const folder = new RunFolder(join(scratch, name));
  for (const step of steps) {
    const model = weightsAt(step);
    folder.logMetrics({ step, phase: 'sft' });
    folder.saveCheckpoint({
      config,
      tensors: model.toStoredTensors(),
      optimizer: new AdamW(optimizedParameters(model), { learningRate: 0.1 }),
      keepLast: 10,
      state: { step, phase: 'sft', phaseStep: step, consecutiveSkips: 0, evalBefore: null, extra: {} },
    });
  }
  folder.logMetrics({ step: 99, phase: 'sft' }); // logged after the last checkpoint
  return folder;
}

/** Resumes `folder` into a fresh model with a quiet reporter; returns the state, the model and what was printed. */
function resume(folder: RunFolder, restartDamaged = false) {
  const model = weightsAt(1000);
  let printed = '';
  const stream = new Writable({ write: (chunk, _encoding, done) => ((printed += chunk), done()) });
  const progress = createProgressReporter(1, stream as unknown as NodeJS.WriteStream, true);
  const optimizer = new AdamW(optimizedParameters(model), { learningRate: 0.1 });
  try {
    return { state: resumeFrom(folder, model, optimizer, progress, null, { restartDamaged }), model, printed };
  } catch (error) {
    return { error: error as Error, printed };
  }
}

const stateFile = (folder: RunFolder, step: number) =>
  join(folder.checkpointsDirectory, `step-${step}`, 'trainer-state.json');
const editState = (folder: RunFolder, step: number, edit: (state: Record<string, unknown>) => void) => {
  const state = JSON.parse(readFileSync(stateFile(folder, step), 'utf8'));
  edit(state);
  writeFileSync(stateFile(folder, step), JSON.stringify(state));
};
const sameWeights = (a: Transformer, b: Transformer) =>
  [...a.parameters].every(([name, parameter]) => parameter.data.every((v, i) => v === b.parameters.get(name)!.data[i]));

describe('trainer-state.json is checked field by field', () => {
  it.each([
    ['"step": "abc"', { step: 'abc' }, /field "step": .*\(found "abc"\)/],
    [
      'phase 5 and optimizerStep "x"',
      { phase: 5, optimizerStep: 'x' },
      /field "phase".*\(found 5\).*field "optimizerStep".*\(found "x"\)/,
    ],
    ['step 1e12 in folder step-2', { step: 1e12 }, /field "step" is 1000000000000, but the folder is step-2/],
    ['a phase step past the step', { phaseStep: 7 }, /field "phaseStep" is 7, past field "step" \(2\)/],
    ['a negative log length', { logBytes: { metrics: -1, samples: 0 } }, /field "logBytes.metrics"/],
    [
      'a listed file outside the folder',
      { files: { '../../secret': 3 } },
      /field "files\["\.\.\/\.\.\/secret"\]": must be a path inside the checkpoint/,
    ],
  ])('%s is refused naming the file and the field', (_label, change, expected) => {
    const folder = runWith(`field-${_label.replace(/\W+/g, '-')}`, [2]);
    editState(folder, 2, (state) => Object.assign(state, change));
    expect(() => readTrainerState(join(folder.checkpointsDirectory, 'step-2'), 2)).toThrow(expected);
    expect(() => readTrainerState(join(folder.checkpointsDirectory, 'step-2'), 2)).toThrow(
      /step-2\/trainer-state\.json: /,
    );
    // The only checkpoint is damaged: the resume stops, and the logs are left as they were.
    const metricsBefore = readFileSync(folder.metricsFile, 'utf8');
    const { error, printed } = resume(folder);
    expect(error?.message).toMatch(/every checkpoint is damaged .*nothing was changed.*--restart-damaged/);
    expect(error?.message).toMatch(expected);
    expect(printed).toMatch(/skipping damaged checkpoint step-2: /); // printed although the run is quiet
    expect(readFileSync(folder.metricsFile, 'utf8')).toBe(metricsBefore);
  });
});

describe('checksums', () => {
  it('a flipped bit in model.safetensors is found; the resume explains the skip and uses the step before', () => {
    const folder = runWith('flipped', [2, 4]);
    const weights = join(folder.checkpointsDirectory, 'step-4', 'model.safetensors');
    const bytes = readFileSync(weights);
    bytes[bytes.length - 3]! ^= 0x10; // one bit of the last float: same size, still a valid file
    writeFileSync(weights, bytes);
    expect(isCompleteCheckpoint(join(folder.checkpointsDirectory, 'step-4'))).toBe(true); // sizes alone miss it
    const { state, model, printed } = resume(folder);
    expect(printed).toMatch(/skipping damaged checkpoint step-4: .*model\.safetensors: SHA-256 differs/);
    expect(state?.step).toBe(2);
    expect(sameWeights(model!, weightsAt(2))).toBe(true);
    // The logs are cut back to step 2's checkpoint, which had seen one line.
    expect(readFileSync(folder.metricsFile, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('when every checkpoint is damaged the resume stops and wipes nothing; --restart-damaged starts over', () => {
    const folder = runWith('all-damaged', [2, 4]);
    for (const step of [2, 4]) {
      const file = join(folder.checkpointsDirectory, `step-${step}`, 'training-state', 'optimizer.safetensors');
      const bytes = readFileSync(file);
      bytes[bytes.length - 1]! ^= 1;
      writeFileSync(file, bytes);
    }
    const metricsBefore = readFileSync(folder.metricsFile, 'utf8');
    const { error, printed } = resume(folder);
    expect(error?.message).toMatch(
      /every checkpoint is damaged \(step-4: .*SHA-256 differs.*; step-2: .*SHA-256 differs/,
    );
    expect(printed.match(/skipping damaged checkpoint/g)).toHaveLength(2);
    expect(readFileSync(folder.metricsFile, 'utf8')).toBe(metricsBefore);
    const restarted = resume(folder, true);
    expect(restarted.state).toBeNull();
    expect(restarted.printed).toMatch(
      /every checkpoint is damaged; starting .* over from step 0 \(--restart-damaged\)/,
    );
    expect(readFileSync(folder.metricsFile, 'utf8')).toBe('');
  });

  it('checkpoints saved before checksums (or before file lists) still load', () => {
    const folder = runWith('old', [2, 4]);
    editState(folder, 4, (state) => delete state.sha256);
    expect(resume(folder).state?.step).toBe(4);
    // Older still: no file list, and the optimiser state beside the model, not in training-state/.
    const older = runWith('older', [2]);
    editState(older, 2, (state) => {
      delete state.sha256;
      delete state.files;
    });
    const step2 = join(older.checkpointsDirectory, 'step-2');
    renameSync(join(step2, 'training-state', 'optimizer.safetensors'), join(step2, 'optimizer.safetensors'));
    rmSync(join(step2, 'training-state'), { recursive: true });
    const { state, model } = resume(older);
    expect(state?.step).toBe(2);
    expect(sameWeights(model!, weightsAt(2))).toBe(true);
  });
});

describe('other run-folder files', () => {
  it('a damaged summary.json names the file and the field', () => {
    const folder = runWith('summary', []);
    folder.writeSummary({ status: 'running', steps: 'many' });
    expect(() => folder.readSummary()).toThrow(/summary\.json: field "steps": .*\(found "many"\)/);
    writeFileSync(join(folder.directory, 'summary.json'), '{"status": "runn');
    expect(() => folder.readSummary()).toThrow(/summary\.json: cannot read as JSON/);
  });

  it('--resume of a folder that does not exist says so', async () => {
    const missing = join(scratch, 'no-such-run');
    await expect(runTrainCommand({ resume: missing })).rejects.toThrow(`--resume ${missing}: no such folder`);
  });
});
