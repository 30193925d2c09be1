/**
 * `grpo flow ...` end to end at toy sizes: pretrain → classifier → train → sample write their
 * folders and files; bad values are refused before compute, naming the field.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadFlowModel } from '../model/flow-mlp.js';
import { buildProgram } from './main.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-flow-cli-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const grpo = (...argv: string[]) =>
  buildProgram()
    .exitOverride()
    .parseAsync(['node', 'grpo', 'flow', ...argv]);

describe('grpo flow', () => {
  it('pretrains, trains a classifier, runs Flow-GRPO and samples, writing every file', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const model = join(directory, 'model');
      const classifier = join(directory, 'classifier');
      const run = join(directory, 'run');
      await grpo(
        'pretrain',
        '--out',
        model,
        '--steps',
        '3',
        '--hidden-size',
        '8',
        '--blocks',
        '1',
        '--image-size',
        '7',
      );
      await grpo('classifier', '--out', classifier, '--epochs', '1', '--image-size', '7');
      await grpo('train', '--model', model, '--classifier', classifier, '--out', run, '--steps', '2', '--prompts-per-step', '2',
        '--group-size', '2', '--sampling-steps', '3', '--eval-every', '1', '--eval-per-class', '1', '--reward', 'confidence', '--reward', 'thickness:0.5', '--kl', '0.04'); // prettier-ignore
      // DanceGRPO (its step and timestep selection) on the compressibility reward, no classifier needed.
      await grpo('train', '--model', model, '--out', join(directory, 'dance'), '--steps', '1', '--prompts-per-step', '2', '--group-size', '2',
        '--sampling-steps', '3', '--eval-per-class', '1', '--sampler', 'dance', '--noise-level', '0.3', '--timestep-selection', 'dance', '--reward', 'compressibility'); // prettier-ignore
      const dance = JSON.parse(
        readFileSync(join(directory, 'dance', 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')[1],
      );
      expect(dance.step).toBe(1);
      expect(dance['reward/compressibility/mean']).toBeGreaterThanOrEqual(0); // noisy 7×7 samples barely compress
      expect(dance['reward/compressibility/mean']).toBeLessThanOrEqual(1);
      expect(Number.isFinite(dance['loss/policy'])).toBe(true);
      await grpo(
        'sample',
        '--model',
        join(run, 'model'),
        '--out',
        join(directory, 'grid.png'),
        '--sampler',
        'cps',
        '--per-class',
        '2',
      );
      for (const file of [
        'model/config.json',
        'model/model.safetensors',
        'model/samples.png',
        'classifier/model.safetensors',
        'run/model/model.safetensors',
        'run/samples-step-0.png',
        'run/samples-step-2.png',
        'grid.png',
      ])
        expect(existsSync(join(directory, file)), file).toBe(true);
      const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, number>);
      const steps = lines.filter((line) => 'reward/mean' in line);
      expect(steps.map((line) => line.step)).toEqual([1, 2]);
      for (const line of steps) {
        expect(Number.isFinite(line['loss/total'])).toBe(true);
        expect(line['reward/mean']).toBeCloseTo(
          line['reward/confidence/mean'] + 0.5 * line['reward/thickness/mean'],
          5,
        );
        expect(line['loss/kl']).toBeGreaterThanOrEqual(0);
      }
      expect(lines.filter((line) => 'eval/reward/mean' in line).length).toBe(3); // start, step 1, step 2
    } finally {
      write.mockRestore();
    }
  }, 60_000);

  it('--kl: the closed-form step-mean KL is 0 at the start, leaves the first update alone, then pulls toward the start', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const model = join(directory, 'kl-start');
      await grpo(
        'pretrain',
        '--out',
        model,
        '--steps',
        '12',
        '--hidden-size',
        '8',
        '--blocks',
        '1',
        '--image-size',
        '7',
      );
      const run = async (kl: string) => {
        const out = join(directory, `kl-${kl}`);
        await grpo('train', '--model', model, '--out', out, '--steps', '5', '--prompts-per-step', '2', '--group-size', '4', '--sampling-steps', '3',
          '--eval-every', '5', '--eval-per-class', '1', '--reward', 'thickness', '--learning-rate', '1e-2', '--kl', kl); // prettier-ignore
        const lines = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, number>)
          .filter((line) => 'loss/policy' in line);
        const start = loadFlowModel(model).parameters;
        let squares = 0;
        for (const [name, value] of loadFlowModel(join(out, 'model')).parameters)
          value.data.forEach((v, i) => (squares += (v - start.get(name)!.data[i]) ** 2));
        return { lines, distance: Math.sqrt(squares) };
      };
      const [none, weak, strong] = [await run('0'), await run('1'), await run('100')];
      for (const [beta, result] of [
        [1, weak],
        [100, strong],
      ] as const) {
        expect(result.lines[0]['loss/kl']).toBe(0); // step 1: the policy is the reference, μ = μ_ref
        for (const line of result.lines)
          expect(line['loss/total']).toBeCloseTo(line['loss/policy'] + beta * line['loss/kl'], 6);
      }
      // KL(μ‖μ_ref) has zero gradient at μ = μ_ref, so the first update is the same for every β: step 2
      // then sees the same model and rollout, and the same KL.
      expect(weak.lines[1]['loss/kl']).toBeGreaterThan(0);
      expect(strong.lines[1]['loss/kl']).toBeCloseTo(weak.lines[1]['loss/kl'], 9);
      // From then on a larger β pulls the step means back toward the reference's.
      for (const step of [2, 3, 4]) expect(strong.lines[step]['loss/kl']).toBeLessThan(weak.lines[step]['loss/kl']);
      expect(strong.distance).toBeLessThan(0.95 * none.distance);
      expect(none.lines.every((line) => !('loss/kl' in line))).toBe(true);
    } finally {
      write.mockRestore();
    }
  }, 60_000);

  it('refuses what cannot run before loading anything, naming the field', async () => {
    const train = ['train', '--model', '/nonexistent', '--out', join(directory, 'never')];
    await expect(grpo(...train, '--sampler', 'ode')).rejects.toThrow(/sampler must be a stochastic step/);
    await expect(grpo(...train, '--group-size', '1')).rejects.toThrow(/groupSize must be an integer ≥ 2/);
    await expect(grpo(...train, '--reward', 'boldness')).rejects.toThrow(/rewards.boldness: unknown image reward/);
    await expect(grpo(...train, '--reward', 'confidence')).rejects.toThrow(/needs a digit classifier/);
    await expect(grpo(...train, '--advantage', 'nope')).rejects.toThrow(/nope/);
    await expect(grpo(...train, '--algorithm', 'dpo')).rejects.toThrow(/algorithm must be "flow-grpo" or "nft"/);
    await expect(grpo(...train, '--algorithm', 'nft', '--window', '2')).rejects.toThrow(
      /window \(MixGRPO\) applies to flow-grpo only/,
    );
    await expect(grpo(...train, '--timestep-selection', 'last')).rejects.toThrow(
      /timestepSelection must be "first" or "dance"/,
    );
    await expect(grpo(...train, '--timestep-selection', 'dance', '--window', '2')).rejects.toThrow(
      /both choose the steps/,
    );
    await expect(grpo(...train, '--timestep-selection', 'dance', '--algorithm', 'nft')).rejects.toThrow(
      /flow-grpo only/,
    );
    await expect(grpo(...train, '--window', '11')).rejects.toThrow(
      /window.size 11 is larger than the 10 sampler steps/,
    );
    await expect(grpo('sample', '--model', '/nonexistent', '--out', 'x.png')).rejects.toThrow(/config.json is missing/);
    expect(existsSync(join(directory, 'never'))).toBe(false);
  });
});
