/**
 * MatchTIR (#134, Qu et al. 2026, "MatchTIR: Fine-Grained Supervision for Tool-Integrated Reasoning
 * via Bipartite Matching"): every tool call of an episode is matched against the row's reference
 * calls and rewarded by its similarity to its match; the advantage mixes a trajectory-level and a
 * turn-level term. Run: `npx grpo train recipes/papers/matchtir.ts`.
 *
 * From the authors' code (quchangle1/MatchTIR: Code/verl/utils/reward_score/tool.py
 * `compute_process_KM`, Code/verl/trainer/ppo/core_algos.py `compute_grpo_outcome_advantage`,
 * Scripts/run.sh):
 *   - per-call rewards: `matchedCallsEnvironment` (their `tool_similarity` and greedy
 *     `hungarian_assignment`, an unmatched call 0); a turn's reward is the mean of its calls';
 *   - the answer turn's reward: the F1 of the word sets of the `<answer>` text and the gold answer,
 *     both lower-cased with punctuation turned into spaces (their `compute_answer_f1`), 0 without an
 *     `<answer>` tag — the run's reward here, which `matchtir` adds on the last turn;
 *   - the advantage: `algorithm.turnCredit: matchtir` (γ = 0.9, their hard-coded `lam`);
 *   - run.sh's settings that transfer: temperature 1, KL 0.001 in the loss (k3, their low_var_kl),
 *     entropy coefficient 0.001, and verl's defaults then: clip 0.2 with dual clip 3, a sequence
 *     mean of token means, one update per batch, gradient norm 1.
 * Not carried over: their 16 rollouts per prompt (8 here), learning rate 1e-6 (Qwen3-8B), their
 * data (FTRL/ToolHop, Qwen3 chat) and their answer reward at test time.
 *
 * Task (defined here): two products, `123*45,67*89`, answered as `<answer>5535 5963</answer>`; the
 * reference calls are the calculator on each product. The SFT teacher always answers right but
 * calls the calculator for each product only on `TOOL_RATE` of its demonstrations, so the small
 * model's products from memory are wrong and the calls that copy the right expression earn their
 * turn's credit even when the other product is wrong. Episode shape (Llama-3 JSON tool calls):
 *   Q:123*45,67*89\nA:{"name": "c", "parameters": {"e": "123*45"}}<eos>\nR:5535\nA:…\nA:<answer>5535 5963</answer><eos>\n
 */
import {
  evaluateArithmetic,
  generatedSplit,
  matchedCallsEnvironment,
  type Example,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
} from '../../src/index.js';
import { CHAT_TEMPLATE, calculator, toolCall } from '../tool-calculator.js';

/** Fraction of the teacher's products it gets by calling the calculator. */
const TOOL_RATE = 0.7;

function makeRow(pick: Pick): Example {
  const products = [0, 1].map(() => `${100 + pick(900)}*${10 + pick(90)}`);
  return {
    prompt: products.join(','),
    products,
    answer: products.map((product) => String(evaluateArithmetic(product))).join(' '),
    toolCalls: products.map((product) => ({ name: 'c', parameters: { e: product } })),
  };
}

/** Lower case, punctuation to spaces, runs of spaces collapsed (the authors' `preprocess_text`). */
const normalise = (text: string) =>
  text
    .toLowerCase()
    .replace(/[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/** F1 of the word sets of the last `<answer>` text and `gold`; 0 without an answer (`compute_answer_f1`). */
export function answerF1(completion: string, gold: string): number {
  const match = /<answer>([\s\S]*?)<\/answer>/.exec(completion.split('\nA:').at(-1) ?? '');
  if (!match) return 0;
  const predicted = new Set(normalise(match[1]!).split(' ').filter(Boolean));
  const reference = new Set(normalise(gold).split(' ').filter(Boolean));
  const common = [...predicted].filter((word) => reference.has(word)).length;
  const precision = predicted.size ? common / predicted.size : 0;
  const recall = reference.size ? common / reference.size : 0;
  return precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
}

const answerReward: RewardFn = ({ completion, row }) => answerF1(completion, String(row.answer));

export const task: Task = {
  name: 'matched-products',
  description: 'two products with a calculator; each call matched against the reference calls (MatchTIR #134)',
  alphabet: [...new Set(`0123456789*, QAR:\n<answer></answer>${toolCall('')}`)].join(''),
  trainExamples: (count, seed) => generatedSplit('matched-products', count, seed, false, makeRow),
  evalExamples: (count, seed) => generatedSplit('matched-products', count, seed, true, makeRow),
  demonstration(row, draw) {
    const products = row.products as string[];
    const turns = products
      .filter(() => draw() < TOOL_RATE)
      .map((product) => `${toolCall(product)}<eos>\nR:${evaluateArithmetic(product)}\nA:`);
    return `${turns.join('')}<answer>${row.answer}</answer>`;
  },
  rewards: () => [{ name: 'answer-f1', reward: answerReward, weight: 1 }],
  isCorrect: (row, completion) => answerF1(completion, String(row.answer)) === 1,
};

export default {
  config: {
    task: 'matched-products',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 1200, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 60, temperature: 1 },
    grpo: { steps: 200, promptsPerStep: 6, microBatchSize: 48, learningRate: 2e-4 },
    agent: { maxTurns: 3, toolCallFormat: 'llama3', maxEpisodeTokens: 170 },
    algorithm: {
      turnCredit: { name: 'matchtir', options: { gamma: 0.9 } },
      loss: 'ppo-clip',
      lossOptions: { epsilonLow: 0.2, epsilonHigh: 0.2, dualClip: 3 },
      aggregation: 'seq-mean-token-mean',
      klCoefficient: 0.001,
      klEstimator: 'k3',
      entropyCoefficient: 0.001,
    },
    optimizer: { maxGradNorm: 1 },
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 20 },
  },
  task,
  environment: matchedCallsEnvironment({ tools: [calculator] }),
} satisfies Recipe;
