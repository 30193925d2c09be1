/**
 * The training worker's side of a typed reward: starts the reward's own worker (reward-worker.ts),
 * compiles the box's text there, and scores each step's completions through it into the reward
 * matrix the step code reads (one reward, named "reward"). Every request has a time limit: past it
 * the reward's worker is ended (the only way to stop a loop that never returns) and the run stops
 * with one sentence, as it does when the reward does not compile, throws or returns a non-number.
 *
 * Is not: the compiling or the calling (reward-function.ts, in the reward's worker).
 */
import type { RewardMatrix, RewardScorer } from '../rewards/run.js';
import type { RewardInput } from '../rewards/types.js';
import type { TypedRewardInput } from './reward-function.js';

/** What this file uses of a Web Worker (a test passes a stand-in). */
export interface RewardThread {
  postMessage(message: unknown): void;
  onmessage: ((event: { data: RewardReply }) => void) | null;
  onerror: ((event: { message?: string }) => void) | null;
  terminate(): void;
}

type RewardReply =
  { type: 'compiled' } | { type: 'scores'; scores: (number | null)[] } | { type: 'error'; message: string };

/** A compiled typed reward: its scorer, and `close` to end its worker. */
export interface TypedReward {
  score: RewardScorer;
  close(): void;
}

/** Starts the reward's worker and compiles `source` there; throws the one sentence that says why not. */
export async function startTypedReward(
  source: string,
  timeoutMs: number,
  spawn: () => RewardThread,
): Promise<TypedReward> {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new Error(`the reward's time limit must be a positive number of milliseconds, got ${timeoutMs}`);
  const thread = spawn();
  let closed = false;
  const close = () => {
    closed = true;
    thread.terminate();
  };
  const request = (message: unknown, what: string) =>
    new Promise<RewardReply>((resolve, reject) => {
      if (closed) return reject(new Error('the reward has stopped: start a new run'));
      const timer = setTimeout(() => {
        close();
        reject(
          new Error(`the reward did not return within ${timeoutMs} ms ${what} (an endless loop?), so the run stopped`),
        );
      }, timeoutMs);
      const settle = (reply: RewardReply) => {
        clearTimeout(timer);
        thread.onmessage = thread.onerror = null;
        if (reply.type === 'error') reject(new Error(reply.message));
        else resolve(reply);
      };
      thread.onmessage = ({ data }) => settle(data);
      thread.onerror = (event) =>
        settle({
          type: 'error',
          message: `the reward's worker failed: ${event.message || 'reward-worker.js did not load'}`,
        });
      thread.postMessage(message);
    });
  try {
    await request({ type: 'compile', source }, 'while compiling');
  } catch (error) {
    close();
    throw error;
  }
  const score: RewardScorer = async (groups) => {
    const inputs = groups.flat().map(plainInput);
    const reply = await request({ type: 'score', inputs }, `for the step's ${inputs.length} completions`);
    return rewardMatrix(reply.type === 'scores' ? reply.scores : [], groups);
  };
  return { score, close };
}

/** The fields of a reward input that a worker message can carry (no AbortSignal, no token ids). */
function plainInput(input: RewardInput): TypedRewardInput {
  const prompt = typeof input.prompt === 'string' ? input.prompt : (input.prompt.at(-1)?.content ?? '');
  return {
    prompt: typeof prompt === 'string' ? prompt : JSON.stringify(prompt),
    completion: input.completion,
    row: JSON.parse(JSON.stringify(input.row)) as Record<string, unknown>,
    group: [...input.group],
    indexInGroup: input.indexInGroup,
    step: input.step,
    truncated: input.truncated ?? false,
  };
}

function rewardMatrix(values: (number | null)[], groups: ReadonlyArray<readonly RewardInput[]>): RewardMatrix {
  const sampleCount = groups.reduce((total, group) => total + group.length, 0);
  if (values.length !== sampleCount)
    throw new Error(`the reward's worker answered ${values.length} scores for ${sampleCount} completions`);
  return {
    names: ['reward'],
    sampleCount,
    scores: Float64Array.from(values, (value) => value ?? Number.NaN),
    status: values.map((value) => (value === null ? 'null' : 'ok')),
    failures: [],
    groupSizes: groups.map((group) => group.length),
  };
}
