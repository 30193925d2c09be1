/**
 * The webgpu backend's own contract, beyond what every backend's suites check (conformance.test.ts,
 * gradients.test.ts and the model parity tests run on it too): its product against the js spec on
 * every geometry the MatmulShape allows, operands kept on the device, its refusals, and the sentence
 * a run without an adapter stops with. Runs where an adapter opens (lavapipe in CI, where
 * GRPO_REQUIRE_WEBGPU=1 makes a missing one a failure, not a skip).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { webgpuUnderTest } from '../../test-backends.js';
import { matmulJs } from '../js.js';
import { createWebGpuBackend } from './node-bridge.js';
import { type WebGpuBackend, webgpuMatmulTiles } from './webgpu-backend.js';

const webgpu = webgpuUnderTest();
const repositoryRoot = new URL('../../../../', import.meta.url).pathname;

function operands(shape: MatmulShape, seed: number) {
  const aLength = shape.aBatchStride === 0 ? shape.M * shape.K : shape.batch * shape.aBatchStride;
  const bLength = shape.bBatchStride === 0 ? shape.K * shape.N : shape.batch * shape.bBatchStride;
  return {
    a: Float32Array.from({ length: aLength }, (_, i) => Math.sin(seed + i * 0.37)),
    b: Float32Array.from({ length: bLength }, (_, i) => Math.cos(seed + i * 0.11)),
    out: Float32Array.from({ length: shape.batch * shape.M * shape.N }, (_, i) => (i % 5) - 2),
  };
}

function relativeError(actual: Float32Array, expected: Float32Array): number {
  let scale = 1e-30;
  let error = 0;
  for (let i = 0; i < expected.length; i++) {
    scale = Math.max(scale, Math.abs(expected[i]));
    error = Math.max(error, Math.abs(actual[i] - expected[i]));
  }
  return error / scale;
}

const shape = (batch: number, M: number, K: number, N: number, options: Partial<MatmulShape> = {}): MatmulShape => ({
  batch,
  M,
  K,
  N,
  transposeA: false,
  transposeB: false,
  aBatchStride: M * K,
  bBatchStride: K * N,
  accumulate: false,
  ...options,
});

describe.runIf(webgpu)('webgpu backend', () => {
  const backend = webgpu!.backend;

  it.each([
    ['one element', shape(1, 1, 1, 1)],
    ['odd sizes', shape(1, 7, 33, 5)],
    ['A transposed', shape(2, 33, 17, 9, { transposeA: true })],
    ['B transposed (a weight)', shape(1, 257, 64, 300, { transposeB: true })],
    ['both transposed, accumulating', shape(3, 33, 7, 9, { transposeA: true, transposeB: true, accumulate: true })],
    ['one B for every batch (stride 0)', shape(5, 64, 96, 64, { bBatchStride: 0 })],
    ['one A for every batch (stride 0)', shape(3, 9, 16, 130, { aBatchStride: 0 })],
    ['a decode row against a wide weight', shape(2, 1, 200, 1031, { transposeB: true, bBatchStride: 0 })],
    ['the large tile with ragged edges', shape(1, 130, 129, 131)],
    ['a long K', shape(1, 3, 2053, 5)],
  ])('matmul equals the js spec: %s', (_label, geometry) => {
    const { a, b, out } = operands(geometry, 1);
    const expected = out.slice();
    matmulJs(a, b, expected, geometry);
    backend.matmul(a, b, out, geometry);
    expect(relativeError(out, expected)).toBeLessThan(1e-5);
  });

  // Every tile geometry the backend may choose, pinned: ragged edges in M, N and K, both layouts of
  // each operand, a shared B and accumulation; then whole tiles of every geometry (M, N multiples of
  // 128, K of 32), which the pipelined tiles run in their aligned form (vec4 reads, no bounds), again
  // with both layouts of each operand, accumulation and a shared A.
  it.each(
    webgpuMatmulTiles.flatMap(
      (tile) =>
        [
          [tile, shape(2, 131, 37, 133, { transposeA: true, transposeB: true, accumulate: true })],
          [tile, shape(3, 70, 19, 67, { bBatchStride: 0 })],
          [tile, shape(2, 128, 64, 128, { transposeA: true, transposeB: true, accumulate: true })],
          [tile, shape(3, 128, 32, 128, { aBatchStride: 0 })],
        ] as const,
    ),
  )(
    'the %s tile equals the js spec (%#)',
    async (tile, geometry) => {
      // The product blocks this thread while the device thread compiles; yielding first lets vitest's
      // pending messages through, so one compile, never two in a row, counts against its 60 s RPC limit.
      await new Promise((resolve) => setImmediate(resolve));
      const { a, b, out } = operands(geometry, 3);
      const expected = out.slice();
      matmulJs(a, b, expected, geometry);
      (backend as WebGpuBackend).matmulOnTile(a, b, out, geometry, tile);
      expect(relativeError(out, expected)).toBeLessThan(1e-5);
      // A pipelined tile's first call compiles its fully unrolled shader: up to a minute on lavapipe.
    },
    240_000,
  );

  it('with K = 0 writes zeros, or leaves the output as is when accumulating', () => {
    const out = new Float32Array([1, 2, 3, 4]);
    backend.matmul(new Float32Array(0), new Float32Array(0), out, shape(1, 2, 0, 2, { accumulate: true }));
    expect([...out]).toEqual([1, 2, 3, 4]);
    backend.matmul(new Float32Array(0), new Float32Array(0), out, shape(1, 2, 0, 2));
    expect([...out]).toEqual([0, 0, 0, 0]);
  });

  it('refuses operands shorter than the shape, naming the operand, before any GPU work', () => {
    expect(() =>
      backend.matmul(new Float32Array(5), new Float32Array(6), new Float32Array(4), shape(1, 2, 3, 2)),
    ).toThrow(/webgpu matmul: a has 5 elements but batch=1 M=2 K=3 N=2/);
    expect(() =>
      backend.matmul(new Float32Array(6), new Float32Array(6), new Float32Array(4), shape(1, 2, 3, 2, { M: 2.5 })),
    ).toThrow(/shape\.M must be a non-negative integer/);
  });

  it('keeps constant operands on the device: the same products, and a changed array is uploaded again after the call', () => {
    const geometry = shape(1, 4, 24, 40, { transposeB: true });
    const { a, b } = operands(geometry, 2);
    const expected = new Float32Array(160);
    matmulJs(a, b, expected, geometry);
    const kept = new Float32Array(160);
    const nested = new Float32Array(160);
    backend.withConstantOperands!([b], () => {
      backend.matmul(a, b, kept, geometry);
      // A nested call adds to the set; the outer one's operands stay.
      backend.withConstantOperands!([a], () => backend.matmul(a, b, nested, geometry));
    });
    expect(relativeError(kept, expected)).toBeLessThan(1e-5);
    expect(relativeError(nested, expected)).toBeLessThan(1e-5);
    // After the outermost call nothing is kept: a changed B gives the changed product.
    b.fill(0.5);
    const changed = new Float32Array(160);
    const changedExpected = new Float32Array(160);
    matmulJs(a, b, changedExpected, geometry);
    backend.matmul(a, b, changed, geometry);
    expect(relativeError(changed, changedExpected)).toBeLessThan(1e-5);
  });

  it('reads a view into a constant operand (a block of weight rows) from its device copy: same product, no upload of B', () => {
    const geometry = shape(1, 5, 24, 40, { transposeB: true }); // B [40, 24]: rows 10..49 of a [64, 24] weight
    const weight = Float32Array.from({ length: 64 * 24 }, (_, i) => Math.cos(i * 0.23));
    const { a } = operands(geometry, 6);
    const block = weight.subarray(10 * 24, 50 * 24);
    const expected = new Float32Array(200);
    matmulJs(a, block, expected, geometry);
    const out = new Float32Array(200);
    const gpu = backend as WebGpuBackend;
    backend.withConstantOperands!([weight], () => {
      const before = gpu.traffic().uploadedFloats;
      backend.matmul(a, block, out, geometry);
      expect(gpu.traffic().uploadedFloats - before).toBe(a.length);
    });
    expect(relativeError(out, expected)).toBeLessThan(1e-5);
    // Outside the scope the same view crosses from the host again.
    const before = gpu.traffic().uploadedFloats;
    backend.matmul(a, block, out, geometry);
    expect(gpu.traffic().uploadedFloats - before).toBe(a.length + block.length);
  });

  it('splits products whose operands exceed a binding (here capped at 300 floats) and still equals the js spec', () => {
    const capped = createWebGpuBackend({ maxBindingFloats: 300 });
    try {
      for (const geometry of [
        shape(2, 40, 9, 50, { transposeB: true, accumulate: true }),
        shape(1, 33, 8, 41, { transposeA: true }),
      ]) {
        const { a, b, out } = operands(geometry, 4);
        const expected = out.slice();
        matmulJs(a, b, expected, geometry);
        capped.matmul(a, b, out, geometry);
        expect(relativeError(out, expected)).toBeLessThan(1e-5);
      }
      // A constant operand over the cap is not kept (it is split per product instead), and products agree.
      const geometry = shape(1, 4, 24, 40, { transposeB: true });
      const { a, b } = operands(geometry, 5);
      const expected = new Float32Array(160);
      matmulJs(a, b, expected, geometry);
      const kept = new Float32Array(160);
      capped.withConstantOperands!([b], () => capped.matmul(a, b, kept, geometry));
      expect(relativeError(kept, expected)).toBeLessThan(1e-5);
    } finally {
      capped.dispose();
    }
  });

  it('names its adapter', () => {
    expect(backend.name).toBe('webgpu');
    expect(backend.detail).toMatch(/\S/);
  });
});

describe('webgpu selection without an adapter', () => {
  it('stops with one sentence naming the backend and what is missing, before any compute', () => {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', '-e', "import('./src/tensor/index.ts').then((T) => T.getBackend())"],
      {
        cwd: repositoryRoot,
        // No Vulkan driver at all: Dawn finds no adapter (the state of a machine without a GPU or lavapipe).
        env: {
          ...process.env,
          VITEST: '',
          GRPO_BACKEND: 'webgpu',
          VK_ICD_FILENAMES: '/nonexistent.json',
          VK_DRIVER_FILES: '/nonexistent.json',
        },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(child.status).not.toBe(0);
    expect(child.stderr).toMatch(
      /backend "webgpu" is not available: no WebGPU adapter: requestAdapter\(\) returned null/,
    );
  });
});
