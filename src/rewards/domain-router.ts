/**
 * Per-domain reward routing, for runs that mix several domains (Guru #108, Cheng et al. 2025, arXiv
 * 2506.14965): each row names its domain in a column, and the row is scored by that domain's own
 * verifier (math by `math-answer`, SQL by `sql-execution`, Verilog by its testbench, …), as Guru's
 * training code dispatches each sample to its data source's scorer (github.com/LLM360/Reasoning360 at
 * 7ab381e, `verl/utils/reward_score/__init__.py` `default_compute_score`, which switches on the
 * prefix of `data_source`: `math…`, `codegen…`, `simulation__…`, `logic__…`, `table…`). Here a
 * domain matches its route by name, or by its part before `__` (`math__gsm8k` → `math`).
 *
 * A row whose domain has no route is an error naming the domain and the routes, as the authors'
 * dispatcher raises NotImplementedError (or it scores `unknownDomainScore` when that is set): a
 * silently unscored domain would train on nothing.
 *
 * Is not: the registry entry (factories.ts builds the routes from reward names) or the per-domain
 * metrics (trainer/step-metrics.ts logs `domain/<name>/…` for rows with a `domain` column).
 */
import { groupReward, isGroupReward, type Reward, type RewardFn, type RewardInput } from './types.js';

export interface DomainRouterOptions {
  /** The reward for each domain, by the domain's name as the rows spell it. */
  routes: Readonly<Record<string, Reward>>;
  /** The row column holding the domain (default `domain`). */
  domainColumn?: string;
  /** Score for a row whose domain has no route; unset (default) makes such a row an error. */
  unknownDomainScore?: number;
}

/** The domain of a row, checked: a non-empty string. */
function domainOf(input: RewardInput, column: string): string {
  const value = input.row[column];
  if (typeof value !== 'string' || value === '')
    throw new Error(
      `domain-router: the row has no "${column}" column naming its domain (got ${JSON.stringify(value)})`,
    );
  return value;
}

/**
 * Scores each completion with the reward of its row's domain. Per-completion routes give a
 * per-completion reward; when any route is a group reward, the router scores whole groups (a group
 * shares one prompt, so one row and one domain).
 * @example domainRouter({ routes: { math: mathAnswer(), sql: sqlExecution() } })
 */
export function domainRouter({ routes, domainColumn = 'domain', unknownDomainScore }: DomainRouterOptions): Reward {
  const names = Object.keys(routes);
  if (names.length === 0) throw new Error('domain-router: routes must name at least one domain');
  const routeOf = (domain: string): Reward | null => {
    if (Object.hasOwn(routes, domain)) return routes[domain]!;
    const prefix = domain.split('__')[0]!;
    if (Object.hasOwn(routes, prefix)) return routes[prefix]!;
    if (unknownDomainScore !== undefined) return null;
    throw new Error(`domain-router: no route for domain "${domain}" (routes: ${names.join(', ')})`);
  };
  if (!Object.values(routes).some(isGroupReward)) {
    return ((input) => {
      const route = routeOf(domainOf(input, domainColumn));
      return route === null ? unknownDomainScore! : (route as RewardFn)(input);
    }) satisfies RewardFn;
  }
  return groupReward(async (inputs, signal) => {
    const route = routeOf(domainOf(inputs[0]!, domainColumn));
    if (route === null) return inputs.map(() => unknownDomainScore!);
    if (isGroupReward(route)) return route.scoreGroup(inputs, signal);
    return Promise.all(inputs.map((input) => route(input)));
  });
}
