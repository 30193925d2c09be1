/**
 * Property-based fuzzing of the math checker (fast-check, fixed seed, bounded runs): arbitrary
 * strings and LaTeX-shaped ones (nested braces, `\frac`, `\boxed`, `\binom`, sets, long digit
 * runs, unclosed groups, pieces repeated thousands of times) as completions and gold answers give
 * `math-answer` a score in [0, 1] without throwing, and every comparison stays within the declared
 * bounds: an answer past `ANSWER_LIMITS` is refused before any parsing (no comparison made), and
 * within them the work counters stay under `VERIFY_BUDGET` and no parser sees more than the
 * longest answer allowed. Work is counted, never timed. The hand-written cases are bounds.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { answersMatch, extractFinalAnswer, mathAnswer } from '../math.js';
import { makeRewardInput } from '../types.js';
import { ANSWER_LIMITS, answerRefusal, lastVerifyWork, VERIFY_BUDGET } from './limits.js';

/** One seed for every property, so a failure replays (GRPO_FUZZ_SEED and GRPO_FUZZ_SCALE search further locally). */
const SEED = Number(process.env.GRPO_FUZZ_SEED ?? 36);
const runs = (count: number) => Math.round(count * Number(process.env.GRPO_FUZZ_SCALE ?? 1));
vi.setConfig({ testTimeout: runs(60_000) }); // a larger GRPO_FUZZ_SCALE gets proportionally longer

/** A run of digits, sometimes far past the digit bound. */
const digits = fc.oneof(
  fc.nat(1000).map(String),
  fc.integer({ min: 1, max: 400 }).chain((length) => fc.stringMatching(new RegExp(`^[1-9][0-9]{${length - 1}}$`))),
);
const atom = fc.oneof(
  digits,
  fc.constantFrom('x', 'y', 'n', '\\pi', 'e', 'i', '\\infty', '0.5', '-3', '3,75', '50\\%', '\\sqrt{2}'),
  fc.string({ maxLength: 6 }),
);

/** LaTeX-shaped text: the constructs the normaliser and parsers handle, nested. */
const { latex } = fc.letrec<{ latex: string }>((tie) => ({
  latex: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    fc.tuple(tie('latex'), tie('latex')).map(([a, b]) => `\\frac{${a}}{${b}}`),
    fc.tuple(tie('latex'), tie('latex')).map(([a, b]) => `\\dfrac${a}${b}`),
    fc.tuple(tie('latex'), tie('latex')).map(([a, b]) => `\\binom{${a}}{${b}}`),
    tie('latex').map((a) => `\\boxed{${a}}`),
    tie('latex').map((a) => `\\sqrt{${a}}`),
    tie('latex').map((a) => `\\text{${a}}`),
    tie('latex').map((a) => `\\left(${a}\\right)`),
    tie('latex').map((a) => `{${a}}`),
    fc
      .tuple(tie('latex'), fc.constantFrom('+', '-', '\\cdot', '^', '=', '\\le', ',', '\\cup', '!'), tie('latex'))
      .map(([a, op, b]) => `${a}${op}${b}`),
    fc.array(tie('latex'), { maxLength: 6 }).map((parts) => `\\{${parts.join(',')}\\}`),
    fc.array(tie('latex'), { maxLength: 6 }).map((parts) => `(${parts.join(',')}]`),
    fc.constantFrom('{', '}', '\\boxed{', '\\frac{', '$', '\\(', '\\[', '\\]', '\\'), // unbalanced pieces
  ),
}));

/** Past the bounds: a piece repeated or nested up to thousands of times. */
const hostile = fc.oneof(
  fc.tuple(latex, fc.integer({ min: 2, max: 5000 })).map(([piece, times]) => piece.repeat(times).slice(0, 200_000)),
  fc
    .tuple(
      fc.constantFrom('{', '(', '[', '\\{', '\\boxed{', '\\frac{1}{', '\\sqrt{'),
      fc.integer({ min: 1, max: 5000 }),
      atom,
      fc.boolean(),
    )
    .map(([open, depth, inside, closed]) => {
      const close = open === '(' ? ')' : open === '[' ? ']' : open === '\\{' ? '\\}' : '}';
      return open.repeat(depth) + inside + (closed ? close.repeat(depth) : '');
    }),
);
const answer = fc.oneof({ weight: 4, arbitrary: latex }, hostile, fc.string({ unit: 'binary', maxLength: 200 }));
const completion = fc.oneof(
  answer,
  fc.tuple(fc.string({ maxLength: 30 }), answer).map(([text, a]) => `${text} \\boxed{${a}}`),
  answer.map((a) => `The answer is $${a}$.`),
  answer.map((a) => `#### ${a}`),
);

/**
 * The costliest shape within the bounds: unordered sets (nested up to three levels) of elements only
 * the Compute Engine reads, against the same sets reversed with each element written another way,
 * so nothing pairs by text and every element is compared with every other.
 */
const hardElement = fc
  .tuple(fc.integer({ min: 2, max: 9 }), fc.integer({ min: 1, max: 6 }))
  .map(([base, power]) => [`\\log_{${base}} ${base ** power}`, `${power}`] as const);
const { hardSet } = fc.letrec<{ hardSet: readonly [string, string] }>((tie) => ({
  hardSet: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    hardElement,
    fc.array(tie('hardSet'), { minLength: 2, maxLength: 16 }).map((elements) => {
      const predicted = elements.map(([p]) => p);
      const gold = elements.map(([, g]) => g).reverse();
      return [`\\{${predicted.join(',')}\\}`, `\\{${gold.join(',')}\\}`] as const;
    }),
  ),
}));

describe('math-answer on any completion and gold', () => {
  it('scores in [0, 1] and never throws', async () => {
    const reward = mathAnswer();
    await fc.assert(
      fc.asyncProperty(completion, answer, async (text, gold) => {
        const score = await reward(makeRewardInput({ completion: text, row: { answer: gold } }));
        expect(score === 0 || score === 1).toBe(true);
      }),
      { seed: SEED, numRuns: runs(400) },
    );
  });

  it('extracts an answer from any completion, or none, without throwing', () => {
    fc.assert(
      fc.property(completion, (text) => {
        const extracted = extractFinalAnswer(text);
        if (extracted !== null) expect(typeof extracted.answer).toBe('string');
      }),
      { seed: SEED, numRuns: runs(400) },
    );
  });
});

describe('answersMatch stays within the declared bounds', () => {
  it('refuses an answer past ANSWER_LIMITS before any comparison; within them the work is under VERIFY_BUDGET', () => {
    let compared = 0;
    fc.assert(
      fc.property(answer, answer, (predicted, gold) => {
        const verdict = answersMatch(predicted, gold);
        const work = lastVerifyWork();
        if (answerRefusal(predicted) !== null || answerRefusal(gold) !== null) {
          expect(verdict).toBe(false);
          expect(work).toEqual({ comparisons: 0, engineCalls: 0, longestParsed: 0 });
          return;
        }
        if (work.comparisons > 0) compared++;
        expect(work.comparisons).toBeLessThanOrEqual(VERIFY_BUDGET.comparisons);
        expect(work.engineCalls).toBeLessThanOrEqual(VERIFY_BUDGET.engineCalls);
        expect(work.longestParsed).toBeLessThanOrEqual(ANSWER_LIMITS.characters);
      }),
      { seed: SEED, numRuns: runs(400) },
    );
    expect(compared).toBeGreaterThan(runs(100)); // most pairs are compared, not only refused
  });

  it('sets of engine-only elements against their reverse: the work stops at VERIFY_BUDGET', () => {
    fc.assert(
      fc.property(hardSet, ([predicted, gold]) => {
        answersMatch(predicted, gold);
        const work = lastVerifyWork();
        expect(work.comparisons).toBeLessThanOrEqual(VERIFY_BUDGET.comparisons);
        expect(work.engineCalls).toBeLessThanOrEqual(VERIFY_BUDGET.engineCalls);
      }),
      // Found while writing this property: a 16-element set of \log values against its reverse made
      // 136 engine calls (0.7 s; an integral costs ~60 ms a call), three nested levels 566 comparisons.
      { seed: SEED, numRuns: runs(60) },
    );
  });

  it('an answer compared with itself stays within the budget too (the longest path: everything pairs up)', () => {
    fc.assert(
      fc.property(latex, (text) => {
        answersMatch(text, text);
        const work = lastVerifyWork();
        expect(work.comparisons).toBeLessThanOrEqual(VERIFY_BUDGET.comparisons);
        expect(work.engineCalls).toBeLessThanOrEqual(VERIFY_BUDGET.engineCalls);
      }),
      { seed: SEED, numRuns: runs(300) },
    );
  });
});
