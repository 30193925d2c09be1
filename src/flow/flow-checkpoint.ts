/**
 * Checkpoints of flow runs, in the run folder every run uses (run/run-folder.ts): checkpoints/step-N/
 * holds the flow model as `grpo flow sample --model` loads it (config.json + model.safetensors), the
 * AdamW moments (training-state/optimizer.safetensors), any companion model a loop carries between
 * steps (DiffusionNFT's old policy: training-state/<name>.safetensors) and trainer-state.json with
 * the files' sizes and SHA-256 sums and the log lengths. A resume restores the newest sound one
 * (run/sound-checkpoint.ts) and cuts metrics.jsonl back to it, as for text runs.
 *
 * Also the atomic writing of a whole output folder (model/, pretrained/, classifier/): built under a
 * hidden temporary name and published by rename, so a folder under its final name is complete.
 *
 * Is not: the loops (flow-run.ts, pretrain-run.ts) or the checkpoint format itself (run-folder.ts).
 */
import { basename, dirname, join } from 'node:path';
import { publishFolder } from '../model/checkpoint.js';
import { makeDirectory, removeTree } from '../model/durable-files.js';
import { type FlowModel, saveFlowModel } from '../model/flow-mlp.js';
import { readSafetensors, writeSafetensors } from '../model/safetensors.js';
import type { AdamW } from '../nn/optimizer.js';
import type { ProgressReporter } from '../run/progress.js';
import type { RunFolder, TrainerState } from '../run/run-folder.js';
import { type ResumeOptions, soundCheckpoint } from '../run/sound-checkpoint.js';

/** What a flow loop carries from step to step besides its counters. */
export interface FlowTrainingState {
  model: FlowModel;
  optimizer: AdamW;
  /** Models updated every step besides the trained one, by name (DiffusionNFT: `old-policy`). */
  companions?: Record<string, FlowModel>;
}

const companionFile = (name: string) => join('training-state', `${name}.safetensors`);

/** Saves checkpoints/step-`state.step` and keeps the `keepLast` newest. */
export function saveFlowCheckpoint(
  folder: RunFolder,
  training: FlowTrainingState,
  state: TrainerState,
  keepLast: number,
): string {
  return folder.saveCheckpoint({
    writeModel: (directory) => {
      saveFlowModel(training.model, directory);
      const companions = Object.entries(training.companions ?? {});
      if (companions.length > 0) makeDirectory(join(directory, 'training-state'));
      for (const [name, model] of companions)
        writeSafetensors(
          join(directory, companionFile(name)),
          new Map([...model.parameters].map(([key, value]) => [key, { shape: value.shape, data: value.data }])),
        );
    },
    optimizer: training.optimizer,
    state,
    keepLast,
  });
}

/**
 * Restores the newest sound checkpoint into the model, optimiser and companions and cuts the logs
 * back to it; null when there is none (the logs are then emptied and the run starts over).
 */
export function restoreFlowCheckpoint(
  folder: RunFolder,
  training: FlowTrainingState,
  progress: Pick<ProgressReporter, 'warn' | 'message'>,
  options: ResumeOptions,
): TrainerState | null {
  const step = soundCheckpoint(folder, progress, options);
  if (step === null) {
    folder.truncateLogsTo({ metrics: 0, samples: 0 });
    progress.message(`no complete checkpoint in ${folder.directory}; starting the run from the beginning`);
    return null;
  }
  const { state, optimizer, directory, logBytes } = folder.loadTrainingState(step);
  const restore = (model: FlowModel, file: string) => {
    const tensors = readSafetensors(join(directory, file));
    for (const [name, parameter] of model.parameters) {
      const stored = tensors.get(name);
      if (!stored || stored.data.length !== parameter.data.length)
        throw new Error(`${join(directory, file)}: "${name}" is missing or has another size than the run's model`);
      parameter.data.set(stored.data);
    }
  };
  restore(training.model, 'model.safetensors');
  for (const [name, model] of Object.entries(training.companions ?? {})) restore(model, companionFile(name));
  training.optimizer.setState(optimizer);
  if (logBytes) folder.truncateLogsTo(logBytes);
  else folder.truncateLogsAfter(step);
  progress.message(`resuming from ${directory} (step ${step}, phase ${state.phase})`);
  return state;
}

/**
 * Writes the folder `target` whole: `write` fills a hidden temporary sibling (which RunFolder.recover
 * removes after a kill), then it replaces `target` by rename.
 */
export function writeFolderAtomically(target: string, write: (folder: string) => void): void {
  const stamp = `${process.pid}-${Date.now()}`;
  const partial = join(dirname(target), `.${basename(target)}.tmp-${process.pid}`);
  removeTree(partial);
  makeDirectory(partial);
  write(partial);
  publishFolder(partial, target, stamp);
}

/** How a flow job writes checkpoints and resumes; absent for the one-shot jobs of `grpo flow`. */
export interface FlowCheckpointing {
  folder: RunFolder;
  /** Save every this many steps (0: only at the end), keeping the `keepLast` newest. */
  every: number;
  keepLast: number;
  /** Continue from the newest sound checkpoint instead of starting over. */
  resume: boolean;
  restartDamaged?: boolean;
  /** Aborted (SIGINT/SIGTERM): the loop stops at the next step boundary with RunInterrupted. */
  signal?: AbortSignal;
  /** Printed even in quiet runs (a damaged checkpoint skipped). */
  warn: (line: string) => void;
}

/** Whether step `step` of `total` saves a checkpoint: every `every` steps and always at the end. */
export const savesCheckpointAt = (checkpointing: FlowCheckpointing, step: number, total: number): boolean =>
  step === total || (checkpointing.every > 0 && step % checkpointing.every === 0);
