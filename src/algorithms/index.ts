/**
 * Public API of the algorithms layer: the registries of advantage estimators, policy losses, loss
 * aggregations, KL estimators, group filters and prompt selectors, filled with the built-ins here
 * (explicitly, not by side-effect imports), and every function exported by name.
 *
 * Is: the names configs use (`advantageEstimators.get('grpo')`) and what `grpo list` prints.
 * Is not: the trainer's wiring of these parts into a step.
 */
import { type AdvantageFn } from './advantages-groups.js';
import {
  batchStdAdvantage,
  drGrpoAdvantage,
  grpoAdvantage,
  mcGrpoAdvantage,
  ngrpoAdvantage,
  rlooAdvantage,
} from './advantages.js';
import {
  gdpoAdvantage,
  seedGrpoAdvantage,
  serialGroupAdvantage,
  singleStreamAdvantage,
  stratifiedAdvantage,
} from './advantages-structured.js';
import { treeAdvantage } from './advantages-tree.js';
import {
  type AggregationFn,
  seqMeanTokenMeanWeights,
  seqMeanTokenSumNormWeights,
  seqMeanTokenSumWeights,
  tokenMeanWeights,
} from './aggregate.js';
import {
  type GroupFilterFn,
  dropAllCorrectGroups,
  dropZeroVarianceGroups,
  maskTruncatedCompletions,
} from './filters.js';
import { type PromptSelectorFn, knapsackAllocation, vadeSelection } from './filters-selection.js';
import { type KlEstimatorFn, klK1, klK2, klK3 } from './kl.js';
import { type PolicyLossFn } from './policy-losses-common.js';
import { cispoLoss, dispoLoss, gtpoLoss, ppoClipLoss, reinforceLoss } from './policy-losses.js';
import { gspoLoss, gspoTokenLoss, realLoss } from './policy-losses-sequence.js';
import { type AlgorithmNeed, type Registry, type RegistryEntryInfo, createRegistry } from './registry.js';
import {
  advantageOptionSchemas,
  groupFilterOptionSchemas,
  lossOptionSchemas,
  promptSelectorOptionSchemas,
  turnCreditOptionSchemas,
} from './option-schemas.js';
import { type TurnCreditFn, gigpoCredit, igpoCredit, turnRewardsCredit } from './turn-credit.js';
import type { ZodType } from 'zod';

export * from './registry.js';
export * from './advantages-groups.js';
export * from './advantages.js';
export * from './advantages-structured.js';
export * from './advantages-tree.js';
export * from './aggregate.js';
export * from './kl.js';
export * from './filters.js';
export * from './filters-selection.js';
export * from './policy-losses-common.js';
export * from './policy-losses.js';
export * from './policy-losses-sequence.js';
export * from './policy-losses-gtpo.js';
export * from './option-schemas.js';
export * from './flow-steps.js';
export * from './turn-credit.js';

type Builtins<Fn> = [name: string, fn: Fn, description: string, citation: string, needs?: AlgorithmNeed[]][];

/** A registry filled with built-ins, each with its option schema (by name) and declared needs. */
function filled<Fn>(kind: string, builtins: Builtins<Fn>, optionSchemas: Record<string, ZodType>): Registry<Fn> {
  const registry = createRegistry<Fn>(kind);
  for (const [name, fn, description, citation, needs] of builtins) {
    registry.register(name, fn, { description, citation, options: optionSchemas[name], needs: needs ?? [] });
  }
  return registry;
}

/** Advantage estimators by name (ALGORITHMS.md §1). */
export const advantageEstimators = filled<AdvantageFn>(
  'advantage estimator',
  [
    [
      'grpo',
      grpoAdvantage,
      '(r − mean_g)/(std_g + ε); sample std, ε = 1e-6, one-sample group → A = r',
      'DeepSeekMath, arXiv 2402.03300',
    ],
    [
      'dr-grpo',
      drGrpoAdvantage,
      'r − mean_g, no std division (pair with seq-mean-token-sum-norm)',
      'Dr. GRPO, arXiv 2503.20783',
    ],
    [
      'rloo',
      rlooAdvantage,
      'leave-one-out baseline: r_i − mean_{j≠i} r_j',
      'RLOO, Ahmadian et al. 2024, arXiv 2402.14740',
    ],
    [
      'batch-std',
      batchStdAdvantage,
      '(r − mean_g)/(std_batch + ε): group mean, batch std',
      'Lite PPO ("Tricks or Traps?"); TRL scale_rewards="batch"',
    ],
    [
      'mc-grpo',
      mcGrpoAdvantage,
      '(r − median_g)/(MAD_g + 1e-3), the median (pivot) rollout dropped; draw G+1',
      'MC-GRPO (#29), lotusroot-kim/MC-GRPO',
    ],
    [
      'ngrpo',
      ngrpoAdvantage,
      'z-score over the group plus one virtual max-reward sample (all-wrong groups learn)',
      'NGRPO (#238), nangongrui-ngr/NGRPO',
    ],
    [
      'gdpo',
      gdpoAdvantage,
      'z-score each reward per group, weighted sum, z-score over the batch (ε = 1e-4)',
      'GDPO (#189), NVlabs/GDPO',
    ],
    [
      'stratified',
      stratifiedAdvantage,
      'α·(z-score within stratum) + (1−α)·(group z-score); α and strataFrom required',
      'Stratified GRPO (#27), arXiv 2510.06214',
      ['strata'],
    ],
    [
      'seed-grpo',
      seedGrpoAdvantage,
      '(r − mean_g)·(1 − α·SE/log G), SE = semantic entropy of answer clusters; α required',
      'SEED-GRPO (#215), arXiv 2505.12346',
      ['clusters'],
    ],
    [
      's-grpo',
      serialGroupAdvantage,
      'serial early-exit group: r_k = 1/2^(n_k−1) if correct, A = r − mean; needs a serial-exit rollout',
      'S-GRPO (#25), arXiv 2505.07686',
      ['serialRollout'],
    ],
    [
      'tree',
      treeAdvantage,
      'token-level (V(s) − V(root) + V(s) − V(parent))/√leaves over the prefix tree',
      'TreeRL, arXiv 2506.11902',
    ],
    [
      'single-stream',
      singleStreamAdvantage,
      'r − v(q) with a persistent, KL-adaptive per-prompt value, z-scored over the batch',
      'SPO: Single-stream Policy Optimization (#252), arXiv 2509.13232',
      ['baselines'],
    ],
  ],
  advantageOptionSchemas,
);

/** Policy losses by name (ALGORITHMS.md §2). */
export const policyLosses = filled<PolicyLossFn>(
  'policy loss',
  [
    [
      'ppo-clip',
      ppoClipLoss,
      '−min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A) per token; clip-higher, dual-clip; token-mean',
      'PPO (Schulman 2017); GRPO; DAPO clip-higher, arXiv 2503.14476',
    ],
    [
      'cispo',
      cispoLoss,
      '−sg(clip(ρ))·A·logπ: every token keeps a gradient; relative or absolute cap',
      'MiniMax-M1 (CISPO); ScaleRL absolute cap',
    ],
    [
      'dispo',
      dispoLoss,
      'CISPO-style weight with separate bounds for A>0 and A<0, optional mask outside',
      'DISPO (#229), from the abstract',
    ],
    [
      'gspo',
      gspoLoss,
      'sequence ratio exp(mean_t log-ratio), clipped per sequence (ε 3e-4/4e-4)',
      'GSPO (Qwen 2025); TRL importance_sampling_level="sequence"',
    ],
    [
      'gspo-token',
      gspoTokenLoss,
      'GSPO ratio with per-token advantages: sg(s)·π/sg(π)',
      'GSPO (Qwen 2025); TRL "sequence_token"',
    ],
    [
      'real',
      realLoss,
      'rewards as labels: log(1+Σ_pos e^{−s̄/τ}) + log(1+Σ_neg e^{s̄/τ}) per group, τ = 0.5; whole groups per micro-batch',
      'REAL (#244); ms-swift REAL doc',
      ['wholeGroups'],
    ],
    [
      'reinforce',
      reinforceLoss,
      'on-policy −exp(logπ − sg(logπ))·A, no ratio to π_old, no clip',
      'Williams 1992 (REINFORCE with a group baseline)',
    ],
    [
      'gtpo',
      gtpoLoss,
      'on-policy −Σ_t ρAδ/|o|: conflict-token weights δ from the group, entropy filter on A',
      'GTPO (#197), winstonsmith1897/GTPO',
      ['groupTokenWeights'],
    ],
  ],
  lossOptionSchemas,
);

/** Loss aggregation modes by name (ALGORITHMS.md §3). */
export const lossAggregations = filled<AggregationFn>(
  'loss aggregation',
  [
    [
      'token-mean',
      tokenMeanWeights,
      'Σ L / tokens (local, or globalTokenCount for exact accumulation)',
      'BNPO; DAPO/CISPO global token mean',
    ],
    ['seq-mean-token-mean', seqMeanTokenMeanWeights, '(1/N) Σ_i (1/T_i) Σ_t L', 'GRPO (DeepSeekMath)'],
    ['seq-mean-token-sum', seqMeanTokenSumWeights, '(1/N) Σ_i Σ_t L', 'verl agg_loss option'],
    [
      'seq-mean-token-sum-norm',
      seqMeanTokenSumNormWeights,
      'Σ L / (N·L_max), a constant normaliser',
      'Dr. GRPO, arXiv 2503.20783',
    ],
  ],
  {},
);

/** KL estimators by name (ALGORITHMS.md §4). */
export const klEstimators = filled<KlEstimatorFn>(
  'KL estimator',
  [
    [
      'k1',
      klK1,
      'log π − log π_ref (unbiased, can be negative; the KL-in-reward default)',
      'Schulman 2020, "Approximating KL Divergence"',
    ],
    ['k2', klK2, '½ (log π_ref − log π)² (biased, low variance)', 'Schulman 2020, "Approximating KL Divergence"'],
    ['k3', klK3, '(r − 1) − log r, r = π_ref/π (unbiased, ≥ 0; GRPO)', 'Schulman 2020; DeepSeekMath'],
  ],
  {},
);

/** Group filters by name (ALGORITHMS.md §6.1–§6.2). */
export const groupFilters = filled<GroupFilterFn>(
  'group filter',
  [
    [
      'dynamic-sampling',
      dropZeroVarianceGroups,
      'drop groups whose rewards all agree (refill with refillKeptGroups)',
      'DAPO dynamic sampling, arXiv 2503.14476',
    ],
    [
      'drop-all-correct',
      dropAllCorrectGroups,
      'drop only all-correct groups (all-wrong ones stay for NGRPO)',
      'NGRPO (#238) filter_groups.strategy=all_correct',
    ],
    [
      'mask-truncated',
      maskTruncatedCompletions,
      'completions cut at max length leave the loss',
      'TRL mask_truncated_completions; DAPO overlong filtering',
    ],
  ],
  groupFilterOptionSchemas,
);

/** Prompt selectors by name (ALGORITHMS.md §6.3–§6.4). */
export const promptSelectors = filled<PromptSelectorFn>(
  'prompt selector',
  [
    [
      'knapsack',
      knapsackAllocation,
      'rollouts per prompt maximising Σ P_nz(N,p)·p(1−p)² under a budget (exact DP)',
      'Knapsack RL (#258), arXiv 2509.25849',
    ],
    [
      'vade',
      vadeSelection,
      'top-k prompts by p̃(1−p̃), p̃ ~ Beta posterior (Thompson) or its mean',
      'VADE (#262), from the abstract',
    ],
  ],
  promptSelectorOptionSchemas,
);

/** Turn-level credit for multi-turn episodes by name (docs/turn-credit.md); `algorithm.turnCredit`. */
export const turnCreditEstimators = filled<TurnCreditFn>(
  'turn-credit estimator',
  [
    [
      'turn-rewards',
      turnRewardsCredit,
      "r_t = env turn reward (+ R on the last turn), G_t = Σ γ^k r, z-scored over the group's pooled turn returns",
      "discounted returns with a group baseline (REINFORCE); this library's default multi-turn credit",
    ],
    [
      'igpo',
      igpoCredit,
      'r_t = information gain (t < T), r_T = R; group z-score over all turn rewards; A_t = Σ_{k≥t} γ^{k−t} Â_k',
      'IGPO, Wang et al. 2025, arXiv 2510.14967; GuoqingWang1/IGPO',
      ['informationGains'],
    ],
    [
      'gigpo',
      gigpoCredit,
      'A = A^E (episode, group) + ω·A^S (discounted returns grouped by equal anchor state); γ 0.95, ω 1, F_norm 1',
      'GiGPO, Feng et al. 2025, arXiv 2505.10978; langfengQ/verl-agent',
      ['stateKeys'],
    ],
  ],
  turnCreditOptionSchemas,
);

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
