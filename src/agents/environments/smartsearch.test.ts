/**
 * Tests of SmartSearch's Dual-Level Credit Assessment (arXiv 2601.04888 Eq. 8–11) on real
 * `searchTool` results: novelty by document overlap against every earlier call with threshold K,
 * usefulness from the given check, S_t = novel ∧ useful; failed calls score 0, other tools null.
 */
import { describe, expect, it } from 'vitest';
import { searchTool } from '../tools/search.js';
import type { ToolCallRecord } from '../types.js';
import {
  queryNovelty,
  searchResultDocuments,
  smartSearchEnvironment,
  type SmartSearchEnvironmentOptions,
} from './smartsearch.js';

const documents = [
  { title: 'Kevin McCarthy (actor)', text: 'Kevin McCarthy the actor was born in 1914.' },
  { title: 'Kevin McCarthy (politician)', text: 'Kevin McCarthy the politician was born in 1965.' },
  { title: 'An Annapolis Story', text: 'An Annapolis Story stars John Derek and Kevin McCarthy.' },
];
const search = searchTool({ documents, topK: 1 });
const signal = new AbortController().signal;

/** A recorded call of the search tool with its real result. */
function call(query: string, turn: number, name = 'search'): ToolCallRecord {
  const result = name === 'search' ? String(search.run({ query }, { signal })) : 'ok';
  return { name, arguments: { query }, turn, result, milliseconds: 0 };
}

/** Useful when the result holds the row's supporting document (a rule standing in for LLM_eval). */
const usefulWhenSupported: SmartSearchEnvironmentOptions['usefulness'] = ({ call: scored, row }) =>
  scored.result.includes(String(row.support));

async function scores(
  calls: ToolCallRecord[],
  overlapThreshold = 0,
  usefulness: SmartSearchEnvironmentOptions['usefulness'] = usefulWhenSupported,
) {
  const factory = smartSearchEnvironment({ search, overlapThreshold, usefulness });
  const environment = await factory({ support: 'born in 1914' }, { seed: 0, episodeIndex: 0 });
  return environment.scoreToolCalls!(calls);
}

describe('searchResultDocuments', () => {
  it('splits a searchTool result into documents without their rank, and a miss into none', () => {
    const two = String(searchTool({ documents, topK: 2 }).run({ query: 'Kevin McCarthy actor' }, { signal }));
    expect(searchResultDocuments(two)).toEqual([
      'Kevin McCarthy (actor)\nKevin McCarthy the actor was born in 1914.',
      'Kevin McCarthy (politician)\nKevin McCarthy the politician was born in 1965.',
    ]);
    expect(searchResultDocuments('No documents match "zebra".')).toEqual([]);
  });
});

describe('queryNovelty (Eq. 8–9)', () => {
  it('counts documents seen in any earlier call against K', () => {
    const seen = new Set(['a', 'b']);
    expect(queryNovelty(['c', 'd'], seen, 0)).toBe(true); // O = 0 ≤ 0
    expect(queryNovelty(['a', 'c'], seen, 0)).toBe(false); // O = 1 > 0
    expect(queryNovelty(['a', 'c'], seen, 1)).toBe(true); // O = 1 ≤ 1
    expect(queryNovelty(['a', 'b'], seen, 1)).toBe(false); // O = 2 > 1
  });
});

describe('smartSearchEnvironment.scoreToolCalls (Eq. 11)', () => {
  it("scores the paper's Table 5 pair: the cast search useful (1), the ambiguous birthdate search not (0)", async () => {
    const usefulForIntent = ({ call: scored }: { call: ToolCallRecord }) =>
      scored.arguments.query === 'An Annapolis Story stars' ? true : scored.result.includes('born in 1914');
    expect(
      await scores([call('An Annapolis Story stars', 0), call('birthdate politician McCarthy', 1)], 0, usefulForIntent),
    ).toEqual([1, 0]);
  });

  it('scores a repeated search 0 (redundant: its document was retrieved before), whatever its usefulness', async () => {
    let asked = 0;
    const always = () => {
      asked++;
      return 1;
    };
    expect(await scores([call('actor 1914', 0), call('actor 1914', 1), call('Annapolis', 2)], 0, always)).toEqual([
      1, 0, 1,
    ]);
    expect(asked).toBe(2); // the redundant call is not sent to the usefulness check
    // With K = 1 one repeated document is allowed.
    expect(await scores([call('actor 1914', 0), call('actor 1914', 1)], 1, always)).toEqual([1, 1]);
  });

  it('scores a failed search 0, leaves other tools unscored and hands the check the history so far', async () => {
    const histories: number[] = [];
    const failed = { ...call('x', 1), error: 'timeout' };
    const result = await scores(
      [call('actor', 0), failed, call('1+1', 2, 'calculator'), call('Annapolis', 3)],
      0,
      ({ history }) => {
        histories.push(history.length);
        return true;
      },
    );
    expect(result).toEqual([1, 0, null, 1]);
    expect(histories).toEqual([1, 3]);
  });

  it('refuses a K that is not a whole number ≥ 0 and a usefulness that is not 0/1', async () => {
    expect(() => smartSearchEnvironment({ search, overlapThreshold: -1, usefulness: () => 1 })).toThrow(
      /overlapThreshold/,
    );
    await expect(scores([call('actor', 0)], 0, () => 0.5)).rejects.toThrow(/usefulness must be 0 or 1/);
  });
});
