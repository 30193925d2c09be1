/**
 * The fast paths of the logit transforms against the plain definitions they replace: top-p from a
 * numeric sort of the values equals the stable index sort of its definition (peaked, flat and
 * tied rows), and chooseToken's shared log-normaliser gives the same ids and logprobs as separate
 * log-softmaxes.
 */
import { describe, expect, it } from 'vitest';
import { Random } from '../tensor/index.js';
import { applyMinP, applyTemperature, applyTopK, applyTopP, chooseToken, logSoftmaxRow } from './logits.js';

/** Top-p by its definition: every token in stable descending order until the mass reaches p. */
function topPByFullSort(row: Float32Array, p: number): Float32Array {
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

/** Inverse-CDF sampling over a materialised float64 log-softmax (the definition). */
function sampleByDefinition(row: Float32Array, random: Random): number {
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
  return last;
}

function rows(): Float32Array[] {
  const random = new Random(3);
  const make = (scale: number) => Float32Array.from({ length: 3000 }, () => random.normal() * scale);
  const tied = make(1);
  for (let i = 0; i < tied.length; i += 3) tied[i] = 2.5; // many exact ties at the top
  // Peaked (scale 8) to flat (scale 0.1) rows, many exact ties, and a three-token row.
  return [make(8), make(3), make(1), make(0.1), tied, Float32Array.from([Math.log(0.5), Math.log(0.3), Math.log(0.2)])];
}

describe('logit transform fast paths', () => {
  it('top-p equals the full stable sort for peaked, flat and tied rows', () => {
    for (const row of rows()) {
      for (const p of [0.1, 0.5, 0.9, 0.95, 0.999]) {
        expect(Array.from(applyTopP(row, p))).toEqual(Array.from(topPByFullSort(row, p)));
      }
    }
  });

  it('chooseToken equals sampling from the separately computed log-softmaxes', () => {
    for (const row of rows()) {
      for (const settings of [
        { temperature: 1, topK: 0, topP: 1, minP: 0 },
        { temperature: 0.7, topK: 50, topP: 0.9, minP: 0.01 },
        { temperature: 1.3, topK: 0, topP: 0.95, minP: 0 },
      ]) {
        const ours = new Random(9);
        const reference = new Random(9);
        for (let draw = 0; draw < 20; draw++) {
          const { id, logprob } = chooseToken(row, settings, ours);
          const scaled = applyTemperature(row, settings.temperature);
          const filtered = applyMinP(applyTopP(applyTopK(scaled, settings.topK), settings.topP), settings.minP);
          const expectedId = sampleByDefinition(filtered, reference);
          expect(id).toBe(expectedId);
          expect(logprob).toBe(logSoftmaxRow(scaled)[id]);
        }
      }
    }
  });
});
