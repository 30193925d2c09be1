/**
 * LoRA adapters: finite-difference gradients of the adapted linear (x, W, A, B) on every backend,
 * PEFT's initialisation (A uniform within ±1/√in, B zero: a fresh adapter changes nothing), only
 * adapter tensors receiving gradients, the merged weights giving the adapter path's logprobs, the
 * view without adapters equalling the base model, recomputed layers or selective recomputation
 * (activation checkpointing) giving the same gradients (LoRA dropout and a bfloat16 base included), dropout only in forwards given a dropout seed,
 * and the PEFT files round-tripping.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from '../tensor/index.js';
import { backendsUnderTest, useBackendInSuite } from '../tensor/test-backends.js';
import { loadAdapter, writeAdapterFiles } from './adapter-files.js';
import { createSmallConfig } from './config.js';
import { LoraAdapters, linearWithAdapter, resolveTargetModules } from './lora.js';
import { Transformer } from './transformer.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(11);
const normal = normalSampler(random);
const config = createSmallConfig({ vocabSize: 20, hiddenSize: 16, numLayers: 2, numHeads: 4, numKeyValueHeads: 2 });
const settings = { rank: 4, alpha: 8, targetModules: resolveTargetModules('all-linear'), rsLora: false };
const ids = Int32Array.from([1, 5, 7, 3, 9, 2, 4, 11]);

/** A model with adapters whose B is random too, so the adapters change the output. */
function adaptedModel(): { model: Transformer; adapters: LoraAdapters } {
  const model = Transformer.random(config, 3, 0.2);
  const adapters = LoraAdapters.create(config, settings, 5);
  for (const { b } of adapters.pairs.values()) b.data.set(normal(b.shape, 0.2).data);
  model.attachAdapters(adapters);
  return { model, adapters };
}

const logprobs = (model: Transformer): Float32Array =>
  T.noGrad(() => T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1), ids.slice(1))).data;

describe('LoRA adapters', () => {
  it('initialise as PEFT does: A within ±1/√in and spread over it, B zero, scaling alpha/r or alpha/√r', () => {
    const adapters = LoraAdapters.create(config, settings, 5);
    expect(adapters.pairs.size).toBe(2 * 7);
    const down = adapters.pairs.get('model.layers.1.mlp.down_proj')!;
    expect(down.a.shape).toEqual([4, config.intermediateSize]);
    expect(down.b.shape).toEqual([16, 4]);
    const bound = 1 / Math.sqrt(config.intermediateSize);
    const values = Array.from(down.a.data);
    expect(Math.max(...values.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...values.map(Math.abs))).toBeGreaterThan(0.9 * bound);
    expect(down.b.data.every((v) => v === 0)).toBe(true);
    expect(adapters.scaling).toBe(2);
    expect(new LoraAdapters({ ...settings, rsLora: true }, new Map()).scaling).toBe(4);
  });

  it('a fresh adapter leaves the logprobs unchanged; the view without adapters equals the base model', () => {
    const base = Transformer.random(config, 3, 0.2);
    const before = logprobs(base);
    const model = Transformer.random(config, 3, 0.2);
    model.attachAdapters(LoraAdapters.create(config, settings, 5));
    expect(logprobs(model)).toEqual(before);
    const { model: adapted } = adaptedModel();
    expect(logprobs(adapted)).not.toEqual(before);
    expect(logprobs(adapted.withoutAdapters())).toEqual(before);
  });

  it('only adapter tensors get gradients; the base weights are frozen', () => {
    const { model, adapters } = adaptedModel();
    const loss = T.sum(T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1), ids.slice(1)));
    loss.backward();
    for (const parameter of model.parameters.values()) {
      expect(parameter.requiresGrad).toBe(false);
      expect(parameter.grad).toBeNull();
    }
    for (const [, parameter] of adapters.namedParameters()) expect(parameter.grad).not.toBeNull();
  });

  it('recomputing layers or selectively in backward gives bitwise the same loss and gradients, with LoRA and without', () => {
    const lossAndGradients = (model: Transformer, trained: T.Tensor[]) => {
      for (const t of trained) t.grad = null;
      const loss = T.sum(T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1), ids.slice(1)));
      loss.backward();
      return [loss.item(), ...trained.map((t) => Array.from(t.grad!.data))];
    };
    const { model, adapters } = adaptedModel();
    const trained = adapters.namedParameters().map(([, t]) => t);
    const plain = lossAndGradients(model, trained);
    const full = Transformer.random(config, 3, 0.2);
    const weights = [...full.parameters.values()];
    const fullPlain = lossAndGradients(full, weights);
    // A bfloat16 base with adapters on q and v only: down_proj's input is recomputed without an adapter too.
    const halfBase = Transformer.random(config, 3, 0.2);
    const halfAdapters = LoraAdapters.create(config, { ...settings, targetModules: ['q_proj', 'v_proj'] }, 5);
    for (const { b } of halfAdapters.pairs.values()) b.data.set(normal(b.shape, 0.2).data);
    halfBase.attachAdapters(halfAdapters);
    halfBase.keepFrozenLinearsInBfloat16();
    const halfTrained = halfAdapters.namedParameters().map(([, t]) => t);
    const halfPlain = lossAndGradients(halfBase, halfTrained);
    for (const mode of ['layers', 'selective'] as const) {
      model.recompute = mode;
      expect(lossAndGradients(model, trained), mode).toEqual(plain);
      full.recompute = mode;
      expect(lossAndGradients(full, weights), mode).toEqual(fullPlain);
      halfBase.recompute = mode;
      expect(lossAndGradients(halfBase, halfTrained), mode).toEqual(halfPlain);
      expect(logprobs(full)).toEqual(logprobs(Transformer.random(config, 3, 0.2))); // no graph: the plain forward
    }
  });

  it('a selective full fine-tuning forward keeps no swiglu or RMSNorm output: its linears recompute them', () => {
    const opNames = (model: Transformer) => {
      const loss = T.sum(T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1), ids.slice(1)));
      const names = new Set<string>();
      const seen = new Set<T.Tensor>();
      const visit = (t: T.Tensor) => {
        if (seen.has(t) || !t.node) return;
        seen.add(t);
        names.add(t.node.opName);
        t.node.inputs.forEach(visit);
      };
      visit(loss);
      return names;
    };
    const full = Transformer.random(config, 3, 0.2);
    expect(opNames(full)).toContain('swiglu');
    full.recompute = 'selective';
    const selective = opNames(full);
    expect(selective).not.toContain('swiglu');
    expect(selective).toContain('swigluLowRankLinear');
    expect(selective).toContain('lowRankLinear'); // q/k/v and gate/up read their norm's output recomputed
  });

  it('with dropout, recomputed layers or parts give bitwise the gradients of stored ones; masks follow the seed', () => {
    const lossAndGradients = (model: Transformer, trained: T.Tensor[], dropoutSeed?: number) => {
      for (const t of trained) t.grad = null;
      const loss = T.sum(T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1, { dropoutSeed }), ids.slice(1)));
      loss.backward();
      return [loss.item(), ...trained.map((t) => Array.from(t.grad!.data))];
    };
    const { model, adapters } = adaptedModel();
    const trained = adapters.namedParameters().map(([, t]) => t);
    const undropped = lossAndGradients(model, trained, 7);
    model.adapterDropout = 0.5;
    const stored = lossAndGradients(model, trained, 7);
    expect(stored).not.toEqual(undropped);
    for (const mode of ['layers', 'selective'] as const) {
      model.recompute = mode;
      expect(lossAndGradients(model, trained, 7), mode).toEqual(stored);
    }
    expect(lossAndGradients(model, trained, 8)).not.toEqual(stored); // another step or micro-batch: other masks
    model.adapterDropout = 0;
    expect(lossAndGradients(model, trained, 7)).toEqual(undropped); // p = 0 is the plain forward, bitwise
  });

  it('drops nothing in forwards without a dropout seed (rollout, scoring, reference): logprobs equal p = 0', () => {
    const { model } = adaptedModel();
    const before = logprobs(model);
    model.adapterDropout = 0.5;
    model.recompute = 'selective';
    expect(logprobs(model)).toEqual(before);
    const trained = T.logSoftmaxGather(model.forward(ids.slice(0, -1), 1, { dropoutSeed: 1 }), ids.slice(1));
    expect(Array.from(trained.data)).not.toEqual(Array.from(before));
  });

  it('a base kept in bfloat16 gives bitwise the logprobs and adapter gradients of its float32 widening', () => {
    const { model, adapters } = adaptedModel();
    expect(() => Transformer.random(config, 3).keepFrozenLinearsInBfloat16()).toThrow(
      'Transformer: "model.layers.0.self_attn.q_proj.weight" is trained; only frozen (LoRA base) weights can be kept in bfloat16',
    );
    model.keepFrozenLinearsInBfloat16();
    expect(model.halfWeights.size).toBe(2 * 7);
    expect(model.parameters.has('model.layers.0.mlp.up_proj.weight')).toBe(false);
    const widened = Transformer.fromTensors(config, model.toStoredTensors());
    widened.attachAdapters(adapters);
    expect(widened.halfWeights.size).toBe(0);
    const lossAndGradients = (m: Transformer) => {
      for (const [, t] of adapters.namedParameters()) t.grad = null;
      const loss = T.sum(T.logSoftmaxGather(m.forward(ids.slice(0, -1), 1), ids.slice(1)));
      loss.backward();
      return [loss.item(), ...adapters.namedParameters().map(([, t]) => Array.from(t.grad!.data))];
    };
    expect(logprobs(model)).toEqual(logprobs(widened));
    expect(logprobs(model.withoutAdapters())).toEqual(logprobs(widened.withoutAdapters()));
    expect(lossAndGradients(model)).toEqual(lossAndGradients(widened));
    // The bfloat16 values are the float32 ones rounded: close to the unrounded model, not equal.
    const unroundedModel = Transformer.random(config, 3, 0.2);
    unroundedModel.attachAdapters(adapters);
    const unrounded = logprobs(unroundedModel);
    const rounded = logprobs(model);
    expect(rounded).not.toEqual(unrounded);
    for (let i = 0; i < rounded.length; i++) expect(Math.abs(rounded[i] - unrounded[i])).toBeLessThan(2e-2);
  });

  it('merging W + s·B·A gives the adapter path logprobs within 1e-5', () => {
    const { model, adapters } = adaptedModel();
    const merged = Transformer.fromTensors(config, adapters.mergeInto(model.toStoredTensors()));
    const [adapted, fromMerged] = [logprobs(model), logprobs(merged)];
    for (let i = 0; i < adapted.length; i++) expect(Math.abs(adapted[i] - fromMerged[i])).toBeLessThan(1e-5);
  });

  it('round-trips through PEFT files with PEFT names and shapes', () => {
    const folder = mkdtempSync(join(tmpdir(), 'grpo-lora-'));
    try {
      const { adapters } = adaptedModel();
      writeAdapterFiles(folder, adapters, 'some/base');
      const saved = JSON.parse(readFileSync(join(folder, 'adapter_config.json'), 'utf8'));
      expect(saved).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, task_type: 'CAUSAL_LM', bias: 'none' });
      const loaded = loadAdapter(folder, config);
      const names = loaded.namedParameters().map(([name]) => name);
      expect(names).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
      for (const [name, parameter] of loaded.namedParameters())
        expect(parameter.data).toEqual(adapters.namedParameters().find(([other]) => other === name)![1].data);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses an unknown target module by name', () => {
    expect(() => resolveTargetModules(['q_proj', 'lm_head'])).toThrow(/unknown module "lm_head"/);
  });
});

// After the model tests: backendsUnderTest disposes the backends it made once their suites end.
for (const { name, backend } of backendsUnderTest()) {
  describe(`linearWithAdapter gradients on ${name}`, () => {
    useBackendInSuite(backend);

    it('matches finite differences for x, W, bias, A and B (scaling 1.5)', () => {
      const pair = { a: normal([3, 5]), b: normal([4, 3]) };
      gradCheck(
        (x, w, bias, a, b) => linearWithAdapter(x, w, bias, { a, b }, 1.5),
        [normal([2, 3, 5]), normal([4, 5]), normal([4]), pair.a, pair.b],
      );
    });
  });
}
