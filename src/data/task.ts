/**
 * The Task interface: a built-in, verifiable job with generated train and held-out examples, SFT
 * demonstrations, its reward functions and a correctness check reused for evaluation; and
 * `parseTaskOptions`, which checks a task factory's options against its zod schema.
 *
 * Is not: a dataset reader (`readers.ts`) or anything about tensors. Tasks need no network.
 */
import type { z } from 'zod';
import type { ChatMessage, NamedReward } from '../rewards/types.js';

/**
 * One dataset row: a prompt, usually a reference answer, and any other columns rewards read. The
 * prompt is plain text (standard datasets) or a list of chat messages (conversational datasets),
 * which only a chat template turns into text — never `String(prompt)`.
 */
export interface Example {
  prompt: string | ChatMessage[];
  answer?: string;
  /**
   * The row's images, in the order of the prompt's `<image>` placeholders (`data/images.ts`): paths
   * (absolute), base64 / data: URLs, encoded bytes, or a task's own in-memory RGB image.
   */
  images?: (string | Uint8Array | InMemoryImage)[];
  /** Where the images came from ("train.jsonl line 4"), for decoding errors. */
  imageOrigin?: string;
  [column: string]: unknown;
}

/** An image a task draws itself: 8-bit RGB, row-major (the shape of the model layer's `DecodedImage`). */
export interface InMemoryImage {
  width: number;
  height: number;
  channels: 3;
  data: Uint8Array;
}

export interface Task {
  readonly name: string;
  readonly description: string;
  /** Characters a from-scratch character tokenizer needs for this task. */
  readonly alphabet: string;
  /** `count` training examples (deterministic for a seed, never from the held-out set). */
  trainExamples(count: number, seed: number): Example[];
  /** `count` held-out examples, disjoint from every training example (a dataset task gives at most its whole held-out set). */
  evalExamples(count: number, seed: number): Example[];
  /** A demonstration completion for SFT (may be deliberately imperfect; the task says how). */
  demonstration(example: Example, draw: () => number): string;
  /** The reward functions GRPO trains with by default. */
  rewards(): NamedReward[];
  /** Whether a completion solves the example (evaluation accuracy); async where it runs code. */
  isCorrect(example: Example, completion: string): boolean | Promise<boolean>;
  /**
   * Trainer settings that suit this task (a partial config, plain JSON). They sit under the user's
   * config and any preset: whatever the user sets wins. With a `model.checkpoint`, TRL's defaults
   * for the fields they cover sit over them too (src/config/checkpoint-defaults.ts).
   */
  recommendedConfig?: Record<string, unknown>;
}

/**
 * `task`, drawing each (count, seed) set of rows once: a run asks for the same training and held-out
 * lists in several places (the step's pool, the SFT pool, the checks before compute, evaluation),
 * and a generated row can be costly (a clip and its spectrogram). Each call gets its own array of
 * the same row objects; everything else is the task's own (its prototype).
 */
export function drawOnce(task: Task): Task {
  const memo = (draw: (count: number, seed: number) => Example[]) => {
    const drawn = new Map<string, Example[]>();
    return (count: number, seed: number) => {
      const key = `${count}:${seed}`;
      if (!drawn.has(key)) drawn.set(key, draw.call(task, count, seed));
      return [...drawn.get(key)!];
    };
  };
  return Object.assign(Object.create(task) as Task, {
    trainExamples: memo(task.trainExamples),
    evalExamples: memo(task.evalExamples),
  });
}

/**
 * Checks `options` (the config's `taskOptions`) against a task's strict zod object schema; throws one
 * sentence per problem naming `taskOptions.<key>`, followed by the options the task knows.
 */
export function parseTaskOptions<Shape extends z.ZodRawShape>(
  taskName: string,
  schema: z.ZodObject<Shape>,
  options: unknown,
): z.infer<z.ZodObject<Shape>> {
  const parsed = schema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.flatMap((issue) => {
    // An unknown key is reported at the object with the keys listed; name each one as its own field.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key]) : [issue.path];
    const message = issue.code === 'unrecognized_keys' ? `not an option of task "${taskName}"` : issue.message;
    return keys.map((path) => `- ${['taskOptions', ...path.map(String)].join('.')}: ${message}`);
  });
  const known = Object.keys(schema.shape).join(', ') || '(none)';
  throw new Error(`invalid config:\n${problems.join('\n')}\n  (known options of task "${taskName}": ${known})`);
}
