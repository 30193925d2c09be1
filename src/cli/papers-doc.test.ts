/**
 * docs/papers.md against the paper list (`../shared/docs/papers.tsv`) and the registries: one row per
 * paper id in the list's order, its short name, a status of `works`, `partial: …` or `not built: …`,
 * the counts table equal to the rows, and every part, option, config field, reward, preset and file a
 * row names existing (the names `grpo list` prints). Is not: a run of the commands (the tests named
 * in the page do that).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  advantageEstimators,
  groupFilters,
  klEstimators,
  lossAggregations,
  policyLosses,
  promptSelectors,
  turnCreditEstimators,
} from '../algorithms/index.js';
import { trainerConfigSchema } from '../config/config.js';
import { type FlowRunOptions, defaultFlowRunOptions, validateFlowRunOptions } from '../flow/flow-run.js';
import { flowRlFields } from '../flow/recipe.js';
import { rewardFactories } from '../rewards/index.js';
import { presetNames } from '../trainer/index.js';
import { sharedDirectory } from '../../test/helpers/fixtures.js';

const root = new URL('../../', import.meta.url).pathname;
const papersDoc = readFileSync(join(root, 'docs/papers.md'), 'utf8');
const papersList = readFileSync(join(sharedDirectory, 'docs/papers.tsv'), 'utf8');

interface Paper {
  id: number;
  shortName: string;
  category: string;
}

function parseList(tsv: string): Paper[] {
  const [header, ...lines] = tsv.trim().split('\n');
  const columns = header.split('\t');
  return lines.map((line) => {
    const cells = line.split('\t');
    const cell = (name: string) => cells[columns.indexOf(name)];
    return { id: Number(cell('id')), shortName: cell('short_name'), category: cell('category') };
  });
}

/** The cells of a markdown table row; `\|` stays inside its cell. */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

/** The rows of the table under `## heading` (header and separator skipped). */
function tableUnder(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) return [];
  const rows: string[][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('## ')) break;
    if (line.startsWith('|')) {
      inTable = true;
      rows.push(cells(line));
    } else if (inTable) break;
  }
  return rows.slice(2);
}

const registries: Record<string, { has(name: string): boolean }> = {
  advantage: advantageEstimators,
  loss: policyLosses,
  aggregation: lossAggregations,
  klEstimator: klEstimators,
  groupFilter: groupFilters,
  promptSelector: promptSelectors,
};
/** `algorithm.<x>Options` → the field naming the part whose options they are. */
const optionsOf: Record<string, string> = {
  advantageOptions: 'advantage',
  lossOptions: 'loss',
  groupFilterOptions: 'groupFilter',
  promptSelectorOptions: 'promptSelector',
};
const partLists: Record<string, { list(): { name: string; options?: unknown }[] }> = {
  advantage: advantageEstimators,
  loss: policyLosses,
  groupFilter: groupFilters,
  promptSelector: promptSelectors,
};
const defaults = trainerConfigSchema.parse({}) as unknown as Record<string, unknown>;
const defaultAlgorithm = defaults.algorithm as Record<string, unknown>;

/** Whether a dotted config path exists: every step into an object must name one of its keys. */
function configPathExists(path: string): boolean {
  let value: unknown = defaults;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return true; // a nullable part
    if (Object.keys(value).length === 0) return true; // a record (options), checked against the part
    if (!(key in (value as Record<string, unknown>))) return false;
    value = (value as Record<string, unknown>)[key];
  }
  return true;
}

/** A row's `--set flow.rl.FIELD=VALUE` settings: each field exists, and together they pass the flow run's checks. */
function flowSettingProblems(settings: Record<string, string>): string[] {
  const unknown = Object.keys(settings).filter((field) => !flowRlFields.includes(field));
  if (unknown.length > 0) return unknown.map((field) => `--set flow.rl.${field}: no such flow recipe field`);
  const values = Object.fromEntries(
    Object.entries(settings).map(([field, value]) => [field, Number.isNaN(Number(value)) ? value : Number(value)]),
  );
  try {
    validateFlowRunOptions({ ...defaultFlowRunOptions, ...values } as FlowRunOptions);
    return [];
  } catch (error) {
    return [`--set flow.rl.${Object.keys(settings).join(', flow.rl.')}: ${(error as Error).message}`];
  }
}

/** Problems with the names in one "how to run it" cell: unknown parts, options, fields, rewards, presets, files. */
function nameProblems(how: string): string[] {
  const problems: string[] = [];
  // Read left to right: options belong to the part last named for their field (a cell may name several).
  const named: Record<string, string> = {};
  for (const [, field, rest] of how.matchAll(/--set algorithm\.(\w+)((?:\.\w+)?=[\w-]*)/g)) {
    const name = rest.slice(1);
    if (registries[field]) {
      named[field] = name;
      if (!registries[field].has(name)) problems.push(`algorithm.${field}: no ${field} named "${name}"`);
    } else if (field === 'turnCredit' && rest.startsWith('.name=')) {
      const estimator = rest.slice('.name='.length);
      if (!turnCreditEstimators.has(estimator))
        problems.push(`algorithm.turnCredit.name: no estimator named "${estimator}"`);
    } else if (optionsOf[field]) {
      const option = rest.slice(1, rest.indexOf('='));
      const partField = optionsOf[field];
      const partName = named[partField] ?? (defaultAlgorithm[partField] as string);
      const part = partLists[partField].list().find((entry) => entry.name === partName);
      const shape = (part?.options as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      if (!(option in shape))
        problems.push(`algorithm.${field}.${option}: ${partField} "${partName}" has no such option`);
    }
  }
  const flowSettings: Record<string, string> = {};
  for (const [, path, value] of how.matchAll(/--set ([\w.]+)=([\w.-]*)/g))
    if (path.startsWith('flow.rl.')) flowSettings[path.slice('flow.rl.'.length)] = value;
    else if (!configPathExists(path)) problems.push(`--set ${path}: no such config field`);
  if (Object.keys(flowSettings).length > 0) problems.push(...flowSettingProblems(flowSettings));
  for (const [, name] of how.matchAll(/--reward ([\w-]+)/g))
    if (!rewardFactories.has(name)) problems.push(`--reward ${name}: no such reward`);
  for (const [, name] of how.matchAll(/--preset ([\w-]+)/g))
    if (!presetNames().includes(name)) problems.push(`--preset ${name}: no such preset`);
  for (const [, path] of how.matchAll(/((?:recipes|src)\/[\w./-]+\.ts)/g))
    if (!existsSync(join(root, path))) problems.push(`${path}: no such file`);
  return problems;
}

const statusPattern = /^(works|partial: \S.*|not built: \S.*)$/;
const runnable = /--set algorithm\.|--reward |--preset |--recipe |recipes\/[\w./-]+\.ts/;

/** Every problem of a papers page against a paper list, one line each (empty: the page is right). */
function papersDocProblems(markdown: string, tsv: string): string[] {
  const papers = parseList(tsv);
  const rows = tableUnder(markdown, 'Papers');
  const problems: string[] = [];
  const ids = rows.map((row) => row[0]);
  const expected = papers.map((paper) => String(paper.id));
  if (ids.join(',') !== expected.join(',')) {
    const missing = expected.filter((id) => !ids.includes(id));
    const extra = ids.filter((id, index) => !expected.includes(id) || ids.indexOf(id) !== index);
    problems.push(
      `ids: expected the list's ${expected.length} in order, got ${ids.length}; missing [${missing}], extra or repeated [${extra}]`,
    );
  }
  const tally: Record<string, Record<string, number>> = {};
  for (const row of rows) {
    const [id, paper, category, how, status] = row;
    const listed = papers.find((entry) => String(entry.id) === id);
    if (row.length !== 5) problems.push(`#${id}: ${row.length} cells, expected 5`);
    if (listed && (paper !== listed.shortName || category !== listed.category))
      problems.push(`#${id}: "${paper}" (${category}), the list says "${listed.shortName}" (${listed.category})`);
    if (!statusPattern.test(status ?? ''))
      problems.push(`#${id}: status "${status}" is not works / partial: … / not built: …`);
    if (status === 'works' && !runnable.test(how ?? '')) problems.push(`#${id}: works, but names nothing to run`);
    problems.push(...nameProblems(how ?? '').map((problem) => `#${id}: ${problem}`));
    const kind = (status ?? '').split(':')[0];
    tally[category] ??= { works: 0, partial: 0, 'not built': 0 };
    tally[category][kind] = (tally[category][kind] ?? 0) + 1;
  }
  const total: Record<string, number> = { works: 0, partial: 0, 'not built': 0 };
  for (const [category, , works, partial, notBuilt] of tableUnder(markdown, 'Counts')) {
    const counts = category === 'all' ? total : (tally[category] ?? {});
    const written = { works: Number(works), partial: Number(partial), 'not built': Number(notBuilt) };
    for (const kind of Object.keys(written) as (keyof typeof written)[]) {
      if (category !== 'all') total[kind] += counts[kind] ?? 0;
      if (category !== 'all' && written[kind] !== (counts[kind] ?? 0))
        problems.push(`counts ${category} ${kind}: written ${written[kind]}, the rows have ${counts[kind] ?? 0}`);
    }
    if (category === 'all')
      for (const kind of Object.keys(written) as (keyof typeof written)[])
        if (written[kind] !== total[kind])
          problems.push(`counts all ${kind}: written ${written[kind]}, the rows have ${total[kind]}`);
  }
  return problems;
}

describe('docs/papers.md', () => {
  it('has one row per paper of papers.tsv in order, valid statuses, counts that add up and only names that exist', () => {
    expect(papersDocProblems(papersDoc, papersList)).toEqual([]);
    expect(parseList(papersList)).toHaveLength(264);
  });

  it('finds a missing row, a misspelled name, a bad status and stale counts', () => {
    const row = (id: number) => papersDoc.split('\n').find((line) => line.startsWith(`| ${id} `))!;
    const without29 = papersDoc.replace(`${row(29)}\n`, '');
    expect(papersDocProblems(without29, papersList).join('\n')).toMatch(
      /^ids: expected the list's 264 in order, got 263; missing \[29\], extra or repeated \[\]/m,
    );
    // [row id, the row's text, a misspelling, the problem it must give]
    const misspellings: [number, string, string, RegExp][] = [
      [29, 'advantage=mc-grpo', 'advantage=mc-grop', /#29: algorithm\.advantage: no advantage named "mc-grop"/],
      [23, 'loss=disco', 'loss=disko', /#23: algorithm\.loss: no loss named "disko"/],
      [51, 'papers/grouprank.ts', 'papers/group-rank.ts', /#51: recipes\/papers\/group-rank\.ts: no such file/],
      [61, '--reward ternary-truthfulness', '--reward ternary-truth', /#61: --reward ternary-truth: no such reward/],
      [
        27,
        'Options.alpha=',
        'Options.alfa=',
        /#27: algorithm\.advantageOptions\.alfa: advantage "stratified" has no such/,
      ],
      [
        162,
        'turnCredit.name=igpo',
        'turnCredit.name=ipgo',
        /#162: algorithm\.turnCredit\.name: no estimator named "ipgo"/,
      ],
      [213, '--preset rloo', '--preset rlo', /#213: --preset rlo: no such preset/],
      [
        255,
        'sampler=dance',
        'sampler=sde',
        /#255: --set flow\.rl\..*sampler must be "dance" for algorithm "branch-grpo"/,
      ],
      [7, 'algorithm=grpo-guard', 'algorithm=grpo-gaurd', /#7: --set flow\.rl\.algorithm: algorithm must be/],
      [179, 'flow.rl.algorithm=', 'flow.rl.algorithmm=', /#179: --set flow\.rl\.algorithmm: no such flow recipe field/],
      [
        60,
        'entropyCoefficient=',
        'entropyCoeficient=',
        /#60: --set algorithm\.entropyCoeficient: no such config field/,
      ],
    ];
    for (const [id, right, wrong, problem] of misspellings) {
      expect(row(id)).toContain(right);
      const misspelled = papersDoc.replace(row(id), row(id).replace(right, wrong));
      expect(papersDocProblems(misspelled, papersList).join('\n')).toMatch(problem);
    }
    const badStatus = papersDoc.replace(row(29), row(29).replace(/\| works\s*\|$/, '| done |'));
    expect(papersDocProblems(badStatus, papersList).join('\n')).toMatch(/#29: status "done"/);
    const bareNotBuilt = papersDoc.replace(row(3), row(3).replace(/\| not built: [^|]*\|$/, '| not built |'));
    expect(papersDocProblems(bareNotBuilt, papersList).join('\n')).toMatch(/#3: status "not built"/);
    // #29 turned partial: the A row of the counts no longer matches.
    const demoted = papersDoc.replace(row(29), row(29).replace(/\| works\s*\|$/, '| partial: test |'));
    expect(papersDocProblems(demoted, papersList).join('\n')).toMatch(/counts A works: written \d+, the rows have/);
  });
});
