/**
 * Issue 36's hostile answers for math-answer, as regression tests: each scores 0 without throwing
 * (no stack overflow), and each is stopped by a declared bound before any parsing, so the work is
 * bounded by construction. No wall-clock assertion (a busy machine makes those flaky): the timings
 * are printed by `npm run bench -- math-verify`.
 */
import { describe, expect, it } from 'vitest';
import { answersMatch, extractBoxed, extractFinalAnswer, mathAnswer, normaliseAnswer } from '../math.js';
import { makeRewardInput } from '../types.js';
import { ANSWER_LIMITS, answerRefusal, lastVerifyWork, VERIFY_BUDGET } from './limits.js';

const score = (completion: string, answer: string) => mathAnswer()(makeRewardInput({ completion, row: { answer } }));

/** `\binom{\binom{…}{2}}{2}` nested `levels` deep around 2. */
function nestedBinomial(levels: number): string {
  let text = '2';
  for (let level = 0; level < levels; level++) text = `\\binom{${text}}{2}`;
  return text;
}

describe('hostile answers are refused by a declared bound before parsing', () => {
  it('a 10^5-digit and a 10^6-digit number: refused by length (and past 100 digits by the digit bound)', async () => {
    const long = '7'.repeat(100_000);
    expect(await score(`\\boxed{${long}}`, long)).toBe(0);
    expect(await score(`The answer is ${'7'.repeat(1_000_000)}`, '7'.repeat(1_000_000))).toBe(0);
    expect(answerRefusal(long)).toBe(`longer than ${ANSWER_LIMITS.characters} characters`);
    expect(answerRefusal('7'.repeat(ANSWER_LIMITS.digits + 1))).toBe(
      `a number of more than ${ANSWER_LIMITS.digits} digits`,
    );
    expect(answersMatch('7'.repeat(ANSWER_LIMITS.digits), '7'.repeat(ANSWER_LIMITS.digits))).toBe(true); // at the bound it still counts
  });

  it('`\\boxed{` 2·10^4 times, unclosed: no box at all (braces are paired in one pass)', async () => {
    const text = '\\boxed{'.repeat(20_000);
    expect(extractBoxed(text)).toBeNull();
    expect(extractFinalAnswer(text)).toBeNull();
    expect(await score(text, '1')).toBe(0);
  });

  it('`\\text{a}` 10^5 times in a box: the box is found, and refused by length', async () => {
    const answer = '\\text{a}'.repeat(100_000);
    expect(extractFinalAnswer(`\\boxed{${answer}}`)?.answer).toBe(answer);
    expect(answerRefusal(answer)).toBe(`longer than ${ANSWER_LIMITS.characters} characters`);
    expect(await score(`\\boxed{${answer}}`, 'a')).toBe(0);
  });

  it('a 2000-element set against a reordered gold: refused by length; a 200-element one is compared', async () => {
    const elements = (count: number) => Array.from({ length: count }, (_, index) => index + 1);
    const set = (values: number[]) => `\\{${values.join(',')}\\}`;
    expect(await score(`\\boxed{${set(elements(2000))}}`, set(elements(2000).reverse()))).toBe(0);
    expect(answerRefusal(set(elements(2000)))).toBe(`longer than ${ANSWER_LIMITS.characters} characters`);
    expect(answerRefusal(`${'-'.repeat(ANSWER_LIMITS.terms + 1)}1`)).toBe(`more than ${ANSWER_LIMITS.terms} terms`);
    // Within the bounds a reordered set still verifies: equal elements pair up by text in one pass.
    expect(await score(`\\boxed{${set(elements(200))}}`, set(elements(200).reverse()))).toBe(1);
  });

  it('a gold label nested 10^5 deep: refused by depth, no stack overflow', async () => {
    const label = `${'{'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    expect(await score('\\boxed{1}', label)).toBe(0);
    const deep = `${'('.repeat(ANSWER_LIMITS.depth + 1)}1${')'.repeat(ANSWER_LIMITS.depth + 1)}`;
    expect(answerRefusal(deep)).toBe(`nested deeper than ${ANSWER_LIMITS.depth}`);
  });

  it('a 185-character `\\binom` nested 16 levels: within the bounds, read without expanding', async () => {
    const binomial = nestedBinomial(16);
    expect(`\\boxed{${binomial}}`.length).toBe(185);
    expect(answerRefusal(binomial)).toBeNull();
    // \binom is evaluated as it is read, not rewritten as factorials (which tripled the text per level: 3^16 copies).
    expect(normaliseAnswer(binomial).text.length).toBeLessThanOrEqual(binomial.length);
    expect(await score(`\\boxed{${binomial}}`, '1')).toBe(0);
    expect(await score('\\boxed{\\binom{\\binom{4}{2}}{2}}', '15')).toBe(1); // C(C(4,2), 2) = C(6, 2): nesting still evaluates
  });

  it('a 16-element set of \\log values against its reverse: the engine stops at VERIFY_BUDGET (it made 136 calls)', () => {
    const powers = Array.from({ length: 16 }, (_, index) => index + 1);
    const predicted = `\\{${powers.map((power) => `\\log_{2} ${2 ** power}`).join(',')}\\}`;
    const gold = `\\{${[...powers].reverse().join(',')}\\}`;
    expect(answerRefusal(predicted)).toBeNull(); // within the size bounds: only the budget stops it
    expect(answersMatch(predicted, gold)).toBe(false);
    expect(lastVerifyWork().engineCalls).toBe(VERIFY_BUDGET.engineCalls);
    // A real-sized one still verifies: three elements pair within six engine calls.
    expect(answersMatch('\\{\\log_{2} 8,\\log_{3} 9,\\log_{5} 125\\}', '\\{3,2,3\\}')).toBe(true);
    expect(lastVerifyWork().engineCalls).toBeLessThanOrEqual(6);
  });
});
