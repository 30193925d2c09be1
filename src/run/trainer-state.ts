/**
 * trainer-state.json, the file that makes a checkpoint folder resumable: its schema, reading it
 * with errors that name the file and the field, and checking a checkpoint folder against what it
 * records (every file's size and, since checksums were added, its SHA-256). Also the schema of
 * summary.json's fields a resume reads.
 *
 * Why a schema: a resume trusts these counters to replay the run exactly; a value that is not a
 * whole number (`"step": "abc"`) or is out of place (`phase: 5`, a step that is not the folder's)
 * would otherwise surface later as a confusing error, or not at all and give a wrong run.
 *
 * Is not: the writing of checkpoints (run-folder.ts) or the choice of which one to resume from
 * (restore.ts).
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { z } from 'zod';
import { EVENTS_FILE_NAME } from './tensorboard-events.js';

/** A counter: a whole number from 0 up to 2^53 − 1 (zod's int() refuses unsafe integers). */
const counter = z.number().int().nonnegative();

/** A path inside the checkpoint folder, never outside it (a listed "../x" would be read on resume). */
const isInside = (path: string): boolean => path !== '' && !isAbsolute(path) && !normalize(path).startsWith('..');

/** trainer-state.json. Unknown keys are kept (a newer version may add some); known ones are checked. */
export const savedTrainerStateSchema = z
  .looseObject({
    /** Global optimiser steps completed (SFT and GRPO together); equals the N of its step-N folder. */
    step: counter,
    /** Text runs: sft, grpo, done; flow runs (flow/): pretrain, rl. */
    phase: z.enum(['sft', 'grpo', 'done', 'pretrain', 'rl']),
    /** Steps completed within the phase. */
    phaseStep: counter,
    consecutiveSkips: counter,
    /** Consecutive GRPO steps without a valid reward (absent in older checkpoints). */
    invalidSteps: counter.optional(),
    /** Held-out metrics before GRPO; a NaN was written as null. */
    evalBefore: z.record(z.string(), z.number().nullable()).nullable(),
    /** Extra JSON state of stateful parts (e.g. single-stream baselines). */
    extra: z.record(z.string(), z.unknown()),
    /** AdamW's step count (bias correction). */
    optimizerStep: counter,
    /** Byte lengths of metrics.jsonl and samples.jsonl when the checkpoint was taken. */
    logBytes: z.strictObject({ metrics: counter, samples: counter }).optional(),
    /** Byte length of each TensorBoard events file in tensorboard/ then; absent when reporting was off. */
    tensorboardBytes: z.record(z.string(), counter).optional(),
    /** Every other file of the checkpoint with its size in bytes; absent in checkpoints of older versions. */
    files: z.record(z.string(), counter).optional(),
    /** SHA-256 (hex) of every file in `files`; absent in checkpoints of older versions. */
    sha256: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 hex digits')).optional(),
  })
  .superRefine((state, context) => {
    for (const field of ['files', 'sha256'] as const)
      for (const path of Object.keys(state[field] ?? {}))
        if (!isInside(path))
          context.addIssue({ code: 'custom', path: [field, path], message: 'must be a path inside the checkpoint' });
    // A resume truncates and removes files by these names: only events files inside tensorboard/.
    for (const name of Object.keys(state.tensorboardBytes ?? {}))
      if (!EVENTS_FILE_NAME.test(name))
        context.addIssue({
          code: 'custom',
          path: ['tensorboardBytes', name],
          message: 'must be an events file name (events.out.tfevents.<seconds>.<host>)',
        });
  });

/** trainer-state.json as written and read. */
export type SavedTrainerState = z.infer<typeof savedTrainerStateSchema>;

/** The fields of summary.json a resume reads; the rest is kept as it is. */
const summarySchema = z.looseObject({
  status: z.string().optional(),
  steps: counter.optional(),
});

/** One line per problem: the field's path, what was wrong and the value found. */
function describeIssues(error: z.ZodError, value: unknown): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      let found: unknown = value;
      for (const key of issue.path) found = (found as Record<PropertyKey, unknown> | undefined)?.[key as string];
      const shown = found === undefined ? 'missing' : JSON.stringify(found)?.slice(0, 60);
      // files["../x"] rather than files.../x: a key that is not a name is quoted
      const field = issue.path
        .map((key, index) =>
          typeof key === 'string' && /^\w+$/.test(key) ? `${index ? '.' : ''}${key}` : `[${JSON.stringify(key)}]`,
        )
        .join('');
      return `field "${field}": ${issue.message} (found ${shown})`;
    })
    .join('; ');
}

function parseJsonFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: cannot read as JSON (${(error as Error).message})`);
  }
}

/**
 * Reads and checks `directory`/trainer-state.json; `step` is the N of the folder's name, which the
 * recorded step must equal (null: not checked). Errors name the file and the field.
 */
export function readTrainerState(directory: string, step: number | null): SavedTrainerState {
  const file = join(directory, 'trainer-state.json');
  const value = parseJsonFile(file);
  const parsed = savedTrainerStateSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${file}: ${describeIssues(parsed.error, value)}`);
  const state = parsed.data;
  if (step !== null && state.step !== step)
    throw new Error(`${file}: field "step" is ${state.step}, but the folder is step-${step}`);
  if (state.phaseStep > state.step)
    throw new Error(`${file}: field "phaseStep" is ${state.phaseStep}, past field "step" (${state.step})`);
  return state;
}

/** Reads summary.json (an empty object when there is none); a damaged one is an error naming the file and field. */
export function readSummaryFile(file: string): Record<string, unknown> {
  if (!existsSync(file)) return {};
  const value = parseJsonFile(file);
  const parsed = summarySchema.safeParse(value);
  if (!parsed.success) throw new Error(`${file}: ${describeIssues(parsed.error, value)}`);
  return parsed.data;
}

/** The SHA-256 of a file in hex, read 1 MiB at a time (a checkpoint may be larger than one buffer may be). */
export function sha256OfFile(file: string): string {
  const hash = createHash('sha256');
  const buffer = Buffer.alloc(1024 * 1024);
  const descriptor = openSync(file, 'r');
  try {
    for (let read = readSync(descriptor, buffer); read > 0; read = readSync(descriptor, buffer))
      hash.update(buffer.subarray(0, read));
  } finally {
    closeSync(descriptor);
  }
  return hash.digest('hex');
}

// Files a checkpoint written before trainer-state.json listed its files must have.
const LEGACY_REQUIRED_FILES = ['config.json', 'model.safetensors', 'optimizer.safetensors', 'trainer-state.json'];

/**
 * Why the checkpoint in `directory` (folder step-`step`; null: any step) cannot be resumed from, or null when it
 * can: trainer-state.json must pass its schema, and every file it lists must have its recorded
 * size and, with `checksums`, its recorded SHA-256. Older checkpoints without sums are checked by
 * size (or, older still, by the files they must have).
 */
export function checkpointProblem(directory: string, step: number | null, checksums: boolean): string | null {
  let saved: SavedTrainerState;
  try {
    saved = readTrainerState(directory, step);
  } catch (error) {
    return (error as Error).message;
  }
  if (saved.files === undefined) {
    const missing = LEGACY_REQUIRED_FILES.filter((file) => !existsSync(join(directory, file)));
    return missing.length === 0 ? null : `${join(directory, missing[0]!)}: missing`;
  }
  for (const [file, size] of Object.entries(saved.files)) {
    const path = join(directory, file);
    let actual: number;
    try {
      actual = statSync(path).size;
    } catch {
      return `${path}: missing (trainer-state.json lists it)`;
    }
    if (actual !== size) return `${path}: ${actual} bytes, but trainer-state.json recorded ${size}`;
  }
  if (!checksums || saved.sha256 === undefined) return null;
  for (const file of Object.keys(saved.files)) {
    const recorded = saved.sha256[file];
    if (recorded === undefined) return `${join(directory, file)}: no SHA-256 recorded in trainer-state.json`;
    if (sha256OfFile(join(directory, file)) !== recorded)
      return `${join(directory, file)}: SHA-256 differs from the one recorded when the checkpoint was saved (the file is damaged)`;
  }
  return null;
}
