/**
 * Several generated tasks mixed in one run, each row tagged with its domain, for Guru (#108, Cheng et
 * al. 2025, arXiv 2506.14965: math, code, science, logic, simulation and tabular data trained together,
 * each domain scored by its own verifier). `taskOptions.domains` maps a domain name to a built-in
 * generated task, its options and its share of the rows:
 *
 *     { domains: { math: { task: 'addition' }, tabular: { task: 'text-to-sql', weight: 2 } } }
 *
 * Every row keeps its task's columns and gains `domain` (the `domain-router` reward and the
 * per-domain metrics read it; a task's own `domain` column is replaced). Rows are split between the
 * domains by weight (largest remainder), train and held-out alike, and interleaved, so the first
 * `evaluation.examples` held-out rows cover every domain. SFT demonstrations, the correctness check
 * and the default rewards are the domain task's own; the default rewards are named
 * `<domain>/<reward>` and score only their domain's rows (null elsewhere).
 *
 * Is not: Guru's 92K-row corpus (no download here) nor its difficulty filter; the domains are the
 * generated tasks of this repository, named as the user likes.
 */
import { z } from 'zod';
import { isBatchReward, isGroupReward, groupReward, type NamedReward, type RewardFn } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

const domainName = z.string().regex(/^[a-z][\w-]*$/, 'a domain name: lower-case letters, digits, _ or -');

/** The options `multiDomainTask` accepts (config `taskOptions`); unknown keys are refused. */
export const multiDomainOptionsSchema = z
  .object({
    /** Domain name → the generated task that makes its rows, the task's options and its share (weight, default 1). */
    domains: z
      .record(
        domainName,
        z
          .object({
            task: z.string().min(1),
            options: z.record(z.string(), z.unknown()).optional(),
            weight: z.number().positive().optional(),
          })
          .strict(),
      )
      .refine((domains) => Object.keys(domains).length > 0, 'name at least one domain'),
  })
  .strict();

/** Builds a generated task by name (the task registry's factory; passed in so this file imports no registry). */
export type GeneratedTaskFactory = (name: string, options: Record<string, unknown>) => Task;

/** Rows per domain for `count` rows: proportional to weight, largest remainder, every domain ≥ 1 when count allows. */
function split(count: number, weights: readonly number[]): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((weight) => (count * weight) / total);
  const counts = exact.map(Math.floor);
  const order = exact.map((value, index) => [value - Math.floor(value), index] as const).sort((a, b) => b[0] - a[0]);
  const left = count - counts.reduce((a, b) => a + b, 0);
  for (let k = 0; k < left; k++) counts[order[k]![1]]!++;
  return counts;
}

/** Interleaves the domains' lists: the row at fraction f of each list lands near fraction f of the whole. */
function interleave(lists: readonly Example[][]): Example[] {
  const tagged = lists.flatMap((list, domain) =>
    list.map((row, index) => ({ row, key: (index + 0.5) / list.length, domain })),
  );
  return tagged.sort((a, b) => a.key - b.key || a.domain - b.domain).map(({ row }) => row);
}

/** A domain's reward that scores its own rows only (null = not applicable elsewhere). */
function onlyDomain(domain: string, named: NamedReward): NamedReward {
  const { reward } = named;
  const mine = (row: Readonly<Record<string, unknown>>) => row.domain === domain;
  if (isBatchReward(reward))
    throw new Error(`multi-domain: reward "${named.name}" of domain "${domain}" is a batch reward; route it by name`);
  const routed = isGroupReward(reward)
    ? groupReward((inputs, signal) =>
        mine(inputs[0]!.row) ? reward.scoreGroup(inputs, signal) : inputs.map(() => null),
      )
    : (((input) => (mine(input.row) ? reward(input) : null)) satisfies RewardFn);
  return { name: `${domain}/${named.name}`, reward: routed, weight: named.weight };
}

/** The multi-domain task; throws naming `taskOptions.<key>` for a bad option or a domain task's bad option. */
export function multiDomainTask(raw: Record<string, unknown>, makeTask: GeneratedTaskFactory): Task {
  const { domains } = parseTaskOptions('multi-domain', multiDomainOptionsSchema, raw);
  const names = Object.keys(domains);
  const tasks = names.map((name) => {
    const { task, options = {} } = domains[name]!;
    if (task === 'multi-domain') throw new Error(`taskOptions.domains.${name}.task: a domain cannot be multi-domain`);
    try {
      return makeTask(task, options);
    } catch (error) {
      throw new Error(`taskOptions.domains.${name}: ${(error as Error).message}`);
    }
  });
  const weights = names.map((name) => domains[name]!.weight ?? 1);
  const taskOf = (row: Example): Task => {
    const index = names.indexOf(String(row.domain));
    if (index < 0)
      throw new Error(`multi-domain: row has domain ${JSON.stringify(row.domain)}, not one of ${names.join(', ')}`);
    return tasks[index]!;
  };
  const rows = (count: number, seed: number, heldOut: boolean) =>
    interleave(
      split(count, weights).map((n, d) =>
        (heldOut ? tasks[d]!.evalExamples(n, seed) : tasks[d]!.trainExamples(n, seed)).map((row) => ({
          ...row,
          domain: names[d],
        })),
      ),
    );
  return {
    name: 'multi-domain',
    description: `domains mixed in one run: ${names.map((name, d) => `${name} (${tasks[d]!.name})`).join(', ')}`,
    alphabet: [...new Set(tasks.map((task) => task.alphabet).join(''))].join(''),
    trainExamples: (count, seed) => rows(count, seed, false),
    evalExamples: (count, seed) => rows(count, seed, true),
    demonstration: (row, draw) => taskOf(row).demonstration(row, draw),
    rewards: () => names.flatMap((name, d) => tasks[d]!.rewards().map((named) => onlyDomain(name, named))),
    isCorrect: (row, completion) => taskOf(row).isCorrect(row, completion),
  };
}
