/**
 * The worker a typed reward runs in (bundled as reward-worker.js; the training worker starts it):
 * `compile` with the box's text, then `score` with a step's completions; it answers `compiled`,
 * `scores` or `error` with one sentence. Served with a Content-Security-Policy of its own that allows
 * compiling code ('unsafe-eval'), which the page and the training worker do not get.
 *
 * Is not: the time limit (typed-reward.ts ends this worker when a call runs too long).
 */
import { compileReward, scoreCompletions, type TypedRewardInput } from './reward-function.js';

interface RewardWorkerScope {
  postMessage(message: unknown): void;
  onmessage: ((event: { data: { type: string; source?: string; inputs?: TypedRewardInput[] } }) => void) | null;
}
const scope = globalThis as unknown as RewardWorkerScope;

let reward: ReturnType<typeof compileReward> | null = null;

const fail = (error: unknown) =>
  scope.postMessage({ type: 'error', message: error instanceof Error ? error.message : String(error) });

scope.onmessage = ({ data }) => {
  try {
    if (data.type === 'compile') {
      reward = compileReward(data.source ?? '');
      scope.postMessage({ type: 'compiled' });
    }
    if (data.type === 'score' && reward)
      scoreCompletions(reward, data.inputs ?? []).then((scores) => scope.postMessage({ type: 'scores', scores }), fail);
  } catch (error) {
    fail(error);
  }
};
