/**
 * Med-R1's No-Thinking variant (papers #55): the same multiple-choice GRPO as recipes/papers/med-r1.ts
 * with the authors' grpo_vqa_nothink.py prompt ("Provide the correct single-letter choice … inside
 * <answer>...</answer> tags") and format reward (fullmatch `\s*<answer>.*?</answer>`); the paper
 * reports it generalising better than thinking. Run: `npx grpo train recipes/papers/med-r1-nothink.ts`.
 */
import { medR1Recipe } from './med-r1.js';

export default medR1Recipe(false);
