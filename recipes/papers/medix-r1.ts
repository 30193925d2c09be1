/**
 * MediX-R1 (#109; Mullappilly, Kurpath et al. 2026, "MediX-R1: Open Ended Medical Reinforcement
 * Learning", arXiv 2602.23363): GRPO on open-ended medical questions with the paper's composite
 * reward: an LLM judge's strict YES/NO on the answer, a medical-embedding similarity, the image
 * modality named before the reasoning, and the format. Run:
 *
 *   npx grpo train recipes/papers/medix-r1.ts
 *   OPENAI_BASE_URL=http://127.0.0.1:8085/v1 JUDGE_MODEL=Qwen/Qwen3-4B-Instruct-2507 \
 *   EMBEDDING_BASE_URL=http://127.0.0.1:8086/v1 EMBEDDING_MODEL=abhinand/MedEmbed-large-v0.1 \
 *     npx grpo train recipes/papers/medix-r1.ts
 *
 * Exact to the authors' code (mbzuai-oryx/MediX-R1 at 99994cc, training/examples/reward_function/
 * medical.py `compute_score`, and the GRPO settings of examples/config.yaml and medix-r1_8b_grpo.sh):
 *   - the response is first cleaned of whitespace around `<`, `>` and `/` (`re.sub(r"\s*(<|>|/)\s*")`);
 *   - the ground truth is `<MODALITY>answer`: the modality is the text up to the first `>`, the answer
 *     what follows it, stripped of spaces and then of dots at both ends;
 *   - format: 1 when the text from the first `<thinking>` fullmatches
 *     `<thinking>.*?</thinking>\s*<answer>.*?</answer>`, else 0;
 *   - the given answer: the first `<answer>…</answer>` (else the whole response), stripped of spaces,
 *     then of dots. Empty, one character, or holding `__`, `:` or `?` → both accuracy scores 0;
 *     equal to the gold answer → both 1;
 *   - accuracy (LLM): else the judge's reply to their prompt ("respond with exactly "YES" if the
 *     content matches…"), 1 when it holds YES (max 4 tokens, temperature 0);
 *   - accuracy (embedding): else 1 when the cosine of the two answers' MedEmbed embeddings is ≥ 0.8;
 *   - modality: 1 when the text before `<thinking>`, stripped, equals the gold `<MODALITY>` ignoring case;
 *   - overall = 0.9·(0.575·llm + 0.375·embedding + 0.05·modality) + 0.1·format: here four rewards
 *     with weights 0.5175, 0.3375, 0.045 and 0.1, whose weighted sum is their overall.
 * Their GRPO settings that transfer: 5 samples per prompt, temperature 1, a KL loss of 1e-2 with the
 * low-variance (k3) estimator, grad-norm clip 1.
 *
 * Not the same: the judge is any OpenAI-compatible chat endpoint (OPENAI_BASE_URL, JUDGE_MODEL; theirs
 * a vLLM server of Qwen3-4B-Instruct-2507, with thinking turned off in the chat template), and the
 * embedding any OpenAI-compatible `/embeddings` endpoint (EMBEDDING_BASE_URL, EMBEDDING_MODEL; theirs
 * MedEmbed-large-v0.1 through sentence-transformers). Without a judge endpoint the LLM accuracy is the
 * exact-match part alone (their code's score when the judge call fails); without an embedding endpoint
 * the similarity is the cosine of word-count vectors (recipes/papers/r1-router.ts `wordCosine`), as
 * neither model can be had here. A judge or embedding endpoint that fails every attempt fails the
 * reward (the sample leaves the loss, `reward/<name>/invalid`), where their code scores 0.
 * Their data (MBZUAI/medix-rl-data: medical images of 16 modalities with open questions) cannot be had
 * here: the rows are cases told in words (the study's wording gives the modality, its finding the
 * diagnosis), and the model is a small character model from scratch whose SFT teacher names the wrong
 * modality or a neighbouring diagnosis on `TEACHER_ERROR_RATE` of its answers, so GRPO has both to learn.
 * Measured (seed 0, as written, no endpoints, 2 shared cores): held-out accuracy (60 rows: the right
 * modality and the exact diagnosis) 81.7% after SFT, then 81.7, 100, 100, 100% at GRPO steps 20, 40,
 * 60, 80; held-out mean reward (their overall) 0.843 → 1.000. At learning rate 2e-4 for 60 steps
 * it swung: 81.7, 78.3, 100, 75.0%.
 */
import {
  chatCompletion,
  generatedSplit,
  type Example,
  type NamedReward,
  type Pick,
  type Recipe,
  type Task,
} from '../../src/index.js';
import { embeddingSimilarity, wordCosine, type Similarity } from './r1-router.js';

/** Fraction of the teacher's answers with a wrong modality, and (apart) with a wrong diagnosis. */
const TEACHER_ERROR_RATE = 0.3;

/** Their weights: `ACCURACY_LLM_WEIGHT`, `ACCURACY_EMBED_WEIGHT`, `MODALITY_WEIGHT`, and `format_weight`. */
export const MEDIX_WEIGHTS = { llm: 0.575, embedding: 0.375, modality: 0.05, format: 0.1 } as const;

/** Their cosine threshold of `accuracy_reward_embed`. */
const EMBEDDING_THRESHOLD = 0.8;

/** Their whitespace cleanup of the response: `re.sub(r"\s*(<|>|/)\s*", r"\1", response)`. */
export const cleanResponse = (response: string): string => response.replace(/\s*([<>/])\s*/g, '$1');

/** Python's `text.strip(".")`. */
const stripDots = (text: string): string => text.replace(/^\.+|\.+$/g, '');

/** Their `format_reward` on a cleaned response. */
export function medixFormat(predict: string): number {
  const start = predict.indexOf('<thinking>');
  if (start === -1) return 0;
  return /^<thinking>[\s\S]*?<\/thinking>\s*<answer>[\s\S]*?<\/answer>$/.test(predict.slice(start).trim()) ? 1 : 0;
}

/** Their `modality_reward` on a cleaned response: the text before `<thinking>` is the gold `<MODALITY>`. */
export function medixModality(predict: string, groundTruth: string): number {
  const start = predict.indexOf('<thinking>');
  if (start === -1) return 0;
  const gold = `${groundTruth.split('>')[0]!}>`;
  return predict.slice(0, start).trim().toUpperCase() === gold.toUpperCase() ? 1 : 0;
}

/**
 * Their `_extract_answer` and `_is_invalid_answer`: the given and gold answers, `null` when the given
 * answer is invalid; throws when the ground truth has no `>` (their IndexError, scored 0).
 */
function answers(predict: string, groundTruth: string): { given: string; gold: string } | null {
  const tagged = /<answer>([\s\S]*?)<\/answer>/.exec(predict);
  const given = stripDots((tagged ? tagged[1]! : predict).trim());
  const cut = groundTruth.indexOf('>');
  if (cut === -1) throw new Error(`medix-r1: the ground truth ${JSON.stringify(groundTruth)} has no "<MODALITY>"`);
  const gold = stripDots(groundTruth.slice(cut + 1).trim());
  const invalid = given === '' || [...given].length === 1 || ['__', ':', '?'].some((symbol) => given.includes(symbol));
  return invalid ? null : { given, gold };
}

/** The judge's verdict on two answers (their `llm_answer_match`): 1 for YES, 0 for NO. */
export type AnswerJudge = (given: string, gold: string) => number | Promise<number>;

/** Their judge prompt (`create_prompt`). */
export const judgePrompt = (given: string, gold: string): string =>
  `You are a helpful assistant.\nGiven a predicted answer and the ground truth answer, respond with exactly "YES" if the content matches, otherwise respond with "NO".\nStart your response with "YES" or "NO" in uppercase.\n\nPredicted:${given}\nGround Truth:${gold}\n`;

/** Their judge call: the prompt as one user message, at most 4 tokens, temperature 0, YES anywhere → 1. */
export const endpointJudge: AnswerJudge = (given, gold) =>
  chatCompletion(
    [{ role: 'user', content: judgePrompt(given, gold) }],
    (reply) => (reply.trim().toUpperCase().includes('YES') ? 1 : 0),
    { maxTokens: 4, temperature: 0 },
  );

/** Their `accuracy_reward_llm` on a cleaned response; `judge` undefined: exact match only (their judge-failure score). */
export async function medixAccuracyLlm(predict: string, groundTruth: string, judge?: AnswerJudge): Promise<number> {
  let pair: { given: string; gold: string } | null;
  try {
    pair = answers(predict, groundTruth);
  } catch {
    return 0;
  }
  if (!pair) return 0;
  if (pair.given === pair.gold) return 1;
  return judge ? judge(pair.given, pair.gold) : 0;
}

/** Their `accuracy_reward_embed` on a cleaned response: 1 when the answers' cosine is ≥ 0.8. */
export async function medixAccuracyEmbedding(
  predict: string,
  groundTruth: string,
  similarity: Similarity,
): Promise<number> {
  let pair: { given: string; gold: string } | null;
  try {
    pair = answers(predict, groundTruth);
  } catch {
    return 0;
  }
  if (!pair) return 0;
  if (pair.given === pair.gold) return 1;
  return (await similarity(pair.given, pair.gold)) >= EMBEDDING_THRESHOLD ? 1 : 0;
}

/** Their judge when OPENAI_BASE_URL is set, else none (exact match only). */
const judge: AnswerJudge | undefined = process.env.OPENAI_BASE_URL ? endpointJudge : undefined;

/** Their embedding similarity when EMBEDDING_BASE_URL and EMBEDDING_MODEL are set, else the word-count cosine. */
function similarityFromEnvironment(): Similarity {
  const { EMBEDDING_BASE_URL: baseUrl, EMBEDDING_MODEL: model, EMBEDDING_API_KEY: apiKey } = process.env;
  if (!baseUrl && !model) return wordCosine;
  if (!baseUrl || !model)
    throw new Error(
      `recipes/papers/medix-r1.ts: set both EMBEDDING_BASE_URL and EMBEDDING_MODEL for the embedding similarity (${baseUrl ? 'EMBEDDING_MODEL' : 'EMBEDDING_BASE_URL'} is missing), or neither for the word-count cosine`,
    );
  return embeddingSimilarity({ baseUrl, model, apiKey });
}

const similarity = similarityFromEnvironment();

const solution = (row: Readonly<Record<string, unknown>>): string => {
  if (typeof row.solution !== 'string')
    throw new Error('medix-r1: the row has no "solution" column (the ground truth, "<MODALITY>answer")');
  return row.solution;
};

/** The four rewards with their weights in `compute_score` (format_weight 0.1): their overall is the weighted sum. */
export function medixRewards(options: { judge?: AnswerJudge; similarity?: Similarity } = {}): NamedReward[] {
  const content = 1 - MEDIX_WEIGHTS.format;
  const embed = options.similarity ?? similarity;
  return [
    {
      name: 'medix-accuracy-llm',
      reward: ({ completion, row }) =>
        medixAccuracyLlm(cleanResponse(completion), solution(row), 'judge' in options ? options.judge : judge),
      weight: content * MEDIX_WEIGHTS.llm,
    },
    {
      name: 'medix-accuracy-embedding',
      reward: ({ completion, row }) => medixAccuracyEmbedding(cleanResponse(completion), solution(row), embed),
      weight: content * MEDIX_WEIGHTS.embedding,
    },
    {
      name: 'medix-modality',
      reward: ({ completion, row }) => medixModality(cleanResponse(completion), solution(row)),
      weight: content * MEDIX_WEIGHTS.modality,
    },
    {
      name: 'medix-format',
      reward: ({ completion }) => medixFormat(cleanResponse(completion)),
      weight: MEDIX_WEIGHTS.format,
    },
  ];
}

/** Modalities, the study wording that gives each away, and each one's findings with their diagnoses. */
const STUDIES: Record<string, { wording: string[]; cases: [string, string][] }> = {
  XRAY: {
    wording: ['chest film', 'plain radiograph'],
    cases: [
      ['lobar opacity', 'pneumonia'],
      ['rib cortex break', 'rib fracture'],
      ['air without lung marks', 'pneumothorax'],
    ],
  },
  CT: {
    wording: ['head ct slices', 'noncontrast ct'],
    cases: [
      ['bright crescent over the brain', 'subdural hematoma'],
      ['swollen appendix with fat stranding', 'appendicitis'],
      ['stone in the ureter', 'ureteric calculus'],
    ],
  },
  MRI: {
    wording: ['t2 weighted mri', 'mri sequence'],
    cases: [
      ['torn meniscus signal', 'meniscal tear'],
      ['periventricular plaques', 'multiple sclerosis'],
      ['disc bulging into the canal', 'disc herniation'],
    ],
  },
  ULTRASOUND: {
    wording: ['ultrasound echo', 'sonogram'],
    cases: [
      ['gallbladder stones with shadow', 'cholelithiasis'],
      ['fluid around the liver', 'ascites'],
      ['enlarged kidney pelvis', 'hydronephrosis'],
    ],
  },
};
const MODALITIES = Object.keys(STUDIES);
const AGES = ['24', '37', '45', '52', '61', '68', '73', '80'];
const PEOPLE = ['man', 'woman'];

function makeRow(pick: Pick): Example {
  const modality = MODALITIES[pick(MODALITIES.length)]!;
  const study = STUDIES[modality]!;
  const index = pick(study.cases.length);
  const [finding, diagnosis] = study.cases[index]!;
  const subject = `${AGES[pick(AGES.length)]!} year old ${PEOPLE[pick(PEOPLE.length)]!}`;
  return {
    prompt: `case: ${subject}, ${study.wording[pick(2)]!} shows ${finding}. diagnosis?\n`,
    solution: `<${modality}>${diagnosis}`,
    finding,
    // The teacher's wrong diagnosis: the next case of the same modality.
    decoy: study.cases[(index + 1) % study.cases.length]![1],
  };
}

const sample = (count: number, seed: number, heldOut: boolean): Example[] =>
  generatedSplit('medical-open-qa', count, seed, heldOut, makeRow);

const allText = Object.values(STUDIES)
  .flatMap((study) => [...study.wording, ...study.cases.flat()])
  .join('');

export const task: Task = {
  name: 'medical-open-qa',
  description: 'open-ended medical questions: modality, reasoning and a free-form diagnosis (MediX-R1 #109)',
  alphabet: [
    ...new Set(`${allText}${MODALITIES.join('')}${AGES.join('')}${PEOPLE.join('')}case: ,.?\n<>/thinkgaswer`),
  ].join(''),
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(row, draw) {
    const gold = solution(row);
    const goldModality = gold.slice(1, gold.indexOf('>'));
    const modality =
      draw() < TEACHER_ERROR_RATE
        ? MODALITIES[(MODALITIES.indexOf(goldModality) + 1) % MODALITIES.length]!
        : goldModality;
    const diagnosis = draw() < TEACHER_ERROR_RATE ? String(row.decoy) : gold.slice(gold.indexOf('>') + 1);
    return `<${modality}><thinking>${String(row.finding)}</thinking><answer>${diagnosis}</answer>`;
  },
  rewards: () => medixRewards(),
  // Held-out accuracy: the right modality and the judge's YES (without a judge endpoint: the exact answer).
  isCorrect: async (row, completion) => {
    const predict = cleanResponse(completion);
    return medixModality(predict, solution(row)) === 1 && (await medixAccuracyLlm(predict, solution(row), judge)) === 1;
  },
};

export default {
  config: {
    task: 'medical-open-qa',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 300, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    // Their config.yaml and medix-r1_8b_grpo.sh: n = 5 rollouts at temperature 1, a KL loss of 1e-2
    // (low_var_kl, the k3 estimator), grad-norm clip 1; the learning rate is the toy model's (theirs 1e-6).
    sampling: { groupSize: 5, maxNewTokens: 112, temperature: 1 },
    algorithm: { advantage: 'grpo', klCoefficient: 0.01, klEstimator: 'k3' },
    optimizer: { maxGradNorm: 1 },
    grpo: { steps: 80, promptsPerStep: 8, microBatchSize: 40, learningRate: 1e-4 },
    evaluation: { examples: 60, every: 20 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
  rewards: medixRewards(),
} satisfies Recipe;
