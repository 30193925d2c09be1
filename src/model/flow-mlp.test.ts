/**
 * The flow model: a finite-difference gradient check of the whole forward (input and every
 * parameter) on every backend, the adaLN-Zero start (v = 0), a checkpoint round trip and the
 * refusals of bad inputs and folders.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as T from '../tensor/index.js';
import { backendsUnderTest, useBackendInSuite } from '../tensor/test-backends.js';
import { gradCheck } from '../testing/gradcheck.js';
import { type FlowModelConfig, flowVelocity, initFlowModel, loadFlowModel, saveFlowModel } from './flow-mlp.js';

const tiny: FlowModelConfig = {
  modelType: 'flow-mlp',
  imageSize: 2,
  numClasses: 3,
  hiddenSize: 4,
  numBlocks: 2,
  timeFeatures: 4,
};

/** A model whose zero-initialised weights are made random too, so every gradient path is live. */
function randomModel(seed: number) {
  const model = initFlowModel(tiny, seed);
  const random = new T.Random(seed + 1);
  for (const value of model.parameters.values())
    for (let i = 0; i < value.size; i++) value.data[i] = random.normal() * 0.5;
  return model;
}

// Creating the native test backend disposes the default one, so every describe selects its own.
const backends = backendsUnderTest();
for (const { name, backend } of backends) {
  describe(`flow model gradients on ${name}`, () => {
    useBackendInSuite(backend);
    it('matches finite differences in the input and every parameter', () => {
      const model = randomModel(5);
      const names = [...model.parameters.keys()];
      const x = T.randomNormal([3, 4], new T.Random(9));
      gradCheck(
        (input, ...weights) => {
          const parameters = new Map(names.map((key, i) => [key, weights[i]]));
          return flowVelocity({ config: tiny, parameters }, input, [0.9, 0.5, 0.2], [0, 2, 1]);
        },
        [x, ...names.map((key) => model.parameters.get(key)!)],
      );
    });
  });
}

describe('flow model', () => {
  beforeAll(() => T.setBackend(backends[0].backend));
  it('starts at v = 0 (adaLN-Zero) and depends on σ and the class once trained', () => {
    const fresh = initFlowModel(tiny, 1);
    const x = T.randomNormal([2, 4], new T.Random(2));
    expect(
      flowVelocity(fresh, x, [0.5, 0.5], [0, 1])
        .toArray()
        .every((v) => v === 0),
    ).toBe(true);
    const model = randomModel(3);
    const a = flowVelocity(model, x, [0.5, 0.5], [0, 0]).toArray();
    const otherClass = flowVelocity(model, x, [0.5, 0.5], [1, 1]).toArray();
    const otherSigma = flowVelocity(model, x, [0.2, 0.2], [0, 0]).toArray();
    expect(a).not.toEqual(otherClass);
    expect(a).not.toEqual(otherSigma);
  });

  it('round-trips through config.json + model.safetensors', () => {
    const directory = mkdtempSync(join(tmpdir(), 'flow-model-'));
    try {
      const model = randomModel(4);
      saveFlowModel(model, directory);
      const loaded = loadFlowModel(directory);
      expect(loaded.config).toEqual(tiny);
      for (const [key, value] of model.parameters)
        expect(loaded.parameters.get(key)!.toArray()).toEqual(value.toArray());
      writeFileSync(join(directory, 'config.json'), JSON.stringify({ ...tiny, hiddenSize: 8 }));
      expect(() => loadFlowModel(directory)).toThrow(/"input.weight" has shape \[4,4\], config implies \[8,4\]/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refuses a wrong input width, an unknown class and a bad config', () => {
    const model = initFlowModel(tiny, 1);
    expect(() => flowVelocity(model, T.zeros([1, 5]), [0.5], [0])).toThrow(/x must be \[B, 4\]/);
    expect(() => flowVelocity(model, T.zeros([1, 4]), [0.5], [3])).toThrow(/class 3 is outside 0..2/);
    expect(() => initFlowModel({ ...tiny, timeFeatures: 3 }, 1)).toThrow(/timeFeatures must be even/);
    expect(() => initFlowModel({ ...tiny, dimensions: 0 }, 1)).toThrow(/dimensions must be a positive integer/);
  });

  it('takes D from `dimensions` for non-image data (the 2-D toy)', () => {
    const model = initFlowModel({ ...tiny, dimensions: 2 }, 1);
    expect(model.parameters.get('input.weight')!.shape).toEqual([4, 2]);
    expect(flowVelocity(model, T.zeros([3, 2]), [0.1, 0.5, 0.9], [0, 1, 2]).shape).toEqual([3, 2]);
    expect(() => flowVelocity(model, T.zeros([1, 4]), [0.5], [0])).toThrow(/x must be \[B, 2\]/);
  });
});
