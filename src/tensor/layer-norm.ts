/**
 * LayerNorm with a weight and a bias over the last axis, as torch.nn.LayerNorm computes it (biased
 * variance, eps inside the square root): the norm of SigLIP's encoder layers and its post_layernorm.
 * One fused op with a hand-written gradient, so a [rows, D] input keeps only its per-row mean and
 * inverse deviation instead of the five intermediates a composite of primitives would record.
 *
 * Is not: RMSNorm (fused.ts, no centring and no bias). Gradient-checked in gradients.test.ts on
 * every backend; the loops are plain JavaScript on all of them (memory-bound, like elementwise ops).
 */
import { needsGrad } from './autograd.js';
import { formatShape } from './shape.js';
import { Tensor } from './tensor.js';

/** y = (x − mean) / sqrt(var + eps) · weight + bias over the last axis (var is the biased variance). */
export function layerNorm(x: Tensor, weight: Tensor, bias: Tensor, eps: number): Tensor {
  const D = x.shape[x.rank - 1];
  for (const [label, parameter] of [
    ['weight', weight],
    ['bias', bias],
  ] as const) {
    if (parameter.rank !== 1 || parameter.shape[0] !== D)
      throw new Error(
        `layerNorm: ${label} ${formatShape(parameter.shape)} does not match input ${formatShape(x.shape)}`,
      );
  }
  const rows = D === 0 ? 0 : x.size / D;
  const input = x.data;
  const w = weight.data;
  const b = bias.data;
  const means = new Float32Array(rows);
  const inverseDeviations = new Float32Array(rows);
  const output = new Float32Array(x.size);
  for (let r = 0; r < rows; r++) {
    const base = r * D;
    let total = 0;
    for (let i = 0; i < D; i++) total += input[base + i];
    const mean = total / D;
    let squares = 0;
    for (let i = 0; i < D; i++) squares += (input[base + i] - mean) ** 2;
    const inverse = 1 / Math.sqrt(squares / D + eps);
    means[r] = mean;
    inverseDeviations[r] = inverse;
    for (let i = 0; i < D; i++) output[base + i] = (input[base + i] - mean) * inverse * w[i] + b[i];
  }
  const result = new Tensor(output, x.shape);
  if (!needsGrad([x, weight, bias])) return result;
  result.requiresGrad = true;
  result.node = {
    opName: 'layerNorm',
    inputs: [x, weight, bias],
    backward: (g) => {
      // With n = (x − mean)·inv and gn = g·w: dx = inv · (gn − mean(gn) − n · mean(gn · n)).
      const gradX = new Float32Array(x.size);
      const gradW = new Float32Array(D);
      const gradB = new Float32Array(D);
      for (let r = 0; r < rows; r++) {
        const base = r * D;
        const mean = means[r];
        const inverse = inverseDeviations[r];
        let sumGn = 0;
        let sumGnN = 0;
        for (let i = 0; i < D; i++) {
          const normed = (input[base + i] - mean) * inverse;
          const gn = g[base + i] * w[i];
          sumGn += gn;
          sumGnN += gn * normed;
          gradW[i] += g[base + i] * normed;
          gradB[i] += g[base + i];
        }
        const meanGn = sumGn / D;
        const meanGnN = sumGnN / D;
        for (let i = 0; i < D; i++) {
          const normed = (input[base + i] - mean) * inverse;
          gradX[base + i] = inverse * (g[base + i] * w[i] - meanGn - normed * meanGnN);
        }
      }
      return [gradX, gradW, gradB];
    },
  };
  return result;
}
