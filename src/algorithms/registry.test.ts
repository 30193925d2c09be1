/**
 * Tests of the registry contract and of the built-in registries: unknown names list the known ones,
 * a taken name cannot be claimed by a different function, and every built-in is listed by `grpo list`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runListCommand } from '../cli/list-command.js';
import { advantageEstimators, algorithmRegistries, grpoAdvantage, lossAggregations, policyLosses } from './index.js';
import { UnknownRegistryNameError, createRegistry } from './registry.js';

describe('createRegistry', () => {
  it('gets what was registered and lists names in order', () => {
    const registry = createRegistry<(x: number) => number>('doubler');
    const double = (x: number): number => 2 * x;
    registry.register('double', double, { description: 'x·2', citation: 'arithmetic' });
    registry.register('double', double, { description: 'x·2', citation: 'arithmetic' }); // same function: no-op
    expect(registry.get('double')(3)).toBe(6);
    expect(registry.names()).toEqual(['double']);
  });
  it('throws when a different function claims a taken name, or on bad names', () => {
    const registry = createRegistry<() => number>('constant');
    registry.register('one', () => 1, { description: '', citation: '' });
    expect(() => registry.register('one', () => 1, { description: '', citation: '' })).toThrow(
      /constant "one" is already registered/,
    );
    expect(() => registry.register('Not Kebab', () => 1, { description: '', citation: '' })).toThrow(
      /must be kebab-case/,
    );
  });
  it('an unknown name lists the known ones', () => {
    try {
      advantageEstimators.get('grp0');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UnknownRegistryNameError);
      expect((error as UnknownRegistryNameError).availableNames).toContain('grpo');
      expect((error as Error).message).toMatch(
        /Unknown advantage estimator "grp0". Known advantage estimators: grpo, dr-grpo, rloo/,
      );
    }
  });
});

describe('built-in registries', () => {
  it("name the issue's parts", () => {
    expect(advantageEstimators.get('grpo')).toBe(grpoAdvantage);
    expect(advantageEstimators.names()).toEqual([
      'grpo',
      'dr-grpo',
      'rloo',
      'batch-std',
      'mc-grpo',
      'ngrpo',
      'gdpo',
      'mrn',
      'stratified',
      'seed-grpo',
      's-grpo',
      'tree',
      'tempo',
      'single-stream',
      'opmd',
      'asymre',
      'riskpo',
      'dcpo',
      'trpa',
      'dno',
      'trust-grpo',
      'grpo-care',
      'prof',
      'zoom-zero',
    ]);
    expect(policyLosses.names()).toEqual([
      'ppo-clip',
      'cispo',
      'dispo',
      'gspo',
      'gspo-token',
      'real',
      'reinforce',
      'gtpo',
      'opmd',
      'rec',
      'disco',
      'drpo',
      'nft',
      'llds',
      'redi',
      'trpa',
      'dno',
      'reg-grpo',
    ]);
    expect(lossAggregations.names()).toEqual([
      'token-mean',
      'seq-mean-token-mean',
      'seq-mean-token-sum',
      'seq-mean-token-sum-norm',
    ]);
  });
  it('every entry has a description and a citation, and `grpo list` prints each name', () => {
    const text = runListCommand();
    for (const registry of algorithmRegistries) {
      for (const entry of registry.list()) {
        expect(entry.description.length, entry.name).toBeGreaterThan(10);
        expect(entry.citation.length, entry.name).toBeGreaterThan(3);
        expect(text).toContain(`  ${entry.name} `);
      }
    }
    expect(text).toMatch(/^Advantage estimators \(24\)/);
    expect(text).toContain('Policy losses (18)');
    expect(text).toContain('KL estimators (3)');
  });
  it("docs/algorithms.md's registry table lists every member of each registry, in registration order", () => {
    const lines = readFileSync('docs/algorithms.md', 'utf8').split('\n');
    const tableNames = [
      'advantageEstimators',
      'policyLosses',
      'lossAggregations',
      'klEstimators',
      'groupFilters',
      'promptSelectors',
      'turnCreditEstimators',
    ];
    algorithmRegistries.forEach((registry, i) => {
      const row = lines.find((line) => line.startsWith(`| \`${tableNames[i]}\``));
      const members = row
        ?.split('|')[3]
        .trim()
        .replace(/\s*\(.*\)$/, '');
      expect(members, tableNames[i]).toBe(registry.names().join(', '));
    });
  });
  it('an advantage estimator that declares no needs runs on rewards and group sizes alone (all a flow run has)', () => {
    // Flow runs accept exactly these estimators; an undeclared need would fail there after step 0.
    for (const entry of advantageEstimators.list()) {
      if (entry.needs!.length > 0) continue;
      const result = entry.fn({ rewards: [0, 1, 0.25, 0.5], groupSizes: 2 }, { alpha: 0.5 });
      expect(Array.from(result.advantages).every(Number.isFinite), entry.name).toBe(true);
    }
  });
});
