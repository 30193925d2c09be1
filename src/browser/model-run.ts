/**
 * GRPO in a browser tab on a Hugging Face model folder the user picked from disk (config.json,
 * model.safetensors, tokenizer.json and its companions, held in memory), with prompts typed one per
 * line and a reward typed as a function (typed-reward.ts scores with it): the run's context built
 * from those bytes, then GRPO steps as browser-run.ts takes them, with the config of
 * recipes/tinystories-words.ts (no SFT, 8 completions per prompt, PPO-clip, token-mean, a constant
 * learning rate, β2 0.99) under the page's settings.
 *
 * Is not: file picking (the page reads the files), the reward's compilation (reward-worker.ts), a
 * held-out evaluation (a typed reward has no notion of correct; the page draws the reward curve),
 * sharded weights (refused with one sentence).
 */
import {
  advantageEstimators,
  groupFilters,
  klEstimators,
  lossAggregations,
  policyLosses,
  promptSelectors,
  turnCreditEstimators,
} from '../algorithms/index.js';
import { bindAlgorithm } from '../config/algorithm.js';
import { validateConfig, type TrainerConfig } from '../config/config.js';
import { promptFormatFor, renderPrompt } from '../config/prompt-format.js';
import type { Example, Task } from '../data/task.js';
import { checkpointFiles, checkTensors } from '../model/checkpoint-files.js';
import { parseModelConfig } from '../model/config.js';
import { checkTokenizerFitsModel, HfTokenizer } from '../model/hf-tokenizer.js';
import { readSafetensorsBytes } from '../model/safetensors-decode.js';
import { Transformer } from '../model/transformer.js';
import { AdamW } from '../nn/index.js';
import type { RewardScorer } from '../rewards/run.js';
import { singleTurnRollout } from '../rollout/rollout.js';
import { optimizedParameters } from '../trainer/optimize.js';
import type { RunContext } from '../trainer/setup.js';
import { grpoSteps, type BrowserRunEvent } from './browser-run.js';

/** What the page chooses for a run on a picked model. */
export interface ModelRunSettings {
  seed: number;
  grpoSteps: number;
  /** Prompts per step, each with 8 completions. */
  promptsPerStep: number;
  learningRate: number;
  maxNewTokens: number;
  /** The training prompts, cycled; plain text (rendered through the model's chat template if it has one). */
  prompts: string[];
}

/** Tokenizer files a picked folder may hold; they are written back unchanged into a saved checkpoint. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja'];

const decoder = new TextDecoder();

function jsonFile(files: ReadonlyMap<string, Uint8Array>, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(files.get(name)));
  } catch (error) {
    throw new Error(`${name}: not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${name}: not a JSON object`);
  return value as Record<string, unknown>;
}

/** Refuses a file set that is not one text model's HF folder, naming the missing or unsupported file. */
function checkFiles(files: ReadonlyMap<string, Uint8Array>): void {
  if (files.has('model.safetensors.index.json') && !files.has('model.safetensors'))
    throw new Error(
      'sharded weights (model.safetensors.index.json) are not read in the page: pick a model with one model.safetensors',
    );
  for (const name of ['config.json', 'model.safetensors', 'tokenizer.json'])
    if (!files.has(name))
      throw new Error(
        `the picked files have no ${name}: pick a Hugging Face model folder's config.json, model.safetensors and tokenizer files`,
      );
}

/** The run's config: the TinyStories recipe's settings under the page's. */
export function modelRunConfig(settings: ModelRunSettings): TrainerConfig {
  if (settings.prompts.length === 0) throw new Error('the prompts box is empty: write at least one prompt, one a line');
  return validateConfig(
    {
      task: 'typed-reward',
      seed: settings.seed,
      sft: { steps: 0 },
      sampling: { groupSize: 8, maxNewTokens: settings.maxNewTokens, temperature: 1 },
      grpo: {
        steps: settings.grpoSteps,
        promptsPerStep: settings.promptsPerStep,
        // The recipe's 32, or the whole step when it has fewer completions.
        microBatchSize: Math.min(32, settings.promptsPerStep * 8),
        learningRate: settings.learningRate,
        schedule: 'constant',
      },
      optimizer: { beta2: 0.99 },
      algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean' },
      rewardWorkers: { threads: 0 },
    },
    {
      advantage: advantageEstimators.names(),
      loss: policyLosses.names(),
      aggregation: lossAggregations.names(),
      klEstimator: klEstimators.names(),
      groupFilter: groupFilters.names(),
      promptSelector: promptSelectors.names(),
      turnCredit: turnCreditEstimators.names(),
      task: ['typed-reward'],
    },
  );
}

function promptTask(prompts: string[]): Task {
  const examples = (count: number): Example[] =>
    Array.from({ length: count }, (_, i) => ({ prompt: prompts[i % prompts.length], answer: '' }));
  return {
    name: 'typed-reward',
    description: 'the prompts typed in the page, scored by the reward typed in the page',
    alphabet: '',
    trainExamples: examples,
    evalExamples: examples,
    demonstration: () => {
      throw new Error('a run on a picked model has no demonstrations (no SFT)');
    },
    rewards: () => [],
    isCorrect: () => false,
  };
}

/**
 * A GRPO run on the picked `files` (file name → bytes), scored by `scoreRewards` (one reward, named
 * "reward"). Checks the files, the config and the prompts' length before any step. `onModel`
 * receives a function that returns the model's checkpoint folder as it stands, as browserRun's does.
 */
export async function* modelRun(
  settings: ModelRunSettings,
  files: ReadonlyMap<string, Uint8Array>,
  scoreRewards: RewardScorer,
  onModel?: (checkpoint: () => Map<string, Uint8Array>) => void,
): AsyncGenerator<BrowserRunEvent> {
  checkFiles(files);
  const config = modelRunConfig(settings);
  const modelConfig = parseModelConfig(jsonFile(files, 'config.json'), 'config.json');
  // Checked by name and shape as a folder on disk is (a tied matrix may be stored as lm_head.weight).
  const tensors = checkTensors(
    modelConfig,
    readSafetensorsBytes(files.get('model.safetensors')!, 'model.safetensors'),
    () => 'model.safetensors',
  );
  const tokenizerConfig = files.has('tokenizer_config.json') ? jsonFile(files, 'tokenizer_config.json') : {};
  const chatTemplate = files.has('chat_template.jinja') ? decoder.decode(files.get('chat_template.jinja')) : null;
  const tokenizer = new HfTokenizer(
    jsonFile(files, 'tokenizer.json'),
    tokenizerConfig,
    typeof tokenizerConfig.chat_template === 'string' ? tokenizerConfig.chat_template : chatTemplate,
    'the picked tokenizer',
  );
  checkTokenizerFitsModel(tokenizer, modelConfig, 'the picked tokenizer');
  const model = Transformer.fromTensors(modelConfig, tensors);
  const task = promptTask(settings.prompts);
  const tokenizerFiles = Object.fromEntries(
    TOKENIZER_FILES.filter((name) => files.has(name)).map((name) => [name, decoder.decode(files.get(name))]),
  );
  const context: RunContext = {
    config,
    task,
    tokenizer,
    tokenizerFiles,
    model,
    // config.json's end-of-text ids and the tokenizer's eos_token, as generation stops on either.
    stopTokenIds: [
      ...new Set([...modelConfig.eosTokenIds, ...(tokenizer.eosTokenId === null ? [] : [tokenizer.eosTokenId])]),
    ],
    // The weight is all the step code reads of a reward here; scoring goes through scoreRewards.
    rewards: [{ name: 'reward', reward: () => null, weight: 1 }],
    scoreRewards,
    rewardSource: null,
    algorithm: bindAlgorithm(config, {
      sampleRows: task.trainExamples(16, 0),
      rolloutProvides: singleTurnRollout.provides ?? [],
      rewardNames: ['reward'],
    }),
    promptFormat: promptFormatFor('auto', tokenizer),
    rollout: singleTurnRollout,
    vision: null,
  };
  const positions = modelConfig.maxPositionEmbeddings;
  for (const prompt of settings.prompts) {
    const length = renderPrompt(context.promptFormat, { prompt }).ids.length;
    if (length + config.sampling.maxNewTokens > positions)
      throw new Error(
        `max new tokens: ${config.sampling.maxNewTokens} plus the prompt ${JSON.stringify(prompt.slice(0, 40))} (${length} tokens) is over the model's ${positions} positions`,
      );
  }
  onModel?.(() =>
    checkpointFiles({ config: model.config, tensors: model.toStoredTensors(), extraFiles: tokenizerFiles }),
  );
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: config.grpo.learningRate,
    beta1: config.optimizer.beta1,
    beta2: config.optimizer.beta2,
    epsilon: config.optimizer.epsilon,
    weightDecay: config.optimizer.weightDecay,
  });
  yield* grpoSteps(context, optimizer, 0, null);
}
