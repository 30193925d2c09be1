/**
 * The `native` backend: loads the N-API addon that node-gyp builds at install time (binding.gyp,
 * build/Release/grpo_native.node) and wraps its SGEMM (with packed copies of constant operands, and a
 * bfloat16 B widened while packing: matmulBfloat16B) and row
 * kernels (SwiGLU, RMSNorm, log-sum-exp rows, softmax gradient, AdamW, the sampler's draw, decode attention
 * over a shared prompt; row-kernels.c) behind the Backend interface.
 *
 * Is: option and argument checks with clear messages over the addon that native-addon.ts loads (and
 * whose `nativeAddonStatus()` says why native is unavailable). The addon works in place on
 * the Float32Arrays (no copies) and picks AVX-512, AVX2 or portable C at run time.
 * Is not: backend selection (select.ts decides between native, wasm and js) or the kernels (*.c here).
 */
import { availableParallelism } from 'node:os';
import type { AdamWStep, Backend, MatmulShape, PrefixAttentionDims, TrainingAttentionDims } from '../../backend.js';
import { keepCollectorOffWorkerThreads } from '../../garbage.js';
import { ISAS, loadAddon, type Addon, type NativeIsa } from './native-addon.js';

export { nativeAddonStatus, nativeExp, type NativeAddonStatus, type NativeIsa } from './native-addon.js';

/** Options of loadNativeBackend. */
export interface NativeBackendOptions {
  /** Threads that share each large product, the calling thread included (default min(2, cores)). */
  threads?: number;
  /** Force an instruction-set path, e.g. to test AVX2 on an AVX-512 machine (default 'auto'). */
  isa?: NativeIsa;
  /**
   * Most bytes of packed copies of constant operands kept at once inside withConstantOperands (default
   * $GRPO_NATIVE_PACK_MB MiB, else 2048 MiB); beyond it products take the ordinary, repacking path.
   */
  packBudgetBytes?: number;
}

/**
 * Products with a constant B and at least this many rows use a packed copy of B. Below it the few-rows
 * kernels that read B in place are as fast or faster. A one-off timing of the 25M model's decode shapes
 * (K x N from 512x512 to 512x8192, 2 threads) gave in place / packed GFLOP/s of 8-9 / 7-8 at 1 row and
 * 29-69 / 26-53 at 4 rows, and the packed copy ahead from 8 rows (58-89 against 50-84).
 */
const PACKED_MIN_ROWS = 8;

/** A native backend instance; `isa` says which micro-kernel it runs. */
export interface NativeBackend extends Backend {
  readonly isa: Exclude<NativeIsa, 'auto'>;
  matmulBfloat16B(a: Float32Array, b: Uint16Array, out: Float32Array, shape: MatmulShape): void;
}

function checkOptions(options: NativeBackendOptions): { threads: number; isa: NativeIsa; packBudgetBytes: number } {
  const threads = options.threads ?? Math.min(2, availableParallelism());
  if (!Number.isInteger(threads) || threads < 1 || threads > 256) {
    throw new RangeError(`native backend: options.threads must be an integer from 1 to 256, got ${threads}`);
  }
  const isa = options.isa ?? 'auto';
  if (!ISAS.includes(isa)) {
    throw new RangeError(`native backend: options.isa must be one of ${ISAS.join(', ')}, got '${String(isa)}'`);
  }
  const fromEnvironment = process.env.GRPO_NATIVE_PACK_MB;
  const packBudgetBytes =
    options.packBudgetBytes ?? (fromEnvironment === undefined ? 2048 : Number(fromEnvironment)) * 2 ** 20;
  if (!(packBudgetBytes >= 0)) {
    throw new RangeError(
      options.packBudgetBytes === undefined
        ? `native backend: GRPO_NATIVE_PACK_MB must be a non-negative number of MiB, got '${fromEnvironment}'`
        : `native backend: options.packBudgetBytes must be a non-negative number, got ${options.packBudgetBytes}`,
    );
  }
  return { threads, isa, packBudgetBytes };
}

let heapSettingsApplied = false;

/**
 * Once per process, unless GRPO_NATIVE_RETAIN_FREED=0: glibc's malloc keeps freed memory and serves blocks
 * up to 1 GiB from its heap (heap-addon.c says why: page faults on every step's fresh activation arrays).
 */
function retainFreedMemory(addon: Addon): void {
  const setting = process.env.GRPO_NATIVE_RETAIN_FREED;
  // Refused rather than read as "on": a user who wrote `false` or `off` meant the opposite of the default.
  if (setting !== undefined && setting !== '' && setting !== '0' && setting !== '1')
    throw new Error(`native backend: GRPO_NATIVE_RETAIN_FREED must be 0 (return freed memory) or 1, got '${setting}'`);
  if (heapSettingsApplied || setting === '0') return;
  heapSettingsApplied = true;
  addon.retainFreedMemory();
}

/**
 * Unless GRPO_NATIVE_SERIAL_GC=0: when the pool takes every core, V8 collects on the JS thread only
 * (garbage.ts says why: its helper threads slowed the products they overlapped by up to 4x).
 */
function keepCollectorOffCores(threads: number): void {
  const setting = process.env.GRPO_NATIVE_SERIAL_GC;
  if (setting !== undefined && setting !== '' && setting !== '0' && setting !== '1')
    throw new Error(
      `native backend: GRPO_NATIVE_SERIAL_GC must be 0 (V8's own collector threads) or 1, got '${setting}'`,
    );
  if (setting === '0' || threads < availableParallelism()) return;
  keepCollectorOffWorkerThreads();
}

/** Elements an operand must hold: the last batch block's offset plus one block (0 if there are none). */
function operandLength(batch: number, stride: number, block: number): number {
  return batch === 0 || block === 0 ? 0 : (batch - 1) * stride + block;
}

/** Throws a message naming the offending field or array; the addon re-checks bounds for memory safety. */
export function checkMatmulArguments(
  a: Float32Array,
  b: Float32Array | Uint16Array,
  out: Float32Array,
  shape: MatmulShape,
): void {
  for (const field of ['batch', 'M', 'K', 'N', 'aBatchStride', 'bBatchStride'] as const) {
    const value = shape[field];
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`matmul: shape.${field} must be a non-negative integer, got ${value}`);
    }
  }
  const { batch, M, K, N } = shape;
  const arrays = { a, b, out };
  const needed = {
    a: operandLength(batch, shape.aBatchStride, M * K),
    b: operandLength(batch, shape.bBatchStride, K * N),
    out: batch * M * N,
  };
  for (const name of ['a', 'b', 'out'] as const) {
    const array = arrays[name];
    if (!(array instanceof Float32Array) && !(name === 'b' && array instanceof Uint16Array))
      throw new TypeError(`matmul: ${name} must be a Float32Array${name === 'b' ? ' (or bfloat16 bits)' : ''}`);
    if (array.length < needed[name]) {
      throw new RangeError(
        `matmul: ${name} has ${array.length} elements but shape ` +
          `(batch ${batch}, M ${M}, K ${K}, N ${N}) needs ${needed[name]}`,
      );
    }
  }
}

/**
 * Creates a native backend with its own thread pool, or returns null when the addon is not built or
 * cannot load here (see nativeAddonStatus for the reason). Throws on bad options or an unsupported isa.
 */
export function loadNativeBackend(options: NativeBackendOptions = {}): NativeBackend | null {
  const { threads, isa, packBudgetBytes } = checkOptions(options);
  const { addon } = loadAddon();
  if (!addon) return null;
  retainFreedMemory(addon);
  keepCollectorOffCores(threads);
  let handle: object | null = addon.createContext(threads, isa);
  const info = addon.contextInfo(handle);
  const live = (op: string): object => {
    if (handle === null) throw new Error(`native backend: ${op} called after dispose()`);
    return handle;
  };
  const constant = new ConstantOperands(addon, packBudgetBytes);
  const product = (live: object, a: Float32Array, b: Float32Array | Uint16Array, out: Float32Array, s: MatmulShape) =>
    addon.matmul(
      live,
      a,
      b,
      out,
      s.batch,
      s.M,
      s.K,
      s.N,
      s.transposeA,
      s.transposeB,
      s.aBatchStride,
      s.bBatchStride,
      s.accumulate,
    );
  return {
    name: 'native',
    threads: info.threads,
    isa: info.isa,
    matmul(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape): void {
      if (handle === null) throw new Error('native backend: matmul called after dispose()');
      checkMatmulArguments(a, b, out, shape);
      const { batch, M, K, N } = shape;
      if (batch === 1 && !shape.transposeA && M >= PACKED_MIN_ROWS && M <= info.packedMaxRows && constant.holds(b)) {
        const packed = constant.packed(handle, b, K, N, shape.transposeB);
        if (packed) {
          addon.matmulPacked(handle, a, packed, out, M, shape.accumulate);
          return;
        }
      }
      product(handle, a, b, out, shape);
    },
    matmulBfloat16B(a: Float32Array, b: Uint16Array, out: Float32Array, shape: MatmulShape): void {
      if (!(b instanceof Uint16Array)) throw new TypeError('matmulBfloat16B: b must be a Uint16Array of bfloat16 bits');
      checkMatmulArguments(a, b, out, shape);
      product(live('matmulBfloat16B'), a, b, out, shape); // the addon tells the two kinds of b apart
    },
    addArrays(a, b, out) {
      addon.addArrays(live('addArrays'), a, b, out);
    },
    sumOfSquares(x) {
      return addon.sumOfSquares(live('sumOfSquares'), x);
    },
    scaleArray(x, factor) {
      addon.scaleArray(live('scaleArray'), x, factor);
    },
    copyBlocks(source, target, b) {
      const h = live('copyBlocks');
      addon.copyBlocks(
        h,
        source,
        target,
        b.count,
        b.length,
        b.sourceStart,
        b.sourceStride,
        b.targetStart,
        b.targetStride,
      );
    },
    swigluForward(gate, up, out) {
      addon.swigluForwardFloat(live('swigluForward'), gate, up, out);
    },
    swigluBackward(gate, up, gradOut, gradGate, gradUp, out) {
      addon.swigluBackwardFloat(live('swigluBackward'), gate, up, gradOut, gradGate, gradUp, out);
    },
    rmsNormForward(x, weight, rows, D, eps, out, inverseRms) {
      addon.rmsNormForward(live('rmsNormForward'), x, weight, rows, D, eps, out, inverseRms);
    },
    rmsNormBackward(x, weight, inverseRms, gradOut, rows, D, gradX, gradWeight) {
      addon.rmsNormBackward(live('rmsNormBackward'), x, weight, inverseRms, gradOut, rows, D, gradX, gradWeight);
    },
    logSumExpRows(logits, rows, V, shift, logTotal, entropy) {
      addon.logSumExpRows(live('logSumExpRows'), logits, rows, V, shift, logTotal, entropy);
    },
    softmaxGradRows(logits, rows, V, shift, logTotal, rowGrad, out) {
      addon.softmaxGradRows(live('softmaxGradRows'), logits, rows, V, shift, logTotal, rowGrad, out);
    },
    sampleRows(logits, rows, V, temperature, uniforms, ids, logprobs) {
      addon.sampleRows(live('sampleRows'), logits, rows, V, temperature, uniforms, ids, logprobs);
    },
    attentionForward(q, k, v, out, logSumExp, d: TrainingAttentionDims) {
      const dims = attentionDims(d);
      addon.attentionForward(live('attentionForward'), q, k, v, out, logSumExp, dims, d.scale, d.keyMask, d.segmentIds);
    },
    attentionBackward(q, k, v, gradOut, logSumExp, gradQ, gradK, gradV, d: TrainingAttentionDims) {
      const handle = live('attentionBackward');
      const dims = attentionDims(d);
      addon.attentionBackward(
        handle,
        q,
        k,
        v,
        gradOut,
        logSumExp,
        gradQ,
        gradK,
        gradV,
        dims,
        d.scale,
        d.keyMask,
        d.segmentIds,
      );
    },
    ropeRows(x, cos, sin, rows, period, H, D, direction, out) {
      addon.ropeRows(live('ropeRows'), x, cos, sin, rows, period, H, D, direction, out);
    },
    prefixAttentionRows(q, promptKeys, promptValues, ownKeys, ownValues, out, d: PrefixAttentionDims) {
      addon.prefixAttention(
        live('prefixAttentionRows'),
        q,
        promptKeys,
        promptValues,
        ownKeys,
        ownValues,
        out,
        d.rows,
        d.Hq,
        d.Hkv,
        d.D,
        d.L,
        d.S,
        d.promptCapacity,
        d.ownCapacity,
        Math.max(0, d.firstVisible),
        d.scale,
        d.rowOffsets ?? null,
      );
    },
    adamwUpdate(parameter, grad, first, second, step: AdamWStep) {
      addon.adamwUpdate(
        live('adamwUpdate'),
        parameter,
        grad,
        first,
        second,
        step.beta1,
        step.beta2,
        step.epsilon,
        step.stepSize,
        step.biasCorrection2Sqrt,
        step.decayFactor,
      );
    },
    withConstantOperands<T>(operands: Iterable<Float32Array>, fn: () => T): T {
      return constant.run(operands, fn);
    },
    dispose(): void {
      constant.clear();
      if (handle !== null) addon.destroyContext(handle);
      handle = null;
    },
  };
}

/**
 * The arrays promised constant inside withConstantOperands and the packed copies made of them, each
 * for one (K, N, transposeB) geometry. Dropped (and their memory freed) when the outermost scope ends.
 */
class ConstantOperands {
  private depth = 0;
  private readonly arrays = new Set<Float32Array>();
  private readonly copies = new Map<Float32Array, { key: string; packed: object }>();
  private bytes = 0;

  constructor(
    private readonly addon: Addon,
    private readonly budgetBytes: number,
  ) {}

  holds(array: Float32Array): boolean {
    return this.depth > 0 && this.arrays.has(array);
  }

  /** The packed copy of `b` for this geometry, made on first use; null when it would exceed the budget. */
  packed(handle: object, b: Float32Array, K: number, N: number, transposeB: boolean): object | null {
    const key = `${K}x${N}${transposeB ? 't' : ''}`;
    const copy = this.copies.get(b);
    if (copy?.key === key) return copy.packed;
    if (copy) return null; // one array used with two geometries: keep the first, repack the other each time
    const bytes = K * N * 4;
    if (this.bytes + bytes > this.budgetBytes) return null;
    const packed = this.addon.packMatrix(handle, b, K, N, transposeB);
    this.copies.set(b, { key, packed });
    this.bytes += bytes;
    return packed;
  }

  run<T>(operands: Iterable<Float32Array>, fn: () => T): T {
    for (const array of operands) this.arrays.add(array);
    this.depth++;
    try {
      return fn();
    } finally {
      if (--this.depth === 0) this.clear();
    }
  }

  clear(): void {
    for (const { packed } of this.copies.values()) this.addon.releasePacked(packed);
    this.copies.clear();
    this.arrays.clear();
    this.bytes = 0;
  }
}

/** The addon's flat dims array for one attention call (see attention-addon.c). */
function attentionDims(d: TrainingAttentionDims): Float64Array {
  const { B, Hq, Hkv, T, S, D, offset, causal, qStrides, kvStrides } = d;
  return Float64Array.from([B, Hq, Hkv, T, S, D, offset, causal ? 1 : 0, ...qStrides, ...kvStrides]);
}
