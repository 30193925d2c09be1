/**
 * The run folder (docs/run-folder.md) of text and flow runs: config.json, metrics.jsonl, samples.jsonl,
 * summary.json and checkpoints/step-N/ (HF layout, a LoRA run's PEFT adapter files, or a flow
 * model's config.json + model.safetensors; + trainer-state.json, and
 * training-state/optimizer.safetensors), written so a kill at
 * any moment loses nothing that was saved. JSON files are replaced by rename; a checkpoint is built
 * in a hidden folder, every file and folder fsynced, and published by rename (model/checkpoint.ts
 * `publishFolder`); trainer-state.json lists the files, sizes and SHA-256 sums that make it
 * complete and the length of each log at that moment, so a resume cuts the logs back to exactly
 * that point. With TensorBoard reporting on, tensorboard/ mirrors metrics.jsonl (tensorboard-events.ts)
 * and is cut back with it.
 *
 * Is not: the training loop, the summary's status (run-status.ts), or the schema and checks of
 * trainer-state.json (trainer-state.ts). It only reads and writes files.
 */
import { PNG } from 'pngjs';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { threadId } from 'node:worker_threads';
import { writeAdapterFiles } from '../model/adapter-files.js';
import { publishFolder, writeCheckpointFiles } from '../model/checkpoint.js';
import type { LoraAdapters } from '../model/lora.js';
import type { ModelConfig } from '../model/config.js';
import {
  makeDirectory,
  removeTree,
  renamePath,
  syncDirectory,
  syncFile,
  writeFileDurably,
} from '../model/durable-files.js';
import { readSafetensors, writeSafetensors, type StoredTensor } from '../model/safetensors.js';
import type { AdamW, AdamWState } from '../nn/index.js';
import {
  checkpointProblem,
  readSummaryFile,
  readTrainerState,
  sha256OfFile,
  type SavedTrainerState,
} from './trainer-state.js';
import { TensorBoardEvents } from './tensorboard-events.js';

/** Counters a resumed run needs besides weights and optimiser moments. */
export interface TrainerState {
  /** Global optimiser steps completed (SFT and GRPO together). */
  step: number;
  /** Text runs: 'sft', 'grpo', 'done'; flow runs: 'pretrain' (flow matching) or 'rl' (flow/). */
  phase: 'sft' | 'grpo' | 'done' | 'pretrain' | 'rl';
  /** Steps completed within the phase. */
  phaseStep: number;
  consecutiveSkips: number;
  /** Consecutive GRPO steps in which no sample had a valid reward (absent in older checkpoints). */
  invalidSteps?: number;
  evalBefore: Record<string, number> | null;
  /** Extra JSON state of stateful parts (e.g. single-stream baselines). */
  extra: Record<string, unknown>;
}

/** How far metrics.jsonl, samples.jsonl and the TensorBoard events files reached at a checkpoint. */
export interface LogBytes {
  metrics: number;
  samples: number;
  /** Each events file's length (trainer-state.json's `tensorboardBytes`); absent when reporting was off. */
  tensorboard?: Record<string, number>;
}

/** What a run folder writes besides its own files. */
export interface RunFolderOptions {
  /** Also write every metrics record to TensorBoard event files in tensorboard/ (`logging.reportTo`). */
  tensorboard?: boolean;
}

/** The optimiser moments' subfolder and file inside a checkpoint folder. */
const OPTIMIZER_FOLDER = 'training-state';
const OPTIMIZER_FILE = join(OPTIMIZER_FOLDER, 'optimizer.safetensors');
/** A moving reference model's weights at the checkpoint (algorithm.referenceSync), beside the optimiser's. */
export const MOVED_REFERENCE_FILE = join(OPTIMIZER_FOLDER, 'reference.safetensors');

let temporaryFiles = 0;

/**
 * Replaces `file` with the JSON of `value` by write, fsync, rename and fsync of the folder. The
 * temporary name is this write's own (process, thread, count): two threads of one process (worker
 * threads, vitest's shared workers) writing the same file never rename each other's half.
 */
export function writeJsonAtomically(file: string, value: unknown): void {
  const temporary = `${file}.tmp-${process.pid}-${threadId}-${++temporaryFiles}`;
  writeFileDurably(temporary, `${JSON.stringify(value, null, 2)}\n`);
  renamePath(temporary, file);
  syncDirectory(dirname(file));
}

export class RunFolder {
  readonly metricsFile: string;
  readonly samplesFile: string;
  readonly checkpointsDirectory: string;
  /** tensorboard/: written only when reporting to TensorBoard, but cut back on resume whenever it exists. */
  private readonly tensorboard: TensorBoardEvents;
  private readonly reportsToTensorBoard: boolean;

  constructor(
    readonly directory: string,
    options: RunFolderOptions = {},
  ) {
    mkdirSync(directory, { recursive: true });
    this.metricsFile = join(directory, 'metrics.jsonl');
    this.samplesFile = join(directory, 'samples.jsonl');
    this.checkpointsDirectory = join(directory, 'checkpoints');
    this.tensorboard = new TensorBoardEvents(join(directory, 'tensorboard'));
    this.reportsToTensorBoard = options.tensorboard ?? false;
  }

  logMetrics(record: Record<string, unknown>): void {
    appendFileSync(
      this.metricsFile,
      `${JSON.stringify(record, (_key, value) => (typeof value === 'number' && !Number.isFinite(value) ? null : value))}\n`,
    );
    if (this.reportsToTensorBoard) this.tensorboard.append(record);
  }

  logSamples(record: Record<string, unknown>): void {
    appendFileSync(this.samplesFile, `${JSON.stringify(record)}\n`);
  }

  /**
   * Writes a logged sample's image (RGB) as images/<name>.png and returns that path relative to the
   * run folder: samples.jsonl refers to it, and the dashboard shows it beside the completion.
   */
  writeSampleImage(name: string, image: { width: number; height: number; data: Uint8Array }): string {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`writeSampleImage: ${JSON.stringify(name)} is not a plain file name`);
    const png = new PNG({ width: image.width, height: image.height });
    for (let pixel = 0; pixel < image.width * image.height; pixel++) {
      png.data.set(image.data.subarray(pixel * 3, pixel * 3 + 3), pixel * 4);
      png.data[pixel * 4 + 3] = 255;
    }
    mkdirSync(join(this.directory, 'images'), { recursive: true });
    writeFileSync(join(this.directory, 'images', `${name}.png`), PNG.sync.write(png));
    return `images/${name}.png`;
  }

  writeSummary(summary: Record<string, unknown>): void {
    writeJsonAtomically(join(this.directory, 'summary.json'), summary);
  }

  /** summary.json's fields (empty when there is none); a damaged file is an error naming it and the field. */
  readSummary(): Record<string, unknown> {
    return readSummaryFile(join(this.directory, 'summary.json'));
  }

  /** Steps of every `step-N` folder, complete or not, ascending. */
  stepFolders(): number[] {
    if (!existsSync(this.checkpointsDirectory)) return [];
    return readdirSync(this.checkpointsDirectory)
      .map((name) => /^step-(\d+)$/.exec(name))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => Number(match[1]))
      .sort((a, b) => a - b);
  }

  /** Steps of the complete checkpoints (every listed file there with its size), ascending. */
  checkpointSteps(): number[] {
    return this.stepFolders().filter((step) => isCompleteCheckpoint(join(this.checkpointsDirectory, `step-${step}`)));
  }

  /** Why checkpoint step-N cannot be resumed from (schema, sizes, SHA-256 sums), or null when it can. */
  checkpointProblem(step: number): string | null {
    return checkpointProblem(join(this.checkpointsDirectory, `step-${step}`), step, true);
  }

  /**
   * Tidies what a killed writer left: temporary JSON files, unfinished checkpoint folders and the
   * aside copies of replaced ones. An aside copy whose checkpoint is missing (killed between the two
   * renames of a replacement) is renamed back, since it is complete. Returns one note per change.
   */
  recover(): string[] {
    const notes: string[] = [];
    for (const name of readdirSync(this.directory)) {
      if (!/\.tmp-\d+(-\d+)*$/.test(name)) continue;
      removeTree(join(this.directory, name));
      notes.push(`removed ${name}`);
    }
    notes.push(...this.tensorboard.tidy());
    if (!existsSync(this.checkpointsDirectory)) return notes;
    for (const name of readdirSync(this.checkpointsDirectory).filter((entry) => entry.startsWith('.'))) {
      const path = join(this.checkpointsDirectory, name);
      const replaced = /^\.(step-\d+|reference)\.old-[\d-]+$/.exec(name)?.[1];
      const target = replaced === undefined ? null : join(this.checkpointsDirectory, replaced);
      if (target !== null && !existsSync(target) && (replaced === 'reference' || isCompleteCheckpoint(path))) {
        renamePath(path, target);
        notes.push(`restored ${replaced} from ${name}`);
      } else {
        removeTree(path);
        notes.push(`removed ${name}`);
      }
    }
    if (notes.length > 0) syncDirectory(this.checkpointsDirectory);
    return notes;
  }

  /**
   * Writes checkpoints/step-N as a whole (replacing an existing step-N atomically) and keeps only
   * the `keepLast` newest. The logs are fsynced first, since the checkpoint records their lengths.
   */
  saveCheckpoint(input: {
    /** A text model's config and weights (not needed with `writeModel` or `adapter`). */
    config?: ModelConfig;
    tensors?: Map<string, StoredTensor>;
    optimizer: AdamW;
    state: TrainerState;
    extraFiles?: Record<string, string>;
    sourceDirectory?: string;
    keepLast: number;
    /** A LoRA run's adapter: written in PEFT's format instead of the (frozen) model weights. */
    adapter?: { adapters: LoraAdapters; baseModel: string | null; dropout?: number };
    /**
     * Writes the model files itself (a vision-language model's Idefics3 layout, a flow model) instead of
     * config + tensors; files it puts under training-state/ are listed and summed like the rest.
     */
    writeModel?: (folder: string) => void;
    /** A reference model that moves during training (algorithm.referenceSync): its weights now. */
    movedReference?: Map<string, StoredTensor>;
  }): string {
    if (!existsSync(this.checkpointsDirectory)) makeDirectory(this.checkpointsDirectory);
    const name = `step-${input.state.step}`;
    const stamp = `${process.pid}-${Date.now()}`;
    const final = join(this.checkpointsDirectory, name);
    const partial = join(this.checkpointsDirectory, `.${name}.tmp-${stamp}`);
    makeDirectory(partial);
    try {
      if (input.adapter)
        writeAdapterFiles(partial, input.adapter.adapters, input.adapter.baseModel, input.adapter.dropout);
      else if (input.writeModel) input.writeModel(partial);
      else if (!input.config || !input.tensors)
        throw new Error('saveCheckpoint: give config and tensors, writeModel or adapter');
      else
        writeCheckpointFiles(
          partial,
          {
            config: input.config,
            tensors: input.tensors,
            sourceDir: input.sourceDirectory,
            extraFiles: input.extraFiles,
          },
          final,
        );
      // The optimiser moments go in a subfolder: the checkpoint's top level stays a model folder that
      // inference servers load as is (vLLM loads every top-level *.safetensors file as weights).
      makeDirectory(join(partial, OPTIMIZER_FOLDER));
      writeSafetensors(join(partial, OPTIMIZER_FILE), optimizerTensors(input.optimizer.getState()));
      if (input.movedReference) writeSafetensors(join(partial, MOVED_REFERENCE_FILE), input.movedReference);
      syncDirectory(join(partial, OPTIMIZER_FOLDER));
      const names = readdirSync(partial, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => relative(partial, join(entry.parentPath, entry.name)));
      // Sizes find a file cut short; SHA-256 sums find one damaged in place (a flipped bit).
      const files = Object.fromEntries(names.map((file) => [file, statSync(join(partial, file)).size]));
      const sha256 = Object.fromEntries(names.map((file) => [file, sha256OfFile(join(partial, file))]));
      const { tensorboard, ...logBytes } = this.syncLogs();
      const saved: SavedTrainerState = {
        ...input.state,
        optimizerStep: input.optimizer.stepCount,
        logBytes,
        // Beside logBytes, not in it: older versions refuse unknown keys there but keep them here.
        ...(tensorboard && { tensorboardBytes: tensorboard }),
        files,
        sha256,
      };
      writeFileDurably(join(partial, 'trainer-state.json'), `${JSON.stringify(saved, null, 2)}\n`);
      syncDirectory(partial);
      publishFolder(partial, final, stamp);
    } catch (error) {
      rmSync(partial, { recursive: true, force: true });
      throw error;
    }
    for (const old of this.checkpointSteps().slice(0, -input.keepLast)) this.removeCheckpoint(`step-${old}`, stamp);
    return final;
  }

  /** Reads a checkpoint's trainer state, optimiser state and the log lengths it was taken at. */
  loadTrainingState(step: number): {
    state: TrainerState;
    optimizer: AdamWState;
    directory: string;
    logBytes: LogBytes | null;
  } {
    const directory = join(this.checkpointsDirectory, `step-${step}`);
    const {
      optimizerStep,
      logBytes,
      tensorboardBytes,
      files: _files,
      sha256: _sha256,
      ...saved
    } = readTrainerState(directory, step);
    // A NaN metric was written as null and comes back as null, as it always did.
    const state = { ...saved, evalBefore: saved.evalBefore as TrainerState['evalBefore'] };
    // Checkpoints written before the optimiser moved into its subfolder keep it at the top level.
    const optimizerFile = existsSync(join(directory, OPTIMIZER_FILE))
      ? join(directory, OPTIMIZER_FILE)
      : join(directory, 'optimizer.safetensors');
    const tensors = readSafetensors(optimizerFile);
    const moments: AdamWState['moments'] = {};
    for (const [name, stored] of tensors) {
      const match = /^(first|second)\.(.+)$/.exec(name);
      if (!match) continue;
      moments[match[2]] ??= { first: new Float32Array(0), second: new Float32Array(0) };
      moments[match[2]][match[1] as 'first' | 'second'] = stored.data;
    }
    return {
      state,
      optimizer: { step: optimizerStep, moments },
      directory,
      logBytes: logBytes ? { ...logBytes, ...(tensorboardBytes && { tensorboard: tensorboardBytes }) } : null,
    };
  }

  /**
   * Cuts metrics.jsonl and samples.jsonl back to the lengths a checkpoint recorded, which drops
   * everything logged after it, including lines logged at its own step (an evaluation, say); and the
   * TensorBoard events the same way (rebuilt from metrics.jsonl where the checkpoint recorded none).
   */
  truncateLogsTo(logBytes: LogBytes): void {
    for (const [file, bytes] of [
      [this.metricsFile, logBytes.metrics],
      [this.samplesFile, logBytes.samples],
    ] as const) {
      const size = existsSync(file) ? statSync(file).size : 0;
      if (size < bytes)
        throw new Error(
          `${file}: ${size} bytes, but the checkpoint was taken when it had ${bytes}; the log lost lines and the run cannot be resumed exactly`,
        );
      if (size > bytes) truncateSync(file, bytes);
    }
    this.tensorboard.cutBack(logBytes.tensorboard, () => this.metricsRecords(), this.reportsToTensorBoard);
  }

  /** Drops log lines whose step is after `step`: the fallback for checkpoints that recorded no log lengths. */
  truncateLogsAfter(step: number): void {
    for (const file of [this.metricsFile, this.samplesFile]) {
      if (!existsSync(file)) continue;
      const kept = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => {
          if (!line.trim()) return false;
          try {
            return (JSON.parse(line) as { step?: number }).step! <= step;
          } catch {
            return false; // a line cut short by the kill
          }
        });
      writeFileSync(file, kept.length ? `${kept.join('\n')}\n` : '');
    }
    this.tensorboard.cutBack(undefined, () => this.metricsRecords(), this.reportsToTensorBoard);
  }

  /** metrics.jsonl's records, for rebuilding the TensorBoard events. */
  private metricsRecords(): Record<string, unknown>[] {
    if (!existsSync(this.metricsFile)) return [];
    return readFileSync(this.metricsFile, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Fsyncs the logs (and the folders holding them) and returns their lengths. */
  private syncLogs(): LogBytes {
    const length = (file: string): number => {
      if (!existsSync(file)) return 0;
      syncFile(file);
      return statSync(file).size;
    };
    const logBytes = { metrics: length(this.metricsFile), samples: length(this.samplesFile) };
    syncDirectory(this.directory);
    return this.reportsToTensorBoard ? { ...logBytes, tensorboard: this.tensorboard.sync() } : logBytes;
  }

  /** Renames a checkpoint to a hidden name first, so a kill mid-removal never leaves a half folder under its step name. */
  private removeCheckpoint(name: string, stamp: string): void {
    const doomed = join(this.checkpointsDirectory, `.${name}.deleting-${stamp}`);
    renamePath(join(this.checkpointsDirectory, name), doomed);
    syncDirectory(this.checkpointsDirectory);
    removeTree(doomed);
  }
}

/**
 * A checkpoint folder is complete when trainer-state.json passes its schema and every file it lists
 * has its recorded size (cheap: no checksums; a resume checks those on the one it loads). A folder
 * named after a step (step-N, or a hidden copy of one) must record that step.
 */
export function isCompleteCheckpoint(directory: string): boolean {
  const step = /step-(\d+)/.exec(basename(directory));
  return checkpointProblem(directory, step ? Number(step[1]) : null, false) === null;
}

function optimizerTensors(state: AdamWState): Map<string, StoredTensor> {
  const tensors = new Map<string, StoredTensor>();
  for (const [name, { first, second }] of Object.entries(state.moments)) {
    tensors.set(`first.${name}`, { shape: [first.length], data: first });
    tensors.set(`second.${name}`, { shape: [second.length], data: second });
  }
  return tensors;
}
