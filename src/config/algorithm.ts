/**
 * Resolves a validated config once into the bound algorithm the GRPO step runs: the registered
 * functions looked up by name, their options parsed by each part's own schema, and every part's
 * declared needs checked against what the data and the rollout supply — so an impossible
 * combination is refused before any model is loaded, in one sentence naming the field, the part
 * and what is missing. The step reads this object, never the raw `config.algorithm`.
 *
 * Is not: the step itself (grpo-step.ts) or the maths (algorithms/).
 */
import {
  advantageEstimators,
  groupFilters,
  klEstimators,
  lossAggregations,
  parsePartOptions,
  policyLosses,
  promptSelectors,
  turnCreditEstimators,
  type AdvantageFn,
  type AdvantageOptions,
  type AggregationFn,
  type AlgorithmNeed,
  type GroupFilterFn,
  type GroupFilterOptions,
  type KlEstimatorFn,
  type MismatchCorrection,
  type PolicyLossFn,
  type PolicyLossOptions,
  type PromptSelectorFn,
  type PromptSelectorPart,
  type Registry,
  type RegistryEntry,
  type RunSettings,
  type TurnCreditFn,
} from '../algorithms/index.js';
import { z } from 'zod';
import type { Example } from '../data/task.js';
import type { TrainerConfig } from './config.js';
import type { RolloutProvision } from '../rollout/rollout.js';

/** One bound part: its name, function, parsed options, declared needs and its whole registry entry. */
export interface BoundPart<Fn, Options, Entry extends RegistryEntry<Fn> = RegistryEntry<Fn>> {
  name: string;
  fn: Fn;
  options: Options;
  needs: readonly AlgorithmNeed[];
  entry: Entry;
}

/** Where stratified GRPO's stratum keys come from. */
export type StrataSource =
  { kind: 'row'; column: string } | { kind: 'rollout'; statistic: 'toolCalls' | 'turns' | 'truncated' };

/** Options of the single-stream value tracker (SPO). */
export interface TrackerOptions {
  halfLifeKl: number;
  minDiscount: number;
  maxDiscount: number;
}

/** Options of the prompt selectors as the step uses them. */
export type SelectorOptions = {
  allowedCounts?: number[];
  candidates?: number;
  thompson?: boolean;
  successThreshold: number;
  decay: number;
};

/** Options of the GTPO token weights and entropy filter. */
export interface GtpoOptions {
  positiveWeight?: number;
  negativeWeight?: number;
  direction?: 'forward' | 'backward' | 'both';
}

/** The algorithm of a run, resolved once at setup. */
export interface BoundAlgorithm {
  advantage: BoundPart<
    AdvantageFn,
    AdvantageOptions & { strataFrom?: string; clusterBy?: 'answer' | 'text' } & Partial<TrackerOptions>
  >;
  loss: BoundPart<
    PolicyLossFn,
    PolicyLossOptions & GtpoOptions & { entropyThreshold?: number; entropyCoefficient?: number }
  >;
  aggregation: { name: string; fn: AggregationFn };
  klCoefficient: number;
  klPlacement: 'loss' | 'reward';
  klEstimator: { name: string; fn: KlEstimatorFn };
  entropyCoefficient: number;
  groupFilter: BoundPart<GroupFilterFn, GroupFilterOptions> | null;
  maskTruncated: boolean;
  maxRefills: number;
  promptSelector: BoundPart<PromptSelectorFn, SelectorOptions, PromptSelectorPart> | null;
  mismatchCorrection: MismatchCorrection | null;
  /** Every need of the chosen parts, deduplicated. */
  needs: Set<AlgorithmNeed>;
  strata: StrataSource | null;
  tracker: TrackerOptions | null;
  /** Turn-level credit of multi-turn episodes (algorithm.turnCredit), or null: the episode's advantage on every token. */
  turnCredit: BoundPart<TurnCreditFn, Record<string, unknown>> | null;
}

/** What the binding checks needs against: the training rows and what the rollout produces. */
export interface BindingContext {
  /** A few training rows (columns are checked on these). */
  sampleRows: readonly Example[];
  rolloutProvides: readonly RolloutProvision[];
  /** The names of the rewards the run scores with, in order (the columns of the reward matrix). */
  rewardNames: readonly string[];
}

function bindPart<Fn, Options, Entry extends RegistryEntry<Fn> = RegistryEntry<Fn>>(
  registry: Registry<Fn, Entry>,
  name: string,
  options: unknown,
  field: string,
  problems: string[],
): BoundPart<Fn, Options, Entry> | null {
  if (!registry.has(name)) return null; // unknown names were reported by validateConfig
  const entry = registry.entry(name);
  try {
    const parsed = parsePartOptions(
      entry.options ?? z.object({}).strict(),
      options,
      field,
      `${registry.kind} "${name}"`,
    );
    return { name, fn: entry.fn, options: parsed as Options, needs: entry.needs ?? [], entry };
  } catch (error) {
    problems.push(...(error as Error).message.split('\n'));
    return null;
  }
}

function parseStrata(from: string | undefined): StrataSource | null {
  if (from === undefined) return null;
  if (from.startsWith('row.')) return { kind: 'row', column: from.slice(4) };
  return { kind: 'rollout', statistic: from.slice('rollout.'.length) as 'toolCalls' | 'turns' | 'truncated' };
}

/** Binds `config.algorithm`; throws `invalid config:` with one line per problem. */
export function bindAlgorithm(config: TrainerConfig, context: BindingContext): BoundAlgorithm {
  const problems: string[] = [];
  const algorithm = config.algorithm;
  const advantage = bindPart<AdvantageFn, BoundAlgorithm['advantage']['options']>(
    advantageEstimators,
    algorithm.advantage,
    algorithm.advantageOptions,
    'algorithm.advantageOptions',
    problems,
  );
  const loss = bindPart<PolicyLossFn, BoundAlgorithm['loss']['options']>(
    policyLosses,
    algorithm.loss,
    algorithm.lossOptions,
    'algorithm.lossOptions',
    problems,
  );
  const groupFilter =
    algorithm.groupFilter === null
      ? null
      : bindPart<GroupFilterFn, GroupFilterOptions>(
          groupFilters,
          algorithm.groupFilter,
          algorithm.groupFilterOptions,
          'algorithm.groupFilterOptions',
          problems,
        );
  const promptSelector =
    algorithm.promptSelector === null
      ? null
      : bindPart<PromptSelectorFn, SelectorOptions, PromptSelectorPart>(
          promptSelectors,
          algorithm.promptSelector,
          algorithm.promptSelectorOptions,
          'algorithm.promptSelectorOptions',
          problems,
        );
  const turnCredit =
    algorithm.turnCredit === null
      ? null
      : bindPart<TurnCreditFn, Record<string, unknown>>(
          turnCreditEstimators,
          algorithm.turnCredit.name,
          algorithm.turnCredit.options,
          'algorithm.turnCredit.options',
          problems,
        );
  if (algorithm.turnCredit && !turnCreditEstimators.has(algorithm.turnCredit.name))
    problems.push(
      `algorithm.turnCredit: unknown turn-credit estimator "${algorithm.turnCredit.name}"; known: ${turnCreditEstimators.names().join(', ')}`,
    );
  if (turnCredit) checkTurnCredit(turnCredit, context, problems);
  if (algorithm.groupFilter === null && Object.keys(algorithm.groupFilterOptions).length > 0)
    problems.push('algorithm.groupFilterOptions: set, but algorithm.groupFilter is null');
  if (algorithm.promptSelector === null && Object.keys(algorithm.promptSelectorOptions).length > 0)
    problems.push('algorithm.promptSelectorOptions: set, but algorithm.promptSelector is null');
  if (problems.length > 0 || !advantage || !loss)
    throw new Error(`invalid config:\n${problems.map((line) => `- ${line}`).join('\n')}`);
  const needs = new Set<AlgorithmNeed>([...advantage.needs, ...loss.needs, ...(turnCredit?.needs ?? [])]);
  const strata = parseStrata(advantage.options.strataFrom);
  checkNeeds(config, { advantage, loss, needs, strata, promptSelector }, context, problems);
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.map((line) => `- ${line}`).join('\n')}`);
  const trackerOptions = advantage.options as TrackerOptions;
  return {
    advantage,
    loss,
    groupFilter,
    promptSelector,
    needs,
    strata,
    aggregation: { name: algorithm.aggregation, fn: lossAggregations.get(algorithm.aggregation) },
    klCoefficient: algorithm.klCoefficient,
    klPlacement: algorithm.klPlacement,
    klEstimator: { name: algorithm.klEstimator, fn: klEstimators.get(algorithm.klEstimator) },
    entropyCoefficient: algorithm.entropyCoefficient,
    maskTruncated: algorithm.maskTruncated,
    maxRefills: algorithm.maxRefills,
    mismatchCorrection: algorithm.mismatchCorrection,
    turnCredit,
    tracker: needs.has('baselines')
      ? {
          halfLifeKl: trackerOptions.halfLifeKl,
          minDiscount: trackerOptions.minDiscount,
          maxDiscount: trackerOptions.maxDiscount,
        }
      : null,
  };
}

/**
 * Turn credit needs turns (a multi-turn rollout); IGPO's information gains need the reference
 * answer in every row (`answer`). GiGPO's state keys come from the environment, which exists only
 * once an episode starts: the rollout refuses an environment without `stateKey()` before decoding.
 */
function checkTurnCredit(
  turnCredit: BoundPart<TurnCreditFn, Record<string, unknown>>,
  context: BindingContext,
  problems: string[],
): void {
  if (!context.rolloutProvides.includes('turns')) {
    problems.push(
      `algorithm.turnCredit: ${turnCredit.name} gives each model turn its own advantage, and this rollout has no turns (a recipe's environment with the agent section runs multi-turn episodes)`,
    );
    return;
  }
  if (turnCredit.needs.includes('informationGains')) {
    const missing = context.sampleRows.findIndex((row) => typeof row.answer !== 'string' || row.answer.length === 0);
    if (missing >= 0)
      problems.push(
        `algorithm.turnCredit: ${turnCredit.name} measures each turn's information gain as the policy's probability of the row's "answer", which training row ${missing} does not have as a non-empty string`,
      );
  }
}

type Chosen = Pick<BoundAlgorithm, 'advantage' | 'loss' | 'needs' | 'strata' | 'promptSelector'>;

/** The run settings a part's `refuses` sees, read once from the config. */
function runSettings(config: TrainerConfig, chosen: Chosen, context: BindingContext): RunSettings {
  return {
    groupSize: config.sampling.groupSize,
    promptsPerStep: config.grpo.promptsPerStep,
    microBatchSize: config.grpo.microBatchSize,
    klCoefficient: config.algorithm.klCoefficient,
    klPlacement: config.algorithm.klPlacement,
    mismatchCorrection: config.algorithm.mismatchCorrection !== null,
    advantage: { name: chosen.advantage.name, needs: chosen.advantage.needs },
    loss: { name: chosen.loss.name, needs: chosen.loss.needs },
    groupFilter: config.algorithm.groupFilter,
    promptSelector: chosen.promptSelector?.name ?? null,
    rewardNames: context.rewardNames,
  };
}

/** What a bound part refuses in these settings (its entry's `refuses`), one problem line each. */
function refusals(part: BoundPart<unknown, unknown, RegistryEntry<unknown>> | null, settings: RunSettings): string[] {
  return part?.entry.refuses?.(part.options as Record<string, unknown>, settings) ?? [];
}

/** One problem line per need the data, the rollout or the other settings cannot meet. */
function checkNeeds(config: TrainerConfig, chosen: Chosen, context: BindingContext, problems: string[]): void {
  const { advantage, loss, needs, strata, promptSelector } = chosen;
  const settings = runSettings(config, chosen, context);
  if (strata?.kind === 'row') {
    const missing = context.sampleRows.findIndex(
      (row) => row[strata.column] === undefined || row[strata.column] === null,
    );
    if (missing >= 0)
      problems.push(
        `algorithm.advantageOptions.strataFrom: the stratified estimator reads column "${strata.column}", which training row ${missing} does not have (columns: ${Object.keys(context.sampleRows[missing]).join(', ')})`,
      );
  } else if (
    strata?.kind === 'rollout' &&
    strata.statistic !== 'truncated' &&
    !context.rolloutProvides.includes(strata.statistic)
  ) {
    problems.push(
      `algorithm.advantageOptions.strataFrom: the stratified estimator needs rollout.${strata.statistic}, which this rollout does not report (the single-turn rollout reports only rollout.truncated; a multi-turn rollout must declare provides: ['${strata.statistic}'])`,
    );
  }
  if (needs.has('serialRollout') && !context.rolloutProvides.includes('serialExits')) {
    problems.push(
      `algorithm.advantage: ${advantage.name} scores a group of serial early exits of one chain of thought, and this rollout samples parallel completions (a recipe must supply a rollout that declares provides: ['serialExits'])`,
    );
  }
  const largestGroup = promptSelector
    ? promptSelector.entry.plan(promptSelector.options, settings).largestGroup
    : settings.groupSize;
  if (needs.has('wholeGroups') && config.grpo.microBatchSize < largestGroup) {
    problems.push(
      `grpo.microBatchSize: the ${loss.name} loss needs whole groups in each micro-batch, so it must be at least the largest group (${largestGroup}), got ${config.grpo.microBatchSize}`,
    );
  }
  if (needs.has('temperatureLogprobs') && !advantage.entry.logprobTemperature)
    problems.push(
      `algorithm.advantage: ${advantage.name} needs π_old's log-probs at a temperature its entry does not name (logprobTemperature)`,
    );
  problems.push(...refusals(loss, settings), ...refusals(advantage, settings));
  if (needs.has('baselines') && config.algorithm.groupFilter !== null) {
    problems.push(
      `algorithm.groupFilter: ${advantage.name} keeps a per-prompt value instead of groups, so a group filter (${config.algorithm.groupFilter}) has nothing to act on; set it to null`,
    );
  }
  problems.push(...refusals(promptSelector, settings));
  checkReferenceSync(config, needs, problems);
}

/**
 * algorithm.referenceSync moves a reference model, so the run must have one (β > 0, or a part that
 * reads the reference), and it must be a copy: a LoRA run's reference is the base model with the
 * adapters off, which TRL's sync_ref_model refuses too.
 */
function checkReferenceSync(config: TrainerConfig, needs: ReadonlySet<AlgorithmNeed>, problems: string[]): void {
  if (config.algorithm.referenceSync === null) return;
  if (config.algorithm.klCoefficient === 0 && !needs.has('referenceLogprobs') && !needs.has('referenceTokenLogprobs'))
    problems.push(
      'algorithm.referenceSync: set, but this run has no reference model to move (algorithm.klCoefficient is 0 and no chosen part reads the reference)',
    );
  if (config.lora)
    problems.push(
      "algorithm.referenceSync: a LoRA run's reference is the base model with the adapters off, which cannot move apart from the policy; set lora to null or referenceSync to null",
    );
}
