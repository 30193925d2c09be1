/**
 * The built-in search tool: BM25 full-text search (MiniSearch's BM25+, k1 = 1.2, b = 0.7, δ = 0.5)
 * over a local document collection, returning the top documents' titles and text.
 *
 * Is: an in-memory index built once when the tool is created, shared by every episode that uses the
 * tool (read-only, so sharing is safe); documents from code or from a JSONL file of
 * `{ "id"?, "title"?, "text" }` rows. Is not: a web search, a vector index or a reranker.
 */
import { readFileSync } from 'node:fs';
import MiniSearch from 'minisearch';
import { z } from 'zod';
import type { Tool } from '../types.js';

/** One document of the collection. */
export interface SearchDocument {
  id?: string | number;
  title?: string;
  text: string;
}

/** Options of {@link searchTool}. */
export interface SearchToolOptions {
  documents: readonly SearchDocument[];
  /** The name the model calls (default 'search'). */
  name?: string;
  /** Documents returned when the model does not say (default 3), and the most it may ask for (10). */
  topK?: number;
  /** Each document's text is cut to this many characters in the observation (default 500). */
  maxCharactersPerDocument?: number;
  /** Fuzzy matching: allowed edit distance as a fraction of the term length (default 0: exact terms). */
  fuzzy?: number;
  /** Per-call limit in milliseconds (default 2000). */
  timeoutMs?: number;
}

/**
 * Reads a JSONL corpus: one `{ "id"?, "title"?, "text" }` object per line; errors name the file and line.
 */
export function readSearchDocuments(path: string): SearchDocument[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const documents: SearchDocument[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (error) {
      throw new Error(`${path}:${index + 1}: not JSON (${(error as Error).message})`);
    }
    const text = (row as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') throw new Error(`${path}:${index + 1}: a document needs a string "text" field`);
    const { id, title } = row as { id?: unknown; title?: unknown };
    documents.push({
      id: typeof id === 'string' || typeof id === 'number' ? id : undefined,
      title: typeof title === 'string' ? title : undefined,
      text,
    });
  });
  return documents;
}

/**
 * A search tool over `documents`: `{"query": "capital of France", "k": 2}` → the two best documents,
 * numbered, each "[n] title\ntext". No match is an ordinary observation ("No documents match ...").
 * @example environment.tools = [searchTool({ documents: readSearchDocuments('corpus.jsonl') })]
 */
export function searchTool({
  documents,
  name = 'search',
  topK = 3,
  maxCharactersPerDocument = 500,
  fuzzy = 0,
  timeoutMs = 2000,
}: SearchToolOptions): Tool {
  if (documents.length === 0) throw new Error('searchTool: the document collection is empty.');
  if (!Number.isInteger(topK) || topK < 1 || topK > 10) throw new Error(`searchTool: topK must be 1–10, got ${topK}.`);
  const index = new MiniSearch<{ position: number; title: string; text: string }>({
    fields: ['title', 'text'],
    storeFields: ['position'],
    idField: 'position',
  });
  index.addAll(documents.map((document, position) => ({ position, title: document.title ?? '', text: document.text })));
  const parameters = z.object({
    query: z.string().min(1).max(500).describe('what to look for, in keywords'),
    k: z.number().int().min(1).max(10).optional().describe(`how many documents to return (default ${topK})`),
  });
  return {
    name,
    description: `Searches a collection of ${documents.length} documents by keywords (BM25) and returns the best matches.`,
    parameters,
    timeoutMs,
    run(args) {
      const { query, k = topK } = parameters.parse(args);
      const hits = index.search(query, { fuzzy: fuzzy > 0 ? fuzzy : false, prefix: false, combineWith: 'OR' });
      if (hits.length === 0) return `No documents match "${query}".`;
      return hits
        .slice(0, k)
        .map((hit, rank) => {
          const document = documents[hit.id as number];
          const text =
            document.text.length > maxCharactersPerDocument
              ? `${document.text.slice(0, maxCharactersPerDocument)}…`
              : document.text;
          return `[${rank + 1}] ${document.title ?? `document ${document.id ?? (hit.id as number) + 1}`}\n${text}`;
        })
        .join('\n\n');
    },
  };
}
