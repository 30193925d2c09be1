/**
 * Training the built-in addition task in a browser tab: the run's context built without files
 * (a from-scratch character model, the task's own rewards), then SFT and GRPO one step per call,
 * with the same step seeds, step functions and evaluation as `grpo train` (trainer.ts), so the page
 * shows what `npm start` does.
 *
 * Is not: the trainer's loop, nor a run on a model picked from disk (model-run.ts, which takes its
 * GRPO steps from here). There is no run folder here (no metrics files, periodic checkpoints or
 * resume), no reward workers and no checkpoint loading; a step's numbers go to the caller instead,
 * which posts them to the page, and the caller may take the model's checkpoint files between steps. Imports only modules that run without Node (docs/browser.md; the page
 * bundle is refused at build time if a Node module slips in).
 */
import { additionTask } from '../data/tasks/addition.js';
import {
  advantageEstimators,
  groupFilters,
  klEstimators,
  lossAggregations,
  policyLosses,
  promptSelectors,
  turnCreditEstimators,
} from '../algorithms/index.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { checkpointFiles } from '../model/checkpoint-files.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { AdamW, learningRateAt, Random } from '../nn/index.js';
import { scoreRewards } from '../rewards/run.js';
import { singleTurnRollout } from '../rollout/rollout.js';
import { combineSeeds, stepSeed } from '../tensor/index.js';
import { bindAlgorithm } from '../config/algorithm.js';
import { validateConfig, type TrainerConfig } from '../config/config.js';
import { evaluateRun } from '../trainer/evaluate.js';
import { createStepEnvironment, prepareGrpoStep, rolloutSettingsOf } from '../trainer/grpo-step.js';
import { recordStepState } from '../trainer/step-signal.js';
import { optimizedParameters, policyStep } from '../trainer/optimize.js';
import { sftStep } from '../trainer/sft.js';
import { mergeConfig } from '../config/presets.js';
import { promptFormatFor, renderDemonstration } from '../config/prompt-format.js';
import type { RunContext } from '../trainer/setup.js';
import { rewardLogMetrics, sampleRecords } from '../trainer/step-metrics.js';
import type { TrainerState } from '../run/run-folder.js';

/** What the page may choose; everything else is the addition task's recommended config (as `npm start`). */
export interface BrowserRunSettings {
  seed: number;
  sftSteps: number;
  grpoSteps: number;
  /** Held-out examples per evaluation. */
  evalExamples: number;
  /** Evaluate every this many GRPO steps (0: before and after GRPO only). */
  evaluateEvery: number;
  /** Hidden width of the from-scratch model (`model.hiddenSize`; `npm start`: 64). */
  hiddenSize: number;
  /** Demonstrations per SFT step (`sft.batchSize`; `npm start`: 64). */
  sftBatchSize: number;
  /** Peak SFT learning rate (`sft.learningRate`; `npm start`: 3e-3). */
  sftLearningRate: number;
  /** GRPO learning rate (`grpo.learningRate`; `npm start`: 1e-4). */
  grpoLearningRate: number;
  /** Prompts per GRPO step, each with 8 completions (`grpo.promptsPerStep`; `npm start`: 16). */
  promptsPerStep: number;
}

/** One message of a run's progress, as the worker posts it to the page. */
export type BrowserRunEvent =
  | { kind: 'evaluation'; step: number; phase: 'start' | 'sft' | 'grpo'; accuracy: number; meanReward: number }
  | {
      kind: 'step';
      step: number;
      phase: 'sft' | 'grpo';
      seconds: number;
      tokensPerSecond: number;
      metrics: Record<string, number>;
      /** GRPO: the first group's prompt and completions with their rewards and advantages. */
      samples?: Record<string, unknown>[];
    }
  | { kind: 'done'; step: number };

/** The addition run's validated config with the page's settings on top of the task's recommended ones. */
export function browserRunConfig(settings: BrowserRunSettings): TrainerConfig {
  const task = additionTask({});
  const input = mergeConfig(task.recommendedConfig ?? {}, {
    seed: settings.seed,
    model: { hiddenSize: settings.hiddenSize },
    sft: { steps: settings.sftSteps, batchSize: settings.sftBatchSize, learningRate: settings.sftLearningRate },
    grpo: {
      steps: settings.grpoSteps,
      learningRate: settings.grpoLearningRate,
      promptsPerStep: settings.promptsPerStep,
    },
    evaluation: { examples: settings.evalExamples, every: settings.evaluateEvery },
    rewardWorkers: { threads: 0 },
  });
  return validateConfig(input, {
    advantage: advantageEstimators.names(),
    loss: policyLosses.names(),
    aggregation: lossAggregations.names(),
    klEstimator: klEstimators.names(),
    groupFilter: groupFilters.names(),
    promptSelector: promptSelectors.names(),
    turnCredit: turnCreditEstimators.names(),
    task: ['addition'],
  });
}

/** The run's context as createRunContext builds it for the built-in addition run, without files. */
function browserRunContext(config: TrainerConfig): RunContext {
  const task = additionTask(config.taskOptions);
  const tokenizer = new CharTokenizer({ alphabet: task.alphabet });
  const modelConfig = createSmallConfig({
    vocabSize: tokenizer.vocabSize,
    hiddenSize: config.model.hiddenSize,
    numLayers: config.model.numLayers,
    numHeads: config.model.numHeads,
    numKeyValueHeads: config.model.numKeyValueHeads,
    intermediateSize: config.model.intermediateSize,
    bosTokenId: tokenizer.bosTokenId,
    eosTokenIds: [tokenizer.eosTokenId],
  });
  const model = Transformer.random(modelConfig, config.model.initSeed);
  model.recompute = config.model.recomputeActivations;
  const rewards = task.rewards();
  const algorithm = bindAlgorithm(config, {
    sampleRows: task.trainExamples(Math.min(16, config.grpo.examples), config.seed + 2),
    rolloutProvides: singleTurnRollout.provides ?? [],
    rewardNames: rewards.map((reward) => reward.name),
  });
  return {
    config,
    task,
    tokenizer,
    tokenizerFiles: tokenizer.toHfFiles(),
    model,
    stopTokenIds: [tokenizer.eosTokenId],
    rewards,
    scoreRewards: (groups) => scoreRewards(rewards, groups, { timeoutMs: config.rewardWorkers.timeoutMs }),
    rewardSource: null,
    algorithm,
    promptFormat: promptFormatFor('none', tokenizer),
    rollout: singleTurnRollout,
    vision: null,
  };
}

/**
 * A run that advances one step per `next()` call (an evaluation counts as its own call), so the
 * caller can pause between any two. Yields `done` once, then nothing. `onModel` receives, before the
 * first event, a function that returns the model's checkpoint folder as it stands (checkpoint-files.ts:
 * the files a run folder's checkpoint holds, without the optimiser state); call it between steps.
 */
export async function* browserRun(
  settings: BrowserRunSettings,
  onModel?: (checkpoint: () => Map<string, Uint8Array>) => void,
): AsyncGenerator<BrowserRunEvent> {
  const config = browserRunConfig(settings);
  const context = browserRunContext(config);
  const { model, task } = context;
  onModel?.(() =>
    checkpointFiles({ config: model.config, tensors: model.toStoredTensors(), extraFiles: context.tokenizerFiles }),
  );
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: config.sft.learningRate,
    beta1: config.optimizer.beta1,
    beta2: config.optimizer.beta2,
    epsilon: config.optimizer.epsilon,
    weightDecay: config.optimizer.weightDecay,
  });
  const evaluation = async (step: number, phase: 'start' | 'sft' | 'grpo'): Promise<BrowserRunEvent> => {
    const result = await evaluateRun(context);
    return {
      kind: 'evaluation',
      step,
      phase,
      accuracy: result['eval/accuracy'],
      meanReward: result['eval/meanReward'],
    };
  };
  yield await evaluation(0, 'start');
  let step = 0;
  const sftSchedule = {
    kind: config.sft.schedule,
    learningRate: config.sft.learningRate,
    warmupSteps: config.sft.warmupSteps,
    totalSteps: config.sft.steps,
    minRatio: 0.1,
  };
  const sftUpdate = { packLength: config.sft.packLength, maxGradNorm: config.optimizer.maxGradNorm };
  const sftExamples = task.trainExamples(config.sft.examples, config.seed);
  const eos = context.stopTokenIds[0];
  for (let phaseStep = 0; phaseStep < config.sft.steps; phaseStep++) {
    const started = performance.now();
    const random = new Random(stepSeed(config.seed, step));
    const batch = Array.from({ length: config.sft.batchSize }, () => sftExamples[random.integer(sftExamples.length)]);
    const sequences = batch.map((example) =>
      renderDemonstration(
        context.promptFormat,
        example,
        task.demonstration(example, () => random.uniform()),
        eos,
      ),
    );
    optimizer.learningRate = learningRateAt(sftSchedule, phaseStep);
    const { metrics } = sftStep(sftUpdate, model, optimizer, sequences, stepSeed(config.seed, step));
    step++;
    const seconds = (performance.now() - started) / 1000;
    const tokens = sequences.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
    yield { kind: 'step', step, phase: 'sft', seconds, tokensPerSecond: tokens / seconds, metrics };
  }
  if (config.grpo.steps === 0) return yield { kind: 'done', step };
  if (config.sft.steps > 0) yield await evaluation(step, 'sft');
  yield* grpoSteps(context, optimizer, step, evaluation);
}

/**
 * GRPO steps on a run's context, one per `next()` call, as the trainer takes them; `evaluation`
 * (null: none) runs every `evaluation.every` steps and after the last. model-run.ts calls this for a
 * model picked from disk.
 */
export async function* grpoSteps(
  context: RunContext,
  optimizer: AdamW,
  firstStep: number,
  evaluation: ((step: number, phase: 'grpo') => Promise<BrowserRunEvent>) | null,
): AsyncGenerator<BrowserRunEvent> {
  const { config, model, algorithm: bound } = context;
  // β = 0 in the addition run's config, as in `npm start`: no reference model.
  if (bound.klCoefficient > 0) throw new Error('the browser run trains without a KL reference (algorithm.beta = 0)');
  if (bound.needs.has('referenceLogprobs'))
    throw new Error(`the browser run has no reference model, which the ${bound.loss.name} loss reads`);
  if (bound.needs.has('referenceTokenLogprobs'))
    throw new Error(`the browser run has no reference model, which the ${bound.advantage.name} estimator reads`);
  const environment = createStepEnvironment(context, null);
  const state: TrainerState = {
    step: firstStep,
    phase: 'grpo',
    phaseStep: 0,
    consecutiveSkips: 0,
    evalBefore: null,
    extra: {},
  };
  const schedule = {
    kind: config.grpo.schedule,
    learningRate: config.grpo.learningRate,
    warmupSteps: config.grpo.warmupSteps,
    totalSteps: config.grpo.steps,
  };
  while (state.phaseStep < config.grpo.steps) {
    const started = performance.now();
    const seed = stepSeed(config.seed, state.step);
    const rollout = { ...rolloutSettingsOf(context, config.seed), seed };
    const prepared = await prepareGrpoStep(environment, state, new Random(seed), rollout, state.phaseStep);
    optimizer.learningRate = learningRateAt(schedule, state.phaseStep);
    const trainStarted = performance.now();
    let stepMetrics: Record<string, number> = {};
    const passes: Record<string, number>[] = [];
    for (let iteration = 0; iteration < config.grpo.iterations && prepared.training.rows.length > 0; iteration++) {
      stepMetrics = policyStep(
        bound,
        environment.settings,
        model,
        optimizer,
        prepared.training,
        combineSeeds(seed, iteration),
      ).metrics;
      passes.push(stepMetrics);
    }
    recordStepState(bound, state, prepared, passes);
    const trainSeconds = (performance.now() - trainStarted) / 1000;
    state.step++;
    state.phaseStep++;
    const tokens = prepared.training.rows.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
    yield {
      kind: 'step',
      step: state.step,
      phase: 'grpo',
      seconds: (performance.now() - started) / 1000,
      // As the trainer logs it: training tokens over the optimisation's time.
      tokensPerSecond: (tokens * config.grpo.iterations) / Math.max(1e-9, trainSeconds),
      metrics: { ...rewardLogMetrics(prepared.firstRound), ...stepMetrics },
      samples: sampleRecords(state.step, prepared, 1, context.tokenizer),
    };
    const last = state.phaseStep === config.grpo.steps;
    if (evaluation && (last || (config.evaluation.every > 0 && state.phaseStep % config.evaluation.every === 0)))
      yield await evaluation(state.step, 'grpo');
  }
  yield { kind: 'done', step: state.step };
}
