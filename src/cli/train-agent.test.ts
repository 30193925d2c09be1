/*
 * `grpo train` on a recipe that exports an environment: the agent run goes end to end through the
 * command (recipe loading, validation, the multi-turn rollout, scoring with the environment's
 * reward, evaluation on whole episodes), and the run folder holds the agent metrics and the episodes
 * turn by turn with their masked segments. A recipe whose `environment` is not a function is refused.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from './recipe-file.js';
import { runTrainCommand } from './train-command.js';

const folder = mkdtempSync(join(tmpdir(), 'grpo-agent-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const config = {
  // The addition task's characters only: the template joins messages with '+'.
  model: {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    chatTemplate: "{% for m in messages %}{{ m.content + '+' }}{% endfor %}",
  },
  sft: { steps: 0 },
  grpo: { steps: 1, promptsPerStep: 2, microBatchSize: 2 },
  sampling: { groupSize: 2, maxNewTokens: 3 },
  evaluation: { examples: 2 },
  agent: { maxTurns: 3, toolCallFormat: 'hermes' },
  logging: { runsDirectory: folder, runName: 'agent' },
};

describe('grpo train with an environment', () => {
  it('runs end to end and logs the agent metrics and the episodes', async () => {
    const recipe = join(folder, 'agent.mjs');
    writeFileSync(
      recipe,
      `export default {
  config: ${JSON.stringify(config)},
  environment: () => ({ reward: (episode) => episode.turns / 3 }),
};\n`,
    );
    expect(await runTrainCommand({ recipe, quiet: true })).toBe(0);
    const lines = (file: string) =>
      readFileSync(join(folder, 'agent', file), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
    const step = lines('metrics.jsonl').find((record) => record.phase === 'grpo' && 'turns/mean' in record);
    expect(step['turns/mean']).toBeGreaterThanOrEqual(1);
    expect(step['tokens/masked_fraction']).toBeGreaterThanOrEqual(0);
    expect(step['tools/errors']).toBe(0);
    expect(step['reward/environment/mean']).toBeCloseTo(step['turns/mean'] / 3, 6);
    const stops = Object.keys(step).filter((key) => key.startsWith('stop/'));
    expect(stops.reduce((total, key) => total + step[key], 0)).toBeCloseTo(1, 6);
    const completion = lines('samples.jsonl')[0].completions[0];
    expect(completion.episode.messages[0].role).toBe('user');
    expect(completion.episode.rows[0].segments.some((segment: { trained: boolean }) => segment.trained)).toBe(true);
  });

  it('refuses a recipe whose environment is not a function, naming the file', async () => {
    const recipe = join(folder, 'bad.mjs');
    writeFileSync(recipe, `export default { config: {}, environment: { tools: [] } };\n`);
    await expect(loadRecipe(recipe)).rejects.toThrow(/bad\.mjs: its environment must be a function/);
  });
});
