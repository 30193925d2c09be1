/**
 * Packing is exact: several sequences packed into one row (positions restarting, attention kept
 * inside each document) give the same completion logprobs and the same gradients as one sequence per
 * padded row — on the real TinyStories checkpoint, with ragged prompt and completion lengths.
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

function run(packLength: number) {
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  const { logprobs, mask } = completionLogprobs(model, sequences, 1, { packLength });
  sum(mul(logprobs, tensor(mask, logprobs.shape))).backward();
  return {
    logprobs: Array.from(logprobs.data),
    mask: Array.from(mask),
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
