/**
 * The package as a separate project gets it: `npm pack` of this checkout, installed from the tarball into a
 * scratch project outside the repository (from the npm cache: --prefer-offline), and a TypeScript program there
 * that imports GRPOTrainer and batchedReward from 'grpo', trains two steps on the TinyStories fixture with a
 * TRL-shaped batched reward, and prints the summary `train()` returns.
 *
 * Also checks that the installed package compiled nothing: where this checkout has the native addon, `prepack`
 * put it under prebuilds/, the install kept it (no build/ folder in the installed package) and the program runs
 * on it (GRPO_BACKEND=native fails when the addon does not load). Nothing here is skipped: a step that cannot
 * run fails the test.
 * Is not: a test of the trainer's arithmetic (src/trainer/grpo-trainer.test.ts) or of install timings.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeAddonStatus } from '../../src/tensor/backends/native/native-addon.js';
import { repositoryRoot, tinyStoriesModel } from '../helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-pack-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs npm with the output captured; a failure throws with npm's own message. */
function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const program = `
import { GRPOTrainer, batchedReward } from 'grpo';

// TRL's reward_func(prompts, completions, **kwargs) -> list[float], batched: one call per step.
const shortStories = batchedReward(
  ({ completions }: { completions: string[] }) => completions.map((completion) => -completion.length / 100),
  'shortStories',
);
const trainer = new GRPOTrainer({
  model: ${JSON.stringify(tinyStoriesModel)},
  rewardFunctions: [shortStories],
  trainDataset: Array.from({ length: 8 }, (_, i) => ({ prompt: 'Once upon a time there was a cat number ' + i + '.' })),
  config: {
    grpo: { steps: 2, promptsPerStep: 2, microBatchSize: 4, learningRate: 1e-4 },
    sampling: { groupSize: 2, maxNewTokens: 4 },
    evaluation: { examples: 1 },
    logging: { runsDirectory: 'runs' },
  },
  quiet: true,
});
const summary = await trainer.train();
console.log('SUMMARY ' + JSON.stringify(summary));
`;

describe('the packed package in a project of its own', () => {
  it('installs from the tarball without compiling, and trains from a TypeScript program that imports it', () => {
    const native = nativeAddonStatus().available;
    // Lifecycle scripts (prepack, prepare) print to the same stdout before npm's JSON.
    const packOutput = npm(['pack', '--json', '--pack-destination', scratch], repositoryRoot);
    const packed = JSON.parse(packOutput.slice(packOutput.search(/^\[/m))) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    const tarball = join(scratch, packed[0]!.filename);
    const packedFiles = packed[0]!.files.map((file) => file.path);
    expect(packedFiles).toContain('dist/index.js');
    if (native) expect(packedFiles.some((path) => /^prebuilds\/[^/]+\/grpo\.napi\.node$/.test(path))).toBe(true);

    const project = join(scratch, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-grpo', private: true, type: 'module' }));
    npm(['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], project);
    const installed = join(project, 'node_modules', 'grpo');
    expect(existsSync(join(installed, 'dist', 'index.js'))).toBe(true);
    // node-gyp-build kept the prebuild: a compile would have made build/ in the installed package.
    if (native) expect(existsSync(join(installed, 'build'))).toBe(false);

    writeFileSync(join(project, 'train.ts'), program);
    const output = execFileSync('npx', ['tsx', 'train.ts'], {
      cwd: project,
      encoding: 'utf8',
      env: { ...process.env, GRPO_BACKEND: native ? 'native' : 'wasm', GRPO_NATIVE_ADDON: '' },
    });
    const line = output.split('\n').find((text) => text.startsWith('SUMMARY '));
    expect(line, output).toBeDefined();
    const summary = JSON.parse(line!.slice('SUMMARY '.length)) as { steps: number; runDirectory: string };
    expect(summary.steps).toBe(2);
    const record = JSON.parse(readFileSync(resolve(project, summary.runDirectory, 'summary.json'), 'utf8')) as {
      status: string;
    };
    expect(record.status).toBe('finished');
  }, 600_000);
});
