/**
 * The rollout step as a replaceable function: prompts in, G completions per prompt out, each with
 * token ids, old-policy logprobs and a loss mask. The default is single-turn generation with the
 * in-process sampler; multi-turn tool use, tree rollouts or a remote inference engine plug in by
 * passing another RolloutFn, without touching the loop.
 *
 * Is not: scoring or advantage computation.
 */
import type { Example } from '../data/task.js';
import type { RewardEpisode } from '../rewards/types.js';
import type { DecodedImage } from '../model/vision/image-processor.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { Transformer } from '../model/transformer.js';
import { generate } from '../sampling/index.js';
import { noGrad } from '../tensor/index.js';
import type { Tensor } from '../tensor/index.js';

/** What a rollout function can produce beyond ids, logprobs and masks (a RolloutFn's `provides`). */
export type RolloutProvision = 'serialExits' | 'toolCalls' | 'turns';

/**
 * A prompt's images as a forward needs them. The frozen tower's outputs are computed once per image
 * per step; `connect` (the trainable connector of the model being run: the policy's, or the frozen
 * reference's) turns them into features on every forward, so each forward records its own graph.
 * Sequences of one prompt share the object, and a forward connects each distinct one once.
 */
export interface SequenceImages {
  /** The image token id whose embedding rows the features replace. */
  tokenId: number;
  /** [imageCount, patches, visionHidden] the vision tower's outputs, without gradient. */
  visionOutputs: Tensor;
  /** visionOutputs → [imageCount·tokensPerImage, H] features. */
  connect: (visionOutputs: Tensor) => Tensor;
}

export interface RolloutPrompt {
  example: Example;
  promptIds: number[];
  /** Index of the example in the run's training list: the key of per-prompt state (value tracker, selector posteriors). */
  exampleIndex?: number;
  /** The prompt text the model saw (the rendered chat template, or the plain text), for samples.jsonl. */
  text?: string;
  /** The prompt's images (vision-language runs): their features fill the prompt's image tokens. */
  images?: SequenceImages;
  /** The prompt's images as decoded (vision-language runs), for samples.jsonl. */
  pictures?: DecodedImage[];
}

export interface RolloutSettings {
  groupSize: number;
  maxNewTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  stopTokenIds: number[];
  seed: number;
  /**
   * The GRPO step this rollout serves (0-based within the phase, kept across a resume and the same
   * for every refill round of the step), for rollouts that schedule by step; absent outside a step.
   */
  step?: number;
}

/** One trained row: a prompt and the completion tokens that extend it, with what the loss needs per token. */
export interface RolloutRow {
  promptIds: number[];
  completionIds: number[];
  /** Log π_old of each completion token; 0 where lossMask is 0 (observation tokens have no old logprob). */
  oldLogprobs: number[];
  lossMask: number[];
  /** Per completion token: the model turn it belongs to (0-based), -1 for observation tokens. */
  tokenTurns?: number[];
}

export interface RolloutSample {
  promptIndex: number;
  completionIds: number[];
  /** Log π_old of each completion token (what the sampler saw, under logits / temperature). */
  oldLogprobs: number[];
  /** 1 for tokens the policy produced and is trained on; 0 for e.g. tool output in multi-turn rollouts. */
  lossMask: number[];
  /** The text rewards see (stop tokens and specials removed). */
  text: string;
  truncated: boolean;
  /** Tool calls the episode made (multi-turn rollouts that declare provides: ['toolCalls']). */
  toolCalls?: number;
  /** Model turns of the episode (multi-turn rollouts that declare provides: ['turns']). */
  turns?: number;
  /**
   * The prompt ids this sample's completion extends, when the rollout rendered the prompt itself
   * (e.g. with tool definitions); absent = the prompt's `promptIds`.
   */
  promptIds?: number[];
  /** Per completion token: the model turn it belongs to (0-based), -1 for observation tokens. */
  tokenTurns?: number[];
  /**
   * Further rows of the same episode, after a point where the chat template rewrote the history so
   * that the next prompt no longer extended the tokens so far. Each is trained like the sample
   * itself, with the sample's advantage; rewards and metrics see the episode once.
   */
  continuationRows?: RolloutRow[];
  /** The whole episode (multi-turn rollouts): rewards see it as `RewardInput.episode`. */
  episode?: RewardEpisode;
  /** Per model turn: the environment's anchor-state key before that turn (environments with stateKey()). */
  stateKeys?: string[];
  /** The row's ground truth put in the group's place (rollout/ground-truth.ts), not a sample of the policy. */
  groundTruth?: boolean;
}

export interface RolloutContext {
  model: Transformer;
  tokenizer: TextTokenizer;
  /** The chat template in force (model.chatTemplate resolved); multi-turn rollouts render turns with it. */
  chatTemplate?: string | null;
}

/**
 * Returns samples grouped by prompt, in prompt order, `settings.groupSize` per prompt. `provides`
 * declares what the samples carry beyond ids and logprobs ('serialExits': a group is the serial
 * early exits of one chain of thought, in exit order; 'toolCalls' / 'turns': those counts are set),
 * so parts that need them are accepted before any compute.
 */
export interface RolloutFn {
  (context: RolloutContext, prompts: readonly RolloutPrompt[], settings: RolloutSettings): Promise<RolloutSample[]>;
  provides?: readonly RolloutProvision[];
}

/** The generation-time features of each prompt's images (the policy's connector, no graph), or null. */
export function promptImageFeatures(prompts: readonly { images?: SequenceImages }[]) {
  if (!prompts.some((prompt) => prompt.images)) return undefined;
  return prompts.map(({ images }) => (images ? noGrad(() => images.connect(images.visionOutputs)) : null));
}

/** Single-turn generation with the KV-cached group sampler (images, when prompts have them, fill their image tokens). */
export const singleTurnRollout: RolloutFn = async ({ model, tokenizer }, prompts, settings) => {
  const completions = generate(model, {
    prompts: prompts.map((prompt) => prompt.promptIds),
    promptImageFeatures: promptImageFeatures(prompts),
    numSamples: settings.groupSize,
    maxNewTokens: settings.maxNewTokens,
    temperature: settings.temperature,
    topK: settings.topK,
    topP: settings.topP,
    minP: settings.minP,
    stopTokenIds: settings.stopTokenIds,
    seed: settings.seed,
  });
  return completions.map((completion) => ({
    promptIndex: completion.promptIndex,
    completionIds: completion.ids,
    oldLogprobs: completion.logprobs,
    lossMask: completion.ids.map(() => 1),
    text: tokenizer.decode(completion.ids, { skipSpecialTokens: true }),
    truncated: completion.finishReason === 'length',
  }));
};
