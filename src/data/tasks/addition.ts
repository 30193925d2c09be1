/**
 * Two-digit addition ("47+35=" → "82"), generated, with a held-out split (every pair whose hash
 * falls in the eval bucket is never trained on).
 *
 * Why GRPO has real work here: SFT demonstrations come from a teacher that forgets the carry on
 * `teacherCarryErrorRate` of the problems that need one (default 0.7). SFT therefore learns the
 * format and a systematic mistake — its greedy answer to a carry problem is usually wrong — while a
 * sampled answer is still right about 30% of the time. GRPO with the correctness verifier turns
 * those samples into a preference for carrying, which is exactly what the verifier can teach and
 * the demonstrations cannot. Is not: a benchmark of arithmetic skill.
 */
import { z } from 'zod';
import type { RewardFn } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `additionTask` accepts (config `taskOptions`); unknown keys are refused. */
export const additionOptionsSchema = z
  .object({
    /** Fraction of carry problems whose demonstration drops the carry. */
    teacherCarryErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

export type AdditionOptions = z.infer<typeof additionOptionsSchema>;

function pairHash(a: number, b: number): number {
  let h = Math.imul(a * 131 + b, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

/** True for the pairs of the held-out split (never trained on). */
export const isHeldOut = (a: number, b: number): boolean => pairHash(a, b) % 8 === 0;

function makeExample(a: number, b: number): Example {
  return { prompt: `${a}+${b}=`, answer: String(a + b), a, b };
}

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const examples: Example[] = [];
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  // The high bits: an LCG modulo 2^32 alternates its low bit, so `next() % 90` (90 even) gave a and b
  // opposite parities and every sum was odd.
  const operand = (): number => 10 + ((next() >>> 16) % 90);
  while (examples.length < count) {
    const a = operand();
    const b = operand();
    if (isHeldOut(a, b) === heldOut) examples.push(makeExample(a, b));
  }
  return examples;
}

/** The answer with every carry dropped (digit-wise sum mod 10), the teacher's systematic mistake. */
export function withoutCarry(a: number, b: number): string {
  const units = (a % 10) + (b % 10);
  const tens = Math.floor(a / 10) + Math.floor(b / 10);
  return `${tens}${units % 10}`;
}

const parseAnswer = (completion: string): string | null => {
  const match = /^\s*(\d+)\s*$/.exec(completion);
  return match ? String(Number(match[1])) : null;
};

/** 1 when the completion is exactly the correct number. */
const correct: RewardFn = ({ completion, row }) => (parseAnswer(completion) === row.answer ? 1 : 0);
/** 1 when the completion is a bare number that ended at the stop token (not cut off). */
const format: RewardFn = ({ completion, truncated }) => (!truncated && parseAnswer(completion) !== null ? 1 : 0);

/** The addition task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function additionTask(options: AdditionOptions = {}): Task {
  const errorRate = parseTaskOptions('addition', additionOptionsSchema, options).teacherCarryErrorRate ?? 0.7;
  return {
    name: 'addition',
    description: 'two-digit addition; SFT from a teacher that often forgets the carry, GRPO with a verifier',
    alphabet: '0123456789+=',
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration(example, draw) {
      const a = Number(example.a);
      const b = Number(example.b);
      const needsCarry = (a % 10) + (b % 10) >= 10;
      return needsCarry && draw() < errorRate ? withoutCarry(a, b) : String(a + b);
    },
    rewards: () => [
      { name: 'correct', reward: correct, weight: 1 },
      { name: 'format', reward: format, weight: 0.2 },
    ],
    isCorrect: (example, completion) => parseAnswer(completion) === example.answer,
    // Measured on the 2-core machine from the same SFT checkpoint (66% held-out; the teacher's carry
    // mistakes cap it): GRPO at 1e-4 with 16 prompts climbs steadily to 92% in 200 steps; at 3e-4 it
    // peaked at 89% and fell back to 79% (too noisy for 16 prompts), at 3e-4 with 32 prompts 91%.
    recommendedConfig: {
      model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
      sft: { steps: 1500, batchSize: 64, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
      sampling: { groupSize: 8, maxNewTokens: 6, temperature: 1 },
      grpo: { steps: 200, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-4 },
      evaluation: { examples: 300, every: 50 },
      checkpoint: { every: 250 },
    },
  };
}
