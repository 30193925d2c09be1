/**
 * TraPO (#97) on rows of your own: recipes/papers/trapo.ts's `trapo` reward and `trapo-grpo`
 * estimator without its addition task, so `--data` supplies the rows. Each row needs `answer` (read
 * only where `labeled` is true), `labeled` (true/false) and one value shared by every row in the
 * column `epoch`; with `--set grpo.promptsPerStep=<training rows>` every step draws each row once,
 * one point of every trajectory a step, as the authors' epochs. Run:
 * `npx grpo train recipes/papers/trapo-data.ts --model DIR --data rows.jsonl --eval-data held-out.jsonl --set grpo.promptsPerStep=N`.
 * Is not: the method (recipes/papers/trapo.ts has it, and the authors' defaults).
 */
import type { Recipe } from '../../src/index.js';
import { trapoAdvantagePart, trapoReward } from './trapo.js';

export default {
  config: {
    algorithm: { advantage: 'trapo-grpo' },
    grpo: { drawTogether: 'epoch' },
  },
  rewards: [{ name: 'trapo', reward: trapoReward(), weight: 1, columns: [{ column: 'labeled' }] }],
  parts: [trapoAdvantagePart],
} satisfies Recipe;
