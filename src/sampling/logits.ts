/**
 * Logit transforms as small pure functions over one row of logits (temperature, top-k, top-p,
 * min-p), the log-softmax of a row, and drawing an id from a row with a seeded generator.
 *
 * Is not: batching or caching (sampler.ts). Removed tokens are set to -Infinity; every transform
 * keeps at least the most likely token, so a row never becomes empty. Order, as in HF's
 * generate: temperature → top-k → top-p → min-p.
 */
import type { Random } from '../tensor/index.js';

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
  for (let i = 1; i < row.length; i++) if (row[i] > row[best] || (row[best] !== row[best] && row[i] === row[i])) best = i;
  return best;
}

/** log softmax of a row, computed in float64. */
export function logSoftmaxRow(row: Float32Array): Float64Array {
  let maximum = -Infinity;
  for (const value of row) if (value > maximum) maximum = value;
  let total = 0;
  for (const value of row) total += Math.exp(value - maximum);
  const logNormalizer = maximum + Math.log(total);
  return Float64Array.from(row, (value) => value - logNormalizer);
}

export function applyTemperature(row: Float32Array, temperature: number): Float32Array {
  if (temperature === 1) return row.slice();
  return row.map((value) => value / temperature);
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
  const order = Array.from(row.keys()).sort((a, b) => logprobs[b] - logprobs[a]);
  const keep = new Uint8Array(row.length);
  let mass = 0;
  for (const index of order) {
    keep[index] = 1;
    mass += Math.exp(logprobs[index]);
    if (mass >= p) break;
  }
  return row.map((value, i) => (keep[i] ? value : -Infinity));
}

/** Keeps tokens whose probability is at least minP times the most likely token's. */
export function applyMinP(row: Float32Array, minP: number): Float32Array {
  if (minP <= 0) return row;
  const logprobs = logSoftmaxRow(row);
  let best = -Infinity;
  for (const value of logprobs) if (value > best) best = value;
  const threshold = best + Math.log(minP);
  return row.map((value, i) => (logprobs[i] >= threshold ? value : -Infinity));
}

/** Draws one id from softmax(row) by inverse CDF with one uniform number. */
export function sampleFromLogits(row: Float32Array, random: Random): number {
  const logprobs = logSoftmaxRow(row);
  const u = random.uniform();
  let cumulative = 0;
  let last = 0;
  for (let i = 0; i < logprobs.length; i++) {
    if (logprobs[i] === -Infinity) continue;
    cumulative += Math.exp(logprobs[i]);
    last = i;
    if (u < cumulative) return i;
  }
  return last; // rounding left u above the total mass: the last kept token
}

/** Picks the next token from raw logits and reports its logprob under logits / temperature. */
export function chooseToken(row: Float32Array, settings: SamplingSettings, random: Random): { id: number; logprob: number } {
  if (settings.temperature === 0) {
    const id = argmax(row);
    return { id, logprob: logSoftmaxRow(row)[id] };
  }
  const scaled = applyTemperature(row, settings.temperature);
  const filtered = applyMinP(applyTopP(applyTopK(scaled, settings.topK), settings.topP), settings.minP);
  const id = sampleFromLogits(filtered, random);
  return { id, logprob: logSoftmaxRow(scaled)[id] };
}
