/**
 * recipes/papers/motif.ts (MOTIF multi-round thinking, #19): the reward functions against the
 * numbers the authors' motif.py functions print for the same texts (run with /usr/bin/python3, the
 * values copied here), the round prompts as their `model_iteration` writes them, the rollout's
 * trajectories and outcome on a small random model with scripted later rounds, and `grpo train`
 * with the recipe as written on the tinystories fixture and GSM8K rows.
 */
import { sharedData, tinyStoriesModel } from '../../test/helpers/fixtures.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import type { RolloutContext, RolloutFn, RolloutPrompt, RolloutSettings } from '../rollout/rollout.js';
import {
  countXml,
  extractXmlAnswer,
  motifGoldAnswer,
  motifRollout,
  motifRoundPrompt,
  motifTrajectoryScore,
  MOTIF_SYSTEM_PROMPT,
  softFormat,
  strictFormat,
} from '../../recipes/papers/motif.js';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-motif-recipe-');

describe('the MOTIF rewards (their motif.py functions, values from Python)', () => {
  // [text, strict_format, soft_format, count_xml, extract_xml_answer] as their functions return them.
  const cases: [string, number, number, number, string][] = [
    ['<reasoning>\nadd\n</reasoning>\n<answer>\n18\n</answer>\n', 0.5, 0, 0.5, '18'],
    ['<reasoning>\nadd\n</reasoning>\n<answer>\n18\n</answer>\n\n', 0.5, 0, 0.498, '18'],
    ['<reasoning>\nadd\n</reasoning>\n<answer>\n18\n</answer>\nextra text', 0, 0, 0.48, '18'],
    ['<reasoning>add</reasoning> <answer>18</answer>', 0, 0.5, 0, '18'],
    ['<reasoning>a\nb</reasoning><answer>18</answer>', 0, 0, 0, '18'],
    ['no tags at all', 0, 0, 0, 'no tags at all'],
    ['<reasoning>\nx\n</reasoning>\n<answer>\ny\n</answer>', 0, 0, 0.454, 'y'],
    [' <reasoning>add</reasoning><answer>18</answer>', 0, 0, 0, '18'],
  ];
  it.each(cases)('%j', (text, strict, soft, xml, extracted) => {
    expect(strictFormat(text)).toBe(strict);
    expect(softFormat(text)).toBe(soft);
    expect(countXml(text)).toBeCloseTo(xml, 12);
    expect(extractXmlAnswer(text)).toBe(extracted);
  });

  it('scores a trajectory 2 / 1 / 0 by where \\boxed{a} is (total_reward_func)', () => {
    const ends = [
      '<answer>\\boxed{18}</answer>',
      '\\boxed{18} <answer>18</answer>',
      '<answer>\\boxed{17}</answer>',
      '\\boxed{18}',
    ];
    expect(ends.map((end) => motifTrajectoryScore(end, '18'))).toEqual([2, 1, 0, 2]);
  });

  it('takes the gold answer after #### (extract_hash_answer), else the whole column', () => {
    expect(motifGoldAnswer({ answer: 'She makes 9 * 2 = 18.\n#### 18' })).toBe('18');
    expect(motifGoldAnswer({ answer: ' 42 ' })).toBe('42');
  });

  it('writes the round prompts as model_iteration does (the latest progress only; the final round says so)', () => {
    expect(motifRoundPrompt('Q?', '<reasoning>\nr\n</reasoning>\n<answer>\nhalf done\n</answer>', 2, 3)).toBe(
      'Q? Progress in round 1: "half done"',
    );
    expect(motifRoundPrompt('Q?', '<answer>\nalmost\n</answer>', 3, 3)).toBe(
      'Q? Progress in round 2: "almost" Current round is the final (third) round. Provide a final answer.',
    );
    expect(MOTIF_SYSTEM_PROMPT.startsWith('\nYou are a helpful assistant.')).toBe(true);
    expect(MOTIF_SYSTEM_PROMPT).toContain('in the box: \\boxed{}. Only this boxed final answer');
  });
});

describe('motifRollout on a small random model (scripted later rounds)', () => {
  const tokenizer = new CharTokenizer();
  const model = Transformer.random(
    createSmallConfig({
      vocabSize: tokenizer.vocabSize,
      hiddenSize: 16,
      numLayers: 1,
      numHeads: 2,
      maxPositionEmbeddings: 2048,
    }),
    5,
  );
  const context: RolloutContext = { model, tokenizer, chatTemplate: null };
  const settings: RolloutSettings = {
    groupSize: 2,
    maxNewTokens: 5,
    temperature: 1,
    topK: 0,
    topP: 1,
    minP: 0,
    stopTokenIds: [tokenizer.eosTokenId],
    seed: 3,
  };
  const prompts: RolloutPrompt[] = [
    { example: { prompt: '2+2?', answer: 'two and two\n#### 4' }, promptIds: tokenizer.encode('2+2?') },
    { example: { prompt: '3+3?', answer: '#### 6' }, promptIds: tokenizer.encode('3+3?') },
  ];
  // Round 2 answers "<answer>r2-<trajectory></answer>"; round 3 answers by trajectory k = t mod 4:
  // the gold boxed in the answer tags (2), boxed outside them (1), a wrong box (0), nothing (0).
  const calls: { users: string[]; settings: RolloutSettings }[] = [];
  const scripted: RolloutFn = async (_context, roundPrompts, roundSettings) => {
    const users = roundPrompts.map((prompt) => String(prompt.example.prompt));
    calls.push({ users, settings: roundSettings });
    return users.flatMap((user, p) =>
      Array.from({ length: roundSettings.groupSize }, (_, k) => {
        const gold = user.startsWith('2+2?') ? '4' : '6';
        const t = p * roundSettings.groupSize + k;
        const text = user.includes('final (third) round')
          ? [
              `<answer>\\boxed{${gold}}</answer>`,
              `\\boxed{${gold}} <answer>x</answer>`,
              '<answer>\\boxed{0}</answer>',
              'none',
            ][t % 4]
          : `<answer>\nr2-${t}\n</answer>`;
        return { promptIndex: p, completionIds: [], oldLogprobs: [], lossMask: [], text, truncated: false };
      }),
    );
  };

  it('rolls 4 trajectories of rounds 2 and 3 per completion and rewards their mean score', async () => {
    calls.length = 0;
    const samples = await motifRollout({ generate: scripted })(context, prompts, settings);
    expect(samples.map((sample) => sample.promptIndex)).toEqual([0, 0, 1, 1]);
    // Round 2: one prompt per first-round completion, 4 answers each; round 3: one per trajectory.
    expect(calls.map((call) => [call.users.length, call.settings.groupSize])).toEqual([
      [4, 4],
      [16, 1],
    ]);
    for (const call of calls) expect([call.settings.temperature, call.settings.topP]).toEqual([0.8, 0.95]);
    expect(calls[0].users[0]).toBe(`2+2? Progress in round 1: "${extractXmlAnswer(samples[0].text)}"`);
    expect(calls[1].users[5]).toBe(
      '2+2? Progress in round 2: "r2-5" Current round is the final (third) round. Provide a final answer.',
    );
    // Every completion's 4 trajectories score 2, 1, 0, 0.
    expect(samples.map((sample) => sample.episode!.environmentReward)).toEqual([0.75, 0.75, 0.75, 0.75]);
    const episode = samples[1].episode!;
    expect(episode.turns).toBe(3);
    expect(episode.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(episode.messages[1].content).toBe(samples[1].text); // the trained first round
    expect(episode.messages[3].content).toBe('<answer>\nr2-4\n</answer>'); // its first trajectory
    for (const sample of samples) expect(sample.oldLogprobs).toHaveLength(sample.completionIds.length);
  });

  it('refuses a round prompt that does not fit the model, naming sampling.maxNewTokens', async () => {
    const rollout = motifRollout({ generate: scripted });
    await expect(rollout(context, prompts, { ...settings, maxNewTokens: 1800 })).rejects.toThrow(
      /round-2 prompt .* sampling\.maxNewTokens \(1800\) do not fit the model's 2048 positions/,
    );
  });
});

describe('grpo train with the MOTIF recipe (tinystories fixture, GSM8K rows)', () => {
  it('trains the first round, rewarded by the later rounds the policy rolls out', async () => {
    const flags = settingFlags({
      'taskOptions.dataDirectory': sharedData,
      'taskOptions.maxRows': 3,
      'grpo.examples': 3,
      'sft.steps': 0,
      'grpo.steps': 1,
      'grpo.promptsPerStep': 1,
      'grpo.microBatchSize': 2,
      'sampling.groupSize': 2,
      'sampling.maxNewTokens': 8,
      'evaluation.examples': 1,
      'checkpoint.every': 0,
      'logging.runsDirectory': runs,
    });
    await grpo(
      'train',
      join(root, 'recipes/papers/motif.ts'),
      '--model',
      tinyStoriesModel,
      '--run-name',
      'motif',
      ...flags,
    );
    const [step] = grpoStepRecords(runs, 'motif');
    expect(Number.isFinite(step['loss/policy'])).toBe(true);
    for (const name of ['motif-outcome', 'xmlcount', 'soft-format', 'strict-format'])
      expect(Number.isFinite(step[`reward/${name}/mean`])).toBe(true);
    expect(step['turns/mean']).toBe(3);
    const config = JSON.parse(readFileSync(join(runs, 'motif', 'config.json'), 'utf8'));
    expect(config.taskOptions.systemPrompt).toBe(MOTIF_SYSTEM_PROMPT);
    // samples.jsonl holds each completion's first trajectory: question, round 1, then two rounds.
    const sample = JSON.parse(
      readFileSync(join(runs, 'motif', 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')[0],
    );
    expect(JSON.stringify(sample)).toContain('Current round is the final (third) round.');
  });
});
