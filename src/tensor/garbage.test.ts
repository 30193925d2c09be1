/**
 * releaseGarbage's contract: past the threshold it frees arrays nothing reaches (V8 on its own left
 * them resident: see garbage.ts), below it it does nothing; the policy step calls it before every
 * micro-batch's forward and once after the last backward.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

const MiB = 2 ** 20;
const arrayBufferBytes = () => process.memoryUsage().arrayBuffers;

afterEach(() => {
  vi.doUnmock('./garbage.js');
  vi.doUnmock('../trainer/completion-logprobs.js');
  vi.resetModules();
});

describe('releaseGarbage', () => {
  it('frees an unreachable 320 MiB array past the threshold, and skips a 1 MiB one below it', async () => {
    const { releaseGarbage } = await import('./garbage.js');
    releaseGarbage(0); // start from a collected heap
    let held: Float32Array | null = new Float32Array(80 * MiB).fill(1); // 320 MiB
    const withArray = arrayBufferBytes();
    expect(held[0]).toBe(1);
    held = null;
    expect(releaseGarbage()).toBe(true);
    expect(withArray - arrayBufferBytes()).toBeGreaterThanOrEqual(320 * MiB);

    let small: Float32Array | null = new Float32Array(MiB / 4).fill(1);
    expect(small[0]).toBe(1);
    small = null;
    expect(releaseGarbage()).toBe(false); // 1 MiB of growth is under the 256 MiB default
    expect(releaseGarbage(0)).toBe(true);
  });
});

describe('the policy step', () => {
  it('collects before each micro-batch forward (the previous graph, the rollout) and after the last', async () => {
    const events: string[] = [];
    vi.doMock('./garbage.js', async (importOriginal) => {
      const actual = await importOriginal<typeof import('./garbage.js')>();
      return {
        ...actual,
        releaseGarbage: (threshold?: number) => (events.push('release'), actual.releaseGarbage(threshold)),
      };
    });
    vi.doMock('../trainer/completion-logprobs.js', async (importOriginal) => {
      const actual = await importOriginal<typeof import('../trainer/completion-logprobs.js')>();
      return {
        ...actual,
        completionLogprobs: (...args: Parameters<typeof actual.completionLogprobs>) => {
          events.push('forward');
          return actual.completionLogprobs(...args);
        },
      };
    });
    const { accumulatePolicyGradients } = await import('../trainer/optimize.js');
    const { bindAlgorithm } = await import('../config/algorithm.js');
    const { resolveConfig } = await import('../trainer/setup.js');
    const { createSmallConfig } = await import('../model/config.js');
    const { Transformer } = await import('../model/transformer.js');
    const shape = { vocabSize: 12, hiddenSize: 16, numLayers: 1, numHeads: 2, bosTokenId: 1, eosTokenIds: [2] };
    const model = Transformer.random(createSmallConfig(shape), 3);
    const bound = bindAlgorithm(resolveConfig({}), { sampleRows: [], rolloutProvides: [], rewardNames: [] });
    const { trainingBatch } = await import('../trainer/optimize.js');
    const samples = trainingBatch(
      Array.from({ length: 5 }, (_, i) => ({
        promptIds: [1, 3 + i],
        completionIds: [4, 5, 6],
        oldLogprobs: [-2, -2, -2],
        advantage: i - 2,
        group: i,
      })),
    );
    const settings = { microBatchSize: 2, temperature: 1, maxNewTokens: 3, maxGradNorm: 0 };
    accumulatePolicyGradients(bound, settings, model, samples);
    expect(events).toEqual(['release', 'forward', 'release', 'forward', 'release', 'forward', 'release']);
  });
});
