/**
 * Test helpers for comparing a trainer step's gradients with a direct composition: a copy of every
 * parameter's gradient (zeros where none arrived) and clearing them between the two passes.
 * Is not: part of the training runtime (only tests import it).
 */
import type { Transformer } from '../../src/model/transformer.js';

/** Every parameter's gradient by name, copied; a parameter that received none reads as zeros. */
export function gradients(model: Transformer): Map<string, Float32Array> {
  return new Map(
    [...model.parameters].map(([name, p]) => [name, p.grad ? p.grad.data.slice() : new Float32Array(p.data.length)]),
  );
}

/** Drops every parameter's gradient, so the next backward starts from none. */
export function zeroGradients(model: Transformer): void {
  for (const p of model.parameters.values()) p.grad = null;
}
