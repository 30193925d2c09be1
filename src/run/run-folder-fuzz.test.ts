/**
 * Property-based fuzzing of the run-folder readers a resume uses (fast-check, fixed seed, bounded
 * runs): trainer-state.json with any field replaced by any JSON value, or any bytes at all, is
 * either accepted with every counter sound or refused with an Error naming the file (and the
 * field); summary.json likewise; and any one byte changed in any file a checkpoint lists is found
 * before the checkpoint is used. The hand-written cases are resume-hostile.test.ts.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { AdamW } from '../nn/index.js';
import { optimizedParameters } from '../trainer/optimize.js';
import { RunFolder } from './run-folder.js';
import { checkpointProblem, readSummaryFile, readTrainerState } from './trainer-state.js';

/** One seed for every property, so a failure replays (GRPO_FUZZ_SEED and GRPO_FUZZ_SCALE search further locally). */
const SEED = Number(process.env.GRPO_FUZZ_SEED ?? 36);
const runs = (count: number) => Math.round(count * Number(process.env.GRPO_FUZZ_SCALE ?? 1));
vi.setConfig({ testTimeout: runs(60_000) }); // a larger GRPO_FUZZ_SCALE gets proportionally longer

const scratch = mkdtempSync(join(tmpdir(), 'grpo-run-folder-fuzz-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// One real checkpoint (step 3) to mutate.
const folder = new RunFolder(join(scratch, 'run'));
const model = Transformer.random(createSmallConfig({ vocabSize: 8, hiddenSize: 4, numLayers: 1, numHeads: 1 }), 3);
folder.logMetrics({ step: 3 });
folder.saveCheckpoint({
  config: model.config,
  tensors: model.toStoredTensors(),
  optimizer: new AdamW(optimizedParameters(model), { learningRate: 0.1 }),
  keepLast: 1,
  state: { step: 3, phase: 'grpo', phaseStep: 1, consecutiveSkips: 0, evalBefore: { 'eval/accuracy': 0.5 }, extra: {} },
});
const original = join(folder.checkpointsDirectory, 'step-3');
const savedState = JSON.parse(readFileSync(join(original, 'trainer-state.json'), 'utf8')) as Record<string, unknown>;
const listedFiles = Object.keys(savedState.files as Record<string, number>);

const counterFields = ['step', 'phaseStep', 'consecutiveSkips', 'optimizerStep'] as const;

/** A trainer-state.json alone in a step-3 folder (reading it needs nothing else); returns the folder. */
const stateOnly = join(scratch, 'state-only', 'step-3');
mkdirSync(stateOnly, { recursive: true });
function stateFolderWith(content: string | Buffer): string {
  writeFileSync(join(stateOnly, 'trainer-state.json'), content);
  return stateOnly;
}

/** A fresh copy of the whole checkpoint. */
let copies = 0;
function checkpointCopy(): string {
  const directory = join(scratch, `copy-${copies++}`, 'step-3');
  cpSync(original, directory, { recursive: true });
  return directory;
}

/** Accepted states are sound; refusals are Errors that start with the file's path. */
function expectSoundOrNamed(directory: string): void {
  const file = join(directory, 'trainer-state.json');
  try {
    const state = readTrainerState(directory, 3);
    expect(state.step).toBe(3);
    for (const field of counterFields) expect(Number.isSafeInteger(state[field]) && state[field] >= 0).toBe(true);
    expect(['sft', 'grpo', 'done']).toContain(state.phase);
    expect(state.phaseStep).toBeLessThanOrEqual(state.step);
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (field|cannot read)`),
    );
  }
}

describe('trainer-state.json', () => {
  it('any field replaced by any JSON value is accepted soundly or refused naming the field', () => {
    const field = fc.constantFrom(...Object.keys(savedState), 'invalidSteps', 'logBytes.metrics');
    fc.assert(
      fc.property(field, fc.jsonValue({ maxDepth: 2 }), (key, value) => {
        const state = structuredClone(savedState) as Record<string, Record<string, unknown>>;
        if (key === 'logBytes.metrics') state.logBytes!.metrics = value;
        else (state as Record<string, unknown>)[key] = value;
        expectSoundOrNamed(stateFolderWith(JSON.stringify(state)));
      }),
      { seed: SEED, numRuns: runs(300) },
    );
  });

  it('any bytes at all are refused naming the file', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
          fc.json(),
        ),
        (content) => expectSoundOrNamed(stateFolderWith(content)),
      ),
      { seed: SEED, numRuns: runs(200) },
    );
  });

  it('summary.json: any JSON is read or refused naming the file', () => {
    const file = join(scratch, 'summary.json');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.record({ status: fc.jsonValue(), steps: fc.jsonValue() }).map((value) => JSON.stringify(value)),
        ),
        (content) => {
          writeFileSync(file, content);
          try {
            const summary = readSummaryFile(file);
            expect(typeof summary).toBe('object');
            if (summary.steps !== undefined) expect(Number.isSafeInteger(summary.steps)).toBe(true);
          } catch (error) {
            expect((error as Error).message.startsWith(`${file}: `)).toBe(true);
          }
        },
      ),
      { seed: SEED, numRuns: runs(200) },
    );
  });
});

describe('checksums', () => {
  it('any one byte changed in any listed file is found', () => {
    expect(checkpointProblem(original, 3, true)).toBeNull();
    expect(listedFiles.length).toBeGreaterThanOrEqual(4);
    fc.assert(
      fc.property(fc.constantFrom(...listedFiles), fc.nat(), fc.integer({ min: 1, max: 255 }), (file, at, flip) => {
        const directory = checkpointCopy();
        const bytes = readFileSync(join(directory, file));
        bytes[at % bytes.length]! ^= flip;
        writeFileSync(join(directory, file), bytes);
        expect(checkpointProblem(directory, 3, true)).toMatch(/SHA-256 differs/);
        rmSync(join(directory, '..'), { recursive: true });
      }),
      { seed: SEED, numRuns: runs(60) },
    );
    expect(readdirSync(original).sort()).toContain('trainer-state.json');
  });
});
