/**
 * `grpo train --model DIR --data FILE --reward NAME` on the real TinyStories checkpoint: two GRPO
 * steps from a JSONL file and from a Parquet file; and on a ChatML chat checkpoint built from it,
 * where samples.jsonl shows the template's markers around the dataset's prompt, the prompt's ids
 * hold the special tokens (not their spelling), BOS is not doubled, and SFT trains the assistant
 * turn up to its end-of-turn marker.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeChatCheckpoint } from '../testing/chat-checkpoint.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { promptFormatFor, renderDemonstration, renderPrompt } from '../config/prompt-format.js';
import { runEvalCommand } from './eval-command.js';
import { runTrainCommand } from './train-command.js';
import { testFixture, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-train-data-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const rowsFile = join(scratch, 'rows.jsonl');
writeFileSync(
  rowsFile,
  Array.from({ length: 12 }, (_, i) =>
    JSON.stringify({ question: `Once upon a time there were ${i} cats.`, answer: String(i) }),
  ).join('\n'),
);
const short = [
  'sft.steps=0',
  'grpo.steps=2',
  'grpo.promptsPerStep=2',
  'sampling.groupSize=4',
  'grpo.microBatchSize=8',
  'sampling.maxNewTokens=6',
  'evaluation.examples=2',
  'checkpoint.every=0',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('grpo train --data', () => {
  it.each([
    ['jsonl', rowsFile, 'Once upon a time there were'],
    ['parquet', testFixture('datasets/tiny.parquet'), 'What is'],
  ])('trains 2 GRPO steps on TinyStories from a %s file', async (format, data, promptStart) => {
    const runName = `data-${format}`;
    expect(
      await runTrainCommand({
        set: short,
        runName,
        quiet: true,
        data: { model: tinyStoriesModel, data, promptColumn: 'question', rewards: ['math-answer'] },
      }),
    ).toBe(0);
    const steps = lines(join(scratch, runName, 'metrics.jsonl')).filter(
      (m) => 'loss/total' in m || 'train/samples' in m,
    );
    expect(steps).toHaveLength(2);
    const [group] = lines(join(scratch, runName, 'samples.jsonl'));
    expect(group.prompt.startsWith(promptStart)).toBe(true); // the base model has no chat template: plain text
    expect(group.completions[0].rewards).toHaveProperty('math-answer');
  });
});

describe('grpo train --data refuses before any model loads', () => {
  it('a --reward whose column the rows lack, naming the reward, the column and the row', async () => {
    const attempt = runTrainCommand({
      set: short,
      runName: 'data-no-column',
      quiet: true,
      data: { model: tinyStoriesModel, data: rowsFile, promptColumn: 'question', rewards: ['char-f1'] },
    });
    await expect(attempt).rejects.toThrow(
      'rewards[0]: "char-f1" reads column "reference" (its referenceColumn), which training row 0 does not have (columns: question, answer, prompt)',
    );
    expect(existsSync(join(scratch, 'data-no-column'))).toBe(false);
  });

  it('a model made from scratch on rows without demonstrations, saying what to add', async () => {
    const bare = join(scratch, 'bare.jsonl');
    writeFileSync(bare, '{"question": "1+1=", "solution": "2"}\n{"question": "2+2=", "solution": "4"}\n');
    const attempt = runTrainCommand({
      set: short,
      runName: 'data-scratch',
      quiet: true,
      data: { data: bare, promptColumn: 'question', rewards: ['think-format'] },
    });
    await expect(attempt).rejects.toThrow(
      /no completion or answer column .* add a completion or answer column, or train a checkpoint with --model DIR/,
    );
  });
});

describe('a chat checkpoint (ChatML, Qwen2.5-style)', () => {
  const chat = join(scratch, 'chat-model');
  const { imStart, imEnd } = makeChatCheckpoint(tinyStoriesModel, chat);

  it('rollouts see the rendered template: samples.jsonl shows the markers around the dataset prompt', async () => {
    expect(
      await runTrainCommand({
        set: short,
        runName: 'chat',
        quiet: true,
        data: {
          model: chat,
          data: rowsFile,
          promptColumn: 'question',
          systemPrompt: 'Answer with a number.',
          rewards: ['math-answer'],
        },
      }),
    ).toBe(0);
    const [group] = lines(join(scratch, 'chat', 'samples.jsonl'));
    expect(group.prompt).toMatch(
      /^<\|im_start\|>system\nAnswer with a number\.<\|im_end\|>\n<\|im_start\|>user\nOnce upon a time there were \d+ cats\.<\|im_end\|>\n<\|im_start\|>assistant\n$/,
    );
  });

  it('the rendered prompt tokenizes to the special ids, with no BOS added to a template that writes none', () => {
    const format = promptFormatFor('auto', loadTokenizer(chat));
    const { ids } = renderPrompt(format, { prompt: 'Hi there.' });
    expect(ids[0]).toBe(imStart);
    expect(ids.filter((id) => id === imStart)).toHaveLength(3); // system (the template's default), user, assistant
    expect(ids).not.toContain(1); // <|start_story|>, the tokenizer's BOS: the template does not write it
    const plain = renderPrompt(promptFormatFor('none', loadTokenizer(chat)), { prompt: 'Hi there.' });
    expect(plain.ids[0]).toBe(1); // plain text keeps the tokenizer's own BOS
  });

  it('SFT trains the assistant turn up to its end-of-turn marker, not the prompt', () => {
    const format = promptFormatFor('auto', loadTokenizer(chat));
    const { promptIds, completionIds } = renderDemonstration(format, { prompt: 'Hi there.' }, 'Once upon a time.', 2);
    expect(promptIds).toEqual(renderPrompt(format, { prompt: 'Hi there.' }).ids);
    const end = completionIds.indexOf(imEnd);
    expect(end).toBeGreaterThan(0);
    expect(completionIds.slice(0, end)).toEqual(
      format.tokenizer.encode('Once upon a time.', { addSpecialTokens: false }),
    );
    expect(completionIds.slice(end + 1)).toEqual(format.tokenizer.encode('\n', { addSpecialTokens: false })); // the template's newline after the turn
    expect(completionIds).not.toContain(imStart);
  });

  it('a conversational prompt without a chat template is refused, never stringified', () => {
    const format = promptFormatFor('none', loadTokenizer(chat));
    expect(() => renderPrompt(format, { prompt: [{ role: 'user', content: 'Hi' }] })).toThrow(
      /a prompt is a list of chat messages .* but the model has no chat template; set model\.chatTemplate/,
    );
  });
});

describe('grpo eval --data', () => {
  it('scores every row of the file with the named reward and saves the greedy completions', async () => {
    const output = join(scratch, 'eval', 'completions.jsonl');
    const printed: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      const code = await runEvalCommand({
        model: tinyStoriesModel,
        task: 'addition',
        examples: 200,
        passAtK: 2,
        maxNewTokens: 4,
        seed: 0,
        json: true,
        data: rowsFile,
        promptColumn: 'question',
        rewards: ['math-answer'],
        output,
      });
      expect(code).toBe(0);
    } finally {
      process.stdout.write = original;
    }
    const result = JSON.parse(printed.join(''));
    expect(Object.keys(result).sort()).toEqual(['eval/accuracy', 'eval/meanReward', 'eval/passAtK']);
    const saved = lines(output);
    expect(saved).toHaveLength(12); // every row, not a held-out fraction
    const third = saved.find((record) => record.prompt === 'Once upon a time there were 3 cats.');
    expect(third).toMatchObject({ row: { answer: '3' } });
    expect(typeof third.completion).toBe('string');
    expect(saved.filter((record) => record.correct).length / 12).toBe(result['eval/accuracy']);
  });
});
