/**
 * Ranking rewards for rerankers that score a group of candidate documents in one completion
 * (GroupRank #51's groupwise paradigm): the completion gives one relevance score per document
 * (`<answer>2, 0, 1</answer>`), the row gives the documents' graded gold relevance (`relevance`:
 * `[2, 0, 1]`), and the rewards compare them — NDCG@k, recall@k and how close the scores are to the
 * gold grades.
 *
 * Ties: documents with equal predicted scores are ranked in every order with equal probability and
 * the expected metric is returned (McSherry & Najork, ECIR 2008), so scoring every document the same
 * earns what a random order earns, never what the gold order earns.
 *
 * Is not: a pointwise relevance reward (ProRank #17 scores one document: `exact-match` with
 * `tag: answer` does that) or a listwise permutation parser.
 */
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

/** Where the scores are read and the gold grades found; shared by the ranking rewards. */
export interface RankingInputOptions {
  /** Column with the gold relevance of each document, an array of non-negative numbers (default `relevance`). */
  relevanceColumn?: string;
  /** Scores are read from the last `<tag>…</tag>`; a completion without it scores 0 (default `answer`; `''` = the whole completion). */
  tag?: string;
}

/** The gold grades of a row; throws naming the column when they are missing or malformed. */
export function relevanceOf(row: Readonly<Record<string, unknown>>, column: string, rewardName: string): number[] {
  const value = row[column];
  if (!Array.isArray(value) || value.length === 0)
    throw new Error(
      `${rewardName}: dataset row has no column "${column}" holding a non-empty array of relevance grades`,
    );
  return value.map((grade, index) => {
    if (typeof grade !== 'number' || !Number.isFinite(grade) || grade < 0)
      throw new Error(
        `${rewardName}: column "${column}"[${index}] must be a non-negative number (got ${JSON.stringify(grade)})`,
      );
    return grade;
  });
}

/**
 * The scores a completion gives, one per document: the numbers in the last `<tag>` (or the whole
 * text when `tag` is empty), separated by commas, spaces or newlines. Null when the tag is missing,
 * anything but numbers is there, or the count differs from `count`.
 */
export function parseScores(completion: string, count: number, tag = 'answer'): number[] | null {
  const text = tag === '' ? completion.trim() : tagContent(completion, tag);
  if (text === null || text === '') return null;
  const parts = text.split(/[\s,]+/).filter((part) => part !== '');
  if (parts.length !== count || !parts.every((part) => /^[+-]?(\d+\.?\d*|\.\d+)$/.test(part))) return null;
  return parts.map(Number);
}

/**
 * Each document's expected weight when documents are ranked by `scores` (highest first) and tied
 * documents are ordered uniformly at random: the mean of `weightAt(position)` over the positions its
 * tie block occupies (positions from 0).
 */
export function tieAwareWeights(scores: readonly number[], weightAt: (position: number) => number): number[] {
  const order = scores.map((score, index) => ({ score, index })).sort((a, b) => b.score - a.score);
  const weights = new Array<number>(scores.length).fill(0);
  for (let start = 0; start < order.length;) {
    let end = start;
    while (end < order.length && order[end]!.score === order[start]!.score) end++;
    let sum = 0;
    for (let position = start; position < end; position++) sum += weightAt(position);
    for (let position = start; position < end; position++) weights[order[position]!.index] = sum / (end - start);
    start = end;
  }
  return weights;
}

/** Options of {@link rankingNdcg}. */
export interface RankingNdcgOptions extends RankingInputOptions {
  /** Cut-off: only the first k ranks count (default: all documents). */
  k?: number;
  /** Gain of a grade: `exponential` 2^rel − 1 (Burges et al. 2005, the usual NDCG) or `linear` rel (default `exponential`). */
  gain?: 'exponential' | 'linear';
}

/**
 * NDCG@k of the ranking the predicted scores induce: DCG = Σ_doc gain(rel)·E[1/log2(rank+1)] over
 * ranks ≤ k (ties averaged), divided by the DCG of the gold order. In [0, 1]; 0 for a malformed
 * answer; null (not applicable) when no document is relevant.
 * @example rankingNdcg({ k: 3 }) // row { relevance: [2, 0, 1] }, "<answer>2, 0, 1</answer>" → 1
 */
export function rankingNdcg({
  relevanceColumn = 'relevance',
  tag = 'answer',
  k,
  gain = 'exponential',
}: RankingNdcgOptions = {}): RewardFn {
  const gainOf = gain === 'exponential' ? (grade: number) => 2 ** grade - 1 : (grade: number) => grade;
  return ({ completion, row }) => {
    const grades = relevanceOf(row, relevanceColumn, 'ranking-ndcg');
    const cutoff = Math.min(k ?? grades.length, grades.length);
    const discount = (position: number) => (position < cutoff ? 1 / Math.log2(position + 2) : 0);
    const ideal = [...grades]
      .sort((a, b) => b - a)
      .reduce((sum, grade, position) => sum + gainOf(grade) * discount(position), 0);
    if (ideal === 0) return null;
    const scores = parseScores(completion, grades.length, tag);
    if (!scores) return 0;
    const weights = tieAwareWeights(scores, discount);
    return grades.reduce((sum, grade, index) => sum + gainOf(grade) * weights[index]!, 0) / ideal;
  };
}

/** Options of {@link rankingRecall}. */
export interface RankingRecallOptions extends RankingInputOptions {
  /** Cut-off (default: the number of relevant documents, i.e. R-precision). */
  k?: number;
  /** A document is relevant when its grade is at least this (default 1). */
  relevantFrom?: number;
}

/**
 * Recall@k: the expected fraction of relevant documents ranked in the first k (ties averaged). In
 * [0, 1]; 0 for a malformed answer; null when no document is relevant.
 * @example rankingRecall({ k: 1 }) // row { relevance: [0, 2, 0] }, "<answer>0 5 1</answer>" → 1
 */
export function rankingRecall({
  relevanceColumn = 'relevance',
  tag = 'answer',
  k,
  relevantFrom = 1,
}: RankingRecallOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const grades = relevanceOf(row, relevanceColumn, 'ranking-recall');
    const relevant = grades.filter((grade) => grade >= relevantFrom).length;
    if (relevant === 0) return null;
    const scores = parseScores(completion, grades.length, tag);
    if (!scores) return 0;
    const cutoff = k ?? relevant;
    const weights = tieAwareWeights(scores, (position) => (position < cutoff ? 1 : 0));
    return grades.reduce((sum, grade, index) => sum + (grade >= relevantFrom ? weights[index]! : 0), 0) / relevant;
  };
}

/** Options of {@link scoreDistribution}. */
export interface ScoreDistributionOptions extends RankingInputOptions {
  /** The top of the score scale the prompt asks for (scores are on [0, maxScore]). */
  maxScore: number;
}

/**
 * How close the scores are to the gold grades on an absolute scale, so scores of different groups
 * of the same query are comparable: 1 − mean_i min(1, |s_i − rel_i| / maxScore). In [0, 1]; 0 for a
 * malformed answer. A substitute for GroupRank's distribution reward, whose exact form is not
 * reproduced here (docs/paper-recipes.md).
 * @example scoreDistribution({ maxScore: 2 }) // row { relevance: [2, 0] }, "<answer>1 0</answer>" → 0.75
 */
export function scoreDistribution({
  relevanceColumn = 'relevance',
  tag = 'answer',
  maxScore,
}: ScoreDistributionOptions): RewardFn {
  if (!(maxScore > 0)) throw new Error(`score-distribution: maxScore must be positive, got ${maxScore}`);
  return ({ completion, row }) => {
    const grades = relevanceOf(row, relevanceColumn, 'score-distribution');
    const scores = parseScores(completion, grades.length, tag);
    if (!scores) return 0;
    const error = grades.reduce(
      (sum, grade, index) => sum + Math.min(1, Math.abs(scores[index]! - grade) / maxScore),
      0,
    );
    return 1 - error / grades.length;
  };
}
