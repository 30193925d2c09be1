/**
 * Image reward `win-rate`: Pref-GRPO's pairwise preference reward (Wang et al. 2025, arXiv 2508.20751,
 * #5; ALGORITHMS.md §5.10). Every pair of images drawn for the same prompt is judged once; the winner
 * scores 1, a tie or an unreadable verdict gives each ½; an image's reward is its wins over its
 * comparisons, rounded to 3 decimals. Followed: `cal_win_rate` in the authors' CodeGoat24/Pref-GRPO
 * fastvideo/train_flux_pref_grpo.py (pairs from `itertools.combinations`, ½ each on no clear answer,
 * `round(wins / compares, 3)`); the advantage is then the flow trainer's group z-score, as theirs.
 *
 * Is: the win-rate maths (any pairwise judge) and the built-in entry, whose judge prefers the image the
 * digit classifier finds more likely to be the asked digit (the paper's judge is the UnifiedReward-Think
 * VLM, which is not at digit scale; a recipe can wrap its own judge with `pairwiseWinRates` in a
 * `defineImageReward`). Is not: grouping the images (the caller's `groups`, image-reward.ts) or the
 * advantage (flow-grpo.ts).
 */
import { classProbabilities } from '../digit-classifier.js';
import { defineImageReward } from '../image-reward.js';

/** A pairwise judge's verdict on (first, second): which is better, or a tie (also: no clear answer). */
export type PairVerdict = 'first' | 'second' | 'tie';

/**
 * Each image's win rate among the images with the same group id: wins / comparisons over every
 * unordered pair judged once as `judge(first, second)` with first < second; a tie gives each ½; an
 * image alone in its group scores 0 (no comparison, as the authors' code). Rounded to 3 decimals.
 * @example pairwiseWinRates([0, 0, 0], (a, b) => (a < b ? 'first' : 'second')) // [1, 0.5, 0]
 */
export function pairwiseWinRates(
  groups: readonly number[],
  judge: (first: number, second: number) => PairVerdict,
): Float32Array {
  const wins = new Float64Array(groups.length);
  const compared = new Float64Array(groups.length);
  for (let first = 0; first < groups.length; first++)
    for (let second = first + 1; second < groups.length; second++) {
      if (groups[first] !== groups[second]) continue;
      const verdict = judge(first, second);
      compared[first]++;
      compared[second]++;
      if (verdict === 'first') wins[first]++;
      else if (verdict === 'second') wins[second]++;
      else if (verdict === 'tie') {
        wins[first] += 0.5;
        wins[second] += 0.5;
      } else throw new Error(`win-rate judge: verdict ${String(verdict)} is not 'first', 'second' or 'tie'`);
    }
  return Float32Array.from(wins, (won, index) =>
    compared[index] > 0 ? Math.round((won / compared[index]) * 1000) / 1000 : 0,
  );
}

export const winRateImageReward = defineImageReward({
  name: 'win-rate',
  description:
    "Pref-GRPO: each image's win rate in pairwise comparisons within its group, judged by the digit classifier (needs a classifier)",
  citation: 'Pref-GRPO (arXiv 2508.20751), cal_win_rate in CodeGoat24/Pref-GRPO',
  options: ['flow.classifier'],
  needsClassifier: true,
  score: ({ images, labels, groups, classifier }) => {
    // checkRewardWeights refuses a run without one before any compute; this guards direct callers.
    if (classifier === null) throw new Error('image reward "win-rate": needs a digit classifier');
    // The judge prefers the image more likely to be its asked digit; one classifier pass serves every pair.
    const asked = Array.from(classProbabilities(classifier, images), (row, index) => row[labels[index]]);
    return pairwiseWinRates(groups, (first, second) =>
      asked[first] > asked[second] ? 'first' : asked[second] > asked[first] ? 'second' : 'tie',
    );
  },
});
