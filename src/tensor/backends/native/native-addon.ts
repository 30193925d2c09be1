/**
 * Finding and loading the native N-API addon (build/Release/grpo_native.node, built by node-gyp at
 * install, or a prebuilt one under prebuilds/ that a packed tarball carries) once per process: its call signatures, where it is looked for, and why it is unavailable
 * when it is (`nativeAddonStatus`).
 *
 * Is not: the Backend wrapper with its argument checks and packed-operand cache (native-backend.ts).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Instruction-set paths the addon can run; `auto` picks the best one the CPU supports. */
export type NativeIsa = 'auto' | 'avx512' | 'avx2' | 'generic';

/** Whether the addon could be loaded, from where, and if not, why. */
export interface NativeAddonStatus {
  available: boolean;
  path: string | null;
  reason: string;
  /** Instruction sets this CPU and build support, best first (empty when unavailable). */
  isas: Array<Exclude<NativeIsa, 'auto'>>;
}

export interface Addon {
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
  packPanel(
    isa: NativeIsa,
    operand: number,
    plain: boolean,
    src: Float32Array,
    ld: number,
    kc: number,
    count: number,
    out: Float32Array,
  ): void;
  rowExp(x: Float32Array, out: Float32Array, isa: NativeIsa): void;
  retainFreedMemory(): boolean;
  addArrays(handle: object, a: Float32Array, b: Float32Array, out: Float32Array): void;
  sumOfSquares(handle: object, x: Float32Array): number;
  scaleArray(handle: object, x: Float32Array, factor: number): void;
  copyBlocks(
    handle: object,
    source: Float32Array,
    target: Float32Array,
    count: number,
    length: number,
    sourceStart: number,
    sourceStride: number,
    targetStart: number,
    targetStride: number,
  ): void;
  swigluForwardFloat(handle: object, gate: Float32Array, up: Float32Array, out: Float32Array): void;
  swigluBackwardFloat(
    handle: object,
    gate: Float32Array,
    up: Float32Array,
    g: Float32Array,
    gradGate: Float32Array,
    gradUp: Float32Array,
    out: Float32Array | null,
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
    rowOffsets: Float64Array | null,
  ): void;
  attentionForward(
    handle: object,
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    logSumExp: Float32Array,
    dims: Float64Array,
    scale: number,
    keyMask: Uint8Array | null,
    segmentIds: Int32Array | null,
  ): void;
  attentionBackward(
    handle: object,
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    gradOut: Float32Array,
    logSumExp: Float32Array,
    gradQ: Float32Array,
    gradK: Float32Array,
    gradV: Float32Array,
    dims: Float64Array,
    scale: number,
    keyMask: Uint8Array | null,
    segmentIds: Int32Array | null,
  ): void;
  ropeRows(
    handle: object,
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    rows: number,
    period: number,
    H: number,
    D: number,
    direction: number,
    out: Float32Array,
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

/** Which operand a panel packer packs; the numbers are gemm.h's gemm_panel. */
export type PanelOperand = 'a' | 'transposedA' | 'transposedB';
const PANEL_OPERANDS: readonly PanelOperand[] = ['a', 'transposedA', 'transposedB'];

/**
 * One panel packed as the SGEMM driver packs it (exposed for the packing kernels' tests): `count` rows of A
 * (or of a transposed B, which are op(B)'s columns) of depth `kc` from `src` with leading dimension `ld`, by
 * the instruction set's own packer or, with `plain`, by the plain C one. Returns kc × (MR or NR) floats, or
 * null if the addon is not built.
 */
export function nativePackPanel(
  isa: NativeIsa,
  operand: PanelOperand,
  plain: boolean,
  src: Float32Array,
  ld: number,
  kc: number,
  count: number,
  width: number,
): Float32Array | null {
  const { addon } = loadAddon();
  if (!addon) return null;
  const out = new Float32Array(kc * width).fill(NaN); // anything the packer skips stays NaN
  addon.packPanel(isa, PANEL_OPERANDS.indexOf(operand), plain, src, ld, kc, count, out);
  return out;
}

const ADDON_FILE = join('build', 'Release', 'grpo_native.node');
export const ISAS: readonly NativeIsa[] = ['auto', 'avx512', 'avx2', 'generic'];

let loaded: { addon: Addon | null; status: NativeAddonStatus } | undefined;

/**
 * The prebuilt addon node-gyp-build picks for this platform from the package's prebuilds/ (scripts/prebuild.mjs
 * puts it there when the package is packed), or null: none fits, or node-gyp-build is not installed.
 */
function prebuiltPath(packageRoot: string): string | null {
  try {
    const nodeGypBuild = createRequire(import.meta.url)('node-gyp-build') as { path(directory: string): string };
    return nodeGypBuild.path(packageRoot);
  } catch {
    return null;
  }
}

/**
 * Candidate addon paths: $GRPO_NATIVE_ADDON, then build/Release under each ancestor of this file (a clone's
 * own build first), then the package's prebuild for this platform.
 */
function candidatePaths(): string[] {
  const fromEnvironment = process.env.GRPO_NATIVE_ADDON;
  if (fromEnvironment) return [resolve(fromEnvironment)];
  const paths: string[] = [];
  // src/tensor/backends/native and dist/tensor/backends/native both sit four levels below the package root.
  const here = dirname(fileURLToPath(import.meta.url));
  let directory = here;
  for (let level = 0; level < 6; level++) {
    paths.push(join(directory, ADDON_FILE));
    directory = dirname(directory);
  }
  const prebuilt = prebuiltPath(resolve(here, '..', '..', '..', '..'));
  if (prebuilt) paths.push(prebuilt);
  return paths;
}

export function loadAddon(): { addon: Addon | null; status: NativeAddonStatus } {
  if (loaded) return loaded;
  const paths = candidatePaths();
  const path = paths.find((candidate) => existsSync(candidate));
  if (!path) {
    const reason =
      `addon not built: no ${ADDON_FILE} found (looked in ${paths.join(', ')}); ` +
      'and no prebuild for this platform; it is built by node-gyp at `npm install` (needs a C compiler); ' +
      'rebuild with `npm run build:native`';
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
