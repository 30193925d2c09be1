/** Tests of `grpo reward`: per-row scores and errors, groups, exit codes, input limits. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_INPUT_BYTES, MAX_LINE_CHARACTERS, runRewardCommand } from './reward-command.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-reward-cli-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function file(name: string, lines: string[]): string {
  const path = join(directory, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

async function run(options: { name: string; input: string; options?: string }) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runRewardCommand(options, {
    stdout: (line) => stdout.push(line),
    stderr: (line) => stderr.push(line),
  });
  return { code, rows: stdout.map((line) => JSON.parse(line)), stderr: stderr.join('\n') };
}

describe('grpo reward', () => {
  it('prints one line per row, with the score or the error', async () => {
    const input = file('math.jsonl', [
      '{"completion": "so \\\\boxed{18}", "answer": "18"}',
      '{"completion": "17", "answer": "18"}',
      '',
      'not json',
      '{"completion": "18"}',
    ]);
    const { code, rows, stderr } = await run({ name: 'math-answer', input });
    expect(rows).toEqual([
      { line: 1, score: 1 }, // right answer
      { line: 2, score: 0 }, // wrong answer
      { line: 4, error: expect.stringMatching(/not valid JSON/) }, // blank line 3 skipped
      // No answer column: refused before scoring, as grpo train refuses it (an error, not 0).
      {
        line: 5,
        error:
          '"math-answer" reads column "answer" (its answerColumn), which this row does not have (columns: completion)',
      },
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('4 rows, 2 errors');
  });

  it('passes options and forms groups for group rewards', async () => {
    const input = file('bleu.jsonl', [
      '{"completion": "the cat sat", "reference": "the cat sat", "group": 1}',
      '{"completion": "a dog", "reference": "the cat sat", "group": 1}',
    ]);
    const { code, rows } = await run({ name: 'bleu', input, options: '{"smoothing": "exp", "maxOrder": 2}' });
    expect(code).toBe(0);
    expect(rows[0].score).toBe(1); // identical sentence
    // no shared word: exp smoothing gives p1 = 1/(2·2), p2 = 1/(4·1); brevity e^{1−3/2}
    expect(rows[1].score).toBeCloseTo(Math.exp(-0.5) * 0.25, 12);
  });

  it('reads the policy logprobs from a policy_logprobs column (unlikeliness), and refuses a bad one', async () => {
    const input = file('unlikely.jsonl', [
      '{"completion": "\\\\boxed{4}", "answer": "4", "group": 1, "completion_ids": [1, 2], "policy_logprobs": [-0.1, -0.3]}',
      '{"completion": "\\\\boxed{4}", "answer": "4", "group": 1, "completion_ids": [1, 2], "policy_logprobs": [-2, null]}',
      '{"completion": "\\\\boxed{5}", "answer": "4", "group": 1, "completion_ids": [1], "policy_logprobs": [-0.5]}',
      '{"completion": "4", "completion_ids": [1], "policy_logprobs": [-1, -2]}',
    ]);
    const { rows } = await run({ name: 'unlikeliness', input });
    // mean logprobs −0.2, −2 (null left out), −0.5: ranks 2, 0, 1 of G = 3, β 0.25; the third is wrong
    expect(rows.slice(0, 3)).toEqual([
      { line: 1, score: 1 - 0.25 * (2 / 3) },
      { line: 2, score: 1 },
      { line: 3, score: 0 },
    ]);
    expect(rows[3]).toEqual({
      line: 4,
      error: expect.stringMatching(/"policy_logprobs" must be .* one per completion id/),
    });
  });

  it('exit 2 with the known names for an unknown reward, and for bad options', async () => {
    const input = file('one.jsonl', ['{"completion": "x"}']);
    const unknown = await run({ name: 'nope', input });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown reward "nope". Known rewards: math-answer, think-format/);
    const badJson = await run({ name: 'regex', input, options: '{pattern' });
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toMatch(/--options is not valid JSON/);
    const badField = await run({ name: 'regex', input, options: '{"pattern": "x", "colour": 1}' });
    expect(badField.stderr).toMatch(/reward "regex": bad options: .*colour/);
  });

  it('exit 1 for an unreadable file', async () => {
    const { code, stderr } = await run({ name: 'json-valid', input: join(directory, 'missing.jsonl') });
    expect(code).toBe(1);
    expect(stderr).toMatch(/cannot read --input/);
  });

  it('exit 1 naming the file for a device, a FIFO or a file over the size limit, before reading it', async () => {
    const fifo = join(directory, 'pipe.jsonl');
    execFileSync('mkfifo', [fifo]); // no writer: a plain read would wait forever
    for (const input of ['/dev/zero', fifo, directory]) {
      const { code, stderr } = await run({ name: 'json-valid', input });
      expect(code).toBe(1);
      expect(stderr).toContain(`cannot read --input ${input}: it is not a regular file`);
    }
    const huge = file('huge.jsonl', []);
    truncateSync(huge, MAX_INPUT_BYTES + 1); // sparse: nothing is written or read
    const { code, stderr } = await run({ name: 'json-valid', input: huge });
    expect(code).toBe(1);
    expect(stderr).toContain(
      `cannot read --input ${huge}: it is ${MAX_INPUT_BYTES + 1} bytes, over the limit of ${MAX_INPUT_BYTES}`,
    );
  });

  it("reports an over-long line as that row's error, naming the line, and scores the others", async () => {
    const long = JSON.stringify({ completion: 'x'.repeat(MAX_LINE_CHARACTERS) });
    const input = file('long.jsonl', ['{"completion": "{}"}', long]);
    const { code, rows } = await run({ name: 'json-valid', input });
    expect(rows).toEqual([
      { line: 1, score: 1 },
      { line: 2, error: `line is ${long.length} characters, over the limit of ${MAX_LINE_CHARACTERS}` },
    ]);
    expect(code).toBe(1);
  });
});
