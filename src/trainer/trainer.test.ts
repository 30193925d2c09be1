/**
 * Trainer end to end on a tiny from-scratch model: a two-step smoke test (finite loss, every
 * parameter changed, metrics/samples/summary/checkpoint written), and config validation that names
 * the field at fault before any compute.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { additionTask, type Task } from '../data/index.js';
import type { NamedReward } from '../rewards/types.js';
import { createRunContext, resolveConfig, singleTurnRollout, train, type RolloutFn } from './index.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-trainer-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

export const tinyConfig = {
  model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
  sft: { steps: 2, batchSize: 8, warmupSteps: 0 },
  grpo: { steps: 2, promptsPerStep: 4, microBatchSize: 8, learningRate: 0.01 },
  sampling: { groupSize: 4, maxNewTokens: 4 },
  evaluation: { examples: 8 },
  checkpoint: { every: 2, keepLast: 2 },
};

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('trainer smoke test', () => {
  it('runs SFT and GRPO steps: finite losses, every parameter changes, logs and checkpoints written', async () => {
    const config = resolveConfig({ ...tinyConfig, algorithm: { klCoefficient: 0.04 } });
    const context = createRunContext(config);
    const before = new Map([...context.model.parameters].map(([name, p]) => [name, p.data.slice()]));
    const runDirectory = join(scratch, 'smoke');
    const result = await train(context, { runDirectory, quiet: true });
    for (const [name, parameter] of context.model.parameters) {
      const initial = before.get(name)!;
      expect(
        parameter.data.some((value, i) => value !== initial[i]),
        `parameter ${name} changed`,
      ).toBe(true);
    }
    const metrics = readLines(join(runDirectory, 'metrics.jsonl'));
    const sft = metrics.filter((m) => m.phase === 'sft');
    const grpo = metrics.filter((m) => m.phase === 'grpo' && 'loss/total' in m);
    expect(sft).toHaveLength(2);
    expect(grpo).toHaveLength(2);
    for (const m of sft) expect(Number.isFinite(m['loss/sft'])).toBe(true);
    for (const m of grpo) {
      for (const name of [
        'reward/mean',
        'loss/policy',
        'loss/kl',
        'entropy',
        'gradNorm',
        'completions/meanLength',
        'reward/correct/mean',
      ]) {
        expect(Number.isFinite(m[name]), name).toBe(true);
      }
    }
    const samples = readLines(join(runDirectory, 'samples.jsonl'));
    expect(samples.length).toBeGreaterThan(0);
    expect(samples[0].completions).toHaveLength(4);
    expect(Object.keys(samples[0].completions[0].rewards)).toEqual(['correct', 'format']);
    const summary = JSON.parse(readFileSync(join(runDirectory, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('finished');
    expect(summary.evalBefore['eval/accuracy']).toBeGreaterThanOrEqual(0);
    expect(summary.evalAfter['eval/accuracy']).toBe(result.evalAfter!['eval/accuracy']);
    expect(existsSync(join(runDirectory, 'checkpoints', 'step-4', 'model.safetensors'))).toBe(true);
    expect(existsSync(join(runDirectory, 'checkpoints', 'step-4', 'tokenizer.json'))).toBe(true);
    // The checkpoint is a model folder as inference servers load it: its only top-level weights file is the model's.
    expect(
      readdirSync(join(runDirectory, 'checkpoints', 'step-4')).filter((file) => file.endsWith('.safetensors')),
    ).toEqual(['model.safetensors']);
    expect(existsSync(join(runDirectory, 'checkpoints', 'step-4', 'training-state', 'optimizer.safetensors'))).toBe(
      true,
    );
    expect(existsSync(join(runDirectory, 'checkpoints', 'reference', 'model.safetensors'))).toBe(true);
  });
});

describe('GRPO learns', () => {
  // A task a 1-layer from-scratch model cannot do by chance: answer starting with the digit 7. The
  // held-out accuracy (greedy) starts at 0% for this seed and must pass 80% after 40 GRPO steps.
  const sevenTask = (): Task => {
    const base = additionTask({});
    const startsWithSeven: NamedReward = {
      name: 'seven',
      weight: 1,
      reward: ({ completion }) => (completion.startsWith('7') ? 1 : 0),
    };
    return {
      ...base,
      name: 'seven',
      rewards: () => [startsWithSeven],
      isCorrect: (_example, completion) => completion.startsWith('7'),
      recommendedConfig: undefined,
    };
  };
  it('held-out accuracy rises from under 20% to over 80% in 40 steps (seed 0)', async () => {
    const config = resolveConfig(
      {
        model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
        sft: { steps: 0 },
        seed: 0,
        grpo: { steps: 40, promptsPerStep: 8, microBatchSize: 64, learningRate: 0.02 },
        sampling: { groupSize: 8, maxNewTokens: 2 },
        evaluation: { examples: 32 },
        checkpoint: { every: 0 },
      },
      ['seven'],
    );
    const task = sevenTask();
    const result = await train(createRunContext(config, { task, rewards: task.rewards() }), {
      runDirectory: join(scratch, 'learns'),
      quiet: true,
    });
    expect(result.evalBefore!['eval/accuracy']).toBeLessThan(0.2);
    expect(result.evalAfter!['eval/accuracy']).toBeGreaterThan(0.8);
  });
});

describe('guards', () => {
  it('skips steps whose loss is not finite, logs them, and stops after maxSkippedSteps in a row', async () => {
    const config = resolveConfig({
      ...tinyConfig,
      sft: { steps: 0 },
      grpo: { ...tinyConfig.grpo, steps: 5 },
      optimizer: { maxSkippedSteps: 3 },
    });
    // Old logprobs of −1e30 (finite, so accepted) make every ratio infinite: with a negative
    // advantage the unclipped branch wins and the loss is infinite.
    const poisoned: RolloutFn = async (rolloutContext, prompts, settings) =>
      (await singleTurnRollout(rolloutContext, prompts, settings)).map((sample) => ({
        ...sample,
        oldLogprobs: sample.oldLogprobs.map(() => -1e30),
      }));
    const alwaysMixed: NamedReward = { name: 'mixed', weight: 1, reward: ({ indexInGroup }) => indexInGroup % 2 };
    const context = createRunContext(config, { rewards: [alwaysMixed] });
    const before = new Map([...context.model.parameters].map(([name, p]) => [name, p.data.slice()]));
    const runDirectory = join(scratch, 'guard');
    await expect(train(context, { runDirectory, quiet: true, rollout: poisoned })).rejects.toThrow(
      /3 consecutive steps had a non-finite loss or gradient/,
    );
    const metrics = readLines(join(runDirectory, 'metrics.jsonl')).filter((m) => 'skippedSteps' in m);
    expect(metrics.map((m) => m.skippedSteps)).toEqual([1, 1]); // the third skip stops the run before logging
    for (const [name, parameter] of context.model.parameters)
      expect(Array.from(parameter.data), name).toEqual(Array.from(before.get(name)!));
    const summary = JSON.parse(readFileSync(join(runDirectory, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('failed');
    expect(summary.reason).toMatch(/3 consecutive steps had a non-finite loss or gradient/);
    expect(summary.pid).toBe(process.pid);

    // Resumed with a healthy rollout, it continues from its step-2 checkpoint; the old reason goes.
    await train(createRunContext(config, { rewards: [alwaysMixed] }), { runDirectory, quiet: true, resume: true });
    const resumed = JSON.parse(readFileSync(join(runDirectory, 'summary.json'), 'utf8'));
    expect(resumed.status).toBe('finished');
    expect(resumed).not.toHaveProperty('reason');
    expect(
      readLines(join(runDirectory, 'metrics.jsonl'))
        .filter((m) => 'skippedSteps' in m)
        .map((m) => m.step),
    ).toEqual([1, 2, 3, 4, 5]);
  });

  it('a run that throws anywhere (here: the rollout) is recorded as failed with the error as reason', async () => {
    const config = resolveConfig({ ...tinyConfig, sft: { steps: 0 }, grpo: { ...tinyConfig.grpo, steps: 1 } });
    const broken: RolloutFn = async () => {
      throw new Error('rollout server unreachable');
    };
    const runDirectory = join(scratch, 'failed-rollout');
    await expect(train(createRunContext(config), { runDirectory, quiet: true, rollout: broken })).rejects.toThrow(
      'rollout server unreachable',
    );
    const summary = JSON.parse(readFileSync(join(runDirectory, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({ status: 'failed', reason: 'rollout server unreachable', task: 'addition' });
  });

  it('a reward that throws marks its samples invalid (counted per reward) instead of scoring 0', async () => {
    const config = resolveConfig({ ...tinyConfig, sft: { steps: 0 }, grpo: { ...tinyConfig.grpo, steps: 1 } });
    const flaky: NamedReward = {
      name: 'flaky',
      weight: 1,
      reward: ({ indexInGroup }) => {
        if (indexInGroup === 0) throw new Error('boom');
        return 1;
      },
    };
    const context = createRunContext(config, { rewards: [flaky] });
    const runDirectory = join(scratch, 'invalid');
    await train(context, { runDirectory, quiet: true });
    const [step] = readLines(join(runDirectory, 'metrics.jsonl')).filter((m) => 'reward/flaky/invalid' in m);
    expect(step['reward/flaky/invalid']).toBe(4); // one per group of 4 prompts
    expect(step['train/samples']).toBe(12); // 16 completions, the 4 invalid ones left the loss
    const [group] = readLines(join(runDirectory, 'samples.jsonl'));
    expect(group.completions[0].inLoss).toBe(false);
    expect(group.completions[0].reward).toBeNull();
  });
});

describe('reward failures are loud', () => {
  it('a reward returning a string: its message is printed once and kept in samples.jsonl, and the run stops after maxSkippedSteps steps with nothing valid', async () => {
    const config = resolveConfig({
      ...tinyConfig,
      sft: { steps: 0 },
      grpo: { ...tinyConfig.grpo, steps: 6 },
      optimizer: { maxSkippedSteps: 3 },
    });
    const wrongType: NamedReward = {
      name: 'typo',
      weight: 1,
      reward: (() => 'yes') as unknown as NamedReward['reward'],
    };
    const printed: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    const runDirectory = join(scratch, 'loud');
    try {
      await expect(
        train(createRunContext(config, { rewards: [wrongType] }), { runDirectory, quiet: true }),
      ).rejects.toThrow(
        /stopping: 3 consecutive steps had no sample with a valid reward \(reward "typo": returned string, expected a number or null\)/,
      );
    } finally {
      process.stderr.write = original;
    }
    const failures = printed.filter((line) => line.includes('reward "typo" failed'));
    expect(failures).toHaveLength(1); // once per distinct message, not once per sample or step
    expect(printed.filter((line) => line.includes('had no sample with a valid reward'))).toHaveLength(2); // steps 1 and 2 warn, step 3 stops
    const [group] = readLines(join(runDirectory, 'samples.jsonl'));
    expect(group.completions[0].errors).toEqual({ typo: 'returned string, expected a number or null' });
    const summary = JSON.parse(readFileSync(join(runDirectory, 'summary.json'), 'utf8'));
    expect(summary.status).toBe('failed');
    expect(summary.reason).toMatch(/no sample with a valid reward/);
  });
});

describe('config validation', () => {
  it.each([
    [{ algorithm: { loss: 'ppo-clipp' } }, /algorithm\.loss: unknown policy loss "ppo-clipp"; known: ppo-clip/],
    [{ algorithm: { advantage: 'nope' } }, /algorithm\.advantage: unknown advantage estimator "nope"/],
    [
      { grpo: { promptsPerStep: 3, microBatchSize: 5 }, sampling: { groupSize: 4 } },
      /grpo\.microBatchSize: 5 does not divide the 12 completions/,
    ],
    [{ grpo: { steps: -1 } }, /grpo\.steps: /],
    [{ grpo: { stpes: 3 } }, /grpo: Unrecognized key/],
    [{ model: { hiddenSize: 30, numHeads: 4 } }, /model\.hiddenSize: 30 is not a multiple of model\.numHeads 4/],
    [{ preset: 'dapoo' }, /preset: unknown preset "dapoo"; known: grpo, dr-grpo, dapo/],
    [{ task: 'chess' }, /task: unknown task "chess"/],
    [
      { num_generations: 8, max_completion_length: 64 },
      /\(root\): "num_generations" is TRL's name; here it is sampling\.groupSize\n- \(root\): "max_completion_length" is TRL's name; here it is sampling\.maxNewTokens/,
    ],
    [
      { algorithm: { beta: 0.04, typo: 1 } },
      /algorithm: "beta" is TRL's name; here it is algorithm\.klCoefficient\n- algorithm: Unrecognized key: "typo"/,
    ],
  ])('%j is refused with a message naming the field', (input, message) => {
    expect(() => resolveConfig(input)).toThrow(message);
  });
  it.each(['grpo', 'dr-grpo', 'rloo'])('%s refuses a group of one, before any model loads', (advantage) => {
    const config = resolveConfig({
      sampling: { groupSize: 1 },
      grpo: { microBatchSize: 16 },
      algorithm: { advantage },
    });
    expect(() => createRunContext(config)).toThrow(
      new RegExp(
        `sampling\\.groupSize: ${advantage} compares completions within a group, so it needs at least 2 \\(got 1\\)`,
      ),
    );
  });
  it('an unknown reward name lists the known ones', () => {
    const config = resolveConfig({ rewards: [{ name: 'corect' }] });
    expect(() => createRunContext(config)).toThrow(/rewards: unknown reward "corect"; known: correct, format, /);
  });
  it("options given to a task's own reward are refused, not dropped", () => {
    const config = resolveConfig({ rewards: [{ name: 'format' }, { name: 'correct', options: { tolerance: 1 } }] });
    expect(() => createRunContext(config)).toThrow(
      /rewards\[1\]: "correct" is task "addition"'s own reward, which takes no options \(got tolerance\)/,
    );
  });
  it('a missing checkpoint folder is named', () => {
    const config = resolveConfig({ model: { checkpoint: '/nonexistent/model' } });
    expect(() => createRunContext(config)).toThrow(/\/nonexistent\/model/);
  });
});

describe('coming from TRL', () => {
  it('docs/coming-from-trl.md lists every TRL name the config refuses with a hint', async () => {
    const { trlNames, trlExplained } = await import('../config/trl-names.js');
    const doc = readFileSync(new URL('../../docs/coming-from-trl.md', import.meta.url), 'utf8');
    for (const name of [...Object.keys(trlNames), ...Object.keys(trlExplained)])
      expect(doc, name).toContain(`\`${name}\``);
  });
});

describe('extending a finished run', () => {
  it('--resume with more GRPO steps continues training and ends like a run that asked for them from the start', async () => {
    const withSteps = (steps: number) =>
      resolveConfig({ ...tinyConfig, sft: { steps: 0 }, grpo: { ...tinyConfig.grpo, steps } });
    const whole = join(scratch, 'extend-whole');
    await train(createRunContext(withSteps(4)), { runDirectory: whole, quiet: true });
    const extended = join(scratch, 'extend-twice');
    await train(createRunContext(withSteps(2)), { runDirectory: extended, quiet: true });
    const again = await train(createRunContext(withSteps(2)), { runDirectory: extended, quiet: true, resume: true });
    expect(again.steps).toBe(2); // same steps: finished, nothing to do
    const result = await train(createRunContext(withSteps(4)), { runDirectory: extended, quiet: true, resume: true });
    expect(result.steps).toBe(4);
    const untimed = (run: string) =>
      readLines(join(run, 'metrics.jsonl')).map((m) =>
        Object.fromEntries(Object.entries(m).filter(([key]) => !/^time\/|^tokensPerSecond$/.test(key))),
      );
    expect(untimed(extended)).toEqual(untimed(whole));
    expect(
      readFileSync(join(extended, 'checkpoints', 'step-4', 'model.safetensors')).equals(
        readFileSync(join(whole, 'checkpoints', 'step-4', 'model.safetensors')),
      ),
    ).toBe(true);
  });
});
