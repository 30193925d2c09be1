/**
 * The run folder's crash rules on hand-made folders (no training): which `step-N` folders count as
 * checkpoints, what recovery removes and what it renames back, and cutting logs back to the lengths
 * a checkpoint recorded. The kill-anywhere behaviour end to end is fault-injection.test.ts.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { AdamW } from '../nn/index.js';
import { optimizedParameters } from '../trainer/optimize.js';
import { RunFolder, type TrainerState } from './run-folder.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-run-folder-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const model = Transformer.random(createSmallConfig({ vocabSize: 8, hiddenSize: 4, numLayers: 1, numHeads: 1 }), 1);
const optimizer = new AdamW(optimizedParameters(model), { learningRate: 0.1 });
const stateAt = (step: number): TrainerState => ({
  step,
  phase: 'sft',
  phaseStep: step,
  consecutiveSkips: 0,
  evalBefore: null,
  extra: {},
});
const save = (folder: RunFolder, step: number, keepLast = 10) =>
  folder.saveCheckpoint({
    config: model.config,
    tensors: model.toStoredTensors(),
    optimizer,
    keepLast,
    state: stateAt(step),
  });

/** A run folder with real checkpoints of a tiny model at the given steps, one metrics line before each. */
function folderWithCheckpoints(name: string, steps: number[]): RunFolder {
  const folder = new RunFolder(join(scratch, name));
  for (const step of steps) {
    folder.logMetrics({ step, phase: 'sft' });
    save(folder, step);
  }
  return folder;
}

describe('RunFolder checkpoints', () => {
  it('counts a step folder only when every file trainer-state.json lists is there with its size', () => {
    const folder = folderWithCheckpoints('complete', [2, 4, 6, 8]);
    expect(folder.checkpointSteps()).toEqual([2, 4, 6, 8]);
    // The shape of the reported bug: a half-deleted step-8 that still has trainer-state.json.
    unlinkSync(join(folder.checkpointsDirectory, 'step-8', 'config.json'));
    truncateSync(join(folder.checkpointsDirectory, 'step-6', 'model.safetensors'), 100); // cut short
    writeFileSync(join(folder.checkpointsDirectory, 'step-4', 'trainer-state.json'), '{"step": 4'); // unparsable
    expect(folder.checkpointSteps()).toEqual([2]);
  });

  it('records the log lengths and cuts the logs back to them, refusing a log that lost lines', () => {
    const folder = folderWithCheckpoints('logs', [2]);
    const { logBytes } = folder.loadTrainingState(2);
    const atCheckpoint = readFileSync(folder.metricsFile, 'utf8');
    expect(logBytes).toEqual({ metrics: Buffer.byteLength(atCheckpoint), samples: 0 });
    folder.logMetrics({ step: 2, phase: 'grpo', 'eval/accuracy': 0.5 }); // same step, logged after the save
    folder.logSamples({ step: 3 });
    writeFileSync(folder.metricsFile, readFileSync(folder.metricsFile, 'utf8') + '{"step": 3, "pha'); // a line cut by a kill
    folder.truncateLogsTo(logBytes!);
    expect(readFileSync(folder.metricsFile, 'utf8')).toBe(atCheckpoint);
    expect(readFileSync(folder.samplesFile, 'utf8')).toBe('');
    writeFileSync(folder.metricsFile, '');
    expect(() => folder.truncateLogsTo(logBytes!)).toThrow(
      /metrics\.jsonl: 0 bytes, but the checkpoint was taken when it had \d+/,
    );
  });

  it('recovery removes leftovers and renames back the aside copy of a step whose replacement was cut off', () => {
    const folder = folderWithCheckpoints('recover', [2, 4]);
    const checkpoints = folder.checkpointsDirectory;
    // Killed between the renames of a replacement of step-4: only the aside copy holds it.
    renameSync(join(checkpoints, 'step-4'), join(checkpoints, '.step-4.old-123-456'));
    mkdirSync(join(checkpoints, '.step-4.tmp-123-456')); // the new copy, unfinished
    mkdirSync(join(checkpoints, '.step-2.old-123-1')); // an aside copy whose step exists: stale
    mkdirSync(join(checkpoints, '.step-0.deleting-123-1'));
    mkdirSync(join(checkpoints, '.reference.tmp-123-1'));
    writeFileSync(join(folder.directory, 'summary.json.tmp-123'), '{"sta');
    writeFileSync(join(folder.directory, 'config.json.tmp-123-2-7'), '{"co'); // process 123, thread 2, 7th write
    const notes = folder.recover();
    expect(notes).toContain('restored step-4 from .step-4.old-123-456');
    expect(readdirSync(checkpoints).sort()).toEqual(['step-2', 'step-4']);
    expect(existsSync(join(folder.directory, 'summary.json.tmp-123'))).toBe(false);
    expect(existsSync(join(folder.directory, 'config.json.tmp-123-2-7'))).toBe(false);
    expect(folder.checkpointSteps()).toEqual([2, 4]);
    expect(folder.recover()).toEqual([]); // nothing left to do
  });

  it('replaces an existing step whole and keeps only the keepLast newest checkpoints', () => {
    const folder = folderWithCheckpoints('prune', [2, 4]);
    folder.saveCheckpoint({
      config: model.config,
      tensors: model.toStoredTensors(),
      optimizer,
      keepLast: 10,
      state: { ...stateAt(4), phase: 'grpo', phaseStep: 0 },
    });
    expect(folder.loadTrainingState(4).state.phase).toBe('grpo');
    save(folder, 6, 1);
    expect(readdirSync(folder.checkpointsDirectory)).toEqual(['step-6']);
  });
});
