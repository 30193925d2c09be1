/**
 * StealthRL's composite paraphrase-attack reward (#34, Ranganath et al. 2026, arXiv 2602.08934): a
 * paraphrase y of an AI-written text x is rewarded for lowering a detector ensemble's AI probability
 * while keeping x's meaning. Written from the paper (section "Reward Design", eq. 1–3) and the
 * authors' code, github.com/suraj-ranganath/StealthRL `stealthrl/tinker/reward.py`
 * (`TinkerCompositeReward.compute_batch`, `_normalize_detector`) with the paper checkpoint's config
 * `configs/tinker_mage_10k.yaml`:
 *
 *   invalid (fewer than 10 words, or more than 3× the source's words)  →  R = −0.5
 *   p_ens(y) = Σ_k w_k p_k(y)                     (paper: w = 0.6 RoBERTa, 0.4 Fast-DetectGPT)
 *   R_det    = z(1 − p_ens(y))                    running z-score over every score seen so far,
 *                                                 Welford from mean 0.5, std 0.15, clipped to [−3, 3]
 *                                                 (raw score while the running std ≤ 1e-6)
 *   R_sem    = sim(x, y)                          (paper: cosine of E5 embeddings)
 *   R        = α R_det + β R_sem,   α = 1, β = 0.1
 *
 * What differs here, because the paper's models cannot be had: the detectors are two logistic
 * regressions trained at first use on generated "machine-style" and "human-style" sentences (word
 * uni+bigrams, weight 0.6, standing in for the supervised RoBERTa; character trigrams, weight 0.4,
 * standing in for Fast-DetectGPT), and sim is ROUGE-L F1 over words in place of E5 cosine. The
 * running z-score is state of the reward instance, as in the authors' class (so, per worker thread).
 * The authors' code also rescales R_sem by min(1, sim / (1 − 0.9)) when normalisation is on; the
 * paper's equation does not, so that is the `semanticNormalizeMin` option, off by default.
 *
 * Is not: the fairness (ESL) or perplexity terms of the authors' earlier configs (weight 0 in the
 * paper's), nor GRPO's KL term (a trainer setting).
 */
import { rougeLScore } from './similarity.js';
import { stringColumn, type RewardFn } from './types.js';

/** Content slots of a generated sentence: its meaning. */
const SUBJECTS = ['farmer', 'teacher', 'doctor', 'pilot', 'baker', 'painter'];
const VERBS = ['repairs', 'checks', 'cleans', 'paints', 'moves', 'opens'];
const OBJECTS = ['fence', 'door', 'boat', 'wagon', 'table', 'gate'];
const PLACES = ['river', 'market', 'school', 'harbor'];
const TIMES = ['morning', 'evening', 'week', 'day'];
/** Markers of the machine register (hedges and filler LLMs overuse) and of the human one. */
const MACHINE_OPENERS = ['furthermore', 'notably', 'additionally', 'importantly'];
const MACHINE_ADVERBS = ['meticulously', 'seamlessly', 'effectively', 'diligently'];
const MACHINE_CLOSERS = ['to ensure optimal outcomes', 'in a comprehensive manner', 'with remarkable precision'];
const HUMAN_OPENERS = ['so', 'well', 'honestly', 'anyway'];
const HUMAN_CLOSERS = ['as usual', 'i think', 'most days'];

/** One generated meaning: the four content words and the time word. */
export interface StealthMeaning {
  subject: string;
  verb: string;
  object: string;
  place: string;
  time: string;
}

type Pick = (n: number) => number;

/** A random meaning. */
export function stealthMeaning(pick: Pick): StealthMeaning {
  return {
    subject: SUBJECTS[pick(SUBJECTS.length)]!,
    verb: VERBS[pick(VERBS.length)]!,
    object: OBJECTS[pick(OBJECTS.length)]!,
    place: PLACES[pick(PLACES.length)]!,
    time: TIMES[pick(TIMES.length)]!,
  };
}

/** The plain sentence of a meaning, ten words, no register markers. */
export function plainSentence(meaning: StealthMeaning): string {
  const { subject, verb, object, place, time } = meaning;
  return `the ${subject} ${verb} the ${object} near the ${place} every ${time}`;
}

/** The meaning in the machine register: an opener, an adverb before the verb and a closer. */
export function machineSentence(meaning: StealthMeaning, pick: Pick): string {
  const { subject, verb, object, place, time } = meaning;
  const opener = MACHINE_OPENERS[pick(MACHINE_OPENERS.length)]!;
  const adverb = MACHINE_ADVERBS[pick(MACHINE_ADVERBS.length)]!;
  const closer = MACHINE_CLOSERS[pick(MACHINE_CLOSERS.length)]!;
  return `${opener} the ${subject} ${adverb} ${verb} the ${object} near the ${place} every ${time} ${closer}`;
}

/** The meaning in the human register: the plain sentence, sometimes with a casual opener or closer. */
function humanSentence(meaning: StealthMeaning, pick: Pick): string {
  const plain = plainSentence(meaning);
  const opener = pick(2) === 0 ? `${HUMAN_OPENERS[pick(HUMAN_OPENERS.length)]!} ` : '';
  const closer = pick(2) === 0 ? ` ${HUMAN_CLOSERS[pick(HUMAN_CLOSERS.length)]!}` : '';
  return `${opener}${plain}${closer}`;
}

/** A seeded linear-congruential draw of integers in [0, n). */
export function seededPick(seed: number): Pick {
  let state = seed >>> 0 || 1;
  return (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
}

type Featurizer = (text: string) => string[];

const wordFeatures: Featurizer = (text) => {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  return [...words.map((word) => `w:${word}`), ...words.slice(1).map((word, i) => `b:${words[i]} ${word}`)];
};

const charFeatures: Featurizer = (text) => {
  const padded = ` ${text.toLowerCase().replace(/\s+/g, ' ').trim()} `;
  return Array.from({ length: Math.max(0, padded.length - 2) }, (_, i) => padded.slice(i, i + 3));
};

/** A logistic-regression detector: P(machine | text) = σ(b + Σ_f weight_f · count_f / √n). */
export interface LogisticDetector {
  probability(text: string): number;
}

function trainLogistic(featurize: Featurizer, texts: string[], labels: number[]): LogisticDetector {
  const index = new Map<string, number>();
  const rows = texts.map((text) => {
    const counts = new Map<number, number>();
    const features = featurize(text);
    for (const feature of features) {
      if (!index.has(feature)) index.set(feature, index.size);
      const id = index.get(feature)!;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    // Length-normalised counts, so a long paraphrase is not judged by its length alone.
    const scale = 1 / Math.sqrt(Math.max(1, features.length));
    return [...counts].map(([id, count]) => [id, count * scale] as const);
  });
  const weights = new Float64Array(index.size);
  let bias = 0;
  // Full-batch gradient descent with a small L2 penalty: deterministic, so the same data give the same detector.
  const learningRate = 2;
  const l2 = 1e-3;
  for (let iteration = 0; iteration < 300; iteration++) {
    const gradient = new Float64Array(index.size);
    let biasGradient = 0;
    rows.forEach((row, r) => {
      const logit = row.reduce((sum, [id, value]) => sum + weights[id]! * value, bias);
      const error = 1 / (1 + Math.exp(-logit)) - labels[r]!;
      for (const [id, value] of row) gradient[id]! += error * value;
      biasGradient += error;
    });
    for (let id = 0; id < weights.length; id++)
      weights[id]! -= learningRate * (gradient[id]! / rows.length + l2 * weights[id]!);
    bias -= (learningRate * biasGradient) / rows.length;
  }
  return {
    probability(text) {
      const features = featurize(text);
      const scale = 1 / Math.sqrt(Math.max(1, features.length));
      let logit = bias;
      for (const feature of features) {
        const id = index.get(feature);
        if (id !== undefined) logit += weights[id]! * scale;
      }
      return 1 / (1 + Math.exp(-logit));
    },
  };
}

/** The two detectors of the ensemble, trained once per seed on the same generated sentences. */
export interface StealthDetectors {
  word: LogisticDetector;
  char: LogisticDetector;
}

const trained = new Map<number, StealthDetectors>();

/** Trains (once per seed, then cached) the word and character detectors on 300 meanings, each in both registers. */
export function stealthDetectors(seed = 0): StealthDetectors {
  const cached = trained.get(seed);
  if (cached) return cached;
  const pick = seededPick(seed * 7919 + 101);
  const texts: string[] = [];
  const labels: number[] = [];
  for (let i = 0; i < 300; i++) {
    // One meaning in both registers, so content words carry no signal and only the register does;
    // with separate meanings, chance correlations let a policy evade by changing the subject.
    const meaning = stealthMeaning(pick);
    texts.push(machineSentence(meaning, pick), humanSentence(meaning, pick));
    labels.push(1, 0);
  }
  const detectors = {
    word: trainLogistic(wordFeatures, texts, labels),
    char: trainLogistic(charFeatures, texts, labels),
  };
  trained.set(seed, detectors);
  return detectors;
}

export interface StealthrlOptions {
  /** Column with the AI-written source text x (default `source`). */
  sourceColumn?: string;
  /** α, the weight of the detector-evasion term (default 1, the paper's). */
  detectorWeight?: number;
  /** β, the weight of the semantic term (default 0.1, the paper's). */
  semanticWeight?: number;
  /** Ensemble weights of the word and character detectors (default 0.6 and 0.4, the paper's RoBERTa and Fast-DetectGPT). */
  ensembleWeights?: { word: number; char: number };
  /** Running z-score of the evasion term, clipped to ±3 (default true, the paper's). */
  detectorZscore?: boolean;
  /** The authors' code's semantic rescaling min(1, sim / (1 − m)) (default off: the paper's equation has none). */
  semanticNormalizeMin?: number;
  /** A paraphrase with fewer words is invalid (default 10, the authors'). */
  minWords?: number;
  /** A paraphrase with more than this many times the source's words is invalid (default 3, the authors'). */
  maxLengthRatio?: number;
  /** The total reward of an invalid paraphrase (default −0.5, the authors'). */
  invalidScore?: number;
  /** Seed of the detectors' generated training sentences (default 0). */
  detectorSeed?: number;
}

/** The ensemble's AI probability p_ens(y) = w_word p_word(y) + w_char p_char(y). */
export function ensembleProbability(
  text: string,
  { word = 0.6, char = 0.4 }: { word?: number; char?: number } = {},
  seed = 0,
): number {
  const detectors = stealthDetectors(seed);
  return word * detectors.word.probability(text) + char * detectors.char.probability(text);
}

/** The authors' running z-score (`_normalize_detector`): Welford from mean 0.5, std 0.15, clipped to [−3, 3]. */
export function runningZscore(): (score: number) => number {
  let mean = 0.5;
  let std = 0.15;
  let count = 0;
  return (score) => {
    count += 1;
    const delta = score - mean;
    mean += delta / count;
    const delta2 = score - mean;
    std = Math.sqrt((std ** 2 * (count - 1) + delta * delta2) / count);
    if (std > 1e-6) return Math.max(-3, Math.min(3, (score - mean) / (std + 1e-6)));
    return score;
  };
}

/**
 * StealthRL's reward of a paraphrase: α·z(1 − p_ens) + β·ROUGE-L(source, paraphrase), or −0.5 when
 * too short or too long. Unbounded above by the z-score's clip: in [−3α, 3α + β].
 * @example stealthrl({ detectorZscore: false })(makeRewardInput({ completion: plain, row: { source: machine } }))
 */
export function stealthrl({
  sourceColumn = 'source',
  detectorWeight = 1,
  semanticWeight = 0.1,
  ensembleWeights = { word: 0.6, char: 0.4 },
  detectorZscore = true,
  semanticNormalizeMin,
  minWords = 10,
  maxLengthRatio = 3,
  invalidScore = -0.5,
  detectorSeed = 0,
}: StealthrlOptions = {}): RewardFn {
  stealthDetectors(detectorSeed); // train now, not inside the first timed reward call
  const normalize = runningZscore();
  return ({ completion, row }) => {
    const source = stringColumn(row, sourceColumn, 'stealthrl');
    const words = completion.split(/\s+/).filter(Boolean).length;
    const sourceWords = source.split(/\s+/).filter(Boolean).length;
    if (words < minWords || (sourceWords > 0 && words > maxLengthRatio * sourceWords)) return invalidScore;
    const evasion = 1 - ensembleProbability(completion, ensembleWeights, detectorSeed);
    const similarity = rougeLScore(completion, source);
    const semantic =
      semanticNormalizeMin === undefined
        ? similarity
        : Math.min(1, Math.max(0, similarity) / (1 - semanticNormalizeMin));
    return detectorWeight * (detectorZscore ? normalize(evasion) : evasion) + semanticWeight * semantic;
  };
}
