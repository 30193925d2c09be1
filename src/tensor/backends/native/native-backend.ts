/**
 * The `native` backend: loads the N-API addon that node-gyp builds at install time (binding.gyp,
 * build/Release/grpo_native.node) and wraps its SGEMM (with packed copies of constant operands, and a
 * bfloat16 B widened while packing: matmulBfloat16B) and row
 * kernels (SwiGLU, RMSNorm, log-sum-exp rows, softmax gradient, AdamW, the sampler's draw, decode attention
 * over a shared prompt; row-kernels.c) behind the Backend interface.
 *
 * Is: finding and loading the addon once per process, option and argument checks with clear messages,
 * and `nativeAddonStatus()` so callers can say why native is unavailable. The addon works in place on
 * the Float32Arrays (no copies) and picks AVX-512, AVX2 or portable C at run time.
 * Is not: backend selection (select.ts decides between native, wasm and js) or the kernels (*.c here).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdamWStep, Backend, MatmulShape, PrefixAttentionDims } from '../../backend.js';

/** Instruction-set paths the addon can run; `auto` picks the best one the CPU supports. */
export type NativeIsa = 'auto' | 'avx512' | 'avx2' | 'generic';

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

/** Whether the addon could be loaded, from where, and if not, why. */
export interface NativeAddonStatus {
  available: boolean;
  path: string | null;
  reason: string;
  /** Instruction sets this CPU and build support, best first (empty when unavailable). */
  isas: Array<Exclude<NativeIsa, 'auto'>>;
}

interface Addon {
  createContext(threads: number, isa: NativeIsa): object;
  destroyContext(handle: object): void;
  matmul(
    handle: object,
    a: Float32Array,
    b: Float32Array | Uint16Array,
    out: Float32Array,
    batch: number,
    M: number,
    K: number,
    N: number,
    transposeA: boolean,
    transposeB: boolean,
    aBatchStride: number,
    bBatchStride: number,
    accumulate: boolean,
  ): void;
  contextInfo(handle: object): {
    isa: Exclude<NativeIsa, 'auto'>;
    threads: number;
    mr: number;
    nr: number;
    packedMaxRows: number;
  };
  packMatrix(handle: object, b: Float32Array, K: number, N: number, transposeB: boolean): object;
  releasePacked(packed: object): void;
  matmulPacked(
    handle: object,
    a: Float32Array,
    packed: object,
    out: Float32Array,
    M: number,
    accumulate: boolean,
  ): void;
  supportedIsas(): Array<Exclude<NativeIsa, 'auto'>>;
  rowExp(x: Float32Array, out: Float32Array, isa: NativeIsa): void;
  swigluForward(
    handle: object,
    gate: Float32Array,
    up: Float32Array,
    out: Float32Array,
    activated: Float32Array | null,
  ): void;
  swigluBackward(
    handle: object,
    gate: Float32Array,
    up: Float32Array,
    g: Float32Array,
    gradGate: Float32Array,
    gradUp: Float32Array,
  ): void;
  logSumExpRows(
    handle: object,
    logits: Float32Array,
    rows: number,
    V: number,
    shift: Float32Array,
    logTotal: Float64Array,
    entropy: Float32Array | null,
  ): void;
  softmaxGradRows(
    handle: object,
    logits: Float32Array,
    rows: number,
    V: number,
    shift: Float32Array,
    logTotal: Float64Array,
    rowGrad: Float32Array,
    out: Float32Array,
  ): void;
  rmsNormForward(
    handle: object,
    x: Float32Array,
    weight: Float32Array,
    rows: number,
    D: number,
    eps: number,
    out: Float32Array,
    inverseRms: Float32Array,
  ): void;
  rmsNormBackward(
    handle: object,
    x: Float32Array,
    weight: Float32Array,
    inverseRms: Float32Array,
    g: Float32Array,
    rows: number,
    D: number,
    gradX: Float32Array,
    gradWeight: Float32Array,
  ): void;
  sampleRows(
    handle: object,
    logits: Float32Array,
    rows: number,
    V: number,
    temperature: number,
    uniforms: Float64Array,
    ids: Int32Array,
    logprobs: Float64Array,
  ): void;
  prefixAttention(
    handle: object,
    q: Float32Array,
    promptKeys: Float32Array,
    promptValues: Float32Array,
    ownKeys: Float32Array,
    ownValues: Float32Array,
    out: Float32Array,
    rows: number,
    Hq: number,
    Hkv: number,
    D: number,
    L: number,
    S: number,
    promptCapacity: number,
    ownCapacity: number,
    firstVisible: number,
    scale: number,
  ): void;
  adamwUpdate(
    handle: object,
    parameter: Float32Array,
    grad: Float32Array,
    first: Float32Array,
    second: Float32Array,
    beta1: number,
    beta2: number,
    epsilon: number,
    stepSize: number,
    biasCorrection2Sqrt: number,
    decayFactor: number,
  ): void;
}

/** The addon's vectorised float32 exp on every element (exposed for its accuracy test), or null if not built. */
export function nativeExp(x: Float32Array, isa: NativeIsa = 'auto'): Float32Array | null {
  const { addon } = loadAddon();
  if (!addon) return null;
  const out = new Float32Array(x.length);
  addon.rowExp(x, out, isa);
  return out;
}

const ADDON_FILE = join('build', 'Release', 'grpo_native.node');
const ISAS: readonly NativeIsa[] = ['auto', 'avx512', 'avx2', 'generic'];

let loaded: { addon: Addon | null; status: NativeAddonStatus } | undefined;

/** Candidate addon paths: $GRPO_NATIVE_ADDON, then build/Release under each ancestor of this file. */
function candidatePaths(): string[] {
  const fromEnvironment = process.env.GRPO_NATIVE_ADDON;
  if (fromEnvironment) return [resolve(fromEnvironment)];
  const paths: string[] = [];
  // src/tensor/backends/native and dist/tensor/backends/native both sit four levels below the package root.
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < 6; level++) {
    paths.push(join(directory, ADDON_FILE));
    directory = dirname(directory);
  }
  return paths;
}

function loadAddon(): { addon: Addon | null; status: NativeAddonStatus } {
  if (loaded) return loaded;
  const paths = candidatePaths();
  const path = paths.find((candidate) => existsSync(candidate));
  if (!path) {
    const reason =
      `addon not built: no ${ADDON_FILE} found (looked in ${paths.join(', ')}); ` +
      'it is built by node-gyp at `npm install` (needs a C compiler); rebuild with `npm run build:native`';
    loaded = { addon: null, status: { available: false, path: null, reason, isas: [] } };
    return loaded;
  }
  try {
    const addon = createRequire(import.meta.url)(path) as Addon;
    const isas = addon.supportedIsas();
    loaded = { addon, status: { available: true, path, reason: `loaded ${path} (${isas.join(', ')})`, isas } };
  } catch (error) {
    const reason = `addon at ${path} failed to load: ${(error as Error).message}`;
    loaded = { addon: null, status: { available: false, path, reason, isas: [] } };
  }
  return loaded;
}

/** Reports whether the native addon is present and loadable, without creating threads. */
export function nativeAddonStatus(): NativeAddonStatus {
  return loadAddon().status;
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
    swigluForward(gate, up, out, activated) {
      addon.swigluForward(live('swigluForward'), gate, up, out, activated);
    },
    swigluBackward(gate, up, gradOut, gradGate, gradUp) {
      addon.swigluBackward(live('swigluBackward'), gate, up, gradOut, gradGate, gradUp);
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
