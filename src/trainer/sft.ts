/**
 * Supervised fine-tuning, the phase before GRPO: each step draws `sft.batchSize` demonstrations
 * (the task's own solution text for a row, rendered with the run's prompt format, with images on a
 * vision-language run), and takes one AdamW step on the mean next-token cross-entropy over the
 * completion tokens only (prompt tokens are context, never targets), optionally packed into
 * document-masked rows. TRL's `SFTTrainer` with `completion_only_loss=True` does the same.
 *
 * Is not: the run around it (trainer.ts: resume, checkpoints, the switch to GRPO), the training
 * forward (completion-logprobs.ts) or the clip-and-step shared with GRPO (optimize.ts `applyUpdate`).
 */
import { AdamW, learningRateAt, Random, type ScheduleConfig } from '../nn/index.js';
import { dropThought } from '../data/thought-dropout.js';
import type { Transformer } from '../model/transformer.js';
import { mul, stepSeed, sum, tensor, type Tensor, withTrainingWeights } from '../tensor/index.js';
import type { ProgressReporter } from '../run/progress.js';
import type { RunFolder, TrainerState } from '../run/run-folder.js';
import { completionLogprobs, type TokenSequence } from './completion-logprobs.js';
import { applyUpdate, countSkippedStep, type StepOutcome } from './optimize.js';
import type { RunContext } from './setup.js';
import { renderRunDemonstration } from './vision-run.js';

/** One step's metrics as metrics.jsonl records them: the step, the phase, and the named values. */
export type StepRecord = { step: number; phase: 'sft' | 'grpo' } & Record<string, number | string>;

/** What the run gives each loop: saving, the abort check, the step callback and its stop flag. */
export interface LoopHooks {
  save: () => Promise<void>;
  checkStop: () => Promise<void>;
  onStep: (record: StepRecord) => Promise<void>;
  stop: { requested: boolean };
}

/** What the SFT loop reads, resolved from the config once before it starts. */
export interface SftPlan {
  seed: number;
  steps: number;
  /** How many of the task's training rows the demonstrations are drawn from. */
  examples: number;
  batchSize: number;
  schedule: ScheduleConfig;
  update: SftUpdateSettings;
  /** Consecutive skipped (non-finite) updates before the run stops. */
  maxSkippedSteps: number;
  /** Save a checkpoint every this many steps (0: only at the end of the phase). */
  checkpointEvery: number;
  /** TON's thought dropout probability (data/thought-dropout.ts). */
  thoughtDropout: number;
}

/** What an SFT update reads: the packing of its sequences and the gradient clip. */
export interface SftUpdateSettings {
  /** Pack demonstrations into rows of this many tokens (document-masked; 0: one per row, padded). */
  packLength: number;
  maxGradNorm: number;
}

/**
 * The SFT phase from `state.phaseStep` to `plan.steps` (a resumed run continues where it stopped:
 * each step's batch and dropout masks come from (seed, step), never from carried RNG state).
 */
export async function runSft(
  context: RunContext,
  folder: RunFolder,
  optimizer: AdamW,
  state: TrainerState,
  progress: ProgressReporter,
  loop: LoopHooks,
  plan: SftPlan,
): Promise<void> {
  const { model, task } = context;
  const examples = task.trainExamples(plan.examples, plan.seed);
  const eos = context.stopTokenIds[0];
  while (state.phaseStep < plan.steps && !loop.stop.requested) {
    await loop.checkStop();
    const stepStart = Date.now();
    const random = new Random(stepSeed(plan.seed, state.step));
    const batch = Array.from({ length: plan.batchSize }, () => examples[random.integer(examples.length)]);
    const sequences = [];
    for (const example of batch) {
      const draw = () => random.uniform();
      const demonstration = dropThought(task.demonstration(example, draw), plan.thoughtDropout, draw);
      const where = `SFT row ${examples.indexOf(example)}`;
      sequences.push(
        await renderRunDemonstration(context.promptFormat, context.vision, example, demonstration, eos, where),
      );
    }
    optimizer.learningRate = learningRateAt(plan.schedule, state.phaseStep);
    // LoRA dropout masks from the run seed and step (not RNG state), so a resumed run draws the same ones.
    const { metrics, applied } = sftStep(plan.update, model, optimizer, sequences, stepSeed(plan.seed, state.step));
    countSkippedStep(state, applied, plan.maxSkippedSteps);
    state.step++;
    state.phaseStep++;
    const record = {
      ...metrics,
      lr: optimizer.learningRate,
      skippedSteps: applied ? 0 : 1,
      'time/step': (Date.now() - stepStart) / 1000,
    };
    folder.logMetrics({ step: state.step, phase: 'sft', ...record });
    progress.update('sft', state.phaseStep, plan.steps, record);
    if (plan.checkpointEvery > 0 && state.step % plan.checkpointEvery === 0) await loop.save();
    await loop.onStep({ step: state.step, phase: 'sft', ...record });
  }
}

/** Mean next-token cross-entropy over completion tokens only, one optimiser step. */
export function sftStep(
  settings: SftUpdateSettings,
  model: Transformer,
  optimizer: AdamW,
  sequences: readonly TokenSequence[],
  dropoutSeed?: number,
): StepOutcome {
  optimizer.zeroGrad();
  // Forward and backward with the weights on the device when the backend's products read device memory.
  const lossValue = withTrainingWeights(model.parameters.values(), () => {
    const { logprobs, mask } = completionLogprobs(model, sequences, 1, {
      packLength: settings.packLength,
      dropoutSeed,
    });
    const count = mask.reduce((a, b) => a + b, 0);
    const lossTensor: Tensor = mul(sum(mul(logprobs, tensor(mask, logprobs.shape))), -1 / Math.max(1, count));
    lossTensor.backward();
    return lossTensor.item();
  });
  const { gradNorm, applied } = applyUpdate(optimizer, settings.maxGradNorm, lossValue);
  return { metrics: { 'loss/sft': lossValue, gradNorm }, applied };
}
