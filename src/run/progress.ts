/**
 * Progress output: on a TTY a single redrawn line with a bar, ETA and the key metrics; otherwise a
 * plain line every `printEvery` steps (CI logs, pipes). Is not: the metrics log (run-folder.ts).
 */

export interface ProgressReporter {
  update(phase: string, step: number, total: number, metrics: Record<string, number>): void;
  message(text: string): void;
  /** Like message, but printed even when quiet: something the user must fix. */
  warn(text: string): void;
  finish(): void;
}

function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m${String(Math.round(seconds % 60)).padStart(2, '0')}s` : `${Math.round(seconds)}s`;
}

const KEY_METRICS = [
  'loss/sft',
  'reward/mean',
  'reward/correct/mean',
  'loss/policy',
  'entropy',
  'completions/meanLength',
];

function describe(metrics: Record<string, number>): string {
  return KEY_METRICS.filter((name) => Number.isFinite(metrics[name]))
    .map((name) => `${name.replace(/^loss\//, '').replace(/\/mean$/, '')} ${metrics[name].toFixed(3)}`)
    .join('  ');
}

export function createProgressReporter(
  printEvery: number,
  stream: NodeJS.WriteStream = process.stderr,
  quiet = false,
): ProgressReporter {
  const interactive = Boolean(stream.isTTY) && !process.env.CI;
  let phaseStart = Date.now();
  let currentPhase = '';
  let lineOpen = false;
  return {
    update(phase, step, total, metrics) {
      if (quiet) return;
      if (phase !== currentPhase) {
        currentPhase = phase;
        phaseStart = Date.now();
      }
      const elapsed = (Date.now() - phaseStart) / 1000;
      const eta = step > 0 ? (elapsed / step) * (total - step) : Infinity;
      if (interactive) {
        const width = 24;
        const filled = Math.round((width * step) / Math.max(1, total));
        stream.write(
          `\r\x1b[2K${phase} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${step}/${total} eta ${formatSeconds(eta)}  ${describe(metrics)}`,
        );
        lineOpen = true;
      } else if (step % printEvery === 0 || step === total) {
        stream.write(
          `${phase} step ${step}/${total} (${formatSeconds(elapsed)}, eta ${formatSeconds(eta)})  ${describe(metrics)}\n`,
        );
      }
    },
    message(text) {
      if (quiet) return;
      if (lineOpen) stream.write('\n');
      lineOpen = false;
      stream.write(`${text}\n`);
    },
    warn(text) {
      if (lineOpen) stream.write('\n');
      lineOpen = false;
      stream.write(`${text}\n`);
    },
    finish() {
      if (lineOpen && !quiet) stream.write('\n');
      lineOpen = false;
    },
  };
}
