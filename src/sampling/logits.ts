/**
 * Logit transforms as small pure functions over one row of logits (temperature, top-k, top-p,
 * min-p), the log-softmax of a row, drawing an id from a row with a seeded generator, and a row's
 * most likely ids with their logprobs.
 *
 * chooseTokens does many rows at once, in one backend call when the backend has a draw kernel and no
 * filter is on. Is not: caching or the decode loop (sampler.ts). Removed tokens are set to -Infinity;
 * every transform keeps at least the most likely token, so a row never becomes empty. Order, as in
 * HF's generate: temperature → top-k → top-p → min-p.
 */
import { getBackend, type Random } from '../tensor/index.js';

export interface SamplingSettings {
  /** 0 = greedy (argmax). Logprobs are reported under logits / temperature (TRL's convention). */
  temperature: number;
  /** Keep only the k most likely tokens; 0 = off. */
  topK: number;
  /** Keep the smallest set of tokens whose probability reaches topP; 1 = off. */
  topP: number;
  /** Drop tokens whose probability is below minP × the top probability; 0 = off. */
  minP: number;
}

export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++)
    if (row[i] > row[best] || (row[best] !== row[best] && row[i] === row[i])) best = i;
  return best;
}

/** log Σ exp(row) in float64 (max-shifted); logSoftmaxRow(row)[i] is row[i] minus this. */
export function logNormalizerOf(row: Float32Array): number {
  // Indexed loops, no iterators or callbacks: this runs over the whole vocabulary per token.
  let maximum = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > maximum) maximum = row[i];
  let total = 0;
  for (let i = 0; i < row.length; i++) total += Math.exp(row[i] - maximum);
  return maximum + Math.log(total);
}

/** log softmax of a row, computed in float64. */
export function logSoftmaxRow(row: Float32Array): Float64Array {
  const logNormalizer = logNormalizerOf(row);
  const output = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) output[i] = row[i] - logNormalizer;
  return output;
}

export function applyTemperature(row: Float32Array, temperature: number): Float32Array {
  if (temperature === 1) return row.slice();
  const output = new Float32Array(row.length);
  for (let i = 0; i < row.length; i++) output[i] = row[i] / temperature;
  return output;
}

/** Keeps the k largest logits (ties at the threshold are all kept). */
export function applyTopK(row: Float32Array, k: number): Float32Array {
  if (k <= 0 || k >= row.length) return row;
  const threshold = Float32Array.from(row).sort().reverse()[k - 1];
  return row.map((value) => (value >= threshold ? value : -Infinity));
}

/** Nucleus filtering: keeps the most likely tokens until their probability mass reaches p. */
export function applyTopP(row: Float32Array, p: number): Float32Array {
  if (p >= 1) return row;
  const logprobs = logSoftmaxRow(row);
  // The definition walks tokens in stable descending order (ties by index). The running mass depends
  // only on the values in that order (equal values add equal terms), so a native numeric sort of
  // the values finds the cut without a comparator sort over token indices; at the cut value, the
  // lowest indices are kept, as the stable order would.
  const sorted = logprobs.slice().sort().reverse();
  let mass = 0;
  let last = 0;
  for (; last < sorted.length; last++) {
    mass += Math.exp(sorted[last]);
    if (mass >= p) break;
  }
  if (last === sorted.length) return row.slice(); // rounding kept the mass below p: every token stays
  const cut = sorted[last];
  let above = 0;
  for (let i = 0; i < row.length; i++) if (logprobs[i] > cut) above++;
  let ties = last + 1 - above; // tokens at the cut value still to keep, lowest index first
  const output = new Float32Array(row.length);
  for (let i = 0; i < row.length; i++) {
    const kept = logprobs[i] > cut || (logprobs[i] === cut && ties-- > 0);
    output[i] = kept ? row[i] : -Infinity;
  }
  return output;
}

/** Keeps tokens whose probability is at least minP times the most likely token's. */
export function applyMinP(row: Float32Array, minP: number): Float32Array {
  if (minP <= 0) return row;
  const logprobs = logSoftmaxRow(row);
  let best = -Infinity;
  for (const value of logprobs) if (value > best) best = value;
  const threshold = best + Math.log(minP);
  const output = new Float32Array(row.length);
  for (let i = 0; i < row.length; i++) output[i] = logprobs[i] >= threshold ? row[i] : -Infinity;
  return output;
}

// exp(row − max) of the row being sampled; reused across calls (one row at a time, one thread).
let exponentials = new Float64Array(0);

/**
 * Draws one id from softmax(row) by inverse CDF with one uniform number, and returns the row's
 * log-normaliser too. The exponentials of the normaliser pass are kept and reused by the draw, so a
 * token costs one exp per vocabulary entry (the inverse CDF compares u·Σe with running sums of e).
 */
export function drawFromLogits(row: Float32Array, random: Random): { id: number; logNormalizer: number } {
  if (exponentials.length < row.length) exponentials = new Float64Array(row.length);
  let maximum = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > maximum) maximum = row[i];
  let total = 0;
  for (let i = 0; i < row.length; i++) total += exponentials[i] = Math.exp(row[i] - maximum);
  const logNormalizer = maximum + Math.log(total); // what logNormalizerOf(row) returns
  const threshold = random.uniform() * total;
  let cumulative = 0;
  let last = 0;
  for (let i = 0; i < row.length; i++) {
    if (row[i] === -Infinity) continue;
    cumulative += exponentials[i];
    last = i;
    if (threshold < cumulative) return { id: i, logNormalizer };
  }
  return { id: last, logNormalizer }; // rounding left u above the total mass: the last kept token
}

/** Picks the next token from raw logits and reports its logprob under logits / temperature. */
export function chooseToken(
  row: Float32Array,
  settings: SamplingSettings,
  random: Random,
): { id: number; logprob: number } {
  if (settings.temperature === 0) {
    const id = argmax(row);
    return { id, logprob: row[id] - logNormalizerOf(row) };
  }
  const scaled = settings.temperature === 1 ? row : applyTemperature(row, settings.temperature);
  const filtered = applyMinP(applyTopP(applyTopK(scaled, settings.topK), settings.topP), settings.minP);
  const { id, logNormalizer } = drawFromLogits(filtered, random);
  // Without filters `filtered` is `scaled` itself: the draw's normaliser is the logprob's too.
  return { id, logprob: scaled[id] - (filtered === scaled ? logNormalizer : logNormalizerOf(scaled)) };
}

/** One of a token's most likely alternatives: an id and its logprob. */
export interface TokenLogprob {
  id: number;
  logprob: number;
}

/**
 * The `count` most likely ids of a row, most likely first (ties: lower id first), with their logprobs
 * under logits / temperature (raw logits when greedy): the distribution chooseToken reports the
 * chosen id's logprob under, before any filter, so the chosen id's entry holds the same number. One
 * pass over the row keeping a sorted list of `count`: cheap for the few alternatives a client asks for.
 */
export function topLogprobsOf(row: Float32Array, temperature: number, count: number): TokenLogprob[] {
  const scaled = temperature === 0 || temperature === 1 ? row : applyTemperature(row, temperature);
  const best: TokenLogprob[] = [];
  for (let i = 0; i < scaled.length; i++) {
    const value = scaled[i];
    if (best.length === count && !(value > best[count - 1].logprob)) continue;
    let at = best.length === count ? count - 1 : best.length;
    if (best.length === count) best.pop();
    while (at > 0 && value > best[at - 1].logprob) at--;
    best.splice(at, 0, { id: i, logprob: value });
  }
  const logNormalizer = logNormalizerOf(scaled);
  for (const entry of best) entry.logprob = scaled[entry.id] - logNormalizer;
  return best;
}

/** Whether no filter changes the distribution (only temperature applies). */
function unfiltered(settings: SamplingSettings, V: number): boolean {
  return (settings.topK <= 0 || settings.topK >= V) && settings.topP >= 1 && settings.minP <= 0;
}

/**
 * chooseToken for each of `count` rows of `rows` ([count, V]), row r drawing with randoms[r]. When only
 * a temperature applies and the backend has sampleRows (native), the whole batch is one kernel call with
 * the same one uniform per row; it draws the same distribution with float32 exponentials, so a
 * sequence's ids can differ from the JS loop's where a draw falls within rounding of a token boundary.
 */
export function chooseTokens(
  rows: Float32Array,
  count: number,
  settings: SamplingSettings,
  randoms: readonly Random[],
): Array<{ id: number; logprob: number }> {
  const V = count === 0 ? 0 : rows.length / count;
  const backend = getBackend();
  if (count > 0 && settings.temperature > 0 && unfiltered(settings, V) && backend.sampleRows) {
    const uniforms = Float64Array.from(randoms.slice(0, count), (random) => random.uniform());
    const ids = new Int32Array(count);
    const logprobs = new Float64Array(count);
    backend.sampleRows(rows, count, V, settings.temperature, uniforms, ids, logprobs);
    return Array.from(ids, (id, r) => ({ id, logprob: logprobs[r] }));
  }
  return Array.from({ length: count }, (_, r) => chooseToken(rows.subarray(r * V, (r + 1) * V), settings, randoms[r]));
}
