/**
 * Bench-time helper: compiles bench/peak/peak.c (an FMA loop and a streaming read, see its header) and
 * runs it, so benchmarks report each figure as a ratio to this machine's compute peak and memory
 * bandwidth measured in the same run rather than to a constant.
 *
 * Is: build (into build/bench/, gitignored) and parsing of the program's JSON line.
 * Is not: a runtime dependency of the library; without a C compiler it returns a reason instead.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What peak.c measured with `threads` threads. */
export interface MachinePeak {
  threads: number;
  /** FP32 FMA GFLOP/s (2 FLOPs per lane per FMA), best of the repeats. */
  fmaGflops: number;
  /** The vector width that reached it (256 or 512 bits). */
  fmaWidth: number;
  /** Streaming-read GB/s over a buffer much larger than the caches. */
  readGBs: number;
}

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, 'peak.c');
const binary = join(here, '..', '..', 'build', 'bench', 'peak');

/** Measures the FMA peak and read bandwidth with `threads` threads, or says why it cannot. */
export function measurePeak(threads: number, repeats = 3): MachinePeak | { error: string } {
  if (!existsSync(binary) || statSync(binary).mtimeMs < statSync(source).mtimeMs) {
    mkdirSync(dirname(binary), { recursive: true });
    try {
      execFileSync(process.env.CC ?? 'cc', ['-O3', '-march=native', '-pthread', '-o', binary, source], {
        stdio: 'pipe',
      });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
      return { error: `could not build bench/peak/peak.c: ${stderr || error}` };
    }
  }
  try {
    const output = execFileSync(binary, [String(threads), String(repeats)], { encoding: 'utf8' });
    const { fmaGflops, fmaWidth, readGBs } = JSON.parse(output.trim()) as MachinePeak;
    return { threads, fmaGflops, fmaWidth, readGBs };
  } catch (error) {
    return { error: `bench/peak failed: ${(error as Error).message}` };
  }
}
