/**
 * R1-AQA (Li et al. 2025, arXiv 2503.11197, papers #36): GRPO straight on audio question answering.
 * Each row is an audio clip and a multiple-choice question in the authors' words ("{question}
 * Please choose the answer from the following options: [...]. Output the final answer in <answer>
 * </answer>."); the rewards are `accuracy` + `format` (weight 1 each). Run:
 * `npx grpo train recipes/papers/r1-aqa.ts` (a from-scratch toy model, SFT for the format, then GRPO).
 *
 * From the authors' xiaomi-research/r1-aqa (read at 5d24f31): src/dataset/dataset.py `_handle_avqa`
 * (the prompt above, the options as Python prints a list, the audio before the text, the solution
 * `<answer>{option}</answer>`); src/utils/rewards.py `accuracy_reward` (Math-Verify of completion and
 * solution, else the first one-line `<answer>…</answer>` of each (else the whole text), stripped,
 * equal: R1-V's, as Med-R1's recipe implements it, `medR1Accuracy`) and `format_reward` (the whole
 * completion fullmatches `<answer>.*?</answer>`, dot matching newlines, no stripping); src/train.py:
 * 8 generations, temperature 1, trl 0.15's β = 0.04; src/trainer/grpo_trainer.py: advantage
 * (r − mean)/(std + 1e-4), k3 KL, exp(logp − logp.detach())·A (the ratio is 1), the loss averaged
 * over each completion's tokens then over completions; src/test_mmau.py: the first `<answer>…</answer>`
 * (else the whole output), stripped, is the prediction.
 * Differs: there is no audio encoder here. A clip (8 kHz, 0.5 s: a low hum, a high whistle, a rising or
 * falling chirp, two beeps or static, with random pitch, timing and loudness) becomes a 16×16 log-power
 * spectrogram (16 frames × 16 bands of 250 Hz), which the toy model's vision tower reads as an image,
 * AST-style patches of a spectrogram, instead of Qwen2-Audio's Whisper encoder on 128 mel bins; the
 * sounds and their one question ("What happened in the audio?") stand in for AVQA; the SFT teacher
 * mixes up rising/falling, hum/whistle and beeps/whistle on `TEACHER_MISTAKE_RATE` of its demonstrations
 * (the mixed-up name is always an option), so GRPO has the listening to learn (their model starts
 * from Qwen2-Audio-7B-Instruct without SFT); learning rates are the toy model's (theirs 1e-6).
 */
import {
  generatedSplit,
  type Example,
  type NamedReward,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
  type TaskImage,
} from '../../src/index.js';
import { medR1Accuracy } from './med-r1.js';
import { trlGrpoAlgorithm } from './trl-grpo-settings.js';

const SAMPLE_RATE = 8000;
const CLIP_SAMPLES = 4000; // 0.5 s
const FRAMES = 16;
const WINDOW = 256;
const BANDS = 16; // 250 Hz each, up to the 4 kHz Nyquist frequency
/** Share of SFT demonstrations that name the sound's look-alike instead of the sound. */
const TEACHER_MISTAKE_RATE = 0.5;
const QUESTION = 'What happened in the audio?';

const SOUNDS = ['a low hum', 'a high whistle', 'a rising chirp', 'a falling chirp', 'two beeps', 'static'] as const;
export type Sound = (typeof SOUNDS)[number];
/** The teacher's mix-ups: each sound's look-alike. */
const LOOK_ALIKE: Record<Sound, Sound> = {
  'a low hum': 'a high whistle',
  'a high whistle': 'a low hum',
  'a rising chirp': 'a falling chirp',
  'a falling chirp': 'a rising chirp',
  'two beeps': 'a high whistle',
  static: 'two beeps',
};

/** A uniform draw in [low, high) from the row's integer pick. */
const uniform = (pick: Pick, low: number, high: number): number => low + ((high - low) * pick(1000)) / 1000;

/** One clip of `sound`, samples in [−1, 1], with random pitch, timing and loudness and a little noise. */
export function synthesize(sound: Sound, pick: Pick): Float64Array {
  const samples = new Float64Array(CLIP_SAMPLES);
  const loudness = uniform(pick, 0.3, 1);
  const [from, to] =
    sound === 'a low hum'
      ? [uniform(pick, 250, 700), 0]
      : sound === 'a high whistle' || sound === 'two beeps'
        ? [uniform(pick, 1500, 3500), 0]
        : [uniform(pick, 300, 900), uniform(pick, 2600, 3600)];
  const gap = Math.round(uniform(pick, 0.1, 0.2) * SAMPLE_RATE);
  let phase = 0;
  for (let t = 0; t < CLIP_SAMPLES; t++) {
    const progress = t / CLIP_SAMPLES;
    const frequency =
      sound === 'a rising chirp'
        ? from + (to - from) * progress
        : sound === 'a falling chirp'
          ? to + (from - to) * progress
          : from;
    phase += (2 * Math.PI * frequency) / SAMPLE_RATE;
    const on = sound !== 'two beeps' || t < gap || (t >= 2 * gap && t < 3 * gap);
    const noise = (pick(2001) - 1000) / 1000;
    samples[t] = sound === 'static' ? loudness * noise : (on ? loudness * Math.sin(phase) : 0) + 0.02 * noise;
  }
  return samples;
}

/** The Hann window and, per DFT frequency (four per band, 62.5 Hz apart), its cos and sin over the window. */
const HANN = Float64Array.from({ length: WINDOW }, (_, n) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / (WINDOW - 1)));
const BINS = Array.from({ length: BANDS * 4 }, (_, bin) => {
  const frequency = Math.floor(bin / 4) * 250 + 31.25 + (bin % 4) * 62.5;
  const angles = Array.from({ length: WINDOW }, (_, n) => (2 * Math.PI * frequency * n) / SAMPLE_RATE);
  return { cos: Float64Array.from(angles, Math.cos), sin: Float64Array.from(angles, Math.sin) };
});

/**
 * The clip's log-power spectrogram as a grey 16×16 image: column = frame (Hann window of 256 samples),
 * row = 250 Hz band, highest at the top (the power at the band's four DFT bins 62.5 Hz apart, summed);
 * 60 dB below the clip's loudest cell is black.
 */
export function spectrogramImage(samples: Float64Array): TaskImage {
  const hop = Math.floor((CLIP_SAMPLES - WINDOW) / (FRAMES - 1));
  const decibels = new Float64Array(FRAMES * BANDS);
  for (let frame = 0; frame < FRAMES; frame++) {
    const windowed = HANN.map((weight, n) => weight * samples[frame * hop + n]);
    for (let band = 0; band < BANDS; band++) {
      let power = 0;
      for (const { cos, sin } of BINS.slice(band * 4, band * 4 + 4)) {
        let real = 0;
        let imaginary = 0;
        for (let n = 0; n < WINDOW; n++) {
          real += windowed[n] * cos[n];
          imaginary -= windowed[n] * sin[n];
        }
        power += real * real + imaginary * imaginary;
      }
      decibels[(BANDS - 1 - band) * FRAMES + frame] = 10 * Math.log10(power + 1e-10);
    }
  }
  const loudest = Math.max(...decibels);
  const data = new Uint8Array(FRAMES * BANDS * 3);
  decibels.forEach((value, cell) =>
    data.fill(Math.round(255 * Math.min(1, Math.max(0, (value - loudest + 60) / 60))), cell * 3, cell * 3 + 3),
  );
  return { width: FRAMES, height: BANDS, channels: 3, data };
}

/** Python's `str(list)` of option strings without quotes in them: `['a', 'b']`. */
const pythonList = (options: readonly string[]): string => `[${options.map((option) => `'${option}'`).join(', ')}]`;

/** One AVQA-style row: a sound, four options (the sound, its look-alike, two others) in a random order. */
function audioRow(pick: Pick): Example {
  const sound = SOUNDS[pick(SOUNDS.length)];
  const others = SOUNDS.filter((other) => other !== sound && other !== LOOK_ALIKE[sound]);
  while (others.length > 2) others.splice(pick(others.length), 1);
  const options: string[] = [sound, LOOK_ALIKE[sound], ...others];
  for (let i = options.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [options[i], options[j]] = [options[j], options[i]];
  }
  const clip = synthesize(sound, pick);
  return {
    prompt: `<image>${QUESTION} Please choose the answer from the following options: ${pythonList(options)}. Output the final answer in <answer> </answer>.`,
    answer: `<answer>${sound}</answer>`,
    images: [spectrogramImage(clip)],
    sound,
    // The clip's identity for the held-out split: its sound and its first samples.
    clip: `${sound}|${Array.from(clip.subarray(0, 8), (value) => value.toFixed(4)).join(',')}`,
  };
}

const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('r1-aqa-sounds', count, seed, heldOut, audioRow, (row) => `${String(row.clip)}|${String(row.prompt)}`);

/** R1-AQA's `format_reward`: the whole completion fullmatches `<answer>.*?</answer>` (DOTALL). */
export const r1AqaFormat = (completion: string): number => (/^<answer>[\s\S]*?<\/answer>$/.test(completion) ? 1 : 0);

const accuracy: RewardFn = ({ completion, row }) => medR1Accuracy(completion, String(row.answer));
const format: RewardFn = ({ completion }) => r1AqaFormat(completion);

export const r1AqaTask: Task = {
  name: 'r1-aqa-sounds',
  description: 'R1-AQA on generated sounds: a clip (as its spectrogram) and four options, <answer>OPTION</answer>',
  alphabet: [
    ...new Set(
      `${QUESTION} Please choose the answer from the following options: []',. Output the final answer in <answer> </answer>.${SOUNDS.join('')}`,
    ),
  ].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) =>
    `<answer>${draw() < TEACHER_MISTAKE_RATE ? LOOK_ALIKE[example.sound as Sound] : String(example.sound)}</answer>`,
  rewards: (): NamedReward[] => [
    { name: 'accuracy', reward: accuracy, weight: 1 },
    { name: 'format', reward: format, weight: 1 },
  ],
  isCorrect: (example, completion) => medR1Accuracy(completion, String(example.answer)) === 1,
};

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: FRAMES, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 300, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 40, temperature: 1 }, // num_generations=8, temperature=1.0
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: trlGrpoAlgorithm, // their trainer's: ε 1e-4, seq-mean-token-mean, k3 KL β 0.04 (trl-grpo-settings.ts)
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: r1AqaTask,
  rewards: r1AqaTask.rewards(),
} satisfies Recipe;
