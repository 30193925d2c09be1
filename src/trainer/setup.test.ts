/*
 * resolveConfig refuses bad sizes before any compute, each with one sentence naming the field:
 * absurd values that used to fail deep inside an allocation ("Invalid typed array length").
 * Not here: the run itself (trainer.test.ts) or the presets (presets.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from './setup.js';

describe('resolveConfig bounds', () => {
  it.each([
    // [config, the field and bound named in the error]
    [{ model: { hiddenSize: 4294967296 } }, '- model.hiddenSize: must be at most 4096'], // was "Invalid typed array length: 68719476736"
    [{ model: { numLayers: 1e9 } }, '- model.numLayers: must be at most 128'],
    [{ model: { intermediateSize: 1e9 } }, '- model.intermediateSize: must be at most 16384'],
    [{ sampling: { maxNewTokens: 1e8 } }, '- sampling.maxNewTokens: must be at most 32768'], // was "Invalid typed array length: 6400000000"
    [{ sampling: { groupSize: 1e6 } }, '- sampling.groupSize: must be at most 1024'],
    [{ grpo: { promptsPerStep: 1e7 } }, '- grpo.promptsPerStep: must be at most 4096'],
    [{ grpo: { examples: 1e12 } }, '- grpo.examples: must be at most 1000000'],
    [{ sft: { batchSize: 1e6 } }, '- sft.batchSize: must be at most 4096'],
    [{ sft: { packLength: 1e9 } }, '- sft.packLength: must be at most 32768'],
    [{ evaluation: { examples: 1e9 } }, '- evaluation.examples: must be at most 100000'],
    [{ evaluation: { passAtK: 1e5 } }, '- evaluation.passAtK: must be at most 1024'],
  ])('refuses %j', (config, message) => {
    expect(() => resolveConfig(config)).toThrow(message);
  });

  it('accepts the defaults and sizes at the bounds', () => {
    expect(resolveConfig({}).model.hiddenSize).toBe(64);
    expect(resolveConfig({ model: { hiddenSize: 4096, numHeads: 64 }, sampling: { groupSize: 1024 }, grpo: { microBatchSize: 1024 } }).sampling.groupSize).toBe(1024);
  });
});
