/**
 * What a run restores or rebuilds before it continues: the weights, optimiser state and counters of
 * the last sound checkpoint (with the logs cut back to what that checkpoint had seen), the KL
 * reference model saved at GRPO start (or, when algorithm.referenceSync moves it, as the checkpoint
 * saved it), and the base model a LoRA run's adapters name.
 *
 * Which checkpoint is sound, and what happens when none is, is run/sound-checkpoint.ts's (shared with
 * flow runs).
 *
 * Is not: the writing of checkpoints (run-folder.ts) or the loop (trainer.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ADAPTER_WEIGHTS_FILE } from '../model/adapter-files.js';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.js';
import { readSafetensors, type StoredTensor } from '../model/safetensors.js';
import { Transformer } from '../model/transformer.js';
import type { AdamW } from '../nn/index.js';
import type { ProgressReporter } from '../run/progress.js';
import { MOVED_REFERENCE_FILE, type RunFolder, type TrainerState } from '../run/run-folder.js';
import { type ResumeOptions, soundCheckpoint } from '../run/sound-checkpoint.js';
import type { RunContext } from './setup.js';
import type { VisionRun } from './vision-run.js';
import {
  loadVisionLanguageCheckpoint,
  saveVisionLanguageCheckpoint,
} from '../model/vision/vision-language-checkpoint.js';
import { VisionLanguageModel } from '../model/vision/vision-language.js';

/** Restores the newest sound checkpoint into `model` and `optimizer`; null when there is none (the logs are then emptied). */
export function resumeFrom(
  folder: RunFolder,
  model: Transformer,
  optimizer: AdamW,
  progress: ProgressReporter,
  vision: VisionRun | null = null,
  options: ResumeOptions = {},
): TrainerState | null {
  const step = soundCheckpoint(folder, progress, options);
  if (step === null) {
    folder.truncateLogsTo({ metrics: 0, samples: 0 }); // killed before its first checkpoint: start over with clean logs
    progress.message(`no complete checkpoint in ${folder.directory}; starting the run from the beginning`);
    return null;
  }
  const { state, optimizer: optimizerState, directory, logBytes } = folder.loadTrainingState(step);
  const holdsAdapter = existsSync(join(directory, ADAPTER_WEIGHTS_FILE));
  if (holdsAdapter !== (model.adapters !== null))
    throw new Error(
      `${directory}: the checkpoint holds ${holdsAdapter ? 'a LoRA adapter' : 'full weights'} but the config has ${model.adapters ? 'lora set' : 'lora null'}; resume with the run's own lora setting`,
    );
  if (vision) {
    // A vision-language checkpoint holds every weight in the Idefics3 layout, by HF name.
    const { tensors } = loadVisionLanguageCheckpoint(directory);
    for (const [name, parameter] of vision.model.parameters) parameter.data.set(tensors.get(name)!.data);
  } else if (model.adapters) {
    // A LoRA checkpoint holds only the adapter; the frozen base weights are the ones loaded at setup.
    model.adapters.load(readSafetensors(join(directory, ADAPTER_WEIGHTS_FILE)), directory);
  } else {
    const restored = Transformer.fromTensors(model.config, loadCheckpoint(directory).tensors);
    for (const [name, parameter] of model.parameters) parameter.data.set(restored.parameters.get(name)!.data);
  }
  optimizer.setState(optimizerState);
  // Lines logged after the checkpoint (even at its own step) are replayed, so they are cut first.
  if (logBytes) folder.truncateLogsTo(logBytes);
  else folder.truncateLogsAfter(step); // a checkpoint from a version that did not record log lengths
  progress.message(`resuming from ${directory} (step ${step}, phase ${state.phase})`);
  return state;
}

/**
 * The KL reference's weights: at GRPO start a copy of the current ones, saved once as
 * checkpoints/reference (atomically, like every checkpoint); on resume the saved ones, so a resumed
 * run keeps the same reference instead of taking its current weights.
 */
function referenceTensors(
  folder: RunFolder,
  state: TrainerState,
  io: {
    current: () => Map<string, StoredTensor>;
    save: (directory: string, tensors: Map<string, StoredTensor>) => void;
    load: (directory: string) => Map<string, StoredTensor>;
  },
): Map<string, StoredTensor> {
  const directory = join(folder.checkpointsDirectory, 'reference');
  if (state.phaseStep > 0) {
    // The reference is published before the first GRPO checkpoint exists, so it cannot be missing here.
    if (!existsSync(directory))
      throw new Error(
        `${directory}: missing, but the run is resuming at GRPO step ${state.phaseStep}; the KL reference cannot be rebuilt`,
      );
    return io.load(directory);
  }
  const tensors = new Map([...io.current()].map(([name, t]) => [name, { shape: [...t.shape], data: t.data.slice() }]));
  io.save(directory, tensors);
  return tensors;
}

/**
 * The KL reference: the policy at GRPO start (referenceTensors), frozen. With algorithm.referenceSync
 * a resumed run takes it as the checkpoint it resumes from saved it (the reference has moved since).
 */
export function referenceFor(context: RunContext, folder: RunFolder, state: TrainerState): Transformer {
  const { config } = context.model;
  const moved = join(folder.checkpointsDirectory, `step-${state.step}`, MOVED_REFERENCE_FILE);
  if (context.config.algorithm.referenceSync && state.phaseStep > 0) {
    if (!existsSync(moved))
      throw new Error(
        `${moved}: missing, but algorithm.referenceSync moves the reference and the run is resuming at GRPO step ${state.phaseStep}; resume with the run's own referenceSync setting`,
      );
    return frozen(Transformer.fromTensors(config, readSafetensors(moved)));
  }
  const tensors = referenceTensors(folder, state, {
    current: () => context.model.toStoredTensors(),
    save: (directory, weights) =>
      saveCheckpoint(directory, {
        config,
        tensors: weights,
        extraFiles: context.tokenizerFiles,
        sourceDir: context.sourceDirectory,
      }),
    load: (directory) => loadCheckpoint(directory).tensors,
  });
  return frozen(Transformer.fromTensors(config, tensors));
}

function frozen(reference: Transformer): Transformer {
  for (const parameter of reference.parameters.values()) parameter.requiresGrad = false;
  return reference;
}

/**
 * algorithm.referenceSync's step (TRL's SyncRefModelCallback, from TR-DPO): π_ref ← (1 − α)·π_ref + α·π_θ,
 * parameter by parameter (each in float32, as `mul_(1 − α).add_(θ, alpha=α)` computes it).
 */
export function moveReference(reference: Transformer, policy: Transformer, alpha: number): void {
  const keep = Math.fround(1 - alpha);
  const take = Math.fround(alpha);
  for (const [name, parameter] of reference.parameters) {
    const target = parameter.data;
    const source = policy.parameters.get(name)!.data;
    for (let i = 0; i < target.length; i++) target[i] = Math.fround(target[i] * keep) + Math.fround(source[i] * take);
  }
}

/**
 * The KL reference of a vision-language run: the whole model (connector and language model; the
 * tower is frozen anyway) at GRPO start, saved once as checkpoints/reference in the idefics3 layout.
 */
export function visionReferenceFor(context: RunContext, folder: RunFolder, state: TrainerState): VisionLanguageModel {
  const { model } = context.vision!;
  const tensors = referenceTensors(folder, state, {
    current: () => model.toStoredTensors(),
    save: (directory, weights) =>
      saveVisionLanguageCheckpoint(directory, {
        config: model.config,
        tensors: weights,
        extraFiles: context.tokenizerFiles,
        sourceDir: context.sourceDirectory,
      }),
    load: (directory) => loadVisionLanguageCheckpoint(directory).tensors,
  });
  const reference = VisionLanguageModel.fromTensors(model.config, tensors);
  for (const parameter of reference.parameters.values()) parameter.requiresGrad = false;
  return reference;
}

/**
 * The base model a LoRA run's adapters apply to, as adapter_config.json names it: the configured
 * checkpoint, or for a from-scratch model its frozen weights saved once as checkpoints/base (a
 * complete HF folder, so `grpo score --model checkpoints/base --adapter checkpoints/step-N` works).
 */
export function adapterBaseFor(context: RunContext, folder: RunFolder): string {
  if (context.config.model.checkpoint) return context.config.model.checkpoint;
  const directory = join(folder.checkpointsDirectory, 'base');
  if (!existsSync(directory))
    saveCheckpoint(directory, {
      config: context.model.config,
      tensors: context.model.toStoredTensors(),
      extraFiles: context.tokenizerFiles,
    });
  return directory;
}
