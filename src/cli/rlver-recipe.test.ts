/**
 * RLVER's recipe (#46, recipes/papers/rlver.ts): the simulated user's emotion bookkeeping as the
 * authors' `hard_player_simulator_dsv3.py` does it (start 30, the analysis's signed change added and
 * capped at 100, the S/A/B/C/F thresholds, their `Change:` and `Response:` parses), one opening per
 * group, the episode's end on goodbye or a score ≤ 0, the reward max(score / 100, 0); then two GRPO
 * steps through `grpo train` against a local OpenAI-compatible stub standing in for the simulator
 * LLM (no LLM can be had here).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';
import type { SimulatorCall } from '../../recipes/papers/rlver.js';

const root = new URL('../../', import.meta.url).pathname;
const recipePath = join(root, 'recipes/papers/rlver.ts');
const { runs, grpo } = inProcessCli('grpo-rlver-');

/** The stub simulator: a friend's reply of 6+ characters lifts the score by 10, a shorter one drops it by 15. */
function stubAnswer(prompt: string): string {
  if (prompt.includes('Answer in this format:\nContent:')) {
    const latest = prompt.split('Latest exchange:\n').at(-1)!;
    const friend = (JSON.parse(latest.slice(0, latest.lastIndexOf(']') + 1)) as { role: string; content: string }[])
      .filter((message) => message.role === 'friend')
      .at(-1)!.content;
    return `Content:\nsomething\nReason:\nit fits\nActivity:\nthinking\nAnalyse:\nfine\nChange:\n${friend.trim().length >= 6 ? '+10' : '-15'}`;
  }
  const ending = /Your emotion now is [SF]:/.test(prompt);
  return `Thinking:\nshort\nOrigin:\ndraft\nChange:\nshorter\nResponse:\n${ending ? 'Thanks. Goodbye.' : 'I failed my exam.'}`;
}

let server: Server;
let simulatorCalls = 0;
let recipe: typeof import('../../recipes/papers/rlver.js');

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      simulatorCalls++;
      const { messages } = JSON.parse(body) as { messages: { content: string }[] };
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({ choices: [{ message: { role: 'assistant', content: stubAnswer(messages[0]!.content) } }] }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  process.env.OPENAI_BASE_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  process.env.JUDGE_MODEL = 'simulator';
  // The recipe refuses to load without an endpoint, so it is imported once the stub is up.
  recipe = await import('../../recipes/papers/rlver.js');
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** A SimulatorCall that answers with `answer(prompt)` and counts calls by kind. */
function scripted(answer: (prompt: string) => string, counts: { analysis: number; reply: number }): SimulatorCall {
  return async (prompt, parse) => {
    counts[prompt.includes('Answer in this format:\nContent:') ? 'analysis' : 'reply']++;
    return parse(answer(prompt));
  };
}

describe('RLVER simulated user (recipes/papers/rlver.ts)', () => {
  it('maps scores to the authors’ states', () => {
    const states = [100, 99, 70, 69, 40, 39, 10, 9, -5].map((score) => recipe.emotionState(score));
    expect(states).toEqual(['S', 'A', 'A', 'B', 'B', 'C', 'C', 'F', 'F']);
  });

  it('parses the change and the reply as the authors do, and refuses an analysis without a number', () => {
    expect(recipe.parseChange('Content:\nx\nChange:\n+10')).toBe(10);
    expect(recipe.parseChange('Analyse:\nok\n**Change:**\n[-5]\n')).toBe(-5); // stars removed, brackets stripped
    expect(recipe.parseChange('Change：\n“15”')).toBe(15); // a full-width colon, curly quotes
    expect(recipe.parseChange('Change:\n情绪变化\n[-20]')).toBe(-20); // with 变化 the last line is read
    expect(() => recipe.parseChange('Change:\nquite a lot')).toThrow(/no integer after "Change:"/);
    expect(recipe.parseUserReply('Thinking:\na\nResponse:\n[“Hi there”]')).toBe('Hi there');
  });

  it('adds each change to the score from 30, caps it at 100 and never floors it', async () => {
    const changes = [50, 50, -300];
    const counts = { analysis: 0, reply: 0 };
    const user = new recipe.SimulatedUser(
      { persona: 'p', scene: 's' },
      scripted(
        (prompt) => (prompt.includes('Content:') ? `Change:\n${changes[counts.analysis - 1]}` : 'Response:\nhm'),
        counts,
      ),
    );
    expect(await user.open()).toBe('hm');
    const scores: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await user.respond('hello there');
      scores.push(user.score);
    }
    expect(scores).toEqual([80, 100, -200]);
    expect(counts).toEqual({ analysis: 3, reply: 4 }); // the opening is a reply call alone
  });

  it('opens once per group, ends on goodbye or a score ≤ 0, and rewards max(score / 100, 0)', async () => {
    const counts = { analysis: 0, reply: 0 };
    let change = 20;
    const factory = recipe.rlverEnvironment(
      scripted(
        (prompt) =>
          prompt.includes('Content:')
            ? `Change:\n${change}`
            : `Response:\n${/Your emotion now is S:/.test(prompt) ? 'Goodbye!' : 'so tired'}`,
        counts,
      ),
    );
    const row = { persona: 'p', scene: 's' };
    const environments = await Promise.all(
      [7, 7, 8].map((groupSeed, episodeIndex) => factory(row, { seed: episodeIndex, episodeIndex, groupSeed })),
    );
    const resets = await Promise.all(environments.map((environment) => environment.reset!()));
    expect(counts.reply).toBe(2); // groups 7 and 8 open once each
    expect(resets[0]).toEqual({ messages: [{ role: 'user', content: 'so tired' }] });

    const [first, second] = environments as [(typeof environments)[0], (typeof environments)[0]];
    expect(await first.respond!('I hear you')).toEqual({ observation: 'so tired', done: false }); // 50
    change = 50;
    expect(await first.respond!('that is rough')).toEqual({ observation: 'Goodbye!', done: true }); // 100: S
    expect(first.reward!({} as never)).toBe(1);
    change = -40;
    expect(await second.respond!('whatever')).toEqual({ observation: 'so tired', done: true }); // 30 − 40 ≤ 0
    expect(second.reward!({} as never)).toBe(0);
  });
});

describe('recipes/papers/rlver.ts through grpo train', () => {
  it('runs SFT and two GRPO steps of dialogues with the simulated user, the emotion reward logged', async () => {
    const before = simulatorCalls;
    await grpo(
      'train',
      recipePath,
      ...settingFlags({
        'model.hiddenSize': 32,
        'model.numLayers': 1,
        'model.numHeads': 2,
        'sft.steps': 10,
        'grpo.steps': 2,
        'grpo.promptsPerStep': 2,
        'sampling.maxNewTokens': 16,
        'agent.maxTurns': 3,
        'evaluation.examples': 1,
        'checkpoint.every': 0,
        'logging.runsDirectory': runs,
        'logging.runName': 'rlver',
      }),
    );
    const steps = grpoStepRecords(runs, 'rlver');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      const reward = step['reward/environment/mean'] as number;
      expect(reward).toBeGreaterThanOrEqual(0);
      expect(reward).toBeLessThanOrEqual(1);
    }
    // 2 steps × 2 groups open once each, and every answered reply costs an analysis and a reply call.
    expect(simulatorCalls - before).toBeGreaterThan(4);
    const samples = readFileSync(join(runs, 'rlver', 'samples.jsonl'), 'utf8');
    expect(samples).toContain('I failed my exam.');
  });
});
