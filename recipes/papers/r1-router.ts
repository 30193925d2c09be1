/**
 * R1-Router's Step-GRPO (#210; Peng, Xu, Liu et al. 2025, "Learning to Route Queries Across Knowledge
 * Bases for Step-wise Retrieval-Augmented Reasoning", arXiv 2505.22095): GRPO on the steps of
 * reasoning trajectories, each step its own prompt and group with a reward for that kind of step.
 * Run: `npx grpo train recipes/papers/r1-router.ts`.
 *
 * Exact to the authors' code (the first author's commits, hm1229, read in the mirror
 * ChloeTT-LAO/Router-Search at c0a0c1b, their last: Easy-R1/verl/utils/reward_score/step.py
 * `step_compute_score`, verl/utils/rl_dataset.py, verl/trainer/ray_trainer.py,
 * src/data_synthesis/data_combine.py):
 *   - a trajectory is cut into step rows (data_combine.py): route steps (`step_type` "ret": the question
 *     and what is known so far in, `<think>…</think><sub-question>…</sub-question><ret>KB</ret>` out),
 *     sub-answer steps ("ans": a sub-question and its retrieved documents in, `<think>…</think>
 *     <answer>…</answer>` out) and the final answer step ("ans");
 *   - every step row is its own GRPO group (`uid` per row; grpo advantages, Easy-R1's
 *     compute_grpo_outcome_advantage);
 *   - route reward (`ret_accuracy_reward`, on the lower-cased output): 0 unless the three tags parse
 *     and every comma-separated KB is one of `text retriever`, `text image retriever`,
 *     `table retriever`, `none` (`none` only alone); else 0.5·sim(sub-question, gold sub-question) +
 *     0.5·[exactly one KB, the gold one];
 *   - answer reward (`ans_accuracy_reward`): 0 unless `<think>` and `<answer>` parse; the answer's token
 *     recall against the gold answers after VQA normalisation (punctuation, number words, the articles
 *     "an" and "the"); one gold answer of at most 5 words or several gold answers: 1 at recall 1, else
 *     0; one longer gold answer: the recall.
 * sim is the cosine of BGE-M3 dense embeddings in their code: with EMBEDDING_BASE_URL and
 * EMBEDDING_MODEL naming an OpenAI-compatible `/embeddings` endpoint that serves BAAI/bge-m3
 * (`embeddingSimilarity`), it is theirs; without them it is the cosine of the two texts' word-count
 * vectors (`wordCosine`), as no embedding model can be had here. NLTK's word_tokenize is a split on
 * spaces after their punctuation handling (the same tokens on these texts). Their retrievers, corpora
 * and images are replaced by the made-up world below.
 *
 * Task (defined here): two-hop questions over three made-up knowledge bases — "what is the population
 * of the birth city of mira": the birth city is in the text KB, a city's population in the
 * table KB, its flag in the image-text KB. Each question gives five step rows. The SFT teacher routes
 * to a wrong KB, or asks a vaguer sub-question, on `TEACHER_ERROR_RATE` of its route steps, and
 * answers from the wrong line of the documents on that share of its answer steps.
 */
import { generatedSplit, type Example, type Pick, type Recipe, type Task } from '../../src/index.js';

/** Fraction of the teacher's steps that route or answer wrongly. */
const TEACHER_ERROR_RATE = 0.3;

/** The knowledge bases a route step may name (their code's list). */
export const RETRIEVERS = ['text retriever', 'text image retriever', 'table retriever', 'none'];

const NAMES = ['mira', 'tomas', 'lena', 'omar', 'yuki', 'ravi', 'ines', 'karl', 'nadia', 'pablo', 'sofia', 'ivan'];
const CITIES = ['oslo', 'lima', 'rome', 'kyiv', 'baku', 'doha', 'riga', 'bern'];
const COLORS = ['red', 'blue', 'green', 'white'];

const cityOf = (name: number) => (name * 3 + 1) % CITIES.length;
const population = (city: number) => `${((city * 7 + 3) % 9) + 1}00`;
const flagOf = (city: number) => COLORS[(city * 5 + 2) % COLORS.length]!;

/** The marks their `processPunctuation` removes, or turns into spaces. */
const PUNCTUATION = [
  ';',
  '/',
  '[',
  ']',
  '"',
  '{',
  '}',
  '(',
  ')',
  '=',
  '+',
  '\\',
  '_',
  '-',
  '>',
  '<',
  '@',
  '`',
  ',',
  '?',
  '!',
];
const NUMBER_WORDS: Record<string, string> = {
  none: '0',
  zero: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
};

/** Their VQA normalisation (step.py `processPunctuation`, then `processDigitArticle`) of one string. */
function normalize(raw: string): string {
  const text = raw.replace(/[\n\t]/g, ' ').trim();
  const dropMarks = /(\d)(,)(\d)/.test(text);
  let out = text;
  for (const mark of PUNCTUATION) {
    const drop = dropMarks || text.includes(`${mark} `) || text.includes(` ${mark}`);
    out = out.split(mark).join(drop ? '' : ' ');
  }
  out = out.replace(/\.(?!\d)/g, '');
  return out
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== '' && word !== 'an' && word !== 'the')
    .map((word) => NUMBER_WORDS[word] ?? word)
    .join(' ');
}

/** Tokens as their `process_string_en` keeps them (a token that is part of `,.?!:;'"` is dropped). */
const tokens = (text: string) => text.split(/\s+/).filter((token) => !',.?!:;\'"'.includes(token));

/** Token recall of `prediction` against the gold answer with the best F1 (their `compute_acc`). */
export function answerRecall(prediction: string, golds: readonly string[]): number {
  const predicted = tokens(normalize(prediction));
  if (predicted.length === 0) return 0;
  let best = { f1: 0, recall: 0 };
  for (const gold of golds) {
    const expected = tokens(normalize(gold));
    const counts = new Map<string, number>();
    for (const token of expected) counts.set(token, (counts.get(token) ?? 0) + 1);
    let same = 0;
    for (const token of predicted) {
      const left = counts.get(token) ?? 0;
      if (left === 0) continue;
      same++;
      counts.set(token, left - 1);
    }
    if (expected.length === 0 || same === 0) continue;
    const precision = same / predicted.length;
    const recall = same / expected.length;
    const f1 = (2 * precision * recall) / (precision + recall);
    if (f1 > best.f1) best = { f1, recall };
  }
  return best.recall;
}

/** Cosine of the word-count vectors of two texts (the stand-in for BGE-M3's dense cosine). */
export function wordCosine(a: string, b: string): number {
  const count = (text: string) => {
    const counts = new Map<string, number>();
    for (const word of text.toLowerCase().split(/\s+/).filter(Boolean)) counts.set(word, (counts.get(word) ?? 0) + 1);
    return counts;
  };
  const x = count(a);
  const y = count(b);
  let dot = 0;
  for (const [word, n] of x) dot += n * (y.get(word) ?? 0);
  const squares = (v: Map<string, number>) => [...v.values()].reduce((sum, n) => sum + n * n, 0);
  // One square root of the product: equal texts give exactly 1.
  return dot === 0 ? 0 : dot / Math.sqrt(squares(x) * squares(y));
}

const tag = (text: string, name: string) => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(text)?.[1];

/** How alike a sub-question is to the gold one, in [0, 1] (their BGE-M3 cosine). */
export type Similarity = (query: string, gold: string) => number | Promise<number>;

/**
 * The cosine of two texts' embeddings from an OpenAI-compatible `/embeddings` endpoint: their
 * similarity when the endpoint serves BGE-M3 (`BAAI/bge-m3`, e.g. with vLLM or text-embeddings-inference).
 */
export function embeddingSimilarity(endpoint: { baseUrl: string; model: string; apiKey?: string }): Similarity {
  const url = `${endpoint.baseUrl.replace(/\/$/, '')}/embeddings`;
  return async (query, gold) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: endpoint.model, input: [query, gold] }),
    });
    if (!response.ok) throw new Error(`r1-router: HTTP ${response.status} from ${url}`);
    const reply = (await response.json()) as { data?: { embedding?: number[] }[] };
    const [x, y] = [reply.data?.[0]?.embedding, reply.data?.[1]?.embedding];
    if (!x || !y || x.length !== y.length)
      throw new Error(`r1-router: the reply from ${url} has no data[0].embedding and data[1].embedding of one length`);
    let [dot, xx, yy] = [0, 0, 0];
    x.forEach((value, i) => {
      dot += value * y[i]!;
      xx += value * value;
      yy += y[i]! * y[i]!;
    });
    return dot === 0 ? 0 : dot / Math.sqrt(xx * yy);
  };
}

/** The route-step reward (their `ret_accuracy_reward`): 0.5·sim(sub-question) + 0.5·[the one right KB]. */
export async function routeReward(
  completion: string,
  gold: { query: string; retriever: readonly string[] },
  similarity: Similarity = wordCosine,
): Promise<number> {
  const text = completion.toLowerCase();
  const [thought, query, retriever] = [tag(text, 'think'), tag(text, 'sub-question'), tag(text, 'ret')];
  if (thought === undefined || query === undefined || retriever === undefined) return 0;
  const named = retriever
    .trim()
    .split(',')
    .map((item) => item.trim());
  if (named.some((item) => !RETRIEVERS.includes(item) || (item === 'none' && named.length > 1))) return 0;
  const routed = named.length === 1 && named[0] === gold.retriever[0] ? 1 : 0;
  return 0.5 * (await similarity(query.trim(), gold.query)) + 0.5 * routed;
}

/** The answer-step reward (their `ans_accuracy_reward`). */
export function answerReward(completion: string, golds: readonly string[]): number {
  const text = completion.toLowerCase();
  const answer = tag(text, 'answer');
  if (tag(text, 'think') === undefined || answer === undefined) return 0;
  const recall = answerRecall(answer.trim(), golds);
  if (golds.length === 1 && golds[0]!.split(' ').length > 5) return recall;
  return recall === 1 ? 1 : 0;
}

/** Step-GRPO's reward of one step row: by its `step_type` (their `step_compute_score`). */
export async function stepReward(
  completion: string,
  row: Readonly<Record<string, unknown>>,
  similarity: Similarity = wordCosine,
): Promise<number> {
  const gold = { query: String(row.query), retriever: [String(row.retriever)] };
  if (row.step_type === 'ret') return routeReward(completion, gold, similarity);
  if (row.step_type === 'ans') return answerReward(completion, [String(row.answer)]);
  throw new Error(`r1-router: row step_type must be "ret" or "ans", got ${JSON.stringify(row.step_type)}`);
}

/** One step row of a question's trajectory: `stepIndex` 0–4 (route, sub-answer, route, sub-answer, final). */
function makeRow(pick: Pick): Example {
  const name = NAMES[pick(NAMES.length)]!;
  const city = cityOf(NAMES.indexOf(name));
  const flag = pick(2) === 1;
  const question = flag
    ? `what color is the flag of the birth city of ${name}`
    : `what is the population of the birth city of ${name}`;
  const first = { query: `where was ${name} born`, retriever: 'text retriever', answer: CITIES[city]! };
  const second = flag
    ? { query: `what color is the flag of ${CITIES[city]}`, retriever: 'text image retriever', answer: flagOf(city) }
    : { query: `what is the population of ${CITIES[city]}`, retriever: 'table retriever', answer: population(city) };
  // Each document also holds a line about a neighbouring city: the teacher's wrong answers read it.
  const other = (city + 1) % CITIES.length;
  const decoy = flag ? flagOf(other) : population(other);
  const documents = [
    `${name} was born in ${CITIES[city]}. ${name} lived in ${CITIES[other]}.`,
    flag
      ? `image: the flag of ${CITIES[city]} is ${second.answer}. the flag of ${CITIES[other]} is ${decoy}.`
      : `${CITIES[city]} | population | ${second.answer}. ${CITIES[other]} | population | ${decoy}.`,
  ];
  const known = `${first.query} = ${first.answer}`;
  const step = pick(5);
  const rows: Example[] = [
    { prompt: `route: ${question}\nknown: none\n`, step_type: 'ret', ...first, think: 'need birth city' },
    {
      prompt: `answer: ${first.query}\ndocs: ${documents[0]}\n`,
      step_type: 'ans',
      answer: first.answer,
      decoy: CITIES[other],
    },
    {
      prompt: `route: ${question}\nknown: ${known}\n`,
      step_type: 'ret',
      ...second,
      think: flag ? 'need flag' : 'need population',
    },
    { prompt: `answer: ${second.query}\ndocs: ${documents[1]}\n`, step_type: 'ans', answer: second.answer, decoy },
    {
      prompt: `final: ${question}\nknown: ${known}; ${second.query} = ${second.answer}\n`,
      step_type: 'ans',
      answer: second.answer,
      decoy: first.answer,
    },
  ];
  return { ...rows[step]!, stepIndex: step };
}

const sample = (count: number, seed: number, heldOut: boolean): Example[] =>
  generatedSplit('kb-routing', count, seed, heldOut, makeRow);

/** Their similarity when EMBEDDING_BASE_URL and EMBEDDING_MODEL name a BGE-M3 endpoint, else the word-count cosine. */
function similarityFromEnvironment(): Similarity {
  const { EMBEDDING_BASE_URL: baseUrl, EMBEDDING_MODEL: model, EMBEDDING_API_KEY: apiKey } = process.env;
  if (!baseUrl && !model) return wordCosine;
  if (!baseUrl || !model)
    throw new Error(
      `recipes/papers/r1-router.ts: set both EMBEDDING_BASE_URL and EMBEDDING_MODEL for the embedding similarity (${baseUrl ? 'EMBEDDING_MODEL' : 'EMBEDDING_BASE_URL'} is missing), or neither for the word-count cosine`,
    );
  return embeddingSimilarity({ baseUrl, model, apiKey });
}

const similarity = similarityFromEnvironment();

export const task: Task = {
  name: 'kb-routing',
  description:
    'route sub-questions to text, image-text and table knowledge bases, step by step (R1-Router Step-GRPO #210)',
  alphabet: [...new Set(`abcdefghijklmnopqrstuvwxyz0123456789 .:;=|\n<>/-${RETRIEVERS.join('')}`)].join(''),
  trainExamples: (count, seed) => sample(count, seed, false),
  evalExamples: (count, seed) => sample(count, seed, true),
  demonstration(row, draw) {
    const wrong = draw() < TEACHER_ERROR_RATE;
    if (row.step_type === 'ans')
      return `<think>read docs</think><answer>${String(wrong ? row.decoy : row.answer)}</answer>`;
    const gold = String(row.retriever);
    // Half the teacher's wrong route steps name the next knowledge base, half ask a vaguer sub-question.
    const retriever = wrong && draw() < 0.5 ? RETRIEVERS[(RETRIEVERS.indexOf(gold) + 1) % 3]! : gold;
    const query = wrong && retriever === gold ? String(row.query).split(' ').slice(-2).join(' ') : String(row.query);
    return `<think>${String(row.think)}</think><sub-question>${query}</sub-question><ret>${retriever}</ret>`;
  },
  rewards: () => [
    { name: 'step', reward: ({ completion, row }) => stepReward(completion, row, similarity), weight: 1 },
  ],
  isCorrect: async (row, completion) => (await stepReward(completion, row, similarity)) === 1,
};

export default {
  config: {
    task: 'kb-routing',
    model: { hiddenSize: 64, numLayers: 2, numHeads: 4 },
    sft: { steps: 500, batchSize: 16, learningRate: 3e-3, warmupSteps: 20, schedule: 'cosine' },
    // EasyR1's examples/grpo_example.yaml, which their launch script names (hiyouga/EasyR1 at 6241a21):
    // 5 rollouts per step row, a KL loss of 1e-3 with the low-variance (k3) estimator.
    sampling: { groupSize: 5, maxNewTokens: 120, temperature: 1 },
    algorithm: { advantage: 'grpo', klCoefficient: 0.001, klEstimator: 'k3' },
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 40, learningRate: 1e-4 },
    evaluation: { examples: 60 },
    checkpoint: { every: 1000 },
    logging: { printEvery: 10 },
  },
  task,
} satisfies Recipe;
