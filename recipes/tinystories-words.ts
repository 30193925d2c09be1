/**
 * GRPO on a real pretrained checkpoint with a reward written right here: TinyStories-656K learns to
 * put a dog and a ball in its stories. Run: `npx grpo train recipes/tinystories-words.ts` (about 15 s
 * on 2 quiet cores with the native backend: 14 s measured on an AVX-512 AMD EPYC); watch
 * `reward/words/mean` rise in the log or the dashboard.
 *
 * The task is defined in the recipe too: prompts are story openings, each row names the words the
 * story should use (the same two for every prompt: a 656K-parameter story model cannot read
 * instructions, so the reward has to teach it what to write about), and "correct" means both appear.
 * No SFT: the pretrained model already writes stories; GRPO only has to steer them.
 */
import type { Example, NamedReward, Recipe, RewardFn, Task } from '../src/index.js';

const openings = [
  'Once upon a time, there was a little',
  'One day, a happy',
  'Tom and Lily went to the',
  'There was a big',
  'The sun was shining and a small',
];
const requiredWords = ['dog', 'ball'];

function examples(count: number, offset: number): Example[] {
  return Array.from({ length: count }, (_, i) => {
    const opening = openings[(i + offset) % openings.length];
    return { prompt: opening, words: requiredWords, answer: requiredWords.join(',') };
  });
}

const usesWords = (text: string, words: readonly string[]) =>
  words.filter((word) => new RegExp(`\\b${word}s?\\b`, 'i').test(text)).length;

/** Fraction of the row's two words that the story uses (0, 0.5 or 1). */
const words: RewardFn = ({ completion, row }) =>
  usesWords(completion, row.words as string[]) / (row.words as string[]).length;

/** A small bonus for finishing a sentence instead of stopping mid-way (weight 0.1). */
const endsSentence: RewardFn = ({ completion }) => (/[.!?]["']?\s*$/.test(completion) ? 1 : 0);

const task: Task = {
  name: 'story-words',
  description: 'TinyStories continuations that mention a dog and a ball',
  alphabet: '',
  trainExamples: (count) => examples(count, 0),
  evalExamples: (count) => examples(count, 2),
  demonstration: () => {
    throw new Error('story-words has no demonstrations; keep sft.steps at 0');
  },
  rewards: (): NamedReward[] => [
    { name: 'words', reward: words, weight: 1 },
    { name: 'endsSentence', reward: endsSentence, weight: 0.1 },
  ],
  isCorrect: (example, completion) => usesWords(completion, example.words as string[]) === 2,
};

export default {
  config: {
    task: 'story-words',
    model: { checkpoint: '../../shared/fixtures/models/tinystories-656k' }, // relative to this file
    sft: { steps: 0 },
    sampling: { groupSize: 8, maxNewTokens: 40, temperature: 1 },
    // Tuned with a constant rate and β2 0.99; a checkpoint's defaults would be TRL's linear decay and 0.999.
    grpo: { steps: 40, promptsPerStep: 8, microBatchSize: 32, learningRate: 5e-4, schedule: 'constant' },
    optimizer: { beta2: 0.99 },
    algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean' },
    evaluation: { examples: 24 },
    checkpoint: { every: 20 },
    logging: { printEvery: 5 },
  },
  task,
  rewards: task.rewards(),
} satisfies Recipe;
