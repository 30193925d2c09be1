/**
 * Public API of the tensor layer: the Tensor, creation helpers, every op, autograd scopes and
 * backend selection. Is not: modules, optimisers (src/nn) or anything about models.
 */
export { Tensor, tensor, scalar, zeros, ones, full, parameter, type TensorOptions } from './tensor.js';
export { noGrad, isGradEnabled, type GradNode } from './autograd.js';
export {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  abs,
  sigmoid,
  tanh,
  relu,
  silu,
  gelu,
  geluTanh,
  square,
  pow,
  clamp,
  where,
  add,
  sub,
  mul,
  div,
  maximum,
  minimum,
  greater,
  greaterEqual,
  less,
  lessEqual,
  equal,
  erf,
  unaryRules,
  binaryRules,
  type Operand,
  type UnaryOpName,
  type BinaryOpName,
} from './elementwise.js';
export {
  sum,
  max,
  reshape,
  permute,
  transpose,
  slice,
  concat,
  gather,
  indexSelect,
  embedding,
  broadcastTo,
} from './primitives.js';
export { linearInto, matmul, type MatmulOptions } from './matmul.js';
export { mean, logSumExp, logSoftmax, softmax, entropy, linear } from './ops.js';
export { rmsNorm, rope, swiglu } from './fused.js';
export { causalAttention, type AttentionOptions } from './attention.js';
export { layerNorm } from './layer-norm.js';
export { replaceRows } from './replace-rows.js';
export {
  combineSeeds,
  lowRankLinear,
  swigluLowRankLinear,
  type LowRankUpdate,
  type RecomputedInput,
} from './low-rank-linear.js';
export { HalfMatrix } from './half-matrix.js';
export {
  logSoftmaxGather,
  projectedLogSoftmaxGather,
  crossEntropy,
  entropyFromLogits,
  type CrossEntropyOptions,
} from './fused-vocabulary.js';
export { sizeOf, formatShape, type Shape } from './shape.js';
export type { Backend, MatmulShape } from './backend.js';
export {
  addArrays,
  copyBlocks,
  getBackend,
  setBackend,
  createBackend,
  scaleArray,
  sumOfSquares,
  withConstantWeights,
  withTrainingWeights,
} from './backends/select.js';
export { Random, randomNormal, randomUniform, stepSeed, type RandomState } from './random.js';
export { withStepArena } from './uninitialized.js';
