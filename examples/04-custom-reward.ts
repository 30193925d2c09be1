/**
 * Example 04: write a custom reward, combine it with built-ins, and score a group of completions.
 * Run: `npx tsx examples/04-custom-reward.ts`. No model is involved; rewards see only strings,
 * token ids and dataset columns, so they can be tried on their own.
 */
import {
  annealedWeight,
  combineRewards,
  mathAnswer,
  makeRewardInput,
  rewardMetrics,
  scoreRewards,
  softOverlongPunishment,
  tagFormat,
  weightedSum,
  weightsAt,
  type RewardFn,
} from '../src/rewards/index.js';

/** A custom reward: a plain function. Returning null means "does not apply to this sample". */
const politeness: RewardFn = ({ completion }) => (/\bplease|thank/i.test(completion) ? 1 : 0);

/** A parameterised custom reward: a factory returning a function (here an async one). */
function mentionsUnit({ unit }: { unit: string }): RewardFn {
  return async ({ completion, row }) => (row.kind === 'word-problem' ? (completion.includes(unit) ? 1 : 0) : null);
}

const rewards = combineRewards({
  correct: [mathAnswer(), 1],
  format: [tagFormat({ tags: ['think', 'answer'] }), annealedWeight({ from: 0.5, to: 0.1, steps: 100 })], // format matters early
  overlong: [softOverlongPunishment({ maxLength: 90, cacheLength: 40, unit: 'characters' }), 1],
  polite: [politeness, 0], // weight 0: logged, not trained on
  unit: [mentionsUnit({ unit: 'eggs' }), 0.1],
});

const row = { question: 'Janet has 16 eggs and eats 3. How many are left?', answer: '13', kind: 'word-problem' };
const completions = [
  '<think>16 - 3</think><answer>13 eggs</answer>',
  '<think>16 + 3</think><answer>19</answer>',
  'The answer is 13. Thank you for asking, this was a lovely problem to think about!',
  '<think>hmm</think><answer>\\boxed{13}</answer>',
];
const group = completions.map((completion, indexInGroup) =>
  makeRewardInput({ prompt: row.question, completion, row, group: completions, indexInGroup, step: 10 }),
);

const matrix = await scoreRewards(rewards, [group], { timeoutMs: 5000 });
const weights = weightsAt(rewards, 10);
const combined = weightedSum(matrix, weights);
completions.forEach((completion, sample) => {
  const cells = matrix.names.map(
    (name, column) =>
      `${name}=${matrix.status[sample * matrix.names.length + column] === 'ok' ? matrix.scores[sample * matrix.names.length + column] : 'n/a'}`,
  );
  console.log(
    `${combined.rewards[sample]!.toFixed(3)}  ${cells.join(' ')}  ${JSON.stringify(completion.slice(0, 40))}`,
  );
});
console.log(
  'weights at step 10:',
  Object.fromEntries(matrix.names.map((name, index) => [name, Number(weights[index]!.toFixed(3))])),
);
console.log('metrics:', rewardMetrics(matrix));
