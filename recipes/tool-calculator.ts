/**
 * Tool use from scratch: a small character-level model learns to call a calculator for
 * three-digit × two-digit multiplication, which it cannot do in its head.
 * Run: `npx grpo train recipes/tool-calculator.ts`.
 *
 * The task: the SFT teacher always answers correctly, but calls the calculator on only `TOOL_RATE`
 * of its demonstrations and answers from memory otherwise. A 2-layer model cannot learn
 * multiplication from a few thousand examples, so its direct answers are wrong; the episodes that
 * call the tool and copy the expression and the result exactly are the correct ones, and GRPO with
 * the correctness reward reinforces them (held-out accuracy is measured on whole greedy episodes).
 *
 * Measured (2 shared cores, native backend, this config): held-out accuracy (60 problems) 60.0%
 * after SFT → 83.3% after 300 GRPO steps; the whole run 6 min 57 s (SFT 2.5 min, GRPO 4.3 min),
 * on a machine other jobs were also using. Shorter GRPO gave 68.3% (40 steps) and 75.0% (150).
 * On a 2-core AMD EPYC (2026-11-28, same config and seed): 41.7% → 80.0%, the run 3 min 26 s; the
 * SFT model differs with the CPU's floating-point rounding, and so does everything after it.
 *
 * Episode shape (the chat template below, Llama-3 JSON tool calls, a character tokenizer):
 *   Q:123*45\nA:{"name": "c", "parameters": {"e": "123*45"}}<eos>\nR:5535\nA:5535<eos>\n
 * The R: line is the tool's observation (loss mask 0 in GRPO). The tool is the built-in calculator's
 * evaluator under a one-letter name and argument: every character of boilerplate is a token a
 * 2-layer model must learn to write, and the digits it must copy sit closer to the prompt.
 */
import { z } from 'zod';
import {
  evaluateArithmetic,
  toolUseEnvironment,
  type Tool,
  type Example,
  type Recipe,
  type RewardFn,
  type Task,
} from '../src/index.js';

/** Fraction of SFT demonstrations that call the calculator. */
const TOOL_RATE = 0.4;

/** The episode's chat template (Q:, A:, R: lines); recipes/papers/matchtir.ts shares it. */
export const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}Q:{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  "{% elif message.role == 'tool' %}R:{{ message.content }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
].join('');

export const toolCall = (expression: string) => `{"name": "c", "parameters": {"e": "${expression}"}}`;

const parameters = z.object({ e: z.string().min(1).max(40).describe('an arithmetic expression, e.g. "123*45"') });
/** The calculator (the built-in `calculatorTool`'s evaluator) as `c(e)`. */
export const calculator: Tool = {
  name: 'c',
  description: 'calculator: evaluates an arithmetic expression',
  parameters,
  timeoutMs: 1000,
  run: (args) => evaluateArithmetic(parameters.parse(args).e),
};

function hash(a: number, b: number): number {
  let h = Math.imul(a * 1009 + b, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

/** One problem in eight is held out (never trained on). */
const isHeldOut = (a: number, b: number) => hash(a, b) % 8 === 0;

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const examples: Example[] = [];
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  while (examples.length < count) {
    const a = 100 + (next() % 900);
    const b = 10 + (next() % 90);
    if (isHeldOut(a, b) === heldOut) examples.push({ prompt: `${a}*${b}`, answer: String(a * b), a, b });
  }
  return examples;
}

/** The final answer: the last line after the last "A:" (the whole completion when there is none). */
function finalAnswer(completion: string): string | null {
  const last = completion.split('A:').at(-1) ?? '';
  const match = /^\s*(\d+)\s*$/.exec(last);
  return match ? match[1] : null;
}

const correct: RewardFn = ({ completion, row }) => (finalAnswer(completion) === row.answer ? 1 : 0);

const alphabet = [...new Set(`0123456789*QAR:\n${toolCall('')}`)].join('');

export const task: Task = {
  name: 'tool-calculator',
  description: 'three-digit × two-digit multiplication with a calculator tool; SFT from a teacher that rarely calls it',
  alphabet,
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(example, draw) {
    if (draw() >= TOOL_RATE) return String(example.answer);
    return `${toolCall(String(example.prompt))}<eos>\nR:${example.answer}\nA:${example.answer}`;
  },
  rewards: () => [{ name: 'correct', reward: correct, weight: 1 }],
  isCorrect: (example, completion) => finalAnswer(completion) === example.answer,
};

export default {
  config: {
    task: 'tool-calculator',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4, chatTemplate: CHAT_TEMPLATE },
    sft: { steps: 600, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 60, temperature: 0.7 },
    grpo: { steps: 300, promptsPerStep: 6, microBatchSize: 48, learningRate: 2e-4 },
    agent: { maxTurns: 2, toolCallFormat: 'llama3', maxEpisodeTokens: 100 },
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 50 },
  },
  task,
  environment: toolUseEnvironment({ tools: [calculator] }),
} satisfies Recipe;
