/**
 * The OpenVul recipe (#174, recipes/papers/openvul.ts): each reward level scores as the authors'
 * trl/scripts/grpo.py (detection ±1, prediction by CWE with its related ids, the judge's
 * specification verdict 0.4 / 0.2 / 0.4 on vulnerable rows and 0 / −0.4 on patched ones, format 0 /
 * −0.2, a cut-off completion all INCORRECT), the judge's reply parsed as their
 * `str2json_specification` with their calibrator retry, and two GRPO steps through `grpo train`
 * against a local OpenAI-compatible stub judge (no LLM can be had here).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';
import { makeRewardInput, type RewardFn } from '../rewards/types.js';
import type { JudgeCall } from '../../recipes/papers/openvul.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-openvul-');

/** The stub judge: prediction CORRECT when the verdict is the row's, localization INCORRECT, reasoning PARTIALLY CORRECT. */
function stubVerdict(prompt: string): string {
  const vulnerable = prompt.includes('known to be HAS_VUL');
  const answer = prompt.split('<answer>').at(-1)!;
  const right = vulnerable ? answer.includes('HAS_VUL') : !answer.includes('HAS_VUL');
  const option = (value: string) => ({ justification: 'stub', option: value });
  return (
    '```json\n' +
    JSON.stringify({
      prediction: option(right ? 'CORRECT' : 'INCORRECT'),
      localization: option('INCORRECT'),
      reasoning: option('PARTIALLY CORRECT'),
    }) +
    '\n```'
  );
}

let server: Server;
let judgeCalls = 0;
let recipe: typeof import('../../recipes/papers/openvul.js');

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      judgeCalls++;
      const { messages } = JSON.parse(body) as { messages: { content: string }[] };
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({ choices: [{ message: { role: 'assistant', content: stubVerdict(messages[1]!.content) } }] }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  process.env.OPENAI_BASE_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  process.env.JUDGE_MODEL = 'judge';
  // The recipe's default level (specification) refuses to load without an endpoint.
  recipe = await import('../../recipes/papers/openvul.js');
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

const vulnerableRow = { prompt: 'p', vulnerable: true, cwe: 'CWE-787', specification: { localization: 'strcpy(b,s)' } };
const patchedRow = { ...vulnerableRow, vulnerable: false };
const score = async (reward: RewardFn, completion: string, row: Record<string, unknown>, truncated = false) =>
  reward(makeRewardInput({ completion, row, truncated }));

describe('OpenVul rewards, as trl/scripts/grpo.py', () => {
  it('format: both think tags and exactly one verdict after the last </think> → 0, else −0.2', async () => {
    expect(await score(recipe.openvulFormat, '<think>a</think>HAS_VUL CWE-787', vulnerableRow)).toBe(0);
    expect(await score(recipe.openvulFormat, '<think>a</think>HAS_VUL or NO_VUL', vulnerableRow)).toBe(-0.2);
    expect(await score(recipe.openvulFormat, 'HAS_VUL', vulnerableRow)).toBe(-0.2);
    expect(await score(recipe.openvulFormat, '<think>HAS_VUL</think>', vulnerableRow)).toBe(-0.2);
  });

  it('detection: +1 for the right verdict, −1 for the wrong one, no tags or a cut-off completion', async () => {
    const detection = recipe.openvulDetection;
    expect(await score(detection, '<think>a</think>HAS_VUL', vulnerableRow)).toBe(1);
    expect(await score(detection, '<think>a</think>NO_VUL', vulnerableRow)).toBe(-1);
    expect(await score(detection, '<think>a</think>NO_VUL', patchedRow)).toBe(1);
    expect(await score(detection, 'NO_VUL', patchedRow)).toBe(-1);
    expect(await score(detection, '<think>a</think>HAS_VUL', vulnerableRow, true)).toBe(-1);
  });

  it('prediction: the CWE or a direct parent/child on vulnerable rows (+1 / −1); patched rows 0 / −1', async () => {
    const prediction = recipe.openvulPrediction;
    expect(await score(prediction, '<think>a</think>HAS_VUL CWE-787', vulnerableRow)).toBe(1);
    expect(await score(prediction, '<think>a</think>HAS_VUL CWE-119', vulnerableRow)).toBe(1); // parent
    expect(await score(prediction, '<think>CWE-787</think>HAS_VUL CWE-20', vulnerableRow)).toBe(-1); // only after </think>
    expect(await score(prediction, '<think>a</think>NO_VUL', patchedRow)).toBe(0);
    expect(await score(prediction, '<think>a</think>HAS_VUL CWE-20', patchedRow)).toBe(0); // another weakness
    expect(await score(prediction, '<think>a</think>HAS_VUL CWE-787', patchedRow)).toBe(-1);
    expect(await score(prediction, '<think>a</think>HAS_VUL CWE-787', vulnerableRow, true)).toBe(-1);
  });

  it('specification: their score table on each verdict', () => {
    const verdict = (prediction: string, localization: string, reasoning: string) =>
      ({ prediction, localization, reasoning }) as Parameters<typeof recipe.specificationScore>[0];
    expect(recipe.specificationScore(verdict('CORRECT', 'CORRECT', 'CORRECT'), true)).toBeCloseTo(1);
    expect(recipe.specificationScore(verdict('CORRECT', 'PARTIALLY CORRECT', 'PARTIALLY CORRECT'), true)).toBeCloseTo(
      0.7,
    );
    expect(recipe.specificationScore(verdict('INCORRECT', 'CORRECT', 'INCORRECT'), true)).toBeCloseTo(-0.2);
    expect(recipe.specificationScore(verdict('CORRECT', 'CORRECT', 'CORRECT'), false)).toBe(0);
    expect(recipe.specificationScore(verdict('INCORRECT', 'CORRECT', 'CORRECT'), false)).toBe(-0.4);
  });

  it('specification: the judge sees their prompt and the repaired analysis; an unparsed reply goes to the calibrator once', async () => {
    const seen: string[] = [];
    const replies = ['no json here', '{"prediction": {"option": "CORRECT"}, "localization": {"option": "CORRECT"}}'];
    const judge: JudgeCall = async (system, user) => {
      seen.push(`${system}\n${user}`);
      return replies.shift()!;
    };
    const reward = recipe.openvulSpecification(judge);
    // Calibrated: prediction and localization CORRECT, reasoning missing → INCORRECT: 0.4 + 0.2.
    expect(await score(reward, 'strcpy(b,s) overflows b HAS_VUL', vulnerableRow)).toBeCloseTo(0.6);
    expect(seen[0]).toContain('known to be HAS_VUL');
    expect(seen[0]).toContain('"localization": "strcpy(b,s)"');
    expect(seen[0]).toContain('<think>\nstrcpy(b,s) overflows b HAS_VUL\n</think>\n<answer>\nHAS_VUL\n</answer>');
    expect(seen[1]).toMatch(/^You are a JSON format calibrator[\s\S]*INPUT\nno json here$/);

    const never: JudgeCall = async () => 'still not json';
    expect(await score(recipe.openvulSpecification(never), '<think>a</think>HAS_VUL', vulnerableRow)).toBe(-0.4);
    const unused: JudgeCall = async () => {
      throw new Error('a cut-off completion is not judged');
    };
    expect(await score(recipe.openvulSpecification(unused), '<think>a', vulnerableRow, true)).toBe(-0.4);
    const gaveUp: JudgeCall = async () => {
      throw new Error('llmJudge: gave up after 3 attempts: HTTP 503');
    };
    expect(await score(recipe.openvulSpecification(gaveUp), '<think>a</think>NO_VUL', patchedRow)).toBe(-0.4);
    const misconfigured: JudgeCall = async () => {
      throw new Error('llmJudge: HTTP 401 from http://x');
    };
    await expect(
      score(recipe.openvulSpecification(misconfigured), '<think>a</think>NO_VUL', patchedRow),
    ).rejects.toThrow(/HTTP 401/);
  });

  it('repairs the analysis tags as theirs and parses a ```json block', () => {
    expect(recipe.judgedAnalysis('<think>x</think> NO_VUL')).toBe('<think>x\n</think>\n<answer>\nNO_VUL\n</answer>');
    expect(recipe.judgedAnalysis('x</think>HAS_VUL')).toBe('<think>\nx\n</think>\n<answer>\nHAS_VUL\n</answer>');
    expect(recipe.judgedAnalysis('<think>x NO_VUL')).toBe('<think>x NO_VUL\n</think>\n<answer>\nNO_VUL\n</answer>');
    expect(
      recipe.parseSpecificationVerdict('text ```json\n{"reasoning": {"option": "PARTIALLY CORRECT"}}\n``` end'),
    ).toEqual({ prediction: 'INCORRECT', localization: 'INCORRECT', reasoning: 'PARTIALLY CORRECT' });
  });

  it('refuses an unknown OPENVUL_LEVEL and the specification level without an endpoint, naming them', () => {
    expect(() => recipe.openvulLevel('cwe')).toThrow(
      /OPENVUL_LEVEL=cwe is not one of detection, prediction, specification/,
    );
    const url = process.env.OPENAI_BASE_URL;
    delete process.env.OPENAI_BASE_URL;
    try {
      expect(() => recipe.openvulLevel(undefined)).toThrow(/needs a judge: set OPENAI_BASE_URL/);
      expect(recipe.openvulLevel('detection')).toBe('detection');
    } finally {
      process.env.OPENAI_BASE_URL = url;
    }
  });

  it('rows: vulnerable and patched functions, held-out rows never trained on, the teacher right or flipped', () => {
    const task = recipe.vulnerabilityTask;
    const train = task.trainExamples(200, 1);
    expect(new Set(train.map((row) => row.vulnerable))).toEqual(new Set([true, false]));
    expect(new Set(train.map((row) => row.cwe)).size).toBe(5);
    const held = new Set(task.evalExamples(40, 1).map((row) => row.prompt));
    expect(train.some((row) => held.has(row.prompt))).toBe(false);
    for (const row of train.slice(0, 20)) {
      const right = task.demonstration(row, () => 0.99);
      expect(task.isCorrect(row, right)).toBe(true);
      expect(
        task.isCorrect(
          row,
          task.demonstration(row, () => 0),
        ),
      ).toBe(false);
      for (const character of String(row.prompt) + right) expect(task.alphabet).toContain(character);
    }
  });
});

describe('recipes/papers/openvul.ts through grpo train', () => {
  it('runs SFT and two GRPO steps with the judge-scored specification reward and the format reward', async () => {
    const before = judgeCalls;
    await grpo(
      'train',
      join(root, 'recipes/papers/openvul.ts'),
      ...settingFlags({
        'model.hiddenSize': 32,
        'model.numLayers': 1,
        'model.numHeads': 2,
        'sft.steps': 10,
        'grpo.steps': 2,
        'grpo.promptsPerStep': 2,
        'grpo.microBatchSize': 16,
        'sampling.maxNewTokens': 150,
        'evaluation.examples': 2,
        'logging.runsDirectory': runs,
        'logging.runName': 'openvul',
      }),
    );
    const steps = grpoStepRecords(runs, 'openvul');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/openvul-specification/mean']).toBeGreaterThanOrEqual(-0.4 - 1e-9);
      expect(step['reward/openvul-specification/mean']).toBeLessThanOrEqual(0.6 + 1e-9);
      expect(step['reward/openvul-format/mean']).toBeGreaterThanOrEqual(-0.2 - 1e-9);
      expect(step['reward/openvul-format/mean']).toBeLessThanOrEqual(0);
    }
    // A barely trained model stops within 150 characters on most samples; each such one is judged once.
    expect(judgeCalls - before).toBeGreaterThan(0);
  });
});
