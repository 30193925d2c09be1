/**
 * Reranking on generated word documents, for ProRank (#17, pointwise) and GroupRank (#51,
 * groupwise). A query is two words, a document three; a document's graded relevance is how many
 * query words it contains (0, 1 or 2), so every label is exact.
 *   - `pointwise`: one query, one document; the answer is `<answer>1</answer>` when the document is
 *     relevant (grade ≥ 1), else `<answer>0</answer>` (ProRank's binary relevance).
 *   - `groupwise`: one query, `documents` numbered documents; the answer is one score per document,
 *     `<answer>2,0,1,0</answer>`, and the row's `relevance` holds the gold grades (GroupRank).
 *
 * Why GRPO has work: the SFT teacher gets `teacherErrorRate` of its labels wrong (a pointwise label
 * flipped, a groupwise score replaced by one from a myopic reading of the first query word only).
 * Held out: queries whose word pair hashes into one bucket of eight are never trained on.
 * Is not: MS MARCO or BEIR (no download here); ranking by meaning rather than word overlap.
 */
import { z } from 'zod';
import { exactMatch, tagFormat } from '../../rewards/format.js';
import { parseScores, rankingNdcg, scoreDistribution } from '../../rewards/ranking.js';
import type { NamedReward } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `rerankingTask` accepts (config `taskOptions`); unknown keys are refused. */
export const rerankingOptionsSchema = z
  .object({
    /** `pointwise` (ProRank: one document, relevant or not) or `groupwise` (GroupRank: a score per document). */
    mode: z.enum(['pointwise', 'groupwise']).optional(),
    /** Documents per groupwise prompt (default 4). */
    documents: z.number().int().min(2).max(8).optional(),
    /** Fraction of SFT demonstrations with a wrong label or score (default 0.4). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

const WORDS = ['cat', 'sun', 'map', 'car', 'tea', 'box', 'pen', 'cup', 'hat', 'bus', 'egg', 'key'];

function hash(a: number, b: number): number {
  let h = Math.imul(a * 977 + b + 1, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

const isHeldOut = (a: number, b: number) => hash(Math.min(a, b), Math.max(a, b)) % 8 === 0;

type Pick = (n: number) => number;

/** Three distinct words; with `mustShare`, at least one of them is a query word. */
function document(query: readonly number[], pick: Pick, mustShare: boolean): number[] {
  const words = mustShare ? [query[pick(2)]!] : [];
  while (words.length < 3) {
    const word = pick(WORDS.length);
    if (!words.includes(word)) words.push(word);
  }
  return words.sort((a, b) => a - b);
}

const grade = (query: readonly number[], words: readonly number[]) =>
  query.filter((word) => words.includes(word)).length;
const text = (words: readonly number[]) => words.map((word) => WORDS[word]).join(' ');

function example(mode: 'pointwise' | 'groupwise', count: number, query: number[], pick: Pick): Example {
  const head = `q: ${text(query)}\n`;
  if (mode === 'pointwise') {
    const words = document(query, pick, pick(2) === 0);
    const label = grade(query, words) > 0 ? '1' : '0';
    return { prompt: `${head}d: ${text(words)}\nrelevant? `, answer: label, relevance: [grade(query, words)], query };
  }
  const relevant = pick(count);
  const documents = Array.from({ length: count }, (_, index) => document(query, pick, index === relevant));
  const relevance = documents.map((words) => grade(query, words));
  const lines = documents.map((words, index) => `[${index + 1}] ${text(words)}\n`).join('');
  // A myopic reading: only the first query word counts (GroupRank's "ranking myopia" in miniature).
  const myopic = documents.map((words) => (words.includes(query[0]!) ? 1 : 0));
  return { prompt: `${head}${lines}scores 0-2: `, answer: relevance.join(','), relevance, myopic, query };
}

function sample(
  options: Required<z.infer<typeof rerankingOptionsSchema>>,
  count: number,
  seed: number,
  heldOut: boolean,
) {
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0 || 1;
  const pick: Pick = (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const examples: Example[] = [];
  while (examples.length < count) {
    const a = pick(WORDS.length);
    const b = pick(WORDS.length);
    if (a === b || isHeldOut(a, b) !== heldOut) continue;
    examples.push(
      example(
        options.mode,
        options.documents,
        [a, b].sort((x, y) => x - y),
        pick,
      ),
    );
  }
  return examples;
}

/** The gold relevance as an array of grades (the task writes it; a row from elsewhere is checked). */
const gradesOf = (row: Example): number[] => (Array.isArray(row.relevance) ? (row.relevance as number[]) : []);

/** The reranking task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function rerankingTask(raw: Record<string, unknown> = {}): Task {
  const parsed = parseTaskOptions('reranking', rerankingOptionsSchema, raw);
  const options = {
    mode: parsed.mode ?? 'groupwise',
    documents: parsed.documents ?? 4,
    teacherErrorRate: parsed.teacherErrorRate ?? 0.4,
  };
  const pointwise = options.mode === 'pointwise';
  return {
    name: 'reranking',
    description: pointwise
      ? 'is this word document relevant to the query: <answer>1|0</answer> (ProRank #17, pointwise)'
      : 'score each of a group of word documents for a query: <answer>2,0,1,0</answer> (GroupRank #51, groupwise)',
    alphabet: [...new Set(`${WORDS.join('')}qd:[]0123456789\n ,-relevant?scores<>/answer`)].join(''),
    trainExamples: (count, seed) => sample(options, count, seed, false),
    evalExamples: (count, seed) => sample(options, count, seed, true),
    demonstration(row, draw) {
      const wrong = draw() < options.teacherErrorRate;
      if (pointwise) return `<answer>${wrong ? (row.answer === '1' ? '0' : '1') : row.answer}</answer>`;
      return `<answer>${(wrong ? (row.myopic as number[]) : gradesOf(row)).join(',')}</answer>`;
    },
    rewards: (): NamedReward[] => [
      ...(pointwise
        ? [{ name: 'relevance', reward: exactMatch({ tag: 'answer' }), weight: 1 }]
        : [
            { name: 'ndcg', reward: rankingNdcg(), weight: 1 },
            { name: 'distribution', reward: scoreDistribution({ maxScore: 2 }), weight: 0.5 },
          ]),
      { name: 'format', reward: tagFormat({ tags: ['answer'] }), weight: 0.2 },
    ],
    isCorrect(row, completion) {
      if (pointwise) return /^\s*<answer>\s*([01])\s*<\/answer>\s*$/.exec(completion)?.[1] === row.answer;
      const scores = parseScores(completion, gradesOf(row).length);
      return scores !== null && scores.every((score, index) => score === gradesOf(row)[index]);
    },
  };
}
