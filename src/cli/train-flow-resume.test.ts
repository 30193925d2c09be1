/**
 * Kill-and-resume of flow runs through `grpo train`, as trainer/resume.test.ts and
 * fault-injection.test.ts do for text runs: a tiny DiffusionNFT run (it carries the most state from
 * step to step: AdamW moments, the old policy π_old, a KL reference) is killed with a real SIGKILL
 * while it writes a checkpoint (GRPO_FAULT_INJECT_AT, model/durable-files.ts), then `--resume` must
 * finish it with metrics.jsonl and the final weights byte-identical to the same run
 * left alone. Also, in-process: a run stopped between steps (the AbortSignal Ctrl-C fires) says
 * `interrupted` and resumes exactly; a damaged newest checkpoint is skipped and the steps after the
 * previous one replayed identically, for an RL run and for the pre-training job (step-seeded).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveFlowRecipe, runFlowRecipe } from '../flow/recipe.js';
import { defaultFlowModelConfig, initFlowModel, saveFlowModel } from '../model/flow-mlp.js';
import { RunFolder } from '../run/run-folder.js';
import { RunInterrupted } from '../run/run-status.js';
import { buildProgram } from './main.js';

const repositoryRoot = new URL('../../', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'grpo-flow-resume-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const warnings: string[] = [];
beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (warnings.push(String(chunk)), true));
});
afterAll(() => vi.restoreAllMocks());

/** A tiny DiffusionNFT recipe from a fresh 7×7 model; thickness needs no classifier. Six steps, a checkpoint each. */
const startModel = join(scratch, 'start');
saveFlowModel(initFlowModel({ ...defaultFlowModelConfig, imageSize: 7, hiddenSize: 8, numBlocks: 1 }, 3), startModel);
const rlConfig = {
  flow: {
    job: 'rl',
    model: startModel,
    rl: {
      algorithm: 'nft',
      sampler: 'ode',
      steps: 6,
      promptsPerStep: 2,
      groupSize: 2,
      samplingSteps: 3,
      klCoefficient: 0.04,
      rewards: { thickness: 1 },
      evalEvery: 2,
      evalPerClass: 1,
    },
  },
  checkpoint: { every: 1, keepLast: 2 },
  logging: { runsDirectory: scratch },
};
const recipeFile = join(scratch, 'nft.json');
writeFileSync(recipeFile, JSON.stringify(rlConfig));

function runChild(argv: string[], environment: Record<string, string> = {}) {
  // `node --import tsx` keeps the run in this one process, so the SIGKILL ends the run itself.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'train', '--quiet', ...argv], {
    cwd: repositoryRoot,
    env: { ...process.env, GRPO_QUIET: '1', ...environment },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
  );
}

const grpo = (...argv: string[]) =>
  buildProgram()
    .exitOverride()
    .parseAsync(['node', 'grpo', 'train', '--quiet', ...argv]);
const read = (run: string, file: string) => readFileSync(join(scratch, run, file));
const status = (run: string) => JSON.parse(read(run, 'summary.json').toString()).status as string;
/** What must be equal to the run left alone: every log line and the final weights, byte for byte. */
function expectSameAs(run: string, reference: string, files: string[]): void {
  for (const file of ['metrics.jsonl', ...files])
    expect(read(run, file).equals(read(reference, file)), `${run}/${file}`).toBe(true);
  expect(status(run)).toBe('finished');
  expect(readdirSync(join(scratch, run, 'checkpoints')).filter((name) => name.startsWith('.'))).toEqual([]);
}
/** A copy of a finished run as a kill just after its last checkpoint leaves it: no model/, summary `running`. */
function killedAfterLastCheckpoint(run: string, copy: string): void {
  cpSync(join(scratch, run), join(scratch, copy), { recursive: true });
  rmSync(join(scratch, copy, 'model'), { recursive: true });
  writeFileSync(join(scratch, copy, 'summary.json'), JSON.stringify({ status: 'running', pid: 1 }));
}
const finalFiles = [
  'model/model.safetensors',
  'checkpoints/step-6/model.safetensors',
  'checkpoints/step-6/training-state/old-policy.safetensors',
];

/** The uninterrupted run, with every counted file-system step logged (`N kind path`). */
let fileSteps: string[] = [];
beforeAll(async () => {
  const stepLog = join(scratch, 'steps.log');
  const reference = await runChild([recipeFile, '--run-name', 'uninterrupted'], { GRPO_FAULT_INJECT_LOG: stepLog });
  expect(reference.code, reference.stderr).toBe(0);
  fileSteps = readFileSync(stepLog, 'utf8').trim().split('\n');
}, 60_000);

describe('flow runs resume like text runs', () => {
  it('killed with SIGKILL mid-checkpoint, --resume ends byte-identical to the run left alone', async () => {
    // Killed as it writes checkpoint step-3's weights: a half-built folder is left for the resume to tidy.
    const killAt = fileSteps.find((line) => / write .*checkpoints\/\.step-3\.tmp-.*model\.safetensors$/.test(line))!;
    const killed = await runChild([recipeFile, '--run-name', 'killed'], { GRPO_FAULT_INJECT_AT: killAt.split(' ')[0] });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(readdirSync(join(scratch, 'killed', 'checkpoints')).sort()).toEqual([
      expect.stringMatching(/^\.step-3\.tmp-/),
      'step-1',
      'step-2',
    ]);
    expect(status('killed')).toBe('running');
    await grpo('--resume', join(scratch, 'killed')); // in this process: a second child would cost seconds
    expectSameAs('killed', 'uninterrupted', finalFiles);
  }, 60_000);

  it('stopped between steps (Ctrl-C): summary.json says interrupted, and --resume ends exactly as the run left alone', async () => {
    const controller = new AbortController();
    controller.abort('SIGINT'); // the loop yields after step 1's checkpoint and sees it
    const folder = new RunFolder(join(scratch, 'ctrl-c'));
    const recipe = resolveFlowRecipe(rlConfig);
    writeFileSync(join(folder.directory, 'config.json'), read('uninterrupted', 'config.json'));
    await expect(runFlowRecipe(recipe, folder, { signal: controller.signal })).rejects.toThrow(RunInterrupted);
    expect(status('ctrl-c')).toBe('interrupted');
    expect(readdirSync(join(folder.directory, 'checkpoints'))).toEqual(['step-1']);
    await grpo('--resume', folder.directory);
    expectSameAs('ctrl-c', 'uninterrupted', finalFiles);
  });

  it('a damaged newest checkpoint is skipped: the run resumes from the one before and replays the same steps', async () => {
    killedAfterLastCheckpoint('uninterrupted', 'damaged');
    const weights = join(scratch, 'damaged', 'checkpoints', 'step-6', 'model.safetensors');
    const bytes = readFileSync(weights);
    bytes[bytes.length - 1] ^= 1; // one flipped bit: same size, another SHA-256
    writeFileSync(weights, bytes);
    warnings.length = 0;
    await grpo('--resume', join(scratch, 'damaged'));
    expect(warnings.join('')).toMatch(/skipping damaged checkpoint step-6: .*SHA-256 differs/);
    expectSameAs('damaged', 'uninterrupted', finalFiles);
  });

  it('the pre-training job resumes exactly too (every step seeded by (seed, step))', async () => {
    const pretrain = [
      'recipes/flow-pretrain.ts',
      ...[
        'flow.pretrain.steps=12',
        'flow.pretrain.hiddenSize=8',
        'flow.pretrain.numBlocks=1',
        'flow.pretrain.imageSize=7',
      ],
      ...[
        'flow.classifierTraining.epochs=1',
        'checkpoint.every=4',
        'checkpoint.keepLast=3',
        `logging.runsDirectory=${scratch}`,
      ],
    ].flatMap((value, index) => (index === 0 ? [value] : ['--set', value]));
    await grpo(...pretrain, '--run-name', 'pretrain');
    killedAfterLastCheckpoint('pretrain', 'pretrain-damaged');
    rmSync(join(scratch, 'pretrain-damaged', 'checkpoints', 'step-12', 'trainer-state.json'));
    await grpo('--resume', join(scratch, 'pretrain-damaged'));
    expectSameAs('pretrain-damaged', 'pretrain', ['model/model.safetensors', 'checkpoints/step-12/model.safetensors']);
    const summary = (run: string) => JSON.parse(read(run, 'summary.json').toString()) as { finalLoss: number };
    expect(summary('pretrain-damaged').finalLoss).toBe(summary('pretrain').finalLoss);
  }, 60_000);
});
