/**
 * Tests of the SGEMM's panel packers: each instruction set's packing kernel (kernels-*.c: pack_a, pack_at,
 * pack_bt) against the plain C packer of gemm.c, on every instruction set this CPU runs.
 *
 * Packing is a copy (with zero padding), so the two must agree bit for bit: compared as 32-bit words, with
 * NaNs and negative zeros in the source so a conversion or an arithmetic shortcut would show. Depths cover
 * the 8- and 16-wide vector blocks and their tails; counts every width from 1 to MR (A) or NR (B), so edge
 * panels with zero rows or columns are included.
 */
import { describe, expect, it } from 'vitest';
import { loadAddon, nativeAddonStatus, nativePackPanel, type PanelOperand } from './native-addon.js';

const status = nativeAddonStatus();
const required = process.env.GRPO_REQUIRE_NATIVE === '1';
if (!status.available && !required) console.warn(`native packing tests skipped: ${status.reason}`);

function source(length: number, seed: number): Float32Array {
  let state = seed >>> 0;
  const values = Float32Array.from({ length }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
  for (let i = 5; i < length; i += 97) values[i] = NaN;
  for (let i = 11; i < length; i += 89) values[i] = -0;
  return values;
}

describe.skipIf(!status.available && !required)('native panel packers', () => {
  for (const isa of status.isas) {
    it(`${isa}: pack A, transposed A and transposed B equal the plain C packers bit for bit`, () => {
      const { addon } = loadAddon();
      const handle = addon!.createContext(1, isa);
      const { mr, nr } = addon!.contextInfo(handle);
      addon!.destroyContext(handle);
      let seed = 1;
      let compared = 0;
      for (const operand of ['a', 'transposedA', 'transposedB'] as PanelOperand[]) {
        const width = operand === 'transposedB' ? nr : mr;
        for (const kc of [1, 7, 8, 9, 16, 17, 33, 256, 301])
          for (let count = 1; count <= width; count++) {
            // A and transposed B: count rows of kc, ld apart; transposed A: kc rows of count, ld apart.
            const ld = (operand === 'transposedA' ? count : kc) + (seed % 3) * 5;
            const length = operand === 'transposedA' ? (kc - 1) * ld + count : (count - 1) * ld + kc;
            const src = source(length, seed++);
            const own = nativePackPanel(isa, operand, false, src, ld, kc, count, width)!;
            const plain = nativePackPanel(isa, operand, true, src, ld, kc, count, width)!;
            const label = `${isa} ${operand} kc=${kc} count=${count} ld=${ld}`;
            expect(new Uint32Array(own.buffer), label).toEqual(new Uint32Array(plain.buffer));
            // The layout itself: element (k, i) is row i's k-th value (or 0 in a padding lane).
            const k = kc - 1;
            const i = count - 1;
            const at = operand === 'transposedA' ? k * ld + i : i * ld + k;
            expect(Object.is(plain[k * width + i], src[at]), label).toBe(true);
            if (count < width) expect(plain[k * width + count], label).toBe(0);
            compared++;
          }
      }
      expect(compared).toBe(9 * (2 * mr + nr));
    });
  }
});
