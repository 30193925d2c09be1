/**
 * The LoRA linear as one op with a hand-written backward: y = x·Wᵀ + b + (s·x·Aᵀ)·Bᵀ, with W [out, in],
 * b [out], A [r, in], B [out, r] and a scalar s. As a composite (linear, mul, linear, add) it kept
 * three out-wide tensors per call for backward (x·Wᵀ, the update and the sum); this op keeps only
 * its inputs and the rank-wide u = s·x·Aᵀ [N, r], and writes the low-rank update into y by
 * accumulating the second product into the first. s scales u rather than the out-wide update (the
 * same product up to float rounding, exact when s is a power of two).
 *
 * Legend: N = rows (every leading axis of x flattened), in/out = the linear's widths, r = rank.
 * Gradients, with g = dL/dy [N, out] and du = s·g·B [N, r]:
 *   dx = g·W + du·A, dA = duᵀ·x, dB = gᵀ·u, dW = gᵀ·x, db = Σ_rows g.
 * W and b get theirs only when they require grad; frozen (a LoRA base) they allocate nothing. W may
 * be a HalfMatrix (a bfloat16 base): a backend with matmulBfloat16B (native) reads its bits and widens
 * them while packing, so no float32 copy of it exists; on the others it is widened into a scratch
 * matrix right before each product that reads it (forward, and dx in backward), and dropped after.
 *
 * With `update.dropout` (LoRA dropout, PEFT's lora_dropout) the low-rank path reads x̃ = m⊙x/(1−p)
 * instead of x, where the keep mask m is a pure function of (dropout seed, element index): the same
 * seed gives the same mask in backward and in a recompute rerun, with nothing stored and no RNG
 * state consumed. Then u = s·x̃·Aᵀ, dA = duᵀ·x̃ and dx gets du·A through the same mask. The base
 * product x·Wᵀ never sees the mask.
 *
 * Is not: the adapter bookkeeping (model/lora.ts owns A, B, s and the PEFT names) or a general
 * linear (ops.ts `linear`, a composite). Gradient-checked on every backend in low-rank-linear.test.ts.
 */
import { needsGrad, noGrad } from './autograd.js';
import type { MatmulShape } from './backend.js';
import { getBackend } from './backends/select.js';
import { swiglu, swigluGradients } from './fused.js';
import { HalfMatrix, widenedScratch } from './half-matrix.js';
import { formatShape } from './shape.js';
import { uninitializedFloats } from './uninitialized.js';
import { Tensor } from './tensor.js';

/** C (+)= op(A)·op(B) for plain 2-D operands through the current backend. */
function product(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  flags: { transposeA?: boolean; transposeB?: boolean; accumulate?: boolean },
): void {
  const shape: MatmulShape = {
    batch: 1,
    M,
    K,
    N,
    transposeA: flags.transposeA ?? false,
    transposeB: flags.transposeB ?? false,
    aBatchStride: 0,
    bBatchStride: 0,
    accumulate: flags.accumulate ?? false,
  };
  getBackend().matmul(a, b, out, shape);
}

/**
 * C (+)= A·op(W) for the base weight W: a bfloat16 W goes to the backend as its bits when the backend
 * widens inside the kernel (native), else it is widened into the shared scratch first (js, wasm). Both
 * give the same floats bit for bit.
 */
function weightProduct(
  a: Float32Array,
  weight: Tensor | HalfMatrix,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  transposeB: boolean,
): void {
  const backend = getBackend();
  if (!(weight instanceof HalfMatrix) || !backend.matmulBfloat16B) {
    product(a, weight instanceof HalfMatrix ? widenedScratch(weight) : weight.data, out, M, K, N, { transposeB });
    return;
  }
  backend.matmulBfloat16B(a, weight.bits, out, {
    batch: 1,
    M,
    K,
    N,
    transposeA: false,
    transposeB,
    aBatchStride: 0,
    bBatchStride: 0,
    accumulate: false,
  });
}

/** A low-rank update (s·x·Aᵀ)·Bᵀ: A [r, in], B [out, r], s a scalar. */
export interface LowRankUpdate {
  a: Tensor;
  b: Tensor;
  scaling: number;
  /** Inverted dropout on the adapter's input: drop each entry with `probability`, mask from `seed`. */
  dropout?: { probability: number; seed: number };
}

/** A 32-bit avalanche mix (murmur3's finaliser), so neighbouring inputs give unrelated outputs. */
function mix32(value: number): number {
  let z = value >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

/** One 32-bit seed from several integers (any size up to 2^53): order matters, equal inputs give equal seeds. */
export function combineSeeds(...parts: number[]): number {
  let hash = 0x2545f491;
  for (const part of parts) {
    const low = part >>> 0;
    const high = Math.floor(part / 2 ** 32) >>> 0;
    hash = mix32(hash ^ mix32(low + 0x9e3779b9));
    hash = mix32(hash ^ mix32(high + 0x7f4a7c15));
  }
  return hash;
}

/** x̃ = m⊙x/(1−p) with m[i] = 1 when the hash of (seed, i) clears p: the same array for the same seed. */
function droppedInput(x: Float32Array, { probability, seed }: { probability: number; seed: number }): Float32Array {
  const dropped = new Float32Array(x.length);
  const keptScale = 1 / (1 - probability);
  const threshold = probability * 2 ** 32;
  const base = mix32(seed);
  for (let i = 0; i < x.length; i++) if (mix32(base ^ mix32(i)) >= threshold) dropped[i] = x[i] * keptScale;
  return dropped;
}

function checkShapes(x: Tensor, weight: Tensor | HalfMatrix, bias: Tensor | null, update: LowRankUpdate | null): void {
  const fail = (): never => {
    const lowRank = update ? `, A ${formatShape(update.a.shape)} and B ${formatShape(update.b.shape)}` : '';
    throw new Error(
      `lowRankLinear: x ${formatShape(x.shape)}, W ${formatShape(weight.shape)}, bias ${bias ? formatShape(bias.shape) : 'none'}` +
        `${lowRank} do not fit y = x·Wᵀ + b${update ? ' + s·(x·Aᵀ)·Bᵀ' : ''}`,
    );
  };
  if (x.rank < 1 || weight.shape.length !== 2) fail();
  const probability = update?.dropout?.probability ?? 0;
  if (!(probability >= 0 && probability < 1))
    throw new Error(`lowRankLinear: dropout probability must be in [0, 1), got ${probability}`);
  const [out, inputs] = weight.shape;
  if (x.shape[x.rank - 1] !== inputs || (bias && (bias.rank !== 1 || bias.shape[0] !== out))) fail();
  if (!update) return;
  const { a, b } = update;
  if (a.rank !== 2 || b.rank !== 2 || a.shape[1] !== inputs || b.shape[0] !== out || b.shape[1] !== a.shape[0]) fail();
}

/**
 * y = x·Wᵀ + b (+ (s·x·Aᵀ)·Bᵀ when `update` is given) over the last axis of x; see the file header for
 * what it keeps. Without an update it is the plain linear of a HalfMatrix (a frozen bfloat16 base).
 */
export function lowRankLinear(
  x: Tensor,
  weight: Tensor | HalfMatrix,
  bias: Tensor | null,
  update: LowRankUpdate | null,
  recomputed?: RecomputedInput,
): Tensor {
  checkShapes(x, weight, bias, update);
  return linearNode(x.data, x.shape, weight, bias, update, keptInput(recomputed ?? { graphInput: x, read: dataOf(x) }));
}

/** () => x.data from its own scope: a closure over x in lowRankLinear would keep x alive with a recomputed input. */
function dataOf(x: Tensor): () => Float32Array {
  return () => x.data;
}

function keptInput({ graphInput, read, willRead }: RecomputedInput): LinearInput {
  return {
    opName: 'lowRankLinear',
    inputs: [graphInput],
    wantsGradX: () => graphInput.requiresGrad,
    readX: read,
    willRead,
    gradients: (gradX) => [gradX],
  };
}

/**
 * x given to lowRankLinear for its forward only: the node lists `graphInput` (x's stand-in,
 * recompute.ts) and backward reads x's values from `read` (recomputed, bit for bit the same), so x
 * itself is not kept.
 */
export interface RecomputedInput {
  graphInput: Tensor;
  read: () => Float32Array;
  /**
   * Called in the forward by each consumer whose backward will call `read` (once): an input shared by
   * several linears (model/activation-memory.ts) is then recomputed once and dropped after its last read.
   */
  willRead?: () => void;
}

/**
 * lowRankLinear(swiglu(gate, up), W, b, update) that keeps gate and up but not h = swiglu(gate, up)
 * ([.., I], as big as each of them): backward recomputes h (elementwise, no product) for dW = gᵀ·h and
 * dA = duᵀ·h̃ in the same pass that takes swiglu's gradients from dh = g·W (swigluGradients), so gate and
 * up are read once. Same values and gradients, bit for bit, as the two ops, for one [.., I]-wide
 * activation less per MLP (model/transformer.ts under selective recomputation).
 */
export function swigluLowRankLinear(
  gate: Tensor,
  up: Tensor,
  weight: Tensor | HalfMatrix,
  bias: Tensor | null,
  update: LowRankUpdate | null,
): Tensor {
  const h = noGrad(() => swiglu(gate, up));
  checkShapes(h, weight, bias, update);
  // One backward's recomputation: h and, once dh is known, gate's and up's gradients from the same pass.
  let rerun: { h: Float32Array; gradGate: Float32Array | null; gradUp: Float32Array | null } | null = null;
  const recomputed = (gradH: Float32Array | null) => {
    if (rerun && (rerun.gradGate || !gradH)) return rerun;
    if (!gradH) rerun = { h: noGrad(() => swiglu(gate, up)).data, gradGate: null, gradUp: null };
    else {
      const { output, gradGate, gradUp } = swigluGradients(gate.data, up.data, gradH, true);
      rerun = { h: output!, gradGate, gradUp };
    }
    return rerun;
  };
  return linearNode(h.data, h.shape, weight, bias, update, {
    opName: 'swigluLowRankLinear',
    inputs: [gate, up],
    wantsGradX: () => gate.requiresGrad || up.requiresGrad,
    readX: (gradH) => recomputed(gradH).h,
    gradients: (gradH) => {
      if (!gradH) return [null, null];
      const { gradGate, gradUp } = recomputed(gradH);
      rerun = null; // the rerun serves this one backward
      return [gate.requiresGrad ? gradGate : null, up.requiresGrad ? gradUp : null];
    },
  });
}

/** Where a linear's x comes from: the graph inputs it stands for and how its gradient reaches them. */
interface LinearInput {
  opName: string;
  inputs: Tensor[];
  wantsGradX: () => boolean;
  /** x's values in backward (x itself, or recomputed); gradX is dL/dx when wantsGradX, computed by then. */
  readX: (gradX: Float32Array | null) => Float32Array;
  /** RecomputedInput.willRead, passed on. */
  willRead?: () => void;
  /** The gradients of `inputs` from dL/dx (null when wantsGradX is false). */
  gradients: (gradX: Float32Array | null) => (Float32Array | null)[];
}

/** The forward products into a new tensor, and the node whose backward is described in the file header. */
function linearNode(
  xData: Float32Array,
  xShape: readonly number[],
  weight: Tensor | HalfMatrix,
  bias: Tensor | null,
  update: LowRankUpdate | null,
  input: LinearInput,
): Tensor {
  const [out, inputs] = weight.shape;
  const rank = update ? update.a.shape[0] : 0;
  const N = xData.length / inputs;
  const trainedWeight = weight instanceof HalfMatrix ? null : weight;
  const output = uninitializedFloats(N * out); // [N, out], written in full by the product
  weightProduct(xData, weight, output, N, inputs, out, true);
  if (bias) for (let row = 0; row < N; row++) for (let j = 0; j < out; j++) output[row * out + j] += bias.data[j];
  const down = new Float32Array(N * rank); // u = s·x̃·Aᵀ [N, r]
  // x̃: x itself without dropout; rebuilt from the seed in backward rather than kept.
  const dropped = (data: Float32Array): Float32Array =>
    update?.dropout && update.dropout.probability > 0 ? droppedInput(data, update.dropout) : data;
  if (update) {
    product(dropped(xData), update.a.data, down, N, inputs, rank, { transposeB: true });
    for (let i = 0; i < down.length; i++) down[i] *= update.scaling;
    product(down, update.b.data, output, N, rank, out, { transposeB: true, accumulate: true });
  }
  const result = new Tensor(output, [...xShape.slice(0, -1), out]);
  // A HalfMatrix is frozen and not a graph input. Gradients come back in this order.
  const inputsOfNode = [
    ...input.inputs,
    ...(update ? [update.a, update.b] : []),
    ...(trainedWeight ? [trainedWeight] : []),
    ...(bias ? [bias] : []),
  ];
  if (!needsGrad(inputsOfNode)) return result;
  if (trainedWeight?.requiresGrad || update?.a.requiresGrad) input.willRead?.(); // dW or dA reads x
  result.requiresGrad = true;
  result.node = {
    opName: input.opName,
    inputs: inputsOfNode,
    backward: (g) => {
      let gradX: Float32Array | null = null;
      if (input.wantsGradX()) {
        gradX = uninitializedFloats(N * inputs); // not xData.length: the closure must not keep a recomputed x alive
        weightProduct(g, weight, gradX, N, out, inputs, false); // g·W
      }
      let x: Float32Array | null = null; // read once per backward, as willRead promised
      const readX = () => (x ??= input.readX(gradX));
      const adapterInput = () => dropped(readX());
      // gradX is complete (g·W + du·A) only after the low-rank part: the inputs' gradients come last.
      const gradients: (Float32Array | null)[] = update
        ? lowRankGradients(update, adapterInput, down, g, gradX, N, out)
        : [];
      if (trainedWeight) {
        // Written in full by the product (accumulate false): no zero-filling of the layer's largest gradients.
        const gradW = trainedWeight.requiresGrad ? uninitializedFloats(trainedWeight.size) : null;
        if (gradW) product(g, readX(), gradW, out, N, inputs, { transposeA: true }); // gᵀ·x
        gradients.push(gradW);
      }
      if (bias?.requiresGrad) {
        const gradBias = new Float32Array(out);
        for (let row = 0; row < N; row++) for (let j = 0; j < out; j++) gradBias[j] += g[row * out + j];
        gradients.push(gradBias);
      } else if (bias) gradients.push(null);
      return [...input.gradients(gradX), ...gradients];
    },
  };
  return result;
}

/** dA and dB, adding du·A (through the dropout mask) into gradX when x needs it; u = s·x̃·Aᵀ is the forward's `down`. */
function lowRankGradients(
  { a, b, scaling, dropout }: LowRankUpdate,
  adapterInput: () => Float32Array,
  down: Float32Array,
  g: Float32Array,
  gradX: Float32Array | null,
  N: number,
  out: number,
): [Float32Array | null, Float32Array | null] {
  const [rank, inputs] = a.shape;
  // du = s·g·B [N, r]: the gradient reaching x·Aᵀ, shared by dx and dA.
  const gradDown = new Float32Array(N * rank);
  product(g, b.data, gradDown, N, out, rank, {});
  for (let i = 0; i < gradDown.length; i++) gradDown[i] *= scaling;
  const dropping = dropout !== undefined && dropout.probability > 0;
  if (gradX && !dropping) product(gradDown, a.data, gradX, N, rank, inputs, { accumulate: true }); // + du·A
  if (gradX && dropping) {
    // dx̃ = du·A, then dx += m⊙dx̃/(1−p): the mask is x̃'s, rebuilt from the seed on a vector of ones.
    const gradDropped = new Float32Array(N * inputs);
    product(gradDown, a.data, gradDropped, N, rank, inputs, {});
    const scales = droppedInput(new Float32Array(N * inputs).fill(1), dropout);
    for (let i = 0; i < gradX.length; i++) gradX[i] += scales[i] * gradDropped[i];
  }
  let gradA: Float32Array | null = null;
  // adapterInput may recompute x together with its gradient (swigluLowRankLinear): gradX is complete here.
  if (a.requiresGrad) {
    gradA = new Float32Array(a.size);
    product(gradDown, adapterInput(), gradA, rank, N, inputs, { transposeA: true }); // duᵀ·x̃
  }
  let gradB: Float32Array | null = null;
  if (b.requiresGrad) {
    gradB = new Float32Array(b.size);
    product(g, down, gradB, out, N, rank, { transposeA: true }); // gᵀ·u
  }
  return [gradA, gradB];
}
