/**
 * Ground-truth injection (TempSamp-R1's `_inject_gt_rollout_in_gen_output`): the last sample of each
 * group becomes the row's ground truth — the template's text with the row's columns, the stop id
 * appended, π_old the policy's own log-probs of it (checked against a separate one-row forward) —
 * and every other sample is the inner rollout's, unchanged; near misses are refused by name.
 */
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { createSmallConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { noGrad } from '../tensor/index.js';
import { completionLogprobs } from '../trainer/completion-logprobs.js';
import { frozenLogprobs } from '../trainer/optimize.js';
import { groundTruthProblems, groundTruthRollout, groundTruthText } from './ground-truth.js';
import { singleTurnRollout, type RolloutPrompt, type RolloutSettings } from './rollout.js';

const tokenizer = new CharTokenizer({ alphabet: 'abcdefgh<>/ 0123456789to' });
const model = Transformer.random(
  createSmallConfig({
    vocabSize: tokenizer.vocabSize,
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    numKeyValueHeads: 2,
    intermediateSize: 32,
    bosTokenId: tokenizer.bosTokenId,
    eosTokenIds: [tokenizer.eosTokenId],
  }),
  5,
);
const context = { model, tokenizer };
const prompts: RolloutPrompt[] = ['abc', 'hgf'].map((prompt, exampleIndex) => ({
  example: { prompt, answer: `${exampleIndex + 1} to ${exampleIndex + 3}` },
  promptIds: tokenizer.encode(prompt),
  exampleIndex,
}));
const settings: RolloutSettings = {
  groupSize: 3,
  maxNewTokens: 20,
  temperature: 0.7,
  topK: 0,
  topP: 1,
  minP: 0,
  stopTokenIds: [tokenizer.eosTokenId],
  seed: 11,
};
const injected = groundTruthRollout(singleTurnRollout, '<a>{answer}</a>', ({ model }, rows, temperature) =>
  frozenLogprobs(model, rows, { microBatchSize: 8, temperature }),
);

describe('groundTruthRollout', () => {
  it("replaces each group's last sample with the ground truth, π_old from the policy, the rest untouched", async () => {
    const inner = await singleTurnRollout(context, prompts, settings);
    const samples = await injected(context, prompts, settings);
    expect(samples).toHaveLength(6);
    for (const i of [0, 1, 3, 4]) expect(samples[i]).toEqual(inner[i]);
    for (const [p, i] of [
      [0, 2],
      [1, 5],
    ]) {
      const text = `<a>${p + 1} to ${p + 3}</a>`;
      const completionIds = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.eosTokenId];
      expect(samples[i]).toMatchObject({ promptIndex: p, completionIds, text, truncated: false, groundTruth: true });
      expect(samples[i].lossMask).toEqual(completionIds.map(() => 1));
      const alone = noGrad(() =>
        completionLogprobs(model, [{ promptIds: prompts[p].promptIds, completionIds }], settings.temperature),
      ).logprobs.data;
      samples[i].oldLogprobs.forEach((value, t) => expect(value).toBeCloseTo(alone[t], 5));
      expect(samples[i].oldLogprobs.every((value) => value < 0)).toBe(true);
    }
  });

  it('keeps a group of one as it is (nothing to compare the ground truth with)', async () => {
    const one = { ...settings, groupSize: 1 };
    expect(await injected(context, prompts, one)).toEqual(await singleTurnRollout(context, prompts, one));
  });

  it('refuses a ground truth longer than maxNewTokens and a template column the row lacks, by name', async () => {
    await expect(injected(context, prompts, { ...settings, maxNewTokens: 8 })).rejects.toThrow(
      /ground truth of training row 0 is 14 tokens, over sampling\.maxNewTokens \(8\)/,
    );
    expect(() => groundTruthText('{solution}', { prompt: 'x', solution: { steps: 2 } }, 'training row 4')).toThrow(
      /training row 4 has no text or number in column "solution"/,
    );
    expect(groundTruthText('{a}-{b}', { prompt: 'x', a: 'one', b: 2 }, 'row')).toBe('one-2');
  });

  it('lists, before any compute, each first row whose truth cannot be written or is too long', () => {
    const rows = [{ prompt: 'x', answer: '1 to 2' }, { prompt: 'y' }, { prompt: 'z', answer: '1 to 22222222' }];
    expect(groundTruthProblems('<a>{answer}</a>', rows, 14)).toEqual([
      '- grpo.groundTruthCompletion: training row 1 has no text or number in column "answer" (the template reads {answer})',
    ]);
    expect(
      groundTruthProblems('<a>{answer}</a>', rows, 14, { tokenizer, stopTokenIds: [tokenizer.eosTokenId] }),
    ).toEqual([
      '- grpo.groundTruthCompletion: training row 1 has no text or number in column "answer" (the template reads {answer})',
      '- grpo.groundTruthCompletion: the ground truth of training row 2 is 21 tokens, over sampling.maxNewTokens (14)',
    ]);
  });
});
