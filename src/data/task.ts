/**
 * The Task interface: a built-in, verifiable job with generated train and held-out examples, SFT
 * demonstrations, its reward functions and a correctness check reused for evaluation.
 *
 * Is not: a dataset reader or anything about tensors. Tasks need no network.
 */
import type { NamedReward } from '../rewards/types.js';

/** One dataset row: a prompt, usually a reference answer, and any other columns rewards read. */
export interface Example {
  prompt: string;
  answer?: string;
  [column: string]: unknown;
}

export interface Task {
  readonly name: string;
  readonly description: string;
  /** Characters a from-scratch character tokenizer needs for this task. */
  readonly alphabet: string;
  /** `count` training examples (deterministic for a seed, never from the held-out set). */
  trainExamples(count: number, seed: number): Example[];
  /** `count` held-out examples, disjoint from every training example. */
  evalExamples(count: number, seed: number): Example[];
  /** A demonstration completion for SFT (may be deliberately imperfect; the task says how). */
  demonstration(example: Example, draw: () => number): string;
  /** The reward functions GRPO trains with by default. */
  rewards(): NamedReward[];
  /** Whether a completion solves the example (evaluation accuracy). */
  isCorrect(example: Example, completion: string): boolean;
  /**
   * Trainer settings that suit this task (a partial config, plain JSON). They sit under the user's
   * config and any preset: whatever the user sets wins.
   */
  recommendedConfig?: Record<string, unknown>;
}
