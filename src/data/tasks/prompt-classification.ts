/**
 * Discrete prompt optimisation for few-shot sentiment classification, for RLPrompt (#105, Deng et al.
 * 2022, arXiv 2205.12548): the policy writes a short prompt; a frozen task model reads
 * `{sentence} {prompt}` and predicts the verbalizer `great` or `terrible`; the reward is the frozen
 * model's piecewise label-probability gap over the row's sentences (`rlprompt-classification`).
 *
 * The frozen model is a tiny bag-of-words language model made here (RLPrompt's RoBERTa/GPT-2 cannot
 * be had): word vectors (sentiment, lean), verbalizer `great` = (10, 10), `terrible` = (−10, 0), so
 * the logit gap is 10·(2·sentiment + lean) of the mean word vector. Sentences are one sentiment word among
 * filler words that lean (0.9) towards `great`, so without a prompt every sentence reads as `great` (half
 * right). Prompt words shift the mean: `honestly` and `frankly` cancel the lean, `really` and `so`
 * add to it, `sadly` and `awesome` carry sentiment of their own. A prompt that cancels the lean
 * classifies every sentence; RL has to find one, as RLPrompt searches for prompts a frozen model reads well.
 *
 * Rows: a constant instruction for the policy (RLPrompt's few-shot policy has no input either) and a
 * balanced batch of `sentences` labelled sentences (classes alternate), `examples`, with the frozen model in `taskModel`. A row's
 * prompts are a GRPO group, so the reward's z-score is RLPrompt's per-input one. Correct (held-out
 * accuracy) = the prompt classifies every sentence of the row. The SFT teacher writes three random
 * prompt words. Held out: sentence batches whose text hashes into one bucket of eight.
 * Is not: SST-2 or any real data set; the prompt words are a fixed small vocabulary.
 */
import { z } from 'zod';
import { promptScore, rlpromptClassification, type BagOfWordsModel } from '../../rewards/rlprompt.js';
import type { NamedReward } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `promptClassificationTask` accepts (config `taskOptions`); unknown keys are refused. */
export const promptClassificationOptionsSchema = z
  .object({
    /** Labelled sentences per row (default 4). */
    sentences: z.number().int().min(1).max(16).optional(),
    /** Words in a teacher prompt (default 3; RLPrompt's prompts are 5 tokens). */
    promptWords: z.number().int().min(1).max(8).optional(),
  })
  .strict();

const POSITIVE = ['good', 'fine', 'nice', 'fun'];
const NEGATIVE = ['bad', 'poor', 'dull', 'awful'];
const FILLER = ['the', 'movie', 'film', 'plot', 'was', 'is'];
/** Prompt words and their vectors (sentiment, lean). */
const PROMPT_WORDS: Record<string, [number, number]> = {
  honestly: [0, -1],
  frankly: [0, -1],
  really: [0, 1],
  so: [0, 0.5],
  sadly: [-1, 0],
  awesome: [1, 0],
  it: [0, 0],
  overall: [0, 0],
};

/** The frozen task model, the same for every row. */
export const bagOfWordsTaskModel: BagOfWordsModel = {
  words: {
    ...Object.fromEntries(POSITIVE.map((word) => [word, [1, 0]])),
    ...Object.fromEntries(NEGATIVE.map((word) => [word, [-1, 0]])),
    ...Object.fromEntries(FILLER.map((word) => [word, [0, 0.9]])),
    ...PROMPT_WORDS,
    // Sharp, as a trained LM's verbalizer logits are: a gap near ±1 once the evidence is clear, so
    // the gap reward tracks accuracy rather than margins on an always-favoured class.
    great: [10, 10],
    terrible: [-10, 0],
  },
  verbalizers: ['great', 'terrible'],
};

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

type Pick = (n: number) => number;

function sentence(pick: Pick, label: number): { text: string; label: number } {
  const words = [FILLER[pick(2)]!, FILLER[2 + pick(2)]!, FILLER[4 + pick(2)]!];
  const sentiment = (label === 0 ? POSITIVE : NEGATIVE)[pick(4)]!;
  return { text: [...words, sentiment].join(' '), label };
}

function sample(sentences: number, count: number, seed: number, heldOut: boolean): Example[] {
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0 || 1;
  const pick: Pick = (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const rows: Example[] = [];
  while (rows.length < count) {
    // Classes alternate, so a row is balanced as RLPrompt's few-shot batches are (16 per class).
    const examples = Array.from({ length: sentences }, (_, i) => sentence(pick, i % 2));
    if ((hash(examples.map((example) => example.text).join('|')) % 8 === 0) !== heldOut) continue;
    rows.push({ prompt: 'prompt: ', examples, taskModel: bagOfWordsTaskModel });
  }
  return rows;
}

/** The prompt-classification task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function promptClassificationTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('prompt-classification', promptClassificationOptionsSchema, raw);
  const sentences = parsed.sentences ?? 4;
  const promptWords = parsed.promptWords ?? 3;
  const vocabulary = Object.keys(PROMPT_WORDS);
  return {
    name: 'prompt-classification',
    description: 'write a prompt a frozen bag-of-words model classifies sentiment well with (RLPrompt #105)',
    alphabet: [...new Set(`${vocabulary.join('')}prompt: `)].join(''),
    trainExamples: (count, seed) => sample(sentences, count, seed, false),
    evalExamples: (count, seed) => sample(sentences, count, seed, true),
    demonstration: (_row, draw) =>
      Array.from({ length: promptWords }, () => vocabulary[Math.floor(draw() * vocabulary.length)]!).join(' '),
    rewards: (): NamedReward[] => [{ name: 'gap', reward: rlpromptClassification(), weight: 1 }],
    isCorrect: (row, completion) =>
      promptScore(completion, row.examples as { text: string; label: number }[], row.taskModel as BagOfWordsModel)
        .accuracy === 1,
  };
}
