/**
 * Tool use from scratch: a small character-level model learns to call a calculator for
 * three-digit × two-digit multiplication, which it cannot do in its head.
 * Run: `npx grpo train recipes/tool-calculator.ts`.
 *
 * Why GRPO has real work here: the SFT teacher always answers correctly, but calls the calculator
 * on only `TOOL_RATE` of its demonstrations and answers from memory otherwise. A 2-layer model
 * cannot learn multiplication from a few thousand examples, so after SFT it mostly answers
 * directly (and wrong), calling the tool on roughly a third of its samples. Those episodes are the
 * correct ones; GRPO with the correctness reward turns them into a policy that calls the tool.
 *
 * Episode shape (the chat template below, Hermes tool calls, a character tokenizer):
 *   Q:123*45\nA:<tool_call>{"name": "calc", "arguments": {"expression": "123*45"}}</tool_call><eos>\nR:5535\nA:5535<eos>\n
 * The R: line is the tool's observation (loss mask 0 in GRPO).
 */
import {
  calculatorTool,
  toolUseEnvironment,
  type Example,
  type Recipe,
  type RewardFn,
  type Task,
} from '../src/index.js';

/** Fraction of SFT demonstrations that call the calculator. */
const TOOL_RATE = 0.3;

const CHAT_TEMPLATE = [
  '{% for message in messages %}',
  "{% if message.role == 'user' %}Q:{{ message.content }}\n",
  "{% elif message.role == 'assistant' %}A:{{ message.content }}{{ eos_token }}\n",
  "{% elif message.role == 'tool' %}R:{{ message.content }}\n",
  '{% endif %}{% endfor %}',
  '{% if add_generation_prompt %}A:{% endif %}',
  // The literal below only lets agent.toolCallFormat 'auto' find the syntax: <tool_call>
  '{% if false %}<tool_call>{% endif %}',
].join('');

const toolCall = (expression: string) =>
  `<tool_call>{"name": "calc", "arguments": {"expression": "${expression}"}}</tool_call>`;

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
    sft: { steps: 300, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 80, temperature: 1 },
    grpo: { steps: 30, promptsPerStep: 6, microBatchSize: 48, learningRate: 2e-4 },
    agent: { maxTurns: 2, toolCallFormat: 'hermes', maxEpisodeTokens: 120 },
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  environment: toolUseEnvironment({ tools: [calculatorTool({ name: 'calc' })] }),
} satisfies Recipe;
