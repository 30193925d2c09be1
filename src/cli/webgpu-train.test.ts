/**
 * `grpo train` with every product on the GPU (the webgpu backend; Mesa's lavapipe in CI): the built-in
 * run, shortened, and a LoRA GRPO run on the TinyStories checkpoint, each against the same run on the
 * CPU backend with the same seed. Their first GRPO step's loss and gradient norm must agree within
 * 1e-3 relative (the GPU sums in another order, so not bit for bit), and every step's rewards match
 * while the two runs still sample the same completions. Runs where an adapter opens (required in CI).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bindAlgorithm } from '../config/algorithm.js';
import { trainerConfigSchema } from '../config/config.js';
import { loadCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import type { Backend } from '../tensor/backend.js';
import { createBackend, getBackend, setBackend } from '../tensor/backends/select.js';
import type { WebGpuBackend } from '../tensor/backends/webgpu/webgpu-backend.js';
import { webgpuUnderTest } from '../tensor/test-backends.js';
import { accumulatePolicyGradients, stepSettingsOf, trainingBatch } from '../trainer/optimize.js';
import { buildProgram } from './main.js';

const root = new URL('../../', import.meta.url).pathname;
const tinyStories = join(root, '../shared/fixtures/models/tinystories-656k');
const scratch = mkdtempSync(join(tmpdir(), 'grpo-webgpu-train-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const webgpu = webgpuUnderTest();

type Metrics = Record<string, number | string>;

function grpoSteps(run: string): Metrics[] {
  return readFileSync(join(scratch, run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Metrics)
    .filter((record) => record.phase === 'grpo' && 'gradNorm' in record);
}

/** Runs `grpo train` in this process on `backend` ('cpu' = js, the spec). */
async function train(backend: 'cpu' | 'webgpu', run: string, argv: string[]): Promise<void> {
  const previous = getBackend();
  setBackend(backend === 'webgpu' ? webgpu!.backend : createBackend('js'));
  try {
    process.exitCode = 0;
    await buildProgram().parseAsync(['node', 'grpo', 'train', '--quiet', '--run-name', run, ...argv]);
    expect(process.exitCode).toBe(0);
  } finally {
    setBackend(previous);
  }
}

function expectFirstStepsAgree(cpu: Metrics[], gpu: Metrics[]): void {
  expect(gpu.length).toBe(cpu.length);
  expect(cpu.length).toBeGreaterThan(0);
  const [first, firstGpu] = [cpu[0], gpu[0]];
  // Same seed and the same sampled completions, so the same rewards, exactly.
  expect(firstGpu['reward/mean']).toBe(first['reward/mean']);
  for (const field of ['loss/total', 'gradNorm']) {
    const [expected, actual] = [Number(first[field]), Number(firstGpu[field])];
    expect(Number.isFinite(actual)).toBe(true);
    expect(Math.abs(actual - expected) / Math.max(Math.abs(expected), 1e-12), field).toBeLessThan(1e-3);
  }
}

const settings = (values: string[]) => [
  ...values.flatMap((value) => ['--set', value]),
  '--set',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

describe.runIf(webgpu)('grpo train on webgpu', () => {
  it("a step's forward and backward read the weights from the device: the same gradients, far fewer floats sent", () => {
    const gpu = webgpu!.backend as WebGpuBackend;
    const checkpoint = loadCheckpoint(tinyStories);
    const config = trainerConfigSchema.parse({ grpo: { microBatchSize: 2 }, algorithm: { loss: 'ppo-clip' } });
    const bound = bindAlgorithm(config, { sampleRows: [], rolloutProvides: [], rewardNames: [] });
    const samples = trainingBatch(
      [0, 1, 2, 3].map((i) => ({
        promptIds: [1, 2 + i, 3],
        completionIds: [4 + i, 5, 6],
        oldLogprobs: [-1, -2, -1.5],
        advantage: i % 2 === 0 ? 1 : -1,
        group: Math.floor(i / 2),
      })),
    );
    /** The gradients of one accumulation on `backend`, and the floats it sent to the device. */
    const run = (backend: Backend) => {
      const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
      const previous = getBackend();
      setBackend(backend);
      const before = gpu.traffic().uploadedFloats;
      try {
        accumulatePolicyGradients(bound, stepSettingsOf(config), model, samples);
      } finally {
        setBackend(previous);
      }
      const gradients = [...model.parameters.values()].map((parameter) => parameter.grad?.data ?? null);
      return { gradients, uploaded: gpu.traffic().uploadedFloats - before };
    };
    // The same backend with the weights crossing per product, as before (the flag off).
    const resident = run(gpu);
    const perProduct = run({ ...gpu, deviceMemory: false });
    expect(resident.gradients).toEqual(perProduct.gradients); // the same products, bit for bit
    const weightFloats = [...checkpoint.tensors.values()].reduce((total, weight) => total + weight.data.length, 0);
    expect(resident.uploaded).toBeLessThan(perProduct.uploaded - 2 * weightFloats);
  }, 300_000);

  it('the built-in run (shortened): the first GRPO step equals the CPU run within 1e-3', async () => {
    const argv = settings(['sft.steps=3', 'grpo.steps=2', 'evaluation.examples=8', 'checkpoint.every=0']);
    await train('cpu', 'builtin-cpu', argv);
    await train('webgpu', 'builtin-webgpu', argv);
    expectFirstStepsAgree(grpoSteps('builtin-cpu'), grpoSteps('builtin-webgpu'));
  }, 600_000);

  it('LoRA GRPO on the TinyStories checkpoint: the first step equals the CPU run within 1e-3', async () => {
    const rows = join(scratch, 'rows.jsonl');
    writeFileSync(
      rows,
      Array.from({ length: 8 }, (_, i) => JSON.stringify({ question: `Tom had ${i} apples.`, answer: String(i) })).join(
        '\n',
      ),
    );
    const argv = [
      '--lora-rank',
      '4',
      '--model',
      tinyStories,
      '--data',
      rows,
      '--prompt-column',
      'question',
      // A reward that varies within a group, so the adapters get a gradient.
      '--reward',
      'regex:1:{"pattern":"a"}',
      ...settings([
        'grpo.steps=2',
        'grpo.promptsPerStep=2',
        'sampling.groupSize=4',
        'grpo.microBatchSize=8',
        'sampling.maxNewTokens=6',
        'evaluation.examples=2',
        'checkpoint.every=0',
        'lora.learningRate=0.01',
      ]),
    ];
    await train('cpu', 'lora-cpu', argv);
    await train('webgpu', 'lora-webgpu', argv);
    const [cpu, gpu] = [grpoSteps('lora-cpu'), grpoSteps('lora-webgpu')];
    expect(Number(cpu[0].gradNorm)).toBeGreaterThan(0); // the comparison is not between two zeros
    expectFirstStepsAgree(cpu, gpu);
  }, 600_000);
});
