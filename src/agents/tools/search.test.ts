/**
 * Tests of the BM25 search tool: ranking on a small corpus (rare terms outweigh common ones), k,
 * cutting, no match, a JSONL corpus with errors naming the line.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSearchDocuments, searchTool } from './search.js';

const signal = new AbortController().signal;
const documents = [
  { title: 'Paris', text: 'Paris is the capital of France. The city is on the Seine.' },
  { title: 'Lyon', text: 'Lyon is a city in France, known for its food.' },
  { title: 'Berlin', text: 'Berlin is the capital of Germany. The city is on the Spree.' },
  { title: 'Seine', text: 'The Seine is a river in France that flows through Paris.' },
];

describe('searchTool', () => {
  it('ranks by BM25: the rare term decides', async () => {
    const tool = searchTool({ documents, topK: 2 });
    // "Germany" occurs once in the collection, "capital" twice: Berlin first.
    const text = (await tool.run({ query: 'capital Germany' }, { signal })) as string;
    expect(text.split('\n\n').map((block) => block.split('\n')[0])).toEqual(['[1] Berlin', '[2] Paris']);
    expect(await tool.run({ query: 'river Seine', k: 1 }, { signal })).toBe(
      '[1] Seine\nThe Seine is a river in France that flows through Paris.',
    );
  });
  it('says when nothing matches, cuts long texts, checks arguments', async () => {
    const tool = searchTool({ documents, maxCharactersPerDocument: 12 });
    expect(await tool.run({ query: 'volcano' }, { signal })).toBe('No documents match "volcano".');
    expect(await tool.run({ query: 'food', k: 1 }, { signal })).toBe('[1] Lyon\nLyon is a ci…');
    expect(() => tool.run({ query: 'x', k: 50 }, { signal })).toThrow(/k/);
    expect(() => searchTool({ documents: [] })).toThrow(/empty/);
  });
  it('reads a JSONL corpus; a bad line is named', () => {
    const folder = mkdtempSync(join(tmpdir(), 'search-'));
    const good = join(folder, 'good.jsonl');
    writeFileSync(good, '{"id": "a", "title": "A", "text": "alpha"}\n\n{"text": "beta"}\n');
    expect(readSearchDocuments(good)).toEqual([
      { id: 'a', title: 'A', text: 'alpha' },
      { id: undefined, title: undefined, text: 'beta' },
    ]);
    const bad = join(folder, 'bad.jsonl');
    writeFileSync(bad, '{"text": "ok"}\n{"title": "no text"}\n');
    expect(() => readSearchDocuments(bad)).toThrow(/bad\.jsonl:2: a document needs a string "text" field/);
  });
});
