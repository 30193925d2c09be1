/**
 * GRPO on a real SmolVLM (Idefics3) checkpoint folder you have downloaded, on the generated
 * shape-counting task. Run:
 * `SMOLVLM_CHECKPOINT=path/to/SmolVLM-256M-Instruct npx grpo train recipes/smolvlm.ts`
 * Any idefics3 folder works (config.json `model_type: idefics3`, model.safetensors, tokenizer files,
 * preprocessor_config.json), e.g. the tiny random one scripts/reference writes.
 *
 * The prompts are `<image>How many red squares? Answer with a number.`, rendered by the
 * checkpoint's chat template, which gets the placeholder as an image content part. Images are resized to a 512-pixel longest
 * edge without tiles (`model.imageProcessor`): SmolVLM's own 2048 with 16 tiles costs 17 passes of
 * the vision tower per image, too many for a CPU. No SFT (the instruct model answers already), and
 * no KL term (it would keep a second copy of the model in memory).
 */
import { existsSync } from 'node:fs';
import { countAnswer, extractCount, shapeCountingTask, type Example, type Recipe, type Task } from '../src/index.js';

const checkpoint = process.env.SMOLVLM_CHECKPOINT;
if (!checkpoint || !existsSync(checkpoint))
  throw new Error(
    `recipes/smolvlm.ts: set SMOLVLM_CHECKPOINT to a SmolVLM (idefics3) checkpoint folder${checkpoint ? `; ${checkpoint} does not exist` : ''} (e.g. a download of HuggingFaceTB/SmolVLM-256M-Instruct)`,
  );

const counting = shapeCountingTask({ imageSize: 64, cellSize: 16 });

/** Image first, as SmolVLM was tuned, then the question and an instruction (the template renders `<image>` as an image part). */
const withInstruction = (example: Example): Example => ({
  ...example,
  prompt: `<image>${String(example.prompt).replace('<image>', '')} Answer with a number.`,
});

const task: Task = {
  ...counting,
  name: 'smolvlm-shape-counting',
  // An instruct model writes sentences: the count is the answer's final number ("There are 2." → 2).
  rewards: () => [{ name: 'count', reward: countAnswer(), weight: 1 }],
  isCorrect: (example, completion) => extractCount(completion) === Number(example.answer),
  trainExamples: (count, seed) => counting.trainExamples(count, seed).map(withInstruction),
  evalExamples: (count, seed) => counting.evalExamples(count, seed).map(withInstruction),
};

export default {
  config: {
    task: 'smolvlm-shape-counting',
    model: { checkpoint, imageProcessor: { longestEdge: 512, doImageSplitting: false } },
    sft: { steps: 0 },
    sampling: { groupSize: 4, maxNewTokens: 8, temperature: 1 },
    grpo: { steps: 40, promptsPerStep: 4, microBatchSize: 8, learningRate: 1e-6 },
    algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean', klCoefficient: 0 },
    evaluation: { examples: 32 },
    checkpoint: { every: 20 },
    logging: { printEvery: 1, samplesEvery: 1 },
  },
  task,
} satisfies Recipe;
