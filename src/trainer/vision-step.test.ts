/**
 * A vision-language GRPO step against its parts composed by hand. `prepareGrpoStep` +
 * `accumulatePolicyGradients` (what train() runs: prompts rendered with their images, the tower run
 * once per prompt, features connected per micro-batch and merged at the image tokens) must give
 * the loss and the gradients of the connector and the language model that this file computes from
 * the parts directly: the processor's pixel values → `VisionLanguageModel.imageFeatures` → the
 * model's forward with those features, one sequence at a time → log-softmax → the PPO-clip
 * token-mean loss. Also: what does not combine with images is refused before compute, naming the field.
 */
import { rowsOf } from '../../test/helpers/training-rows.js';
import { describe, expect, it } from 'vitest';
import type { TaskImage } from '../data/index.js';
import { promptImagePositions } from '../model/vision/image-merge.js';
import { preprocessImage } from '../model/vision/image-processor.js';
import type { NamedReward } from '../rewards/types.js';
import {
  concat,
  exp,
  gather,
  indexSelect,
  logSoftmax,
  mul,
  Random,
  reshape,
  sub,
  sum,
  tensor,
} from '../tensor/index.js';
import { createStepEnvironment, prepareGrpoStep, rolloutSettingsOf } from './grpo-step.js';
import { accumulatePolicyGradients } from './optimize.js';
import { createRunContext, resolveConfig } from './setup.js';
import { visionReferenceFor } from './restore.js';
import { RunFolder } from '../run/run-folder.js';
import { withConnector } from './vision-run.js';
import { isIdefics3Checkpoint } from '../model/vision/idefics3-config.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const vision = { imageSize: 32, patchSize: 8, scaleFactor: 2, hiddenSize: 8, numLayers: 1, numHeads: 2 };
const base = {
  task: 'shape-counting',
  model: { hiddenSize: 16, numLayers: 1, numHeads: 2, vision },
  sft: { steps: 0 },
  grpo: { steps: 1, promptsPerStep: 2, microBatchSize: 4, learningRate: 0.01 },
  sampling: { groupSize: 4, maxNewTokens: 3 },
  evaluation: { examples: 4 },
  algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean', klCoefficient: 0 },
};
// A reward with spread on a random model: the first character's code, so every group has advantages.
const firstCharacter: NamedReward = {
  name: 'first',
  weight: 1,
  reward: ({ completion }) => (completion.length > 0 ? completion.charCodeAt(0) % 7 : 0),
};
const state: import('../run/run-folder.js').TrainerState = {
  step: 0,
  phase: 'grpo',
  phaseStep: 0,
  consecutiveSkips: 0,
  evalBefore: null,
  extra: {},
};

describe('a vision-language GRPO step', () => {
  it('equals features + the language model + the loss composed by hand (loss and gradients)', async () => {
    const context = createRunContext(resolveConfig(base), { rewards: [firstCharacter] });
    const model = context.vision!.model;
    const environment = createStepEnvironment(context, null);
    const seed = 11;
    const prepared = await prepareGrpoStep(environment, state, new Random(seed), rolloutSettingsOf(context, seed), 0);
    const samples = rowsOf(prepared.training);
    expect(samples).toHaveLength(8);
    expect(samples.every((sample) => sample.images !== undefined)).toBe(true);
    const imageToken = model.config.imageTokenId;
    expect(samples[0].promptIds.filter((id) => id === imageToken)).toHaveLength(model.config.tokensPerImage);

    const { lossTotal } = accumulatePolicyGradients(
      context.algorithm,
      environment.settings,
      context.model,
      prepared.training,
    );
    const stepGradients = new Map([...model.parameters].map(([name, p]) => [name, p.grad?.data.slice() ?? null]));
    for (const p of model.parameters.values()) p.grad = null;

    // By hand: each sample's prompt row → its image → pixel values → features → one forward.
    const prompts = prepared.batch.prompts;
    const tokens = samples.reduce((total, s) => total + s.completionIds.length, 0);
    const terms = samples.map((sample, i) => {
      const prompt = prompts[Math.floor(i / 4)];
      const [image] = prompt.example.images as TaskImage[];
      const { pixelValues, imageCount } = preprocessImage(image, context.vision!.processor);
      const features = model.imageFeatures(pixelValues, imageCount);
      const ids = Int32Array.from([...sample.promptIds, ...sample.completionIds]);
      // Only the prompt's image tokens take features (a sampled <image> token in the completion does not).
      const positions = promptImagePositions(ids, 1, imageToken, [sample.promptIds.length]);
      const imageFeatures = { tokenId: imageToken, features, positions };
      const logits = reshape(model.language.forward(ids, 1, { imageFeatures }), [ids.length, -1]); // [T, V]
      const start = sample.promptIds.length - 1;
      const rows = Int32Array.from(sample.completionIds, (_, t) => start + t);
      const picked = logSoftmax(indexSelect(logits, rows)); // [n, V]: the rows that predict the completion
      const logprobs = gather(picked, 1, Int32Array.from(sample.completionIds), [rows.length, 1]); // [n, 1]
      const ratio = exp(sub(reshape(logprobs, [-1]), tensor(Float32Array.from(sample.oldLogprobs), [rows.length])));
      return sum(mul(ratio, sample.advantage));
    });
    const loss = mul(
      sum(
        concat(
          terms.map((term) => reshape(term, [1])),
          0,
        ),
      ),
      -1 / tokens,
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo(lossTotal, 5);

    const connector = 'model.connector.modality_projection.proj.weight';
    const checked = [
      connector,
      'model.text_model.embed_tokens.weight',
      'model.text_model.layers.0.self_attn.q_proj.weight',
    ];
    for (const name of checked) {
      const byStep = stepGradients.get(name)!;
      const byHand = model.parameters.get(name)!.grad!.data;
      expect(byStep, name).not.toBeNull();
      expect(Math.max(...byHand.map(Math.abs))).toBeGreaterThan(0);
      byHand.forEach((value, k) => expect(byStep[k], `${name}[${k}]`).toBeCloseTo(value, 5));
    }
    // The tower is frozen: no gradient reaches it.
    expect(stepGradients.get('model.vision_model.embeddings.patch_embedding.weight')).toBeNull();
  });

  it('reads the images through the connector of the KL reference (the whole model at GRPO start)', async () => {
    const config = resolveConfig({ ...base, algorithm: { ...base.algorithm, klCoefficient: 0.05 } });
    const context = createRunContext(config, { rewards: [firstCharacter] });
    const directory = mkdtempSync(join(tmpdir(), 'grpo-vision-reference-'));
    const reference = visionReferenceFor(context, new RunFolder(directory), state);
    expect(isIdefics3Checkpoint(join(directory, 'checkpoints', 'reference'))).toBe(true);
    // The policy's connector moves away from the reference's: reference logprobs must not follow it.
    const connector = context.vision!.model.parameters.get('model.connector.modality_projection.proj.weight')!;
    connector.data.forEach((value, k) => (connector.data[k] = value + 0.5 * Math.sin(k)));
    const environment = createStepEnvironment(context, reference.language);
    environment.referenceRows = (rows) => withConnector(rows, reference);
    const prepared = await prepareGrpoStep(environment, state, new Random(5), rolloutSettingsOf(context, 5), 0);
    const imageToken = reference.config.imageTokenId;
    let policyGap = 0;
    rowsOf(prepared.training).forEach((sample, i) => {
      const [image] = prepared.batch.prompts[Math.floor(i / 4)].example.images as TaskImage[];
      const { pixelValues, imageCount } = preprocessImage(image, context.vision!.processor);
      const ids = Int32Array.from([...sample.promptIds, ...sample.completionIds]);
      const positions = promptImagePositions(ids, 1, imageToken, [sample.promptIds.length]);
      const logprobsOf = (model: typeof reference) => {
        const imageFeatures = {
          tokenId: imageToken,
          features: model.imageFeatures(pixelValues, imageCount),
          positions,
        };
        const logits = reshape(model.language.forward(ids, 1, { imageFeatures }), [ids.length, -1]);
        const rows = Int32Array.from(sample.completionIds, (_, t) => sample.promptIds.length - 1 + t);
        return gather(logSoftmax(indexSelect(logits, rows)), 1, Int32Array.from(sample.completionIds), [rows.length, 1])
          .data;
      };
      const byHand = logprobsOf(reference);
      byHand.forEach((value, t) => expect(sample.refLogprobs![t], `sample ${i} token ${t}`).toBeCloseTo(value, 5));
      logprobsOf(context.vision!.model).forEach(
        (value, t) => (policyGap = Math.max(policyGap, Math.abs(value - byHand[t]))),
      );
    });
    expect(policyGap).toBeGreaterThan(1e-3);
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses what does not combine with images yet, naming each field, before any model is built', () => {
    const refused = (extra: Record<string, unknown>) => () => createRunContext(resolveConfig({ ...base, ...extra }));
    expect(refused({ lora: { rank: 2 } })).toThrow(/- lora: LoRA is not wired to the vision-language model/);
    expect(refused({ sft: { steps: 1, packLength: 64 } })).toThrow(/- sft.packLength: packing is not supported/);
  });

  it('refuses images for a text-only model and vision sizes that do not fit', () => {
    const text = { ...base, model: { hiddenSize: 16, numLayers: 1, numHeads: 2 } };
    expect(() => createRunContext(resolveConfig(text))).toThrow(
      /- task: the rows of "shape-counting" carry images and the model is text-only/,
    );
    expect(() =>
      createRunContext(resolveConfig({ ...text, task: 'addition', model: { imageProcessor: { longestEdge: 64 } } })),
    ).toThrow(/- model.imageProcessor: applies to a vision-language/);
    const badPatch = { ...base, model: { ...base.model, vision: { ...vision, patchSize: 5 } } };
    expect(() => resolveConfig(badPatch)).toThrow(
      /- model.vision.patchSize: 5 does not divide model.vision.imageSize 32/,
    );
  });
});
