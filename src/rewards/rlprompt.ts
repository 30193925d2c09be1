/**
 * RLPrompt's few-shot classification reward (#105, Deng et al. 2022, arXiv 2205.12548): the policy's
 * completion is a discrete prompt; a frozen task model reads `{sentence} {prompt}` for each of the
 * row's labelled sentences and its next-token probabilities over the verbalizers (softmax over the
 * verbalizer logits only) classify the sentence. Written from the authors' code,
 * github.com/mingkaid/rl-prompt at 30528c2, `examples/few-shot-classification/fsc_reward.py`
 * (`PromptedClassificationReward.forward`) with the defaults of `fsc_helpers.py`:
 *
 *   gap_i = p(label_i) − max_{c: p_c ≠ p(label_i)} p_c        (the authors mask every class whose
 *                                                            probability equals the label's)
 *   r_i   = gap_i · (λ₂ if gap_i > 0 else λ₁),  λ₁ = 180 (incorrect), λ₂ = 200 (correct)
 *   R     = mean_i r_i
 *
 * and its stabilisation, the z-score of each prompt's R among the prompts sampled for the same input
 * (`compute_zscore`): (R − mean) / (std + 1e-4), std the population one (numpy's default). Here the
 * prompts of one input are a GRPO group, so the reward is a group reward.
 *
 * The frozen task model is a row column: RLPrompt's models (RoBERTa, GPT-2) cannot be had here, so
 * the `prompt-classification` task builds a tiny bag-of-words language model at data time (each word
 * a vector; a verbalizer's logit is the mean vector of the text's known words dotted with the
 * verbalizer's vector) whose class probabilities a prompt shifts. Is not: the authors' reward
 * shaping of the SQL loss (a linear map of the reward range), which GRPO's own normalisation replaces.
 */
import { groupReward, type GroupReward, type RewardInput } from './types.js';

/** A frozen bag-of-words language model: word vectors; verbalizers are words with vectors too. */
export interface BagOfWordsModel {
  words: Readonly<Record<string, readonly number[]>>;
  /** One verbalizer word per class, in class order. */
  verbalizers: readonly string[];
}

export interface RlpromptOptions {
  /** Column with the labelled sentences, `[{ text, label }]` (label = class index; default `examples`). */
  examplesColumn?: string;
  /** Column with the frozen model, a {@link BagOfWordsModel} (default `taskModel`). */
  modelColumn?: string;
  /** λ₂, the factor of a positive gap (default 200, the authors'). */
  correctCoefficient?: number;
  /** λ₁, the factor of a negative gap (default 180, the authors'). */
  incorrectCoefficient?: number;
  /** Z-score the rewards of the prompts of one input (default true, the authors' `compute_zscore`). */
  zscore?: boolean;
}

/** The frozen model's class probabilities for `text`: softmax over the verbalizers' logits. */
export function classProbabilities(model: BagOfWordsModel, text: string): number[] {
  const known = text
    .toLowerCase()
    .split(/\s+/)
    .flatMap((word) => (Object.hasOwn(model.words, word) ? [model.words[word]!] : []));
  const size = model.words[model.verbalizers[0]!]!.length;
  const mean = Array.from(
    { length: size },
    (_, d) => known.reduce((sum, vector) => sum + vector[d]!, 0) / Math.max(1, known.length),
  );
  const logits = model.verbalizers.map((verbalizer) =>
    model.words[verbalizer]!.reduce((sum, value, d) => sum + value * mean[d]!, 0),
  );
  const top = Math.max(...logits);
  const exps = logits.map((logit) => Math.exp(logit - top));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((value) => value / total);
}

/** The authors' gap: the label's probability minus the largest probability not equal to it (−1 when none). */
export function labelGap(probabilities: readonly number[], label: number): number {
  const own = probabilities[label]!;
  return own - Math.max(-1, ...probabilities.filter((probability) => probability !== own));
}

function rowModel(input: RewardInput, column: string): BagOfWordsModel {
  const model = input.row[column] as BagOfWordsModel | undefined;
  if (!model || typeof model.words !== 'object' || !Array.isArray(model.verbalizers) || model.verbalizers.length < 2)
    throw new Error(
      `rlprompt-classification: the row's "${column}" column is not a frozen model { words, verbalizers }`,
    );
  for (const verbalizer of model.verbalizers)
    if (!Object.hasOwn(model.words, verbalizer))
      throw new Error(`rlprompt-classification: verbalizer "${verbalizer}" has no vector in "${column}"`);
  return model;
}

function rowExamples(input: RewardInput, column: string, classes: number): { text: string; label: number }[] {
  const examples = input.row[column];
  if (!Array.isArray(examples) || examples.length === 0)
    throw new Error(`rlprompt-classification: the row's "${column}" column is not a list of { text, label }`);
  return examples.map((example: { text?: unknown; label?: unknown }, i) => {
    if (
      typeof example.text !== 'string' ||
      !Number.isInteger(example.label) ||
      (example.label as number) < 0 ||
      (example.label as number) >= classes
    )
      throw new Error(`rlprompt-classification: "${column}"[${i}] needs a text and a label from 0 to ${classes - 1}`);
    return { text: example.text, label: example.label as number };
  });
}

/** RLPrompt's mean piecewise gap reward of one prompt (before the z-score), and its accuracy. */
export function promptScore(
  prompt: string,
  examples: readonly { text: string; label: number }[],
  model: BagOfWordsModel,
  correctCoefficient = 200,
  incorrectCoefficient = 180,
): { reward: number; accuracy: number } {
  let reward = 0;
  let correct = 0;
  for (const { text, label } of examples) {
    const gap = labelGap(classProbabilities(model, `${text} ${prompt.trim()}`), label);
    reward += gap * (gap > 0 ? correctCoefficient : incorrectCoefficient);
    if (gap > 0) correct++;
  }
  return { reward: reward / examples.length, accuracy: correct / examples.length };
}

/**
 * RLPrompt's classification reward with its per-input z-score (a group reward).
 * @example rlpromptClassification({ zscore: false }) // the raw mean gap reward, in [−180, 200]
 */
export function rlpromptClassification({
  examplesColumn = 'examples',
  modelColumn = 'taskModel',
  correctCoefficient = 200,
  incorrectCoefficient = 180,
  zscore = true,
}: RlpromptOptions = {}): GroupReward {
  return groupReward((inputs) => {
    const model = rowModel(inputs[0]!, modelColumn);
    const examples = rowExamples(inputs[0]!, examplesColumn, model.verbalizers.length);
    const rewards = inputs.map(
      (input) => promptScore(input.completion, examples, model, correctCoefficient, incorrectCoefficient).reward,
    );
    if (!zscore) return rewards;
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const std = Math.sqrt(rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / rewards.length);
    return rewards.map((reward) => (reward - mean) / (std + 1e-4));
  });
}
