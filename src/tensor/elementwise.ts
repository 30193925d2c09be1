/**
 * Elementwise primitives: unary maps and broadcasting binary ops, each with its gradient rule in
 * one table row. Comparisons return 0/1 tensors that carry no gradient.
 *
 * Is not: reductions, shape ops or matmul (primitives.ts) or composites (ops.ts). The loops are
 * plain JavaScript on every backend: they are memory-bound, so a kernel call would not pay.
 */
import { needsGrad } from './autograd.js';
import { broadcastShapes, broadcastStrides, forEachRun, sameShape, sizeOf, type Shape } from './shape.js';
import { Tensor, scalar } from './tensor.js';

const SQRT_HALF = Math.SQRT1_2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);
const GELU_CUBIC = 0.044715;

/** erf with |error| < 1.2e-7 (Numerical Recipes erfc Chebyshev fit), well inside float32 precision. */
export function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const tail =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  const result = 1 - tail;
  return x >= 0 ? result : -result;
}

function sigmoidValue(x: number): number {
  // Two branches so exp never overflows for large |x|.
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

interface UnaryRule {
  forward: (x: number) => number;
  /** d y / d x given the input x and output y. */
  derivative: (x: number, y: number) => number;
}

/** The unary primitive table: one forward and one derivative per op. */
export const unaryRules = {
  neg: { forward: (x) => -x, derivative: () => -1 },
  exp: { forward: Math.exp, derivative: (_x, y) => y },
  log: { forward: Math.log, derivative: (x) => 1 / x },
  sqrt: { forward: Math.sqrt, derivative: (_x, y) => 0.5 / y },
  rsqrt: { forward: (x) => 1 / Math.sqrt(x), derivative: (_x, y) => -0.5 * y * y * y },
  abs: { forward: Math.abs, derivative: (x) => (x > 0 ? 1 : x < 0 ? -1 : 0) },
  sigmoid: { forward: sigmoidValue, derivative: (_x, y) => y * (1 - y) },
  tanh: { forward: Math.tanh, derivative: (_x, y) => 1 - y * y },
  relu: { forward: (x) => (x > 0 ? x : x === 0 ? 0 : x < 0 ? 0 : x), derivative: (x) => (x > 0 ? 1 : 0) },
  silu: {
    forward: (x) => x * sigmoidValue(x),
    derivative: (x) => {
      const s = sigmoidValue(x);
      return s * (1 + x * (1 - s));
    },
  },
  /** Exact (erf) GELU, PyTorch's default. */
  gelu: {
    forward: (x) => 0.5 * x * (1 + erf(x * SQRT_HALF)),
    derivative: (x) => 0.5 * (1 + erf(x * SQRT_HALF)) + x * INV_SQRT_2PI * Math.exp(-0.5 * x * x),
  },
  /** GELU's tanh approximation, PyTorch's gelu(approximate='tanh'): SigLIP's gelu_pytorch_tanh. */
  geluTanh: {
    forward: (x) => 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x))),
    derivative: (x) => {
      const t = Math.tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * x * x);
    },
  },
  square: { forward: (x) => x * x, derivative: (x) => 2 * x },
} satisfies Record<string, UnaryRule>;

export type UnaryOpName = keyof typeof unaryRules;

function unary(opName: UnaryOpName, x: Tensor): Tensor {
  const rule: UnaryRule = unaryRules[opName];
  const input = x.data;
  const output = new Float32Array(input.length);
  for (let i = 0; i < input.length; i++) output[i] = rule.forward(input[i]);
  const result = new Tensor(output, x.shape);
  if (needsGrad([x])) {
    result.requiresGrad = true;
    result.node = {
      opName,
      inputs: [x],
      backward: (gradOutput) => {
        const gradInput = new Float32Array(input.length);
        for (let i = 0; i < input.length; i++) gradInput[i] = gradOutput[i] * rule.derivative(input[i], output[i]);
        return [gradInput];
      },
    };
  }
  return result;
}

export const neg = (x: Tensor): Tensor => unary('neg', x);
export const exp = (x: Tensor): Tensor => unary('exp', x);
export const log = (x: Tensor): Tensor => unary('log', x);
export const sqrt = (x: Tensor): Tensor => unary('sqrt', x);
export const rsqrt = (x: Tensor): Tensor => unary('rsqrt', x);
export const abs = (x: Tensor): Tensor => unary('abs', x);
export const sigmoid = (x: Tensor): Tensor => unary('sigmoid', x);
export const tanh = (x: Tensor): Tensor => unary('tanh', x);
export const relu = (x: Tensor): Tensor => unary('relu', x);
export const silu = (x: Tensor): Tensor => unary('silu', x);
export const gelu = (x: Tensor): Tensor => unary('gelu', x);
export const geluTanh = (x: Tensor): Tensor => unary('geluTanh', x);
export const square = (x: Tensor): Tensor => unary('square', x);

/** Sums a broadcast gradient back down to `shape` (the reverse of broadcasting). */
export function sumToShape(gradient: Float32Array, gradientShape: Shape, shape: Shape): Float32Array {
  if (sameShape(gradientShape, shape)) return gradient;
  const result = new Float32Array(sizeOf(shape));
  const targetStrides = broadcastStrides(shape, gradientShape);
  forEachRun(gradientShape, [targetStrides], (outStart, starts, innerStrides, length) => {
    const stride = innerStrides[0];
    let target = starts[0];
    for (let i = 0; i < length; i++, target += stride) result[target] += gradient[outStart + i];
  });
  return result;
}

interface BinaryRule {
  forward: (a: number, b: number) => number;
  /** Partial derivatives d/da and d/db at (a, b); absent for comparisons (no gradient). */
  partialA?: (a: number, b: number) => number;
  partialB?: (a: number, b: number) => number;
}

/** The binary primitive table. maximum/minimum split the gradient evenly on ties, like PyTorch. */
export const binaryRules = {
  add: { forward: (a, b) => a + b, partialA: () => 1, partialB: () => 1 },
  sub: { forward: (a, b) => a - b, partialA: () => 1, partialB: () => -1 },
  mul: { forward: (a, b) => a * b, partialA: (_a, b) => b, partialB: (a) => a },
  div: { forward: (a, b) => a / b, partialA: (_a, b) => 1 / b, partialB: (a, b) => -a / (b * b) },
  maximum: {
    forward: (a, b) => (a !== a || b !== b ? NaN : a > b ? a : b),
    partialA: (a, b) => (a > b ? 1 : a < b ? 0 : 0.5),
    partialB: (a, b) => (a > b ? 0 : a < b ? 1 : 0.5),
  },
  minimum: {
    forward: (a, b) => (a !== a || b !== b ? NaN : a < b ? a : b),
    partialA: (a, b) => (a < b ? 1 : a > b ? 0 : 0.5),
    partialB: (a, b) => (a < b ? 0 : a > b ? 1 : 0.5),
  },
  greater: { forward: (a, b) => (a > b ? 1 : 0) },
  greaterEqual: { forward: (a, b) => (a >= b ? 1 : 0) },
  less: { forward: (a, b) => (a < b ? 1 : 0) },
  lessEqual: { forward: (a, b) => (a <= b ? 1 : 0) },
  equal: { forward: (a, b) => (a === b ? 1 : 0) },
} satisfies Record<string, BinaryRule>;

export type BinaryOpName = keyof typeof binaryRules;

/** A number operand becomes a scalar tensor so every binary op accepts `x.mul(2)`-style calls. */
export type Operand = Tensor | number;
export const asTensor = (value: Operand): Tensor => (typeof value === 'number' ? scalar(value) : value);

// add/sub/mul are most of a transformer's elementwise work: they get inline loops (the table stays
// the spec, and the generic path below is what every other op uses).
const inlineForward: Partial<
  Record<
    BinaryOpName,
    (
      out: Float32Array,
      o: number,
      a: Float32Array,
      ia: number,
      sa: number,
      b: Float32Array,
      ib: number,
      sb: number,
      n: number,
    ) => void
  >
> = {
  add: (out, o, a, ia, sa, b, ib, sb, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) out[o + i] = a[ia] + b[ib];
  },
  sub: (out, o, a, ia, sa, b, ib, sb, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) out[o + i] = a[ia] - b[ib];
  },
  mul: (out, o, a, ia, sa, b, ib, sb, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) out[o + i] = a[ia] * b[ib];
  },
};

function binary(opName: BinaryOpName, left: Operand, right: Operand): Tensor {
  const a = asTensor(left);
  const b = asTensor(right);
  const rule: BinaryRule = binaryRules[opName];
  const outShape = broadcastShapes(a.shape, b.shape, opName);
  const output = new Float32Array(sizeOf(outShape));
  const aStrides = broadcastStrides(a.shape, outShape);
  const bStrides = broadcastStrides(b.shape, outShape);
  const aData = a.data;
  const bData = b.data;
  const forward = rule.forward;
  const inline = inlineForward[opName];
  forEachRun(outShape, [aStrides, bStrides], (outStart, starts, inner, length) => {
    if (inline) return inline(output, outStart, aData, starts[0], inner[0], bData, starts[1], inner[1], length);
    let aIndex = starts[0];
    let bIndex = starts[1];
    for (let i = 0; i < length; i++, aIndex += inner[0], bIndex += inner[1]) {
      output[outStart + i] = forward(aData[aIndex], bData[bIndex]);
    }
  });
  const result = new Tensor(output, outShape);
  if (rule.partialA && needsGrad([a, b])) {
    result.requiresGrad = true;
    result.node = {
      opName,
      inputs: [a, b],
      backward: (gradOutput) => [
        a.requiresGrad
          ? sumToShape(
              binaryGradient(opName, rule, 'a', gradOutput, outShape, aData, aStrides, bData, bStrides),
              outShape,
              a.shape,
            )
          : null,
        b.requiresGrad
          ? sumToShape(
              binaryGradient(opName, rule, 'b', gradOutput, outShape, aData, aStrides, bData, bStrides),
              outShape,
              b.shape,
            )
          : null,
      ],
    };
  }
  return result;
}

/** g · ∂(a op b)/∂side over the broadcast output shape (reduced to the input's shape by the caller). */
function binaryGradient(
  opName: BinaryOpName,
  rule: BinaryRule,
  side: 'a' | 'b',
  g: Float32Array,
  outShape: Shape,
  aData: Float32Array,
  aStrides: number[],
  bData: Float32Array,
  bStrides: number[],
): Float32Array {
  if (opName === 'add' || (opName === 'sub' && side === 'a')) return g;
  if (opName === 'sub') return g.map((value) => -value);
  const result = new Float32Array(g.length);
  if (opName === 'mul') {
    // ∂(a·b)/∂a = b and ∂/∂b = a: multiply by the other operand, walked with its broadcast strides.
    const other = side === 'a' ? bData : aData;
    const strides = side === 'a' ? bStrides : aStrides;
    forEachRun(outShape, [strides], (outStart, starts, inner, length) => {
      for (let i = 0, j = starts[0]; i < length; i++, j += inner[0]) result[outStart + i] = g[outStart + i] * other[j];
    });
    return result;
  }
  const partial = side === 'a' ? rule.partialA! : rule.partialB!;
  forEachRun(outShape, [aStrides, bStrides], (outStart, starts, inner, length) => {
    let aIndex = starts[0];
    let bIndex = starts[1];
    for (let i = 0; i < length; i++, aIndex += inner[0], bIndex += inner[1]) {
      result[outStart + i] = g[outStart + i] * partial(aData[aIndex], bData[bIndex]);
    }
  });
  return result;
}

export const add = (a: Operand, b: Operand): Tensor => binary('add', a, b);
export const sub = (a: Operand, b: Operand): Tensor => binary('sub', a, b);
export const mul = (a: Operand, b: Operand): Tensor => binary('mul', a, b);
export const div = (a: Operand, b: Operand): Tensor => binary('div', a, b);
export const maximum = (a: Operand, b: Operand): Tensor => binary('maximum', a, b);
export const minimum = (a: Operand, b: Operand): Tensor => binary('minimum', a, b);
export const greater = (a: Operand, b: Operand): Tensor => binary('greater', a, b);
export const greaterEqual = (a: Operand, b: Operand): Tensor => binary('greaterEqual', a, b);
export const less = (a: Operand, b: Operand): Tensor => binary('less', a, b);
export const lessEqual = (a: Operand, b: Operand): Tensor => binary('lessEqual', a, b);
export const equal = (a: Operand, b: Operand): Tensor => binary('equal', a, b);

/** x ** exponent for a constant exponent; d/dx = exponent · x^(exponent-1). */
export function pow(x: Tensor, exponent: number): Tensor {
  const input = x.data;
  const output = new Float32Array(input.length);
  for (let i = 0; i < input.length; i++) output[i] = Math.pow(input[i], exponent);
  const result = new Tensor(output, x.shape);
  if (needsGrad([x])) {
    result.requiresGrad = true;
    result.node = {
      opName: 'pow',
      inputs: [x],
      backward: (gradOutput) => {
        const gradInput = new Float32Array(input.length);
        for (let i = 0; i < input.length; i++) {
          gradInput[i] = gradOutput[i] * exponent * Math.pow(input[i], exponent - 1);
        }
        return [gradInput];
      },
    };
  }
  return result;
}

/** min(max(x, low), high); gradient 1 where low <= x <= high and 0 where the clip binds (as torch.clamp). */
export function clamp(x: Tensor, low: number, high: number): Tensor {
  if (low > high) throw new Error(`clamp: low ${low} is greater than high ${high}`);
  const input = x.data;
  const output = new Float32Array(input.length);
  for (let i = 0; i < input.length; i++) {
    const value = input[i];
    output[i] = value !== value ? NaN : value < low ? low : value > high ? high : value;
  }
  const result = new Tensor(output, x.shape);
  if (needsGrad([x])) {
    result.requiresGrad = true;
    result.node = {
      opName: 'clamp',
      inputs: [x],
      backward: (gradOutput) => {
        const gradInput = new Float32Array(input.length);
        for (let i = 0; i < input.length; i++) {
          gradInput[i] = input[i] >= low && input[i] <= high ? gradOutput[i] : 0;
        }
        return [gradInput];
      },
    };
  }
  return result;
}

/** condition ? a : b elementwise with broadcasting over all three; the condition is a 0/1 tensor. */
export function where(condition: Tensor, left: Operand, right: Operand): Tensor {
  const a = asTensor(left);
  const b = asTensor(right);
  const outShape = broadcastShapes(broadcastShapes(condition.shape, a.shape, 'where'), b.shape, 'where');
  const strides = [condition, a, b].map((operand) => broadcastStrides(operand.shape, outShape));
  const output = new Float32Array(sizeOf(outShape));
  const mask = new Uint8Array(output.length);
  forEachRun(outShape, strides, (outStart, starts, inner, length) => {
    let c = starts[0];
    let ia = starts[1];
    let ib = starts[2];
    for (let i = 0; i < length; i++, c += inner[0], ia += inner[1], ib += inner[2]) {
      const pick = condition.data[c] !== 0;
      mask[outStart + i] = pick ? 1 : 0;
      output[outStart + i] = pick ? a.data[ia] : b.data[ib];
    }
  });
  const result = new Tensor(output, outShape);
  if (needsGrad([a, b])) {
    result.requiresGrad = true;
    result.node = {
      opName: 'where',
      inputs: [a, b],
      backward: (gradOutput) => {
        const gradA = new Float32Array(output.length);
        const gradB = new Float32Array(output.length);
        for (let i = 0; i < output.length; i++) {
          if (mask[i]) gradA[i] = gradOutput[i];
          else gradB[i] = gradOutput[i];
        }
        return [sumToShape(gradA, outShape, a.shape), sumToShape(gradB, outShape, b.shape)];
      },
    };
  }
  return result;
}
