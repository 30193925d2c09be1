/**
 * Table-driven tests of relations as Math-Verify reads them (`relations.ts` through `answersMatch`):
 * spellings, converse signs, constant factors, `\approx` and `=` chains, the gold/prediction
 * asymmetry, and inequalities against intervals. Each row says why it scores what it scores.
 */
import { describe, expect, it } from 'vitest';
import { answersMatch } from '../math.js';
import { parseRelation, relationAsInterval } from './relations.js';

describe('relations compare as Math-Verify compares them', () => {
  // [prediction, gold, verdict, why]
  const cases: Array<[string, string, boolean, string]> = [
    ['x \\geq 5', 'x >= 5', true, '\\geq and >= are one sign'],
    ['x \\ge 5', 'x ≥ 5', true, '\\ge and ≥ too'],
    ['x \\neq 3', 'x != 3', true, '\\neq and != are one sign'],
    ['x \\lt 3', 'x < 3', true, '\\lt is <'],
    ['5 \\geq x', 'x \\leq 5', true, 'swapped sides with the converse sign'],
    ['-x > -1', 'x < 1', true, 'lhs − rhs times −1 with the converse sign'],
    ['-x < -1', 'x < 1', false, 'times −1 with the same sign is the other half-line'],
    ['2x < 2', 'x < 1', true, 'a positive factor keeps the sign'],
    ['x > -1', 'x < 1', false, 'a different boundary'],
    ['y=-\\frac{1}{2}x+\\frac{3}{4}', '2x+4y-3=0', true, 'an equation rearranged and scaled by 4'],
    ['-34x-45y+20z-100=0', '34x+45y-20z+100=0', true, 'an equation scaled by −1'],
    ['x^2 = 4', 'x = 2', false, 'not a constant factor: x² − 4 is not c·(x − 2)'],
    ['x = 5+5+1 = 7 = 11', 'x = 11', true, 'an assignment chain is its first name and last value'],
    ['11a+c', '7 = 11a+c', false, 'a value is not an equation that is not an assignment'],
    ['0', 'a + 3z = 0', false, 'the right-hand side of a gold equation is not its answer'],
    ['x = 1', 'y = 1', false, 'assignments to different names'],
    ['x = 1/3 \\approx 0.33', '1/3', true, 'after a value, \\approx and its approximation are dropped'],
    ['x \\approx 11', '11', true, 'after a bare name, \\approx assigns'],
    ['x \\in [-2,7]', '-2 \\le x \\le 7', true, 'a predicted interval equals the gold inequality it describes'],
    ['-2 \\le x \\le 7', 'x \\in [-2,7]', false, 'a predicted inequality against a gold interval only when allowed'],
    ['(-\\infty, 3)', 'x < 3', true, 'a half-line'],
    ['(-\\infty, 3]', 'x < 3', false, 'closed is not open'],
  ];
  it.each(cases)('%j vs gold %j → %s (%s)', (predicted, gold, verdict) => {
    expect(answersMatch(predicted, gold)).toBe(verdict);
  });

  it('allowSetRelationComparison lets a predicted inequality equal a gold interval', () => {
    expect(answersMatch('-2 \\le x \\le 7', 'x \\in [-2,7]', { allowSetRelationComparison: true })).toBe(true);
    expect(answersMatch('-2 < x \\le 7', 'x \\in [-2,7]', { allowSetRelationComparison: true })).toBe(false); // open end
  });
});

describe('parseRelation and relationAsInterval', () => {
  it('splits at top-level signs only, and a list is no relation', () => {
    expect(parseRelation('f(x \\leq 1) < 2')).toEqual({ parts: ['f(x \\leq 1)', '2'], signs: ['<'] });
    expect(parseRelation('x = 1, y = 2')).toBeNull(); // a list of assignments
    expect(parseRelation('\\left( 1, 2 \\right)')).toBeNull(); // no sign at all
  });
  it('reads one-variable inequalities as intervals', () => {
    expect(relationAsInterval(parseRelation('7 \\geq x > -2')!)).toBe('(-2,7]');
    expect(relationAsInterval(parseRelation('x \\geq 5')!)).toBe('[5,\\infty)');
    expect(relationAsInterval(parseRelation('x = 5')!)).toBeNull(); // an equation is not an interval
  });
});
