/**
 * MatchTIR's per-call rewards against hand-computed values of the authors' `tool_similarity` and
 * greedy assignment (quchangle1/MatchTIR, Code/verl/utils/reward_score/tool.py), and the environment's
 * reading of the row's reference calls.
 */
import { describe, expect, it } from 'vitest';
import { callSimilarity, matchCallRewards, matchedCallsEnvironment } from './matched-calls.js';

const weather = { name: 'weather', parameters: { city: 'Oslo', unit: 'C' } };

describe('callSimilarity', () => {
  it.each([
    [{ name: 'weather', arguments: { city: 'Oslo', unit: 'C' } }, 1], // (1 + 1 + 2)/4
    [{ name: 'Weather', arguments: { city: 'Oslo', unit: 'C' } }, 1], // names compare case-insensitively
    [{ name: 'weather', arguments: { city: 'Bergen', unit: 'C' } }, 0.75], // (1 + 1 + 1)/4
    [{ name: 'weather', arguments: { city: 'Oslo' } }, (1 + 0.5 + 1) / 4], // keys overlap 1/2
    [{ name: 'weather', arguments: { city: 'Oslo', extra: 1 } }, (1 + 1 / 3 + 1) / 4], // keys {city} of 3 distinct
    [{ name: 'search', arguments: { city: 'Oslo', unit: 'C' } }, 0], // another tool: nothing
  ])('%j → %f', (call, expected) => expect(callSimilarity(call, weather)).toBeCloseTo(expected, 10));
  it('compares values as JSON (objects deeply), and a reference without parameters', () => {
    const nested = { name: 'f', parameters: { range: { from: 1, to: 2 } } };
    expect(callSimilarity({ name: 'f', arguments: { range: { to: 2, from: 1 } } }, nested)).toBe(1);
    expect(callSimilarity({ name: 'f', arguments: { range: { from: 1 } } }, nested)).toBeCloseTo(2 / 3, 10);
    expect(callSimilarity({ name: 'f', arguments: {} }, { name: 'f' })).toBe(1); // (1 + 1)/2: equal empty key lists
  });
});

describe('matchCallRewards', () => {
  it('assigns greedily by falling similarity; a call left over or matching nothing gets 0', () => {
    const references = [weather, { name: 'search', parameters: { query: 'fjords' } }];
    const calls = [
      { name: 'weather', arguments: { city: 'Bergen', unit: 'C' } }, // 0.75 to weather, taken second…
      { name: 'weather', arguments: { city: 'Oslo', unit: 'C' } }, // 1: takes weather first
      { name: 'search', arguments: { query: 'fjords' } }, // 1: takes search
      { name: 'search', arguments: { query: 'fjords' } }, // a duplicate: no reference left
      { name: 'calendar', arguments: {} }, // no reference of that name
    ];
    expect(matchCallRewards(calls, references)).toEqual([0, 1, 1, 0, 0]); // …so the first gets nothing
    expect(matchCallRewards([], references)).toEqual([]);
    expect(matchCallRewards(calls.slice(0, 1), [])).toEqual([0]);
  });
  it('ties go to the earlier call', () => {
    const same = { name: 'weather', arguments: { city: 'Oslo', unit: 'C' } };
    expect(matchCallRewards([same, same], [weather])).toEqual([1, 0]);
  });
});

describe('matchedCallsEnvironment', () => {
  it('reads the reference calls from the row (an array or its JSON text) and scores the calls', async () => {
    const factory = matchedCallsEnvironment({ tools: [] });
    const call = { name: 'weather', arguments: { city: 'Oslo', unit: 'C' }, turn: 0, result: '', milliseconds: 0 };
    for (const toolCalls of [[weather], JSON.stringify([weather])]) {
      const environment = await factory({ toolCalls }, { seed: 0, episodeIndex: 0 });
      expect(await environment.scoreToolCalls!([call])).toEqual([1]);
    }
    expect(() => factory({ calls: [weather] }, { seed: 0, episodeIndex: 0 })).toThrow(/column "toolCalls" must hold/);
    expect(() => factory({ toolCalls: '[{' }, { seed: 0, episodeIndex: 0 })).toThrow(/not valid JSON/);
    expect(() => factory({ toolCalls: [{ nam: 'x' }] }, { seed: 0, episodeIndex: 0 })).toThrow(/must hold an array/);
  });
});
