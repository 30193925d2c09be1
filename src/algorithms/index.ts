/**
 * Public API of the algorithms layer: the registries of advantage estimators, policy losses, loss
 * aggregations, KL estimators, group filters, prompt selectors and turn-credit estimators, filled
 * from the built-in parts listed here (each part's file exports its function with its entry), and
 * `registerParts` for a recipe's own parts.
 *
 * Is: the names configs use (`advantageEstimators.get('grpo')`) and what `grpo list` prints.
 * Adding a built-in part is its file plus one line in the list of its kind below.
 * Is not: the trainer's wiring of these parts into a step.
 */
import { type AdvantageFn } from './advantages-groups.js';
import {
  batchStdAdvantagePart,
  drGrpoAdvantagePart,
  grpoAdvantagePart,
  mcGrpoAdvantagePart,
  ngrpoAdvantagePart,
  rlooAdvantagePart,
} from './advantages.js';
import {
  gdpoAdvantagePart,
  mrnAdvantagePart,
  seedGrpoAdvantagePart,
  serialGroupAdvantagePart,
  singleStreamAdvantagePart,
  stratifiedAdvantagePart,
} from './advantages-structured.js';
import { treeAdvantagePart } from './advantages-tree.js';
import { tempoAdvantagePart } from './advantages-tempo.js';
import { opmdAdvantagePart } from './advantages-opmd.js';
import { asymreAdvantagePart } from './advantages-asymre.js';
import { riskpoAdvantagePart } from './advantages-riskpo.js';
import { dcpoAdvantagePart } from './advantages-dcpo.js';
import { trustAdvantagePart } from './advantages-trust.js';
import { careAdvantagePart } from './advantages-care.js';
import { profAdvantagePart } from './advantages-prof.js';
import { zoomZeroAdvantagePart } from './advantages-zoom-zero.js';
import {
  type AggregationFn,
  seqMeanTokenMeanWeightsPart,
  seqMeanTokenSumNormWeightsPart,
  seqMeanTokenSumWeightsPart,
  tokenMeanWeightsPart,
} from './aggregate.js';
import {
  type GroupFilterFn,
  dropAllCorrectGroupsPart,
  dropZeroVarianceGroupsPart,
  maskTruncatedCompletionsPart,
} from './filters.js';
import {
  type PromptSelectorFn,
  type PromptSelectorPart,
  knapsackAllocationPart,
  vadeSelectionPart,
} from './filters-selection.js';
import { type KlEstimatorFn, klK1Part, klK2Part, klK3Part } from './kl.js';
import { type PolicyLossFn } from './policy-losses-common.js';
import { cispoLossPart, dispoLossPart, gtpoLossPart, ppoClipLossPart, reinforceLossPart } from './policy-losses.js';
import { gspoLossPart, gspoTokenLossPart, realLossPart } from './policy-losses-sequence.js';
import { opmdLossPart } from './policy-losses-opmd.js';
import { recLossPart } from './policy-losses-rec.js';
import { discoLossPart } from './policy-losses-disco.js';
import { drpoLossPart } from './policy-losses-drpo.js';
import { nftLossPart } from './policy-losses-nft.js';
import { lldsLossPart } from './policy-losses-llds.js';
import { rediLossPart } from './policy-losses-redi.js';
import { trpaAdvantagePart, trpaLossPart } from './policy-losses-trpa.js';
import { dnoAdvantagePart, dnoLossPart } from './policy-losses-dno.js';
import { regGrpoLossPart } from './policy-losses-reg-grpo.js';
import {
  type Part,
  type PartKind,
  type Registry,
  type RegistryEntry,
  type RegistryEntryInfo,
  createRegistry,
} from './registry.js';
import {
  type TurnCreditFn,
  gigpoCreditPart,
  igpoCreditPart,
  matchtirCreditPart,
  turnRewardsCreditPart,
} from './turn-credit.js';
import { uis1CreditPart } from './turn-credit-uis1.js';
import { proragCreditPart } from './turn-credit-prorag.js';

export * from './registry.js';
export * from './advantages-groups.js';
export * from './advantages.js';
export * from './advantages-structured.js';
export * from './advantages-tree.js';
export * from './advantages-tempo.js';
export * from './advantages-opmd.js';
export * from './advantages-asymre.js';
export * from './advantages-riskpo.js';
export * from './advantages-dcpo.js';
export * from './advantages-trust.js';
export * from './advantages-care.js';
export * from './advantages-prof.js';
export * from './advantages-zoom-zero.js';
export * from './aggregate.js';
export * from './kl.js';
export * from './filters.js';
export * from './filters-selection.js';
export * from './policy-losses-common.js';
export * from './policy-losses.js';
export * from './policy-losses-sequence.js';
export * from './policy-losses-gtpo.js';
export * from './policy-losses-opmd.js';
export * from './policy-losses-rec.js';
export * from './policy-losses-disco.js';
export * from './policy-losses-drpo.js';
export * from './policy-losses-nft.js';
export * from './policy-losses-llds.js';
export * from './policy-losses-redi.js';
export * from './policy-losses-trpa.js';
export * from './policy-losses-dno.js';
export * from './policy-losses-reg-grpo.js';
export * from './option-schemas.js';
export * from './flow-steps.js';
export * from './turn-credit.js';
export * from './turn-credit-uis1.js';
export * from './turn-credit-prorag.js';

/** A registry holding `parts`, in the order given (the order `grpo list` prints). */
function filled<Fn, Entry extends RegistryEntry<Fn> = RegistryEntry<Fn>>(
  kind: PartKind,
  parts: readonly Entry[],
): Registry<Fn, Entry> {
  const registry = createRegistry<Fn, Entry>(kind);
  for (const part of parts) registry.add(part);
  return registry;
}

/** Advantage estimators by name (ALGORITHMS.md §1). */
export const advantageEstimators = filled<AdvantageFn>('advantage estimator', [
  grpoAdvantagePart,
  drGrpoAdvantagePart,
  rlooAdvantagePart,
  batchStdAdvantagePart,
  mcGrpoAdvantagePart,
  ngrpoAdvantagePart,
  gdpoAdvantagePart,
  mrnAdvantagePart,
  stratifiedAdvantagePart,
  seedGrpoAdvantagePart,
  serialGroupAdvantagePart,
  treeAdvantagePart,
  tempoAdvantagePart,
  singleStreamAdvantagePart,
  opmdAdvantagePart,
  asymreAdvantagePart,
  riskpoAdvantagePart,
  dcpoAdvantagePart,
  trpaAdvantagePart,
  dnoAdvantagePart,
  trustAdvantagePart,
  careAdvantagePart,
  profAdvantagePart,
  zoomZeroAdvantagePart,
]);

/** Policy losses by name (ALGORITHMS.md §2). */
export const policyLosses = filled<PolicyLossFn>('policy loss', [
  ppoClipLossPart,
  cispoLossPart,
  dispoLossPart,
  gspoLossPart,
  gspoTokenLossPart,
  realLossPart,
  reinforceLossPart,
  gtpoLossPart,
  opmdLossPart,
  recLossPart,
  discoLossPart,
  drpoLossPart,
  nftLossPart,
  lldsLossPart,
  rediLossPart,
  trpaLossPart,
  dnoLossPart,
  regGrpoLossPart,
]);

/** Loss aggregation modes by name (ALGORITHMS.md §3). */
export const lossAggregations = filled<AggregationFn>('loss aggregation', [
  tokenMeanWeightsPart,
  seqMeanTokenMeanWeightsPart,
  seqMeanTokenSumWeightsPart,
  seqMeanTokenSumNormWeightsPart,
]);

/** KL estimators by name (ALGORITHMS.md §4). */
export const klEstimators = filled<KlEstimatorFn>('KL estimator', [klK1Part, klK2Part, klK3Part]);

/** Group filters by name (ALGORITHMS.md §6.1–§6.2). */
export const groupFilters = filled<GroupFilterFn>('group filter', [
  dropZeroVarianceGroupsPart,
  dropAllCorrectGroupsPart,
  maskTruncatedCompletionsPart,
]);

/** Prompt selectors by name (ALGORITHMS.md §6.3–§6.4). */
export const promptSelectors = filled<PromptSelectorFn, PromptSelectorPart>('prompt selector', [
  knapsackAllocationPart,
  vadeSelectionPart,
]);

/** Turn-level credit for multi-turn episodes by name (docs/turn-credit.md); `algorithm.turnCredit`. */
export const turnCreditEstimators = filled<TurnCreditFn>('turn-credit estimator', [
  turnRewardsCreditPart,
  igpoCreditPart,
  gigpoCreditPart,
  matchtirCreditPart,
  uis1CreditPart,
  proragCreditPart,
]);

/** Options of the step rather than registry members, by the config field that selects them, for `grpo list`. */
export const algorithmOptions: (RegistryEntryInfo & { name: string })[] = [
  {
    name: 'algorithm.mismatchCorrection',
    description: 'TIS (min(ratio, C)) or MIS (drop past C) on π_old/π_rollout; the trainer recomputes π_old',
    citation: 'TRL vLLM importance-sampling correction',
  },
  {
    name: 'lossOptions.topEntropyQuantile',
    description: 'keep only tokens in the top entropy quantile (e.g. 0.2) in the loss',
    citation: '"Beyond the 80/20 Rule"; TRL top_entropy_quantile',
  },
  {
    name: 'algorithm.klCoefficient',
    description: 'β·KL per token in the loss (klPlacement loss) or r − β·Σ_t k1 (klPlacement reward)',
    citation: 'DeepSeekMath; RLOO / PPO kl_in_reward',
  },
  {
    name: 'lossOptions.klOffPolicyCorrection',
    description: 'multiply the KL term by π_θ/π_old',
    citation: 'DeepSeek-V3.2 unbiased KL',
  },
  {
    name: 'algorithm.entropyCoefficient',
    description: 'entropy bonus: −λ_H·H_t per token, aggregated like the policy loss',
    citation: 'One-shot RLVR (#60)',
  },
];

/** Every registry, in the order `grpo list` prints them. */
export const algorithmRegistries = [
  advantageEstimators,
  policyLosses,
  lossAggregations,
  klEstimators,
  groupFilters,
  promptSelectors,
  turnCreditEstimators,
] as const;

const registriesByKind: Record<PartKind, Registry<unknown, RegistryEntry<unknown>>> = {
  'advantage estimator': advantageEstimators as Registry<unknown>,
  'policy loss': policyLosses as Registry<unknown>,
  'loss aggregation': lossAggregations as Registry<unknown>,
  'KL estimator': klEstimators as Registry<unknown>,
  'group filter': groupFilters as Registry<unknown>,
  'prompt selector': promptSelectors as unknown as Registry<unknown>,
  'turn-credit estimator': turnCreditEstimators as Registry<unknown>,
};

/**
 * Adds parts defined outside this library (a recipe's `parts`) to the registries of their kinds, so
 * configs can name them like built-ins. Registering the same part again is a no-op; a name taken by
 * a different function, a kind that does not exist or a prompt selector without `plan` throws, naming the part.
 * `otherKinds` registers kinds that live above this layer (the flow image rewards, via the CLI).
 */
export function registerParts(
  parts: readonly Part<unknown>[],
  source = 'parts',
  otherKinds: Record<string, (part: never, where: string) => void> = {},
): void {
  parts.forEach((part, index) => {
    const where = `${source}[${index}]${typeof part?.name === 'string' ? ` ("${part.name}")` : ''}`;
    if (typeof part !== 'object' || part === null) throw new Error(`${where}: must be a part object (definePart)`);
    const other = Object.hasOwn(otherKinds, part.kind) ? otherKinds[part.kind] : undefined;
    if (other) return other(part as never, where);
    const registry = registriesByKind[part.kind];
    if (!registry)
      throw new Error(
        `${where}: unknown kind ${JSON.stringify(part.kind)}; known: ${[...Object.keys(registriesByKind), ...Object.keys(otherKinds)].join(', ')}`,
      );
    if (typeof part.description !== 'string' || typeof part.citation !== 'string')
      throw new Error(`${where}: a part needs a description and a citation (both strings), printed by grpo list`);
    if (part.kind === 'prompt selector' && typeof (part as Partial<PromptSelectorPart>).plan !== 'function')
      throw new Error(`${where}: a prompt selector needs plan(options, step) (definePromptSelector)`);
    try {
      registry.add(part as RegistryEntry<unknown>);
    } catch (error) {
      throw new Error(`${where}: ${(error as Error).message}`);
    }
  });
}
