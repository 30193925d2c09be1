/**
 * Bench scenario `vision`: the frozen SigLIP tower's cost (VisionLanguageModel.visionOutputs, noGrad)
 * and the connector's, per tile, on random weights of two shapes: `small` (a from-scratch recipe-size
 * tower: 32-pixel tiles, 8-pixel patches, hidden 64, 2 layers) and `smolvlm-256m` (SmolVLM-256M's
 * tower: 512-pixel tiles, 16-pixel patches, hidden 768, 12 layers, 1024 patches per tile).
 *
 * Is: `npm run bench -- vision [--json] [--models small,smolvlm-256m] [--tiles 4] [--repeats 2]`.
 * One line per model: wall and process CPU milliseconds per tile (best of --repeats) and the tower's
 * GFLOP per tile (2 per weight of every linear per patch, plus 4·E per key per patch for attention).
 * Is not: a test; on a shared machine compare CPU time and lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import { createSmallConfig } from '../src/model/config.js';
import { createSmallVisionLanguageConfig, type VisionLanguageConfig } from '../src/model/vision/idefics3-config.js';
import { VisionLanguageModel } from '../src/model/vision/vision-language.js';
import { getBackend, noGrad, Random, randomNormal } from '../src/tensor/index.js';
import { readFlags } from './_flags.js';

function configFor(name: string): VisionLanguageConfig {
  if (name === 'small')
    return createSmallVisionLanguageConfig({ text: createSmallConfig({ vocabSize: 64 }), imageTokenId: 63 });
  if (name === 'smolvlm-256m') {
    // SmolVLM-256M's tower and connector; a 1-layer text model (not measured here) keeps memory down.
    return createSmallVisionLanguageConfig({
      text: createSmallConfig({ vocabSize: 64, hiddenSize: 576, numHeads: 9, numLayers: 1 }),
      imageTokenId: 63,
      hiddenSize: 768,
      intermediateSize: 3072,
      numLayers: 12,
      numHeads: 12,
      imageSize: 512,
      patchSize: 16,
      scaleFactor: 4,
    });
  }
  throw new Error(`--models: unknown model '${name}' (known: small, smolvlm-256m)`);
}

function gflopPerTile(config: VisionLanguageConfig): number {
  const { hiddenSize: E, intermediateSize: I, numLayers, imageSize, patchSize, numChannels } = config.vision;
  const P = (imageSize / patchSize) ** 2;
  const perPatch = 2 * E * numChannels * patchSize ** 2 + numLayers * (2 * (4 * E * E + 2 * E * I) + 4 * E * P);
  return (P * perPatch) / 1e9;
}

export async function main(argv: string[]): Promise<void> {
  const flags = readFlags(argv);
  const json = argv.includes('--json');
  const tiles = flags.positive('--tiles', '4');
  const repeats = flags.positive('--repeats', '2');
  for (const name of flags.value('--models', 'small,smolvlm-256m').split(',')) {
    const config = configFor(name);
    const model = VisionLanguageModel.random(config, 1);
    const { imageSize: S, numChannels: C } = config.vision;
    const pixels = randomNormal([tiles * C * S * S], new Random(2)).data;
    let best = { wall: Infinity, cpu: Infinity, connector: Infinity };
    for (let r = 0; r < repeats; r++) {
      const cpuStart = process.cpuUsage();
      const start = performance.now();
      const outputs = model.visionOutputs(pixels, tiles);
      const wall = performance.now() - start;
      const cpu = process.cpuUsage(cpuStart);
      const connectStart = performance.now();
      noGrad(() => model.connect(outputs));
      const connector = performance.now() - connectStart;
      best = {
        wall: Math.min(best.wall, wall / tiles),
        cpu: Math.min(best.cpu, (cpu.user + cpu.system) / 1000 / tiles),
        connector: Math.min(best.connector, connector / tiles),
      };
    }
    const line = {
      scenario: 'vision',
      model: name,
      backend: getBackend().name,
      tiles,
      patchesPerTile: (S / config.vision.patchSize) ** 2,
      gflopPerTile: Number(gflopPerTile(config).toFixed(3)),
      towerWallMsPerTile: Number(best.wall.toFixed(1)),
      towerCpuMsPerTile: Number(best.cpu.toFixed(1)),
      connectorWallMsPerTile: Number(best.connector.toFixed(2)),
    };
    console.log(
      json
        ? JSON.stringify(line)
        : Object.entries(line)
            .map(([key, value]) => `${key}=${value}`)
            .join(' '),
    );
  }
}
