/**
 * Similarity rewards: per-sentence BLEU on token ids, vectorised over a batch (TensorBLEU-style:
 * a per-batch dictionary of unique n-grams and offset bincounts instead of hashing over the
 * vocabulary), ROUGE-L (LCS F-measure) and character F1.
 *
 * Not here: embedding or model-based similarity.
 */
import { groupReward, stringColumn, type GroupReward, type RewardFn } from './types.js';

/** BLEU smoothing (Chen & Cherry 2014): none, floor (ε for zero counts), add-k (orders ≥ 2), exp (halving). */
export type BleuSmoothing = 'none' | 'floor' | 'add-k' | 'exp';

/** Options of {@link bleuScores}. */
export interface BleuOptions {
  maxOrder?: number;
  smoothing?: BleuSmoothing;
  /** ε of `floor` (default 0.1). */
  epsilon?: number;
  /** k of `add-k` (default 1). */
  k?: number;
}

/**
 * Counts, for one n-gram order, the clipped matches and candidate n-grams of every sentence.
 * N-grams get batch-local ids from one dictionary (the torch.unique analogue); counts live in
 * flat arrays indexed sentence·U + id (the offset bincount).
 */
function orderCounts(
  candidates: readonly (readonly number[])[],
  references: readonly (readonly (readonly number[])[])[],
  n: number,
) {
  const ids = new Map<string, number>();
  const idOf = (sequence: readonly number[], start: number): number => {
    const key = sequence.slice(start, start + n).join(',');
    let id = ids.get(key);
    if (id === undefined) ids.set(key, (id = ids.size));
    return id;
  };
  const candidateIds = candidates.map((sequence) =>
    Array.from({ length: Math.max(0, sequence.length - n + 1) }, (_, start) => idOf(sequence, start)),
  );
  const referenceIds = references.map((refs) =>
    refs.map((sequence) =>
      Array.from({ length: Math.max(0, sequence.length - n + 1) }, (_, start) => idOf(sequence, start)),
    ),
  );
  const unique = ids.size;
  const batch = candidates.length;
  const candidateCounts = new Int32Array(batch * unique);
  const maxReferenceCounts = new Int32Array(batch * unique);
  const scratch = new Int32Array(batch * unique);
  candidateIds.forEach((list, sentence) => list.forEach((id) => candidateCounts[sentence * unique + id]!++));
  referenceIds.forEach((refs, sentence) => {
    for (const list of refs) {
      for (const id of list) scratch[sentence * unique + id]!++;
      for (const id of list) {
        const offset = sentence * unique + id;
        if (scratch[offset]! > maxReferenceCounts[offset]!) maxReferenceCounts[offset] = scratch[offset]!;
      }
      for (const id of list) scratch[sentence * unique + id] = 0;
    }
  });
  const matches = new Float64Array(batch);
  const totals = new Float64Array(batch);
  for (let sentence = 0; sentence < batch; sentence++) {
    for (const id of new Set(candidateIds[sentence])) {
      const offset = sentence * unique + id;
      matches[sentence]! += Math.min(candidateCounts[offset]!, maxReferenceCounts[offset]!);
    }
    totals[sentence] = candidateIds[sentence]!.length;
  }
  return { matches, totals };
}

/** The reference length closest to the candidate's (shorter on ties), as in standard corpus BLEU. */
function closestReferenceLength(candidateLength: number, references: readonly (readonly number[])[]): number {
  let best = references[0]!.length;
  for (const reference of references) {
    const distance = Math.abs(reference.length - candidateLength);
    const bestDistance = Math.abs(best - candidateLength);
    if (distance < bestDistance || (distance === bestDistance && reference.length < best)) best = reference.length;
  }
  return best;
}

/**
 * Per-sentence BLEU of each candidate against its references, on token ids. ALGORITHMS.md §5.9:
 * [1,2,3,4,5] vs [1,2,3,4,6] → 0.66874.
 */
export function bleuScores(
  candidates: readonly (readonly number[])[],
  references: readonly (readonly (readonly number[])[])[],
  { maxOrder = 4, smoothing = 'none', epsilon = 0.1, k = 1 }: BleuOptions = {},
): Float64Array {
  if (candidates.length !== references.length)
    throw new Error(`bleuScores: ${candidates.length} candidates but ${references.length} reference lists`);
  references.forEach((refs, index) => {
    if (refs.length === 0) throw new Error(`bleuScores: candidate ${index} has no reference`);
  });
  const logPrecisionSums = new Float64Array(candidates.length);
  const zero = new Array<boolean>(candidates.length).fill(false);
  const expCounter = new Array<number>(candidates.length).fill(1);
  for (let n = 1; n <= maxOrder; n++) {
    const { matches, totals } = orderCounts(candidates, references, n);
    for (let sentence = 0; sentence < candidates.length; sentence++) {
      let numerator = matches[sentence]!;
      let denominator = totals[sentence]!;
      if (smoothing === 'add-k' && n > 1) {
        numerator += k;
        denominator += k;
      }
      let precision = denominator > 0 ? numerator / denominator : 0;
      if (numerator === 0 && denominator > 0) {
        if (smoothing === 'floor') precision = epsilon / denominator;
        else if (smoothing === 'exp') precision = 1 / (2 ** expCounter[sentence]!++ * denominator);
      }
      if (precision === 0) zero[sentence] = true;
      else logPrecisionSums[sentence]! += Math.log(precision) / maxOrder;
    }
  }
  return Float64Array.from(candidates, (candidate, sentence) => {
    if (zero[sentence] || candidate.length === 0) return 0;
    const referenceLength = closestReferenceLength(candidate.length, references[sentence]!);
    const brevity = candidate.length > referenceLength ? 1 : Math.exp(1 - referenceLength / candidate.length);
    return brevity * Math.exp(logPrecisionSums[sentence]!);
  });
}

/** Words of a text mapped to stable ids (for BLEU on text when no token ids are known). */
function wordIds(text: string, vocabulary: Map<string, number>): number[] {
  return text
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => {
      let id = vocabulary.get(word);
      if (id === undefined) vocabulary.set(word, (id = vocabulary.size));
      return id;
    });
}

/** Options of {@link bleu}. */
export interface BleuRewardOptions extends BleuOptions {
  /** Column with the reference: a string, an id array, or an array of either (default `reference`). */
  referenceColumn?: string;
  /** `ids` compares completion token ids with id references; `words` splits text on whitespace (default). */
  unit?: 'words' | 'ids';
}

/**
 * BLEU against the row's reference(s), scored for the whole group in one vectorised call.
 * @example bleu({ referenceColumn: 'reference', smoothing: 'exp' })
 */
export function bleu({
  referenceColumn = 'reference',
  unit = 'words',
  ...options
}: BleuRewardOptions = {}): GroupReward {
  return groupReward((inputs) => {
    const vocabulary = new Map<string, number>();
    const asIds = (value: unknown, where: string): number[] => {
      if (unit === 'words' && typeof value === 'string') return wordIds(value, vocabulary);
      if (unit === 'ids' && Array.isArray(value) && value.every((id) => Number.isInteger(id))) return value as number[];
      throw new Error(`bleu: ${where} must be ${unit === 'words' ? 'a string' : 'an array of integer ids'}`);
    };
    const references = inputs.map(({ row }) => {
      const cell = row[referenceColumn];
      if (cell === undefined) throw new Error(`bleu: dataset row has no column "${referenceColumn}"`);
      const many = Array.isArray(cell) && (unit === 'words' || Array.isArray(cell[0]));
      return (many ? (cell as unknown[]) : [cell]).map((value) => asIds(value, `column "${referenceColumn}"`));
    });
    const candidates = inputs.map((input) =>
      unit === 'ids' ? [...input.completionIds] : wordIds(input.completion, vocabulary),
    );
    return Array.from(bleuScores(candidates, references, options));
  });
}

/** Length of the longest common subsequence of two sequences. */
function lcsLength<T>(a: readonly T[], b: readonly T[]): number {
  let previous = new Int32Array(b.length + 1);
  let current = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++)
      current[j] = a[i - 1] === b[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, current[j - 1]!);
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}

/** ROUGE-L F-measure over lower-cased words: LCS-based recall and precision, F_β (β = 1 by default). */
export function rougeLScore(candidate: string, reference: string, beta = 1): number {
  const a = candidate.toLowerCase().split(/\s+/).filter(Boolean);
  const b = reference.toLowerCase().split(/\s+/).filter(Boolean);
  const lcs = lcsLength(a, b);
  if (lcs === 0) return 0;
  const precision = lcs / a.length;
  const recall = lcs / b.length;
  return ((1 + beta ** 2) * precision * recall) / (recall + beta ** 2 * precision);
}

/** Character F1: overlap of the two multisets of non-space characters (SQuAD F1 at character level). */
export function charF1Score(candidate: string, reference: string): number {
  const counts = new Map<string, number>();
  const a = [...candidate.replace(/\s+/g, '')];
  const b = [...reference.replace(/\s+/g, '')];
  for (const char of b) counts.set(char, (counts.get(char) ?? 0) + 1);
  let overlap = 0;
  for (const char of a) {
    const left = counts.get(char) ?? 0;
    if (left > 0) {
      overlap++;
      counts.set(char, left - 1);
    }
  }
  if (overlap === 0) return 0;
  return (2 * overlap) / (a.length + b.length);
}

/**
 * ROUGE-L F-measure between the completion and the row's reference text.
 * @example rougeL()(makeRewardInput({ completion: 'the cat sat', row: { reference: 'the cat sat down' } })) // 0.857
 */
export function rougeL({ referenceColumn = 'reference', beta = 1 } = {}): RewardFn {
  return ({ completion, row }) => rougeLScore(completion, stringColumn(row, referenceColumn, 'rougeL'), beta);
}

/**
 * Character F1 between the completion and the row's reference text.
 * @example charF1()(makeRewardInput({ completion: 'abc', row: { reference: 'abd' } })) // 0.667
 */
export function charF1({ referenceColumn = 'reference' } = {}): RewardFn {
  return ({ completion, row }) => charF1Score(completion, stringColumn(row, referenceColumn, 'charF1'));
}
