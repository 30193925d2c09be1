/**
 * The fast paths of the logit transforms against the plain definitions they replace: top-p from a
 * numeric sort of the values equals the stable index sort of its definition (peaked, flat and
 * tied rows), chooseToken's shared log-normaliser gives the same ids and logprobs as separate
 * log-softmaxes, and the native draw kernel behind chooseTokens draws what the JS loop draws.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeBackend, nativeAddonStatus } from '../tensor/backends/native/native-backend.js';
import { getBackend, Random, setBackend } from '../tensor/index.js';
import {
  applyMinP,
  applyTemperature,
  applyTopK,
  applyTopP,
  chooseToken,
  chooseTokens,
  logSoftmaxRow,
} from './logits.js';

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

describe('chooseTokens on the native draw kernel', () => {
  const status = nativeAddonStatus();
  const previous = getBackend();
  afterAll(() => void setBackend(previous));

  it('is available wherever GRPO_REQUIRE_NATIVE=1 is set', () => {
    if (process.env.GRPO_REQUIRE_NATIVE === '1') expect(status.available, status.reason).toBe(true);
  });

  for (const isa of status.isas) {
    it(`${isa}: draws the JS loop's ids except within rounding of a token boundary, logprobs to 1e-6`, () => {
      const native = loadNativeBackend({ threads: 2, isa })!;
      const random = new Random(11);
      // 8192-wide rows (the 25M model's vocabulary) at several scales, plus the fixed rows above, a row
      // with −Inf entries (filtered tokens are never drawn) and one whose mass sits on its last token.
      const wide = [8, 2, 0.3].map((scale) => Float32Array.from({ length: 8192 }, () => random.normal() * scale));
      const masked = wide[1].map((value, i) => (i % 3 === 0 ? -Infinity : value));
      const last = new Float32Array(100).fill(-50);
      last[99] = 10;
      const all = [...wide, masked, last, ...rows()];
      let boundaryDraws = 0;
      for (const temperature of [1, 0.7, 1.5]) {
        const settings = { temperature, topK: 0, topP: 1, minP: 0 };
        for (const row of all) {
          const count = 40;
          const batch = new Float32Array(count * row.length);
          for (let r = 0; r < count; r++) batch.set(row, r * row.length);
          const seeds = Array.from({ length: count }, (_, r) => r + 1);
          setBackend(native);
          const drawn = chooseTokens(
            batch,
            count,
            settings,
            seeds.map((seed) => new Random(seed)),
          );
          setBackend(previous);
          const scaled = applyTemperature(row, temperature);
          const logprobs = logSoftmaxRow(scaled);
          drawn.forEach(({ id, logprob }, r) => {
            const expected = chooseToken(row, settings, new Random(seeds[r]));
            expect(Number.isFinite(scaled[id]), `row ${r}: drew a filtered token ${id}`).toBe(true);
            expect(Math.abs(logprob - logprobs[id]), `logprob of ${id} at T ${temperature}`).toBeLessThan(1e-6);
            if (id === expected.id) return;
            // A different id is allowed only where the uniform lies within float32 rounding of the CDF
            // boundary between the two tokens.
            const u = new Random(seeds[r]).uniform();
            let cumulative = 0;
            for (let i = 0; i < Math.min(id, expected.id); i++)
              if (scaled[i] !== -Infinity) cumulative += Math.exp(logprobs[i]);
            let between = 0;
            for (let i = Math.min(id, expected.id); i < Math.max(id, expected.id); i++)
              if (scaled[i] !== -Infinity) between += Math.exp(logprobs[i]);
            expect(
              Math.min(Math.abs(u - cumulative), Math.abs(u - cumulative - between)),
              `row ${r}: ${id} vs ${expected.id}`,
            ).toBeLessThan(1e-5);
            boundaryDraws++;
          });
        }
      }
      expect(boundaryDraws).toBeLessThan(5);
      native.dispose();
    });
  }
});
