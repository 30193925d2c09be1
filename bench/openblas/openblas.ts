/**
 * Bench-time helper: compiles bench/openblas/matmul-openblas.c against Debian's libopenblas and runs it,
 * so matmul benchmarks can put OpenBLAS GFLOP/s beside ours in the same run.
 *
 * Is: build (into build/bench/, gitignored; against $OPENBLAS_LIBRARY, a libopenblas.so path, when set, for
 * machines with the library but not libopenblas-dev, else -lopenblas, else the copy that
 * bench/reference/fetch-openblas.sh unpacks into .tmp/), core-type choice and parsing of the program's JSON lines.
 * Is not: a runtime dependency of the library; when libopenblas-dev or a compiler is missing the helpers
 * return a reason instead of results.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One OpenBLAS measurement, as printed by matmul-openblas.c. */
export interface OpenblasResult {
  backend: 'openblas';
  threads: number;
  batch: number;
  M: number;
  K: number;
  N: number;
  transposeA: boolean;
  transposeB: boolean;
  seconds: number;
  gflops: number;
  /** openblas_get_config(): version, build flags and the core kernels it runs. */
  config: string;
}

/**
 * A matrix product size, row-major C[M,N] = op(A)[M,K] · op(B)[K,N]: op transposes when transposeA / transposeB
 * is set (A stored [K, M], B stored [N, K]); `batch` separate products (default 1, no transposes).
 */
export interface MatmulSize {
  M: number;
  K: number;
  N: number;
  batch?: number;
  transposeA?: boolean;
  transposeB?: boolean;
}

/** The size as the timing program and `--shapes` write it: `[batch/]MxKxN[:ab]`, a and b each n or t. */
export function shapeText({ M, K, N, batch = 1, transposeA = false, transposeB = false }: MatmulSize): string {
  const prefix = batch === 1 ? '' : `${batch}/`;
  const suffix = transposeA || transposeB ? `:${transposeA ? 't' : 'n'}${transposeB ? 't' : 'n'}` : '';
  return `${prefix}${M}x${K}x${N}${suffix}`;
}

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, 'matmul-openblas.c');
const binary = join(here, '..', '..', 'build', 'bench', 'matmul-openblas');

/** Compiles the timing program if it is missing or older than its source; returns its path or a reason. */
export function buildOpenblasBench(): { path: string } | { error: string } {
  if (existsSync(binary) && statSync(binary).mtimeMs >= statSync(source).mtimeMs) return { path: binary };
  mkdirSync(dirname(binary), { recursive: true });
  try {
    // Without libopenblas-dev, the copy bench/reference/fetch-openblas.sh unpacks serves as well.
    const unpacked = join(
      here,
      '..',
      '..',
      '.tmp',
      'openblas',
      'usr',
      'lib',
      'x86_64-linux-gnu',
      'openblas-openmp',
      'libopenblas.so.0',
    );
    const library =
      process.env.OPENBLAS_LIBRARY ??
      (existsSync('/usr/lib/x86_64-linux-gnu/libopenblas.so') || !existsSync(unpacked) ? undefined : unpacked);
    const link = library ? [library, `-Wl,-rpath,${dirname(library)}`] : ['-lopenblas'];
    execFileSync(process.env.CC ?? 'cc', ['-O2', '-o', binary, source, ...link], { stdio: 'pipe' });
    return { path: binary };
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return {
      error: `could not build OpenBLAS bench (apt-get install libopenblas-dev, or run bench/reference/fetch-openblas.sh): ${stderr || error}`,
    };
  }
}

/**
 * The OPENBLAS_CORETYPE to run with: the caller's if set; otherwise, when this OpenBLAS does not know the
 * CPU and falls back to an SSE-era core (Debian 0.3.21 on Sapphire/Emerald Rapids runs "Prescott"),
 * the newest core this build has that the CPU's flags support — so the reference is OpenBLAS at its best.
 */
export function openblasCoreType(path: string): string | undefined {
  if (process.env.OPENBLAS_CORETYPE) return process.env.OPENBLAS_CORETYPE;
  const config = execFileSync(path, ['config'], { encoding: 'utf8' });
  if (!/\b(Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Katmai|Northwood|Banias)\b/.test(config)) return undefined;
  let flags = '';
  try {
    flags = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:(.*)$/m)?.[1] ?? '';
  } catch {
    return undefined;
  }
  const has = (flag: string) => new RegExp(`\\b${flag}\\b`).test(flags);
  if (has('avx512_bf16')) return 'Cooperlake';
  if (has('avx512f')) return 'SkylakeX';
  if (has('avx2')) return 'Haswell';
  return undefined;
}

/** Times cblas_sgemm on each size with `threads` threads, best of `repeats`, or says why it cannot. */
export function measureOpenblas(
  sizes: MatmulSize[],
  threads: number,
  repeats: number,
): { results: OpenblasResult[]; coreType: string | undefined } | { error: string } {
  const built = buildOpenblasBench();
  if ('error' in built) return built;
  const coreType = openblasCoreType(built.path);
  const environment: NodeJS.ProcessEnv = { ...process.env, OPENBLAS_NUM_THREADS: String(threads) };
  if (coreType) environment.OPENBLAS_CORETYPE = coreType;
  const shapes = sizes.map(shapeText);
  try {
    const output = execFileSync(built.path, [String(threads), String(repeats), ...shapes], {
      encoding: 'utf8',
      env: environment,
    });
    const results = output
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as OpenblasResult);
    return { results, coreType };
  } catch (error) {
    return { error: `OpenBLAS bench failed: ${(error as Error).message}` };
  }
}
