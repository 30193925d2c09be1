/*
 * Setup refuses bad sizes before any compute, each with one sentence naming the field: absurd
 * values that used to fail deep inside an allocation ("Invalid typed array length"), and prompts
 * plus maxNewTokens that run past the model's max_position_embeddings (which used to generate on
 * silently). Not here: the run itself (trainer.test.ts) or the presets (presets.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { createRunContext, resolveConfig } from './setup.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const checkpoint = tinyStoriesModel;

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
    expect(
      resolveConfig({
        model: { hiddenSize: 4096, numHeads: 64 },
        sampling: { groupSize: 1024 },
        grpo: { microBatchSize: 1024 },
      }).sampling.groupSize,
    ).toBe(1024);
  });
});

describe('createRunContext position budget', () => {
  // Addition prompts ("47+35=") are 6 characters plus BOS with the char tokenizer.
  it("refuses maxNewTokens that take the prompts past a from-scratch model's 256 positions", () => {
    const config = resolveConfig({ sampling: { maxNewTokens: 250 } });
    expect(() => createRunContext(config)).toThrow(
      /- sampling\.maxNewTokens: 250 plus the longest GRPO prompt \(7 tokens, "\d+\+\d+="\) is 257 positions, over the max_position_embeddings of a from-scratch model \(256\)/,
    );
    expect(
      createRunContext(resolveConfig({ sampling: { maxNewTokens: 249 } })).model.config.maxPositionEmbeddings,
    ).toBe(256);
  });

  it('names the checkpoint, checks held-out prompts when there is no GRPO phase, and checks sft.packLength', () => {
    const config = resolveConfig({ model: { checkpoint }, grpo: { steps: 0 }, sampling: { maxNewTokens: 510 } });
    expect(() => createRunContext(config)).toThrow(
      `over the max_position_embeddings of ${checkpoint}/config.json (512)`,
    );
    expect(() => createRunContext(config)).toThrow('- sampling.maxNewTokens: 510 plus the longest held-out prompt');
    const packed = resolveConfig({ sft: { steps: 10, packLength: 300 } });
    expect(() => createRunContext(packed)).toThrow(
      '- sft.packLength: 300 is over the max_position_embeddings of a from-scratch model (256)',
    );
  });
});

describe('model.recomputeActivations', () => {
  it('sets what every training forward keeps, full fine-tuning or LoRA, default selective', () => {
    expect(createRunContext(resolveConfig({})).model.recompute).toBe('selective');
    const none = resolveConfig({ model: { recomputeActivations: 'none' } });
    expect(createRunContext(none).model.recompute).toBe('none');
    const lora = resolveConfig({ model: { recomputeActivations: 'layers' }, lora: { rank: 2 } });
    expect(createRunContext(lora).model.recompute).toBe('layers');
  });

  it("refuses LoRA's old spelling and TRL's gradient_checkpointing, naming the field to use", () => {
    expect(() => resolveConfig({ lora: { rank: 2, recomputeActivations: 'none' } })).toThrow(
      '- lora: "lora.recomputeActivations" moved to model.recomputeActivations (it applies to full fine-tuning too)',
    );
    expect(() => resolveConfig({ gradient_checkpointing: true })).toThrow(
      /"gradient_checkpointing" is TRL's name; here it is model\.recomputeActivations/,
    );
    expect(() => resolveConfig({ model: { recomputeActivations: true } })).toThrow(/model\.recomputeActivations/);
  });
});
