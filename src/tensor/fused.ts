/**
 * Fused ops with hand-written gradients, used where a composite would be slow or would materialise
 * large intermediates: RMSNorm, SwiGLU and rotary position embedding. Causal attention is in
 * attention.ts; the vocabulary-axis ops (log-softmax-gather, cross-entropy, entropy) are in
 * fused-vocabulary.ts.
 *
 * Legend: B = batch, T = query length, S = key length, Hq/Hkv = query/key-value heads, D = head
 * dim, N = rows, V = vocabulary. Is not: a model — shapes follow the HF Llama conventions but no
 * weights live here. Each op is gradient-checked in fused.test.ts. The row loops below are the spec; where
 * the backend has the optional row kernel (Backend.swigluForward etc.) it runs that instead.
 */
import { needsGrad, record } from './autograd.js';
import { getBackend } from './backends/select.js';
import { formatShape } from './shape.js';
import { uninitializedFloats } from './uninitialized.js';
import { Tensor } from './tensor.js';

/** y = x / sqrt(mean(x², last axis) + eps) · weight, as HF's LlamaRMSNorm (computed in float32). */
export function rmsNorm(x: Tensor, weight: Tensor, eps: number): Tensor {
  const D = x.shape[x.rank - 1];
  if (weight.rank !== 1 || weight.shape[0] !== D) {
    throw new Error(`rmsNorm: weight shape ${formatShape(weight.shape)} does not match input ${formatShape(x.shape)}`);
  }
  const rows = D === 0 ? 0 : x.size / D;
  const inverseRms = new Float32Array(rows);
  const output = uninitializedFloats(x.size); // every element written below
  const w = weight.data;
  const forwardBackend = getBackend();
  if (forwardBackend.rmsNormForward) forwardBackend.rmsNormForward(x.data, w, rows, D, eps, output, inverseRms);
  else rmsNormRows(x.data, w, rows, D, eps, output, inverseRms);
  return record(new Tensor(output, x.shape), 'rmsNorm', [x, weight], (g) => {
    const gradX = uninitializedFloats(x.size);
    const gradW = new Float32Array(D); // accumulated into
    const backend = getBackend();
    if (backend.rmsNormBackward) backend.rmsNormBackward(x.data, w, inverseRms, g, rows, D, gradX, gradW);
    else rmsNormRowsBackward(x.data, w, inverseRms, g, rows, D, gradX, gradW);
    return [gradX, gradW];
  });
}

/** The spec of Backend.rmsNormForward. */
function rmsNormRows(
  x: Float32Array,
  w: Float32Array,
  rows: number,
  D: number,
  eps: number,
  output: Float32Array,
  inverseRms: Float32Array,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * D;
    let squares = 0;
    for (let i = 0; i < D; i++) squares += x[base + i] * x[base + i];
    const scale = 1 / Math.sqrt(squares / D + eps);
    inverseRms[r] = scale;
    for (let i = 0; i < D; i++) output[base + i] = x[base + i] * scale * w[i];
  }
}

/** The spec of Backend.rmsNormBackward (gradW accumulates into zeros). */
function rmsNormRowsBackward(
  x: Float32Array,
  w: Float32Array,
  inverseRms: Float32Array,
  g: Float32Array,
  rows: number,
  D: number,
  gradX: Float32Array,
  gradW: Float32Array,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * D;
    const scale = inverseRms[r];
    // With n = x·scale: dW = Σ g·n; dn = g·w; dx = scale·(dn − n·mean(dn·n)).
    let dot = 0;
    for (let i = 0; i < D; i++) {
      const normalized = x[base + i] * scale;
      gradW[i] += g[base + i] * normalized;
      dot += g[base + i] * w[i] * normalized;
    }
    dot /= D;
    for (let i = 0; i < D; i++) gradX[base + i] = scale * (g[base + i] * w[i] - x[base + i] * scale * dot);
  }
}

function sigmoidOf(x: number): number {
  // Two branches so exp never overflows for large |x| (the same formula as elementwise.ts's sigmoid).
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

/** The spec of Backend.swigluForward: silu rounded to float32 as the two-op composite stores it, then the product. */
function swigluRows(x: Float32Array, u: Float32Array, output: Float32Array): void {
  for (let i = 0; i < x.length; i++) output[i] = Math.fround(x[i] * sigmoidOf(x[i])) * u[i];
}

/** The spec of Backend.swigluBackward (`output`, when given, gets swigluRows's values). */
function swigluGradientRows(
  x: Float32Array,
  u: Float32Array,
  g: Float32Array,
  gradGate: Float32Array,
  gradUp: Float32Array,
  output: Float32Array | null,
): void {
  for (let i = 0; i < x.length; i++) {
    const sigmoid = sigmoidOf(x[i]);
    const silu = Math.fround(x[i] * sigmoid);
    // g·up is rounded to float32 first, as the composite stores it between its two ops.
    gradGate[i] = Math.fround(g[i] * u[i]) * (sigmoid * (1 + x[i] * (1 - sigmoid)));
    gradUp[i] = g[i] * silu;
    if (output) output[i] = silu * u[i];
  }
}

/** silu(gate) ⊙ up, the SwiGLU gate, in one pass (the spec rounds as the two-op composite does, so it equals it). */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  if (gate.rank !== up.rank || gate.shape.some((dim, i) => dim !== up.shape[i])) {
    throw new Error(`swiglu: gate ${formatShape(gate.shape)} and up ${formatShape(up.shape)} differ`);
  }
  const x = gate.data;
  const u = up.data;
  const output = uninitializedFloats(x.length);
  const forwardBackend = getBackend();
  if (forwardBackend.swigluForward) forwardBackend.swigluForward(x, u, output);
  else swigluRows(x, u, output);
  if (!needsGrad([gate, up])) return new Tensor(output, gate.shape);
  // The backward recomputes silu(gate) rather than keeping a [.., I] copy alive between the passes.
  return record(new Tensor(output, gate.shape), 'swiglu', [gate, up], (g) => {
    const { gradGate, gradUp } = swigluGradients(x, u, g, false);
    return [gradGate, gradUp];
  });
}

/**
 * swiglu's gradients for dL/dout = g, and with `withOutput` its output again from the same pass (bit for bit
 * swiglu's values, on every backend): a recomputing caller (swigluLowRankLinear) then reads gate and up once.
 */
export function swigluGradients(
  gate: Float32Array,
  up: Float32Array,
  g: Float32Array,
  withOutput: boolean,
): { gradGate: Float32Array; gradUp: Float32Array; output: Float32Array | null } {
  const gradGate = uninitializedFloats(gate.length);
  const gradUp = uninitializedFloats(gate.length);
  const output = withOutput ? uninitializedFloats(gate.length) : null;
  const backend = getBackend();
  if (backend.swigluBackward) backend.swigluBackward(gate, up, g, gradGate, gradUp, output);
  else swigluGradientRows(gate, up, g, gradGate, gradUp, output);
  return { gradGate, gradUp, output };
}

/** cos and sin of position · frequency, [positions.length, D/2] each (one table serves every layer). */
export interface RopeTable {
  cos: Float32Array;
  sin: Float32Array;
}

/** The rotary angles' cos/sin for `positions`, as `rope` computes them (share one across layers). */
export function ropeTable(positions: Int32Array, inverseFrequencies: Float32Array): RopeTable {
  const half = inverseFrequencies.length;
  const cos = new Float32Array(positions.length * half);
  const sin = new Float32Array(positions.length * half);
  for (let row = 0; row < positions.length; row++) {
    for (let i = 0; i < half; i++) {
      // HF multiplies in float32 before taking cos/sin; mimic that rounding.
      const angle = Math.fround(positions[row] * inverseFrequencies[i]);
      cos[row * half + i] = Math.cos(angle);
      sin[row * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/**
 * Rotary embedding with HF's rotate-half convention on x: [B, T, H, D]. `positions` holds T (shared)
 * or B·T absolute positions; `inverseFrequencies` has D/2 entries (scaling already applied);
 * `table` is ropeTable(positions, inverseFrequencies) when the caller already has it.
 */
export function rope(x: Tensor, positions: Int32Array, inverseFrequencies: Float32Array, table?: RopeTable): Tensor {
  const [B, T, H, D] = x.shape;
  const half = D / 2;
  if (x.rank !== 4 || inverseFrequencies.length !== half || (positions.length !== T && positions.length !== B * T)) {
    throw new Error(
      `rope: input ${formatShape(x.shape)}, ${positions.length} positions and ${inverseFrequencies.length} frequencies do not fit [B, T, H, D]`,
    );
  }
  const { cos, sin } = table ?? ropeTable(positions, inverseFrequencies);
  if (cos.length !== positions.length * half)
    throw new Error(`rope: table of ${cos.length / half} positions for ${positions.length} positions`);
  const shared = positions.length === T; // one row of angles per t, reused for every b
  const rotate = (input: Float32Array, direction: 1 | -1): Float32Array => {
    const output = uninitializedFloats(input.length);
    const backend = getBackend();
    if (backend.ropeRows) {
      backend.ropeRows(input, cos, sin, B * T, shared ? T : B * T, H, D, direction, output);
      return output;
    }
    for (let bt = 0; bt < B * T; bt++) {
      const angleRow = (shared ? bt % T : bt) * half;
      for (let h = 0; h < H; h++) {
        const base = (bt * H + h) * D;
        for (let i = 0; i < half; i++) {
          const c = cos[angleRow + i];
          const s = sin[angleRow + i] * direction;
          const first = input[base + i];
          const second = input[base + half + i];
          output[base + i] = first * c - second * s;
          output[base + half + i] = second * c + first * s;
        }
      }
    }
    return output;
  };
  // The rotation is orthogonal, so its gradient is the inverse rotation.
  return record(new Tensor(rotate(x.data, 1), x.shape), 'rope', [x], (g) => [rotate(g, -1)]);
}
