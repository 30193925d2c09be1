/**
 * Property-based fuzzing of `grpo serve-rewards`' request handling (fast-check, fixed seed, bounded
 * runs): any JSON value as a body, and bodies shaped like OpenRLHF's and slime's with any field
 * replaced by any value (deep nesting and JSON held in label strings included), are either rows
 * that the grouping takes or a RequestError naming the field; and a few hundred arbitrary byte
 * strings and JSON bodies sent over HTTP to a server scoring math-answer are each answered with a
 * 4xx, a score, or slime's documented 500 for a failed reward naming it, never another 500.
 * The hand-written cases are reward-server.test.ts.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mathAnswer } from '../rewards/index.js';
import { groupByPrompt, parseRewardRequest, RequestError } from './reward-protocols.js';
import { MAX_JSON_DEPTH, startRewardServer, type RunningRewardServer } from './reward-server.js';

/** One seed for every property, so a failure replays (GRPO_FUZZ_SEED and GRPO_FUZZ_SCALE search further locally). */
const SEED = Number(process.env.GRPO_FUZZ_SEED ?? 36);
const runs = (count: number) => Math.round(count * Number(process.env.GRPO_FUZZ_SCALE ?? 1));
vi.setConfig({ testTimeout: runs(60_000) }); // a larger GRPO_FUZZ_SCALE gets proportionally longer

/** `1` wrapped in `depth` arrays (or objects), built without recursion. */
function nested(depth: number, object: boolean): unknown {
  let result: unknown = 1;
  for (let level = 0; level < depth; level++) result = object ? { a: result } : [result];
  return result;
}

/** The JSON text of `nested(depth, object)`, written directly: JSON.stringify itself overflows past a few thousand levels. */
const nestedText = (depth: number, object: boolean): string =>
  object ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`;

/**
 * Any JSON value, sometimes nested past the body's depth limit (as values, up to 1500 levels, which
 * the test itself can still serialise), sometimes written into a string (labels hold JSON text),
 * there nested up to 20,000 levels.
 */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 1500 }), fc.boolean()).map(([d, o]) => nested(d, o)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 20_000 }), fc.boolean())
      .map(([d, o]) => `{"answer": "1", "deep": ${nestedText(d, o)}}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
);

const message = fc.record({ role: fc.constantFrom('user', 'system', 'assistant'), content: fc.string() });
const prompt = fc.oneof(fc.string({ maxLength: 20 }), fc.array(message, { maxLength: 3 }), anyValue);
const label = fc.oneof(fc.constantFrom('1', '\\frac{1}{2}', '{1, 2}', '{"answer": "3"}'), fc.integer(), anyValue);

/** An OpenRLHF body: queries, prompts and labels, each list possibly of the wrong length or the wrong things. */
const openRlhfBody = fc.array(fc.tuple(fc.string({ maxLength: 30 }), prompt, label), { maxLength: 5 }).chain((rows) =>
  fc.record(
    {
      query: fc.oneof(fc.constant(rows.map(([query, p]) => (typeof p === 'string' ? p + query : query))), anyValue),
      prompts: fc.oneof(fc.constant(rows.map(([, p]) => p)), anyValue),
      labels: fc.oneof(fc.constant(rows.map(([, , l]) => l)), anyValue),
    },
    { requiredKeys: ['query'] },
  ),
);

const slimeBody = fc.record(
  { prompt, response: fc.oneof(fc.string({ maxLength: 30 }), anyValue), label },
  { requiredKeys: ['response'] },
);

const body = fc.oneof(openRlhfBody, slimeBody, anyValue, fc.dictionary(fc.string({ maxLength: 8 }), anyValue));

/** The request fields, one of which a refusal must name. */
const FIELD = /query|prompts|labels|"?prompt"?|"?response"?|"?label"?|the body|an empty object|the fields/;

describe('parseRewardRequest on any body', () => {
  it('gives rows the grouping takes, or a RequestError naming the field', () => {
    fc.assert(
      fc.property(body, (value) => {
        let rows;
        try {
          rows = parseRewardRequest(value, MAX_JSON_DEPTH).rows;
        } catch (error) {
          expect(error).toBeInstanceOf(RequestError);
          expect((error as Error).message).toMatch(FIELD);
          return;
        }
        for (const row of rows) {
          expect(typeof row.completion).toBe('string');
          expect(typeof row.columns === 'object' && row.columns !== null && !Array.isArray(row.columns)).toBe(true);
        }
        const { groups, rowOfSample } = groupByPrompt(rows);
        expect([...rowOfSample].sort((a, b) => a - b)).toEqual(rows.map((_, index) => index));
        expect(groups.flat().length).toBe(rows.length);
      }),
      {
        seed: SEED,
        numRuns: runs(1500),
        // Found by this property (seed 36): a label string holding JSON nested 10⁴ deep passed the
        // body's depth check (it is one string there), was parsed into columns, and the grouping's
        // JSON.stringify overflowed the stack: HTTP 500 "Maximum call stack size exceeded".
        examples: [[{ response: 'x', label: `{"answer": "1", "deep": ${nestedText(10_000, false)}}` }]],
      },
    );
  });
});

describe('serve-rewards over HTTP', () => {
  let server: RunningRewardServer;
  beforeAll(async () => {
    server = await startRewardServer({
      rewards: [{ name: 'math-answer', reward: mathAnswer(), weight: 1 }],
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 64 * 1024,
    });
  });
  afterAll(() => server.close());

  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.string({ unit: 'binary', maxLength: 64 }).map((text) => Buffer.from(text)),
    body.map((value) => Buffer.from(JSON.stringify(value) ?? 'null')),
    fc.nat(200_000).map((size) => Buffer.alloc(size, 0x5b)), // "[[[[…": over the depth or the byte limit
  );

  it('answers arbitrary bytes and bodies with a 4xx, a score, or a failed reward named', async () => {
    await fc.assert(
      fc.asyncProperty(bytes, fc.constantFrom('/', '/get_reward', '/nowhere'), async (payload, path) => {
        const response = await fetch(`${server.url}${path}`, { method: 'POST', body: payload });
        const text = await response.text();
        if (response.status === 200) {
          const parsed = JSON.parse(text.replace(/\bNaN\b/g, 'null')) as unknown;
          if (typeof parsed === 'number') expect(parsed >= 0 && parsed <= 1).toBe(true);
          else expect(parsed).toHaveProperty('rewards');
          return;
        }
        const error = (JSON.parse(text) as { error: string }).error;
        if (response.status === 500)
          expect(error).toMatch(/^reward failed: math-answer /); // slime's failed reward
        else expect([400, 404, 413]).toContain(response.status);
      }),
      { seed: SEED, numRuns: runs(300) },
    );
    // Still serving.
    const response = await fetch(`${server.url}/get_reward`, {
      method: 'POST',
      body: JSON.stringify({ response: '\\boxed{2}', label: '2' }),
    });
    expect(await response.text()).toBe('1');
  });
});
