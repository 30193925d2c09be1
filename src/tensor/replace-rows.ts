/**
 * replaceRows(x, at, rows): a copy of x [N, H] whose rows at[k] are rows[k] ([count, H]). This is how
 * a vision-language model puts image features into the token embeddings at the image-token positions
 * (Idefics3's inputs_merger). The gradient goes to x everywhere except the replaced rows (their
 * embedding-table entries did not reach the output) and to rows[k] from output row at[k].
 *
 * Is not: a scatter-add (each position is written once; repeated positions are refused) or a gather
 * (indexSelect in primitives.ts). Gradient-checked in gradients.test.ts on every backend.
 */
import { needsGrad } from './autograd.js';
import { formatShape } from './shape.js';
import { Tensor } from './tensor.js';

export function replaceRows(x: Tensor, at: Int32Array, rows: Tensor): Tensor {
  if (x.rank !== 2 || rows.rank !== 2 || rows.shape[1] !== x.shape[1])
    throw new Error(`replaceRows: rows ${formatShape(rows.shape)} do not fit [count, H] of x ${formatShape(x.shape)}`);
  const [N, H] = x.shape;
  if (rows.shape[0] !== at.length)
    throw new Error(`replaceRows: ${at.length} positions but ${rows.shape[0]} rows to put there`);
  const seen = new Uint8Array(N);
  for (let k = 0; k < at.length; k++) {
    const position = at[k];
    if (!(position >= 0 && position < N)) throw new Error(`replaceRows: position ${position} is outside [0, ${N})`);
    if (seen[position]) throw new Error(`replaceRows: position ${position} is given twice`);
    seen[position] = 1;
  }
  const output = new Float32Array(x.data);
  for (let k = 0; k < at.length; k++) output.set(rows.data.subarray(k * H, (k + 1) * H), at[k] * H);
  const result = new Tensor(output, x.shape);
  if (!needsGrad([x, rows])) return result;
  result.requiresGrad = true;
  result.node = {
    opName: 'replaceRows',
    inputs: [x, rows],
    backward: (g) => {
      const gradX = new Float32Array(g);
      const gradRows = new Float32Array(rows.size);
      for (let k = 0; k < at.length; k++) {
        const start = at[k] * H;
        gradRows.set(g.subarray(start, start + H), k * H);
        gradX.fill(0, start, start + H);
      }
      return [gradX, gradRows];
    },
  };
  return result;
}
