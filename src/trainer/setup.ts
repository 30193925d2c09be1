/**
 * Builds what a run needs from a validated config: the task, the tokenizer, the model (from a
 * checkpoint or from scratch, with LoRA adapters attached when configured), the rewards, and the
 * algorithm functions looked up by name; checks that every prompt fits the model's positions; and
 * starts the run's reward workers when the config asks for them.
 *
 * Is not: the loop. Everything here runs before any compute, so bad input fails fast here.
 */
import {
  advantageEstimators,
  groupFilters,
  klEstimators,
  lossAggregations,
  policyLosses,
  promptSelectors,
  turnCreditEstimators,
  type Part,
} from '../algorithms/index.js';
import { drawOnce, type Task } from '../data/task.js';
import { taskRegistry } from '../data/index.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { readSafetensorsHeader } from '../model/safetensors.js';
import { createSmallConfig } from '../model/config.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { checkTokenizerFitsModel, loadTokenizer, type TextTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { LoraAdapters, resolveTargetModules } from '../model/lora.js';
import {
  checkRewardColumns,
  checkRewardToolCalls,
  rewardFactories,
  scoreRewards,
  type RewardScorer,
} from '../rewards/index.js';
import type { NamedReward, RewardInput } from '../rewards/types.js';
import type { RewardSource } from '../rewards/workers.js';
import { trainerConfigSchema, validateConfig, type KnownNames, type TrainerConfig } from '../config/config.js';
import { checkpointDefaults, fittedMicroBatchSize, namesCheckpoint } from '../config/checkpoint-defaults.js';
import { applyPreset, mergeConfig, presetNames } from '../config/presets.js';
import { bindAlgorithm, type BoundAlgorithm } from '../config/algorithm.js';
import { promptFormatFor, type PromptFormat } from '../config/prompt-format.js';
import { openaiRollout } from '../rollout/openai-rollout.js';
import { singleTurnRollout, type RolloutFn } from '../rollout/rollout.js';
import { groundTruthProblems, groundTruthRollout } from '../rollout/ground-truth.js';
import { frozenLogprobs, stepSettingsOf } from './optimize.js';
import type { EnvironmentFactory } from '../agents/types.js';
import {
  ENVIRONMENT_REWARD,
  environmentReward,
  multiTurnRollout,
  resolveToolCallFormat,
} from '../rollout/multi-turn-rollout.js';
import { isIdefics3Checkpoint } from '../model/vision/idefics3-config.js';
import { refuseWithImages, type VisionRun } from './vision-run.js';
import { createVisionModel, loadVisionModel } from './vision-setup.js';
import { drawTogetherSets } from '../data/draw-together.js';
import type { Example } from '../data/task.js';
import { renderPrompt } from '../config/prompt-format.js';
import { RewardWorkerPool } from '../rewards/workers.js';

/** What a recipe file exports: a config (as written, before defaults) and optional reward functions. */
export interface Recipe {
  config: Record<string, unknown>;
  /** Rewards written in the recipe; they replace the task's and the config's `rewards`. */
  rewards?: NamedReward[];
  /** A task written in the recipe (prompts, held-out split, correctness); replaces `config.task`. */
  task?: Task;
  /** A rollout written in the recipe (multi-turn, serial exits, a remote engine); replaces the single-turn one. */
  rollout?: RolloutFn;
  /** Creates each episode's environment: the run rolls out multi-turn tool-use episodes (needs the config's `agent`). */
  environment?: EnvironmentFactory;
  /**
   * Algorithm parts written in the recipe (`defineAdvantageEstimator`, `definePolicyLoss`, …): they
   * join the registries of their kinds when the recipe is loaded, so its config and `--set` can name
   * them like built-ins (docs/adding-an-advantage-estimator.md).
   */
  parts?: readonly Part<unknown>[];
}

export function knownNames(): KnownNames {
  return {
    advantage: advantageEstimators.names(),
    loss: policyLosses.names(),
    aggregation: lossAggregations.names(),
    klEstimator: klEstimators.names(),
    groupFilter: groupFilters.names(),
    promptSelector: promptSelectors.names(),
    turnCredit: turnCreditEstimators.names(),
    task: taskRegistry.names(),
  };
}

/**
 * Applies the preset named in the input (if any), then validates; `extraTasks` are tasks a recipe
 * defines. Layers, each winning over the ones before it: the schema's defaults, the task's
 * recommended settings (pass the loaded `task`: a task over data files is loaded first, see
 * `loadRunTask`; without it a generated task's are used), TRL's defaults when the input names a
 * `model.checkpoint` (checkpoint-defaults.ts), the preset, and the input itself. A
 * `grpo.microBatchSize` the input and preset leave out is fitted to the step's completions.
 */
export function resolveConfig(input: unknown, extraTasks: string[] = [], task?: Task): TrainerConfig {
  const raw = (input ?? {}) as Record<string, unknown>;
  const preset = raw.preset;
  if (preset !== undefined && (typeof preset !== 'string' || !presetNames().includes(preset))) {
    throw new Error(
      `invalid config:\n- preset: unknown preset ${JSON.stringify(preset)}; known: ${presetNames().join(', ')}`,
    );
  }
  const withPreset = typeof preset === 'string' ? applyPreset(preset, raw) : raw;
  const taskName = typeof raw.task === 'string' ? raw.task : 'addition';
  const recommended =
    task?.recommendedConfig ??
    (taskRegistry.names().includes(taskName) && taskRegistry.isGenerated(taskName)
      ? taskRegistry.get(taskName)((raw.taskOptions ?? {}) as Record<string, unknown>).recommendedConfig
      : undefined);
  const defaults = mergeConfig(recommended ?? {}, namesCheckpoint(raw) ? structuredClone(checkpointDefaults) : {});
  const merged = withFittedMicroBatch(mergeConfig(defaults, withPreset), withPreset);
  const known = knownNames();
  return validateConfig(merged, { ...known, task: [...known.task, ...extraTasks] });
}

/**
 * `merged` with its default micro-batch fitted to the step (`fittedMicroBatchSize`) unless `chosen`
 * (the input with its preset) sets `grpo.microBatchSize`: an explicit value is kept, and refused by
 * validateConfig when it does not fit. A config the schema refuses is returned as it is, for
 * validateConfig to name its fields.
 */
function withFittedMicroBatch(
  merged: Record<string, unknown>,
  chosen: Record<string, unknown>,
): Record<string, unknown> {
  const chosenGrpo = chosen.grpo;
  if (typeof chosenGrpo === 'object' && chosenGrpo !== null && 'microBatchSize' in chosenGrpo) return merged;
  const parsed = trainerConfigSchema.safeParse(merged);
  if (!parsed.success) return merged;
  const { grpo, sampling } = parsed.data;
  const microBatchSize = fittedMicroBatchSize(grpo.promptsPerStep * sampling.groupSize, grpo.microBatchSize);
  return microBatchSize === grpo.microBatchSize ? merged : mergeConfig(merged, { grpo: { microBatchSize } });
}

/**
 * The task a config names, loaded (tasks over data files read their files here, before any model
 * is loaded; `taskOptions` are checked by the task's schema). A recipe's own task wins; a recipe's
 * own rewards are handed to a task over data files (a `dataset` task then needs no reward by name).
 */
export async function loadRunTask(
  input: unknown,
  recipeTask?: Task,
  recipeRewards?: NamedReward[],
): Promise<Task | undefined> {
  if (recipeTask) return recipeTask;
  const raw = (input ?? {}) as Record<string, unknown>;
  const name = typeof raw.task === 'string' ? raw.task : 'addition';
  if (!taskRegistry.names().includes(name)) return undefined; // validateConfig names the unknown task
  return taskRegistry.load(name, (raw.taskOptions ?? {}) as Record<string, unknown>, { rewards: recipeRewards });
}

/**
 * The bound algorithm of a run: its parts' options and needs checked against the first training
 * rows (the same draw the GRPO loop makes), what `rollout` provides and the run's reward names. Runs before any model loads.
 */
export function bindRunAlgorithm(
  config: TrainerConfig,
  task: Task,
  rollout: RolloutFn,
  rewards: readonly NamedReward[],
): BoundAlgorithm {
  return bindAlgorithm(config, {
    sampleRows: task.trainExamples(Math.min(16, config.grpo.examples), config.seed + 2),
    rolloutProvides: rollout.provides ?? [],
    rewardNames: rewards.map((reward) => reward.name),
  });
}

export interface RunContext {
  config: TrainerConfig;
  task: Task;
  tokenizer: TextTokenizer;
  /** Extra tokenizer files to write into checkpoints (the char tokenizer's HF form). */
  tokenizerFiles: Record<string, string>;
  /** Folder tokenizer files are copied from, for checkpoint-based runs. */
  sourceDirectory?: string;
  model: Transformer;
  stopTokenIds: number[];
  rewards: NamedReward[];
  /**
   * Scores groups with `rewards`: on this thread with `rewardWorkers.timeoutMs` per call; train()
   * swaps in a worker pool's scorer when `rewardWorkers.threads` > 0 (withRewardWorkers, below).
   */
  scoreRewards: RewardScorer;
  /** Where reward workers rebuild `rewards` (a module's export and plain-data arguments; `grpo train` sets it), or null. */
  rewardSource: RewardSource | null;
  /** The algorithm resolved once: functions, parsed options, checked needs. */
  algorithm: BoundAlgorithm;
  /** How prompts become tokens in every phase (chat template or plain text). */
  promptFormat: PromptFormat;
  rollout: RolloutFn;
  /** A vision-language run's model and image processor (`model` is then its language model); null = text only. */
  vision: VisionRun | null;
}

/** The run's task: the recipe's (or a loaded dataset task), else a generated one from the registry. */
function runTask(config: TrainerConfig, recipe: Omit<Recipe, 'config'>): Task {
  if (!recipe.task && taskRegistry.names().includes(config.task) && !taskRegistry.isGenerated(config.task)) {
    throw new Error(
      `task "${config.task}" reads data files: load it first and pass it (createRunContext(config, { task: await loadRunTask(input) }))`,
    );
  }
  return drawOnce(recipe.task ?? taskRegistry.get(config.task)(config.taskOptions));
}

/**
 * The rewards a run scores with: the recipe's code rewards, else the config's or the task's
 * (buildRewards), plus the environments' reward for agent runs. A reward worker calls this too
 * (through its source), so the workers and the run build the same rewards.
 */
export function runRewards(config: TrainerConfig, recipe: Omit<Recipe, 'config'> = {}): NamedReward[] {
  return rewardsOf(config, runTask(config, recipe), recipe);
}

function rewardsOf(config: TrainerConfig, task: Task, recipe: Omit<Recipe, 'config'>): NamedReward[] {
  return withEnvironmentReward(
    recipe.rewards ?? buildRewards(config, task, Boolean(recipe.environment)),
    recipe.environment,
  );
}

/**
 * Loads or creates everything; a TypeScript recipe's rewards and task replace the configured ones.
 * `rewardSource`: where reward workers rebuild the rewards (needed when `rewardWorkers.threads` > 0).
 */
export function createRunContext(
  config: TrainerConfig,
  recipe: Omit<Recipe, 'config'> & { rewardSource?: RewardSource } = {},
): RunContext {
  const task = runTask(config, recipe);
  if (config.rewardWorkers.threads > 0 && !recipe.rewardSource)
    throw new Error(
      'invalid config:\n- rewardWorkers.threads: reward workers rebuild the rewards in each thread, and rewards passed as functions cannot cross threads; name the rewards (config `rewards`) or write them in a recipe file and run it with `grpo train --recipe`, or set rewardWorkers.threads to 0',
    );
  const rollout = runRollout(config, recipe);
  const rewards = rewardsOf(config, task, recipe);
  // Before any model is loaded: the columns the rewards read, on the rows the GRPO loop draws first.
  const firstRows = task.trainExamples(Math.min(16, config.grpo.examples), config.seed + 2);
  checkRewardColumns(rewards, firstRows);
  checkGroundTruth(config, firstRows);
  checkRewardToolCalls(rewards, (rollout.provides ?? []).includes('toolCalls'));
  // Before any model is loaded: every part's options and needs against the data, the rollout and the rewards.
  const algorithm = bindRunAlgorithm(config, task, rollout, rewards);
  // grpo.drawTogether's sets, checked on the training list the steps will draw from.
  if (config.grpo.drawTogether !== null)
    drawTogetherSets(
      config.grpo.drawTogether,
      task.trainExamples(config.grpo.examples, config.seed + 2),
      config.grpo.promptsPerStep,
      algorithm.promptSelector !== null,
    );
  let tokenizer: TextTokenizer;
  let tokenizerFiles: Record<string, string> = {};
  let model: Transformer;
  let stopTokenIds: number[];
  let sourceDirectory: string | undefined;
  let checkpointFiles: string[] = [];
  let vision: VisionRun | null = null;
  const checkpoint = config.model.checkpoint;
  if (config.model.vision || (checkpoint && isIdefics3Checkpoint(checkpoint))) {
    refuseWithImages(config, algorithm, recipe); // before the model is loaded
    const parts = checkpoint
      ? loadVisionModel(checkpoint, config.model.imageProcessor)
      : createVisionModel(config, task.alphabet);
    ({ vision, tokenizer, tokenizerFiles, stopTokenIds } = parts);
    model = parts.vision.model.language;
    sourceDirectory = checkpoint;
  } else if (config.model.checkpoint) {
    const checkpoint = loadModelField(config.model.checkpoint);
    checkpointFiles = checkpoint.files;
    tokenizer = loadTokenizer(config.model.checkpoint);
    checkTokenizerFitsModel(tokenizer, checkpoint.config, config.model.checkpoint);
    model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    stopTokenIds = resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig);
    sourceDirectory = config.model.checkpoint;
  } else {
    const charTokenizer = new CharTokenizer({ alphabet: task.alphabet });
    tokenizer = charTokenizer;
    tokenizerFiles = charTokenizer.toHfFiles();
    const modelConfig = createSmallConfig({
      vocabSize: charTokenizer.vocabSize,
      hiddenSize: config.model.hiddenSize,
      numLayers: config.model.numLayers,
      numHeads: config.model.numHeads,
      numKeyValueHeads: config.model.numKeyValueHeads,
      intermediateSize: config.model.intermediateSize,
      bosTokenId: charTokenizer.bosTokenId,
      eosTokenIds: [charTokenizer.eosTokenId],
    });
    model = Transformer.random(modelConfig, config.model.initSeed);
    stopTokenIds = [charTokenizer.eosTokenId];
  }
  if (!vision) refuseImagesWithTextModel(config, task);
  checkGroundTruth(config, firstRows, { tokenizer, stopTokenIds });
  // Seeded by model.initSeed, like a from-scratch model: the same config gives the same adapters.
  if (config.lora) attachLora(model, config.lora, config.model.initSeed, checkpointFiles);
  model.recompute = config.model.recomputeActivations;
  const promptFormat = promptFormatFor(config.model.chatTemplate, tokenizer);
  if (config.agent) {
    if (promptFormat.chatTemplate === null)
      throw new Error(
        'invalid config:\n- agent: multi-turn episodes render tool results through a chat template, and this model has none; set model.chatTemplate (a .jinja file or the template text)',
      );
    resolveToolCallFormat(config.agent.toolCallFormat, promptFormat.chatTemplate); // 'auto' must find one
  }
  const context = {
    config,
    task,
    tokenizer,
    tokenizerFiles,
    sourceDirectory,
    model,
    stopTokenIds,
    rewards,
    scoreRewards: (groups: Parameters<RewardScorer>[0]) =>
      scoreRewards(rewards, groups, { timeoutMs: config.rewardWorkers.timeoutMs }),
    rewardSource: recipe.rewardSource ?? null,
    algorithm,
    rollout,
    promptFormat,
    vision,
  };
  checkPositionBudget(context);
  return context;
}

/** The checkpoint `model.checkpoint` names; a missing or wrong folder names the field and its flag. */
function loadModelField(directory: string): ReturnType<typeof loadCheckpoint> {
  try {
    return loadCheckpoint(directory);
  } catch (error) {
    throw new Error(`invalid config:\n- model.checkpoint (--model): ${(error as Error).message}`);
  }
}

/** A text-only model cannot train on rows with images, nor take image-processor settings: refused naming the field. */
function refuseImagesWithTextModel(config: TrainerConfig, task: Task): void {
  if (Object.keys(config.model.imageProcessor).length > 0)
    throw new Error(
      'invalid config:\n- model.imageProcessor: applies to a vision-language (idefics3) checkpoint, and this model is text-only',
    );
  const [row] = task.trainExamples(1, config.seed + 2);
  if (row && (row.images?.length ?? 0) > 0)
    throw new Error(
      `invalid config:\n- task: the rows of "${task.name}" carry images and the model is text-only; give model.checkpoint an idefics3 (SmolVLM) folder or set model.vision for one from scratch (docs/vision.md)`,
    );
}

/**
 * The run's rollout: the recipe's, the multi-turn one over the recipe's environments (which needs
 * the `agent` section, and the section needs them), or single-turn generation.
 */
function runRollout(config: TrainerConfig, recipe: Omit<Recipe, 'config'>): RolloutFn {
  if (recipe.environment && !config.agent)
    throw new Error(
      'invalid config:\n- agent: the recipe exports an environment, so the config needs an agent section (e.g. agent: { maxTurns: 4 }) to run multi-turn episodes',
    );
  if (config.agent && !recipe.environment)
    throw new Error(
      'invalid config:\n- agent: multi-turn episodes need environments; a TypeScript recipe must export `environment` (an EnvironmentFactory, docs/agents.md)',
    );
  if (recipe.environment && recipe.rollout)
    throw new Error(
      'recipe: exports both `rollout` and `environment`; the environment runs in the built-in multi-turn rollout, so give one',
    );
  if ((recipe.rollout || recipe.environment) && config.rollout.engine === 'openai')
    throw new Error(
      "invalid config:\n- rollout.engine: 'openai' generates single-turn rollouts itself; a recipe's own rollout or environment cannot run on it (leave rollout.engine 'local')",
    );
  const template = config.grpo.groundTruthCompletion;
  if (template !== null && recipe.environment)
    throw new Error(
      'invalid config:\n- grpo.groundTruthCompletion: a ground-truth completion replaces a single-turn sample; multi-turn episodes (agent) have no such text, so leave it null',
    );
  if (recipe.environment) return multiTurnRollout(checkedEnvironments(config, recipe.environment), config.agent!);
  const rollout =
    recipe.rollout ?? (config.rollout.engine === 'openai' ? openaiRollout(config.rollout) : singleTurnRollout);
  if (template === null) return rollout;
  if ((rollout.provides ?? []).length > 0 || config.sampling.groupSize < 2)
    throw new Error(
      `invalid config:\n- grpo.groundTruthCompletion: the ground truth takes the last place of a group of independent single-turn samples, so it needs sampling.groupSize ≥ 2 (it is ${config.sampling.groupSize}) and a rollout that provides nothing more (this one provides ${JSON.stringify(rollout.provides ?? [])})`,
    );
  const { microBatchSize } = stepSettingsOf(config);
  return groundTruthRollout(rollout, template, ({ model }, rows, temperature) =>
    frozenLogprobs(model, rows, { microBatchSize, temperature }),
  );
}

/** Before any compute: the ground-truth template on the rows the loop draws first (rollout/ground-truth.ts). */
function checkGroundTruth(
  config: TrainerConfig,
  rows: readonly Example[],
  tokens?: Parameters<typeof groundTruthProblems>[3],
) {
  const template = config.grpo.groundTruthCompletion;
  const problems = template === null ? [] : groundTruthProblems(template, rows, config.sampling.maxNewTokens, tokens);
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
}

/**
 * The factory, wrapped so that a turn-credit estimator that needs anchor states (GiGPO) refuses an
 * environment without `stateKey()` as soon as the first one is made, before anything is decoded.
 */
function checkedEnvironments(config: TrainerConfig, factory: EnvironmentFactory): EnvironmentFactory {
  const name = config.algorithm.turnCredit?.name;
  if (name === undefined || !turnCreditEstimators.entry(name).needs?.includes('stateKeys')) return factory;
  return async (row, context) => {
    const environment = await factory(row, context);
    if (typeof environment.stateKey !== 'function')
      throw new Error(
        `algorithm.turnCredit: ${name} groups turns by the environment's anchor state, and the recipe's environment has no stateKey()`,
      );
    return environment;
  };
}

/** With environments, the reward named 'environment' (their `reward()`) joins the run's rewards unless one has that name. */
function withEnvironmentReward(rewards: NamedReward[], environment: EnvironmentFactory | undefined): NamedReward[] {
  if (!environment || rewards.some((reward) => reward.name === ENVIRONMENT_REWARD)) return rewards;
  return [...rewards, environmentReward()];
}

/**
 * The rewards a resolved config names: the task's own when `config.rewards` is empty, else each
 * entry from the task's rewards or the built-in factories (an unknown name lists the known ones);
 * with environments, 'environment' (their `reward()`) takes the configured weight. Shared by the
 * trainer and `grpo serve-rewards`, so both score with the same functions.
 */
export function buildRewards(
  config: TrainerConfig,
  task: Task,
  hasEnvironments = false,
  /**
   * Whether the rows scored are the task's, so its check may stand for an unnamed correctness (false in
   * `grpo serve-rewards` when no task was named: the rows come from elsewhere and the default task's
   * answer format says nothing of them).
   */
  rowsAreTheTasks = true,
): NamedReward[] {
  if (config.rewards.length === 0) return task.rewards();
  const taskRewards = new Map(task.rewards().map((reward) => [reward.name, reward]));
  // The task's own check, for rewards whose correctness defaults to it (tool-efficiency, unlikeliness,
  // length-among-correct).
  const taskCorrectness = rowsAreTheTasks
    ? async ({ row, completion }: RewardInput) => ((await task.isCorrect(row as Example, completion)) ? 1 : 0)
    : undefined;
  return config.rewards.map(({ name, weight, options }, index) => {
    const fromTask = taskRewards.get(name);
    if (fromTask) {
      // The task's own function takes no options: dropping them silently would train on other settings.
      if (Object.keys(options).length > 0)
        throw new Error(
          `invalid config:\n- rewards[${index}]: "${name}" is task "${task.name}"'s own reward, which takes no options (got ${Object.keys(options).join(', ')}); drop them, or name a built-in reward`,
        );
      return { ...fromTask, weight };
    }
    if (name === ENVIRONMENT_REWARD && hasEnvironments) return environmentReward(weight);
    if (!rewardFactories.has(name)) {
      const known = [...taskRewards.keys(), ...rewardFactories.names()];
      throw new Error(`invalid config:\n- rewards: unknown reward "${name}"; known: ${known.join(', ')}`);
    }
    const factory = rewardFactories.get(name);
    const columns = factory.columns(options, { taskCorrectness });
    return {
      name,
      reward: factory.create(options, { taskCorrectness }),
      weight,
      columns,
      needsToolCalls: factory.needsToolCalls,
    };
  });
}

/**
 * Attaches fresh adapters as `lora` says (freezing the base), then keeps the frozen linears in
 * bfloat16 and turns on per-layer recomputation when it says so. `checkpointFiles`: the loaded
 * checkpoint's files, whose safetensors headers decide baseDtype 'auto' (empty for a random model).
 */
export function attachLora(
  model: Transformer,
  lora: NonNullable<TrainerConfig['lora']>,
  seed: number,
  checkpointFiles: readonly string[],
): void {
  const { rank, alpha, rsLora, targetModules } = lora;
  const settings = { rank, alpha, rsLora, targetModules: resolveTargetModules(targetModules) };
  model.attachAdapters(LoraAdapters.create(model.config, settings, seed));
  const linearDtypes = checkpointFiles
    .filter((file) => file.endsWith('.safetensors'))
    .flatMap((file) => [...readSafetensorsHeader(file).entries])
    .filter(([name]) => /_proj\.weight$/.test(name))
    .map(([, entry]) => entry.dtype);
  const storedInBfloat16 = linearDtypes.length > 0 && linearDtypes.every((dtype) => dtype === 'BF16');
  if (lora.baseDtype === 'bfloat16' || (lora.baseDtype === 'auto' && storedInBfloat16))
    model.keepFrozenLinearsInBfloat16();
  model.adapterDropout = lora.dropout;
}

// The position check: every prompt the run will sample from (the GRPO training prompts and the
// held-out evaluation prompts) plus `sampling.maxNewTokens`, and `sft.packLength`, must fit in the
// model's max_position_embeddings. Positions past it are extrapolation the model never saw; the
// sampler refuses them too, but only when it is reached, which can be after the whole SFT phase.
// SFT demonstrations are not checked: their length depends on the draw.

/** The longest encoded prompt of `examples`, with its text for the error message. */
function longestPrompt(context: RunContext, examples: readonly Example[]): { length: number; prompt: string } {
  let longest = { length: 0, prompt: '' };
  for (const example of examples) {
    const { text, ids } = renderPrompt(context.promptFormat, example);
    if (ids.length > longest.length) longest = { length: ids.length, prompt: text };
  }
  return longest;
}

/** Throws naming the field when a run would go past the model's max_position_embeddings. */
export function checkPositionBudget(context: RunContext): void {
  const { config, task, model } = context;
  const positions = model.config.maxPositionEmbeddings;
  const source = config.model.checkpoint
    ? `the max_position_embeddings of ${config.model.checkpoint}/config.json`
    : 'the max_position_embeddings of a from-scratch model';
  const problems: string[] = [];
  if (config.sft.steps > 0 && config.sft.packLength > positions) {
    problems.push(`- sft.packLength: ${config.sft.packLength} is over ${source} (${positions})`);
  }
  // The same draws as trainer.ts: GRPO prompts with seed + 2, held-out prompts with seed + 1.
  const sets: Array<[string, Example[]]> = [
    ['held-out', task.evalExamples(config.evaluation.examples, config.seed + 1)],
  ];
  if (config.grpo.steps > 0) sets.unshift(['GRPO', task.trainExamples(config.grpo.examples, config.seed + 2)]);
  for (const [name, examples] of sets) {
    const { length, prompt } = longestPrompt(context, examples);
    if (length + config.sampling.maxNewTokens > positions) {
      problems.push(
        `- sampling.maxNewTokens: ${config.sampling.maxNewTokens} plus the longest ${name} prompt (${length} tokens, ${JSON.stringify(prompt.slice(0, 40))}) is ${length + config.sampling.maxNewTokens} positions, over ${source} (${positions})`,
      );
    }
  }
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
}

// Reward workers (`rewardWorkers.threads` > 0): a pool of worker threads built from the run's reward
// source, whose scorer replaces the run's in-process one until the run ends. A reward call past
// `rewardWorkers.timeoutMs` has its worker stopped, even a synchronous loop, and is a failed reward
// naming the reward (the sample leaves the loss, as for a reward that throws); the run goes on with
// a replacement worker. Checked before the first step: the workers built the run's rewards, in order.

/** The context scoring in workers when the config asks for them, and how to stop them. */
export async function withRewardWorkers(
  context: RunContext,
): Promise<{ context: RunContext; close: () => Promise<void> }> {
  const { threads, timeoutMs, memoryMb } = context.config.rewardWorkers;
  if (threads === 0) return { context, close: async () => {} };
  if (!context.rewardSource) throw new Error('rewardWorkers.threads: this run has no reward source for the workers');
  // Training scores one batch at a time: every worker serves it (a server keeps one for other clients).
  const pool = await RewardWorkerPool.start({
    source: context.rewardSource,
    threads,
    timeoutMs,
    memoryMb,
    keepOneFree: false,
  });
  const expected = context.rewards.map(({ name }) => name);
  if (pool.names.join('\n') !== expected.join('\n')) {
    await pool.close();
    throw new Error(
      `rewardWorkers: the workers built the rewards ${pool.names.join(', ')}, but the run has ${expected.join(', ')}`,
    );
  }
  return { context: { ...context, scoreRewards: (groups) => pool.score(groups) }, close: () => pool.close() };
}
