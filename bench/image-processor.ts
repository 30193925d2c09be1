/**
 * The image side of a vision-language step: decoding (sharp) and the Idefics3 processor's rules
 * (Pillow-exact resizes, tiles, normalisation) for one image, at SmolVLM-256M's settings (longest
 * edge 2048, tiles of 512: 12 tiles + global) and at a small from-scratch setting (tiles of 64).
 * Prints wall and CPU milliseconds per image (median of --repeats) and the load average.
 * Run: `npm run bench -- image-processor [--repeats 5] [--json]`. Not a test; it prints numbers.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { loadImage } from '../src/model/vision/image-decode.js';
import { parseImageProcessorConfig, preprocessImage } from '../src/model/vision/image-processor.js';
import { readFlags } from './_flags.js';

const image = join(import.meta.dirname, '..', 'test', 'fixtures', 'idefics3-processor', 'wide.png');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function measure(run: () => unknown, repeats: number): Promise<{ wallMs: number; cpuMs: number }> {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    await run();
    const cpu = process.cpuUsage(cpuStart);
    walls.push(performance.now() - start);
    cpus.push((cpu.user + cpu.system) / 1000);
  }
  return { wallMs: median(walls), cpuMs: median(cpus) };
}

export async function main(argv: string[]): Promise<void> {
  const flags = readFlags(argv);
  const repeats = flags.positive('--repeats', '5');
  const json = argv.includes('--json');
  const decoded = await loadImage(image, 'bench');
  const settings = {
    'smolvlm-256m (2048 / 512)': { size: { longest_edge: 2048 }, max_image_size: { longest_edge: 512 } },
    'small (160 / 64)': { size: { longest_edge: 160 }, max_image_size: { longest_edge: 64 } },
  };
  const rows: Record<string, unknown>[] = [
    {
      scenario: `decode ${decoded.width}×${decoded.height} PNG`,
      ...(await measure(() => loadImage(image, 'bench'), repeats)),
    },
  ];
  for (const [name, raw] of Object.entries(settings)) {
    const config = parseImageProcessorConfig(raw, name);
    const { imageCount } = preprocessImage(decoded, config);
    rows.push({
      scenario: `preprocess ${name}`,
      frames: imageCount,
      ...(await measure(() => preprocessImage(decoded, config), repeats)),
    });
  }
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  for (const row of rows) {
    if (json) console.log(JSON.stringify({ ...row, loadAverage: load }));
    else
      console.log(
        `${String(row.scenario).padEnd(40)} wall ${Number(row.wallMs).toFixed(1)} ms  cpu ${Number(row.cpuMs).toFixed(1)} ms`,
      );
  }
  if (!json) console.log(`load average ${load}`);
}
