/**
 * Packing is exact: several sequences packed into one row (positions restarting, attention kept
 * inside each document) give the same completion logprobs and the same gradients as one sequence per
 * padded row — on the real TinyStories checkpoint, with ragged prompt and completion lengths. And a
 * wider completion axis (`completionLength`, a micro-batch of a training batch's columns) changes
 * nothing but the width: the same values bit for bit, zeros in the new columns, the same gradients.
 */
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import { mul, sum, tensor } from '../tensor/index.js';
import { completionLogprobs, type TokenSequence } from './completion-logprobs.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const folder = tinyStoriesModel;
const checkpoint = loadCheckpoint(folder);

const sequences: TokenSequence[] = [
  { promptIds: [1, 80, 147], completionIds: [201, 282, 215] },
  { promptIds: [1, 247], completionIds: [411, 1214, 337, 175, 72] },
  { promptIds: [1, 80, 147, 201, 282], completionIds: [215] },
  { promptIds: [1, 9, 33, 120], completionIds: [77, 78], lossMask: [1, 0] },
];

function run(packLength: number, completionLength?: number, entropyWithGradient = false) {
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  const { logprobs, mask, entropies } = completionLogprobs(model, sequences, 1, {
    packLength,
    completionLength,
    entropyWithGradient,
  });
  sum(mul(logprobs, tensor(mask, logprobs.shape))).backward();
  return {
    logprobs: Array.from(logprobs.data),
    mask: Array.from(mask),
    entropies: Array.from(entropies),
    gradient: Array.from(model.parameters.get('model.layers.1.self_attn.k_proj.weight')!.grad!.data),
  };
}

describe('sequence packing', () => {
  it('packed rows give the same logprobs and gradients as padded rows', () => {
    const padded = run(0);
    const packed = run(16); // first fit: rows [6 + 7 tokens] and [6 + 6 tokens]
    expect(packed.mask).toEqual(padded.mask);
    packed.logprobs.forEach((value, i) =>
      expect(Math.abs(value - padded.logprobs[i]), `logprob ${i}`).toBeLessThan(1e-5),
    );
    const scale = Math.max(...padded.gradient.map(Math.abs));
    packed.gradient.forEach((value, i) =>
      expect(Math.abs(value - padded.gradient[i]), `gradient ${i}`).toBeLessThan(1e-5 * scale),
    );
  });
});

describe('a wider completion axis', () => {
  it.each([false, true])('keeps every value and gradient (entropy with gradient: %s)', (entropyWithGradient) => {
    const own = run(0, undefined, entropyWithGradient); // Tc = 5, the longest completion
    const wide = run(0, 8, entropyWithGradient);
    const at = (row: number, t: number, width: number) => row * width + t;
    for (let row = 0; row < sequences.length; row++)
      for (let t = 0; t < 8; t++) {
        const where = `row ${row} position ${t}`;
        if (t < sequences[row].completionIds.length) {
          expect(wide.logprobs[at(row, t, 8)], where).toBe(own.logprobs[at(row, t, 5)]);
          expect(wide.entropies[at(row, t, 8)], where).toBe(own.entropies[at(row, t, 5)]);
          expect(wide.mask[at(row, t, 8)], where).toBe(own.mask[at(row, t, 5)]);
        } else expect(wide.mask[at(row, t, 8)], where).toBe(0);
        if (t >= 5) expect([wide.logprobs[at(row, t, 8)], wide.entropies[at(row, t, 8)]], where).toEqual([0, 0]);
      }
    expect(wide.gradient).toEqual(own.gradient);
    expect(Math.max(...own.gradient.map(Math.abs))).toBeGreaterThan(0);
  });
});
