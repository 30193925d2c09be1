/**
 * Turn-level credit for multi-turn episodes: from each episode's combined reward, the environment's
 * per-turn rewards and (when an estimator needs them) anchor-state keys or information gains, one
 * advantage per model turn — every loss token of that turn gets it.
 *
 * Is: four registered estimators sharing `TurnCreditFn` ('turn-rewards', 'igpo', 'gigpo', 'matchtir'), pure
 * functions over number arrays, with their exact choices in each TSDoc and their vectors in
 * docs/turn-credit.md.
 * Is not: the rollout that produces turns, the trainer's computation of information gains (it needs
 * the policy), or the placement of advantages on tokens (the trainer broadcasts a turn's value over
 * that turn's loss tokens).
 *
 * Shared rules: groups are contiguous (sizes in `groupSizes`); an episode whose reward is NaN is
 * unscored — all its turns get advantage 0 and it enters no mean or standard deviation; an episode
 * with zero model turns gets an empty row.
 */
import { type Part, definePart } from './registry.js';
import { z } from 'zod';
import { gammaOption, turnNormalizationOption } from './option-schemas.js';

/** What every turn-credit estimator receives. */
export interface TurnCreditInput {
  /** [N] each episode's combined reward (NaN = unscored); groups are contiguous, sizes in groupSizes. */
  rewards: Float64Array;
  groupSizes: readonly number[];
  /**
   * Per episode, per model turn: the environment's reward for that turn (null = none): `respond`'s
   * for a turn without tool calls, the mean of its scored calls for a turn with calls.
   */
  turnRewards: readonly (readonly (number | null)[])[];
  /** Per episode, per model turn: true when the turn made tool calls (its reward, if any, scores the calls). */
  toolCallTurns?: readonly (readonly boolean[])[];
  /** Per episode, per model turn: the anchor-state key before that turn (GiGPO); absent when the environment has no stateKey(). */
  stateKeys?: readonly (readonly string[])[];
  /** Per episode, per model turn: information gain of that turn (IGPO), computed by the trainer with the policy. */
  informationGains?: readonly (readonly number[])[];
  /** Per episode, per model turn: how many loss tokens the turn has over the episode's rows (ProRAG pools by token). */
  turnTokenCounts?: readonly (readonly number[])[];
}

/** What every turn-credit estimator returns. */
export interface TurnCreditResult {
  /** Per episode, per model turn: the advantage every loss token of that turn gets. */
  turnAdvantages: number[][];
  metrics: Record<string, number>;
}

/** A turn-credit estimator: a plain function of the episodes and its parsed options. */
export type TurnCreditFn = (input: TurnCreditInput, options: Record<string, unknown>) => TurnCreditResult;

/** A turn-credit estimator's file exports its function with this entry (`algorithm.turnCredit`). */
export const defineTurnCredit = (entry: Omit<Part<TurnCreditFn>, 'kind'>): Part<TurnCreditFn> =>
  definePart('turn-credit estimator', entry);

/** How a set of values is centred and scaled: 'mean-std' (z-score) or 'mean' (centring only). */
type Normalization = 'mean-std' | 'mean';

/** Adds ε to the standard deviation before dividing (the GRPO convention of this codebase). */
const EPSILON = 1e-6;

/** Checks the per-episode arrays against N and the group sizes; every message names the field and row. */
function checkShapes(input: TurnCreditInput, estimator: string): void {
  const count = input.rewards.length;
  const grouped = input.groupSizes.reduce((sum, size) => sum + size, 0);
  if (grouped !== count) {
    throw new Error(`${estimator}: groupSizes sum to ${grouped} but there are ${count} episode rewards.`);
  }
  if (input.turnRewards.length !== count) {
    throw new Error(`${estimator}: turnRewards has ${input.turnRewards.length} episodes, expected ${count}.`);
  }
  const perTurn: [string, readonly (readonly unknown[])[] | undefined][] = [
    ['stateKeys', input.stateKeys],
    ['toolCallTurns', input.toolCallTurns],
    ['informationGains', input.informationGains],
  ];
  for (const [field, rows] of perTurn) {
    if (rows === undefined) continue;
    if (rows.length !== count)
      throw new Error(`${estimator}: ${field} has ${rows.length} episodes, expected ${count}.`);
    rows.forEach((row, episode) => {
      if (row.length !== input.turnRewards[episode].length) {
        throw new Error(
          `${estimator}: ${field}[${episode}] has ${row.length} turns but turnRewards[${episode}] has ${input.turnRewards[episode].length}.`,
        );
      }
    });
  }
}

/** The episode indices of each group, in order. */
function groupRanges(groupSizes: readonly number[]): number[][] {
  const groups: number[][] = [];
  let start = 0;
  for (const size of groupSizes) {
    groups.push(Array.from({ length: size }, (_, offset) => start + offset));
    start += size;
  }
  return groups;
}

/** Zeros for every turn of every episode: unscored episodes keep these. */
function zeroRows(input: TurnCreditInput): number[][] {
  return input.turnRewards.map((turns) => turns.map(() => 0));
}

/**
 * Mean and scale of `values`: population std over the pooled values (IGPO's code), or the sample
 * std (GRPO / GiGPO's `torch.std`), with a single value scaled by 1.
 */
function moments(values: readonly number[], std: 'population' | 'sample'): { mean: number; scale: number } {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  if (values.length <= 1) return { mean, scale: 1 };
  const squares = values.reduce((sum, value) => sum + (value - mean) ** 2, 0);
  return { mean, scale: Math.sqrt(squares / (std === 'population' ? values.length : values.length - 1)) };
}

/** (value − mean)/(scale + ε) or value − mean. */
function normalize(value: number, stats: { mean: number; scale: number }, mode: Normalization): number {
  return mode === 'mean-std' ? (value - stats.mean) / (stats.scale + EPSILON) : value - stats.mean;
}

/** G_t = Σ_{k≥t} γ^{k−t} x_k, computed backwards. */
function discountedSums(values: readonly number[], gamma: number): number[] {
  const sums = new Array<number>(values.length);
  let running = 0;
  for (let turn = values.length - 1; turn >= 0; turn--) {
    running = values[turn] + gamma * running;
    sums[turn] = running;
  }
  return sums;
}

/** Per-turn rewards of one episode: the environment's (null → 0), plus the episode's reward on its last turn. */
function stepRewards(turnRewards: readonly (number | null)[], outcome: number): number[] {
  const steps = turnRewards.map((reward) => reward ?? 0);
  if (steps.length > 0) steps[steps.length - 1] += outcome;
  return steps;
}

function scoredEpisodes(input: TurnCreditInput, group: readonly number[]): number[] {
  return group.filter((episode) => !Number.isNaN(input.rewards[episode]) && input.turnRewards[episode].length > 0);
}

/**
 * 'turn-rewards': r_{i,t} = (environment's reward of turn t, null → 0), with the episode's combined
 * reward R_i added to its last turn; G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k}; then every turn's return is
 * normalised against all turn returns of the group's scored episodes pooled together:
 * A_{i,t} = (G_{i,t} − mean)/(std + 1e-6), sample std, a single pooled value → std 1.
 * Options: gamma (default 1), normalization 'mean-std' (default) or 'mean'.
 */
export function turnRewardsCredit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  checkShapes(input, 'turn-rewards');
  const gamma = (options.gamma as number | undefined) ?? 1;
  const normalization = (options.normalization as Normalization | undefined) ?? 'mean-std';
  const turnAdvantages = zeroRows(input);
  for (const group of groupRanges(input.groupSizes)) {
    const scored = scoredEpisodes(input, group);
    if (scored.length === 0) continue;
    const returns = new Map(
      scored.map((episode) => [
        episode,
        discountedSums(stepRewards(input.turnRewards[episode], input.rewards[episode]), gamma),
      ]),
    );
    const stats = moments([...returns.values()].flat(), 'sample');
    for (const [episode, episodeReturns] of returns) {
      turnAdvantages[episode] = episodeReturns.map((value) => normalize(value, stats, normalization));
    }
  }
  return { turnAdvantages, metrics: turnMetrics(turnAdvantages, input) };
}

/** `algorithm.turnCredit: turn-rewards`: the entry `grpo list` prints and configs name. */
export const turnRewardsCreditPart = defineTurnCredit({
  name: 'turn-rewards',
  fn: turnRewardsCredit,
  description:
    "r_t = env turn reward (+ R on the last turn), G_t = Σ γ^k r, z-scored over the group's pooled turn returns",
  citation: "discounted returns with a group baseline (REINFORCE); this library's default multi-turn credit",
  options: z.object({ gamma: gammaOption, normalization: turnNormalizationOption }).partial().strict(),
});

/**
 * 'igpo' (IGPO, Wang et al. 2025, arXiv 2510.14967, §3): turn reward r_{i,t} = IG_{i,t} (the
 * information gain the trainer measured, π(answer | turns ≤ t) − π(answer | turns < t)) for every
 * turn but the last, r_{i,T} = R_i (the outcome); all turn rewards of the group's scored episodes are
 * normalised together ('joint', the official code's default) or IG and outcome rewards separately
 * ('separate'): Â = (r − mean)/(std + 1e-6) with the population std √(var + 1e-8) and a single value
 * scaled by 1, as in the authors' `compute_grpo_outcome_advantage`; then A_{i,t} = Σ_{k≥t} γ^{k−t} Â_{i,k}.
 * The environment's own turn rewards are not used. Options: gamma (default 1, the code's default),
 * normalization, pooling 'joint' | 'separate'.
 */
export function igpoCredit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  checkShapes(input, 'igpo');
  const gains = input.informationGains;
  if (gains === undefined) throw new Error('igpo: needs input.informationGains (per episode, per turn).');
  const gamma = (options.gamma as number | undefined) ?? 1;
  const normalization = (options.normalization as Normalization | undefined) ?? 'mean-std';
  const pooling = (options.pooling as 'joint' | 'separate' | undefined) ?? 'joint';
  const turnAdvantages = zeroRows(input);
  for (const group of groupRanges(input.groupSizes)) {
    const scored = scoredEpisodes(input, group);
    if (scored.length === 0) continue;
    const rewards = new Map(
      scored.map((episode) => {
        const turns = input.turnRewards[episode].length;
        return [episode, [...gains[episode].slice(0, turns - 1), input.rewards[episode]]];
      }),
    );
    const finals = scored.map((episode) => rewards.get(episode)!.at(-1)!);
    const intermediates = scored.flatMap((episode) => rewards.get(episode)!.slice(0, -1));
    const joint = igpoMoments([...finals, ...intermediates]);
    const finalStats = pooling === 'joint' ? joint : igpoMoments(finals);
    const gainStats = pooling === 'joint' ? joint : igpoMoments(intermediates);
    for (const [episode, episodeRewards] of rewards) {
      const last = episodeRewards.length - 1;
      const normalized = episodeRewards.map((value, turn) =>
        normalize(value, turn === last ? finalStats : gainStats, normalization),
      );
      turnAdvantages[episode] = discountedSums(normalized, gamma);
    }
  }
  return { turnAdvantages, metrics: turnMetrics(turnAdvantages, input) };
}

/** `algorithm.turnCredit: igpo`: the entry `grpo list` prints and configs name. */
export const igpoCreditPart = defineTurnCredit({
  name: 'igpo',
  fn: igpoCredit,
  description:
    'r_t = information gain (t < T), r_T = R; group z-score over all turn rewards; A_t = Σ_{k≥t} γ^{k−t} Â_k',
  citation: 'IGPO, Wang et al. 2025, arXiv 2510.14967; GuoqingWang1/IGPO',
  needs: ['informationGains'],
  options: z
    .object({
      gamma: gammaOption,
      normalization: turnNormalizationOption,
      pooling: z
        .enum(['joint', 'separate'])
        .describe("'joint': IG and outcome rewards normalised together; 'separate': each kind on its own"),
    })
    .partial()
    .strict(),
});

/** IGPO's group statistics: population variance, std = √(var + 1e-8), one value → std 1. */
function igpoMoments(values: readonly number[]): { mean: number; scale: number } {
  if (values.length === 0) return { mean: 0, scale: 1 };
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  if (values.length <= 1) return { mean, scale: 1 };
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length;
  return { mean, scale: Math.sqrt(variance + 1e-8) };
}

/**
 * 'gigpo' (GiGPO, Feng et al. 2025, arXiv 2505.10978, Eqs. 3–8): episode advantage
 * A^E_i = (R_i − mean_g R)/F_norm over the group's scored episodes (a one-episode group: A^E = R);
 * step rewards r_{i,t} = the environment's turn reward (null → 0) with R_i added on the last turn,
 * returns G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k}; steps of the same group whose anchor-state key before the
 * turn is equal form a step group, A^S_{i,t} = (G_{i,t} − mean_step-group G)/F_norm (a one-step group:
 * A^S = 0, as verl-agent's `step_norm_reward`); A_{i,t} = A^E_i + ω·A^S_{i,t}. F_norm = 1
 * (normalization 'mean', verl-agent's default mode "mean_norm") or the sample std + 1e-6 ('mean-std').
 * Options: gamma (default 0.95, the paper's), omega (default 1), normalization (default 'mean').
 */
export function gigpoCredit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  checkShapes(input, 'gigpo');
  const stateKeys = input.stateKeys;
  if (stateKeys === undefined) {
    throw new Error('gigpo: needs input.stateKeys (an environment with stateKey(), one key per turn).');
  }
  const gamma = (options.gamma as number | undefined) ?? 0.95;
  const omega = (options.omega as number | undefined) ?? 1;
  const normalization = (options.normalization as Normalization | undefined) ?? 'mean';
  const turnAdvantages = zeroRows(input);
  const stepGroupSizes: number[] = [];
  for (const group of groupRanges(input.groupSizes)) {
    const scored = scoredEpisodes(input, group);
    if (scored.length === 0) continue;
    const outcomes = scored.map((episode) => input.rewards[episode]);
    const episodeStats = scored.length === 1 ? { mean: 0, scale: 1 } : moments(outcomes, 'sample');
    const stepGroups = new Map<string, { episode: number; turn: number; value: number }[]>();
    for (const episode of scored) {
      const returns = discountedSums(stepRewards(input.turnRewards[episode], input.rewards[episode]), gamma);
      returns.forEach((value, turn) => {
        const key = stateKeys[episode][turn];
        const members = stepGroups.get(key) ?? [];
        members.push({ episode, turn, value });
        stepGroups.set(key, members);
      });
    }
    for (const episode of scored) {
      const episodeAdvantage = normalize(input.rewards[episode], episodeStats, normalization);
      turnAdvantages[episode] = turnAdvantages[episode].map(() => episodeAdvantage);
    }
    for (const members of stepGroups.values()) {
      stepGroupSizes.push(members.length);
      const stats = moments(
        members.map((member) => member.value),
        'sample',
      );
      for (const { episode, turn, value } of members) {
        turnAdvantages[episode][turn] += omega * normalize(value, stats, normalization);
      }
    }
  }
  const metrics = turnMetrics(turnAdvantages, input);
  if (stepGroupSizes.length > 0) {
    metrics['credit/stepGroupSize/mean'] = stepGroupSizes.reduce((sum, size) => sum + size, 0) / stepGroupSizes.length;
    metrics['credit/stepGroups/singletonFraction'] =
      stepGroupSizes.filter((size) => size === 1).length / stepGroupSizes.length;
  }
  return { turnAdvantages, metrics };
}

/** `algorithm.turnCredit: gigpo`: the entry `grpo list` prints and configs name. */
export const gigpoCreditPart = defineTurnCredit({
  name: 'gigpo',
  fn: gigpoCredit,
  description:
    'A = A^E (episode, group) + ω·A^S (discounted returns grouped by equal anchor state); γ 0.95, ω 1, F_norm 1',
  citation: 'GiGPO, Feng et al. 2025, arXiv 2505.10978; langfengQ/verl-agent',
  needs: ['stateKeys'],
  options: z
    .object({
      gamma: gammaOption,
      omega: z.number().nonnegative().describe('ω, the weight of the step-level advantage'),
      normalization: turnNormalizationOption,
    })
    .partial()
    .strict(),
});

/** Mean and sample std (torch.std); one value → mean 0, std 1, as the authors' singleton case. */
function matchtirMoments(values: readonly number[]): { mean: number; scale: number } {
  if (values.length === 1) return { mean: 0, scale: 1 };
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  const squares = values.reduce((sum, value) => sum + (value - mean) ** 2, 0);
  return { mean, scale: Math.sqrt(squares / (values.length - 1)) };
}

/**
 * 'matchtir': turn rewards r_{i,t} = the environment's turn reward (null → 0; for a tool-call turn the
 * mean of its scored calls) with the episode's combined reward R_i added on its last turn [I: in the
 * authors' code the answer turn's reward is the answer F1, here the run's rewards are that outcome];
 * trajectory advantage A^T_i = (S_i − mean_g S)/(std_g S + 1e-6) with S_i = Σ_t r_{i,t} (the code's
 * `token_level_rewards.sum`); turn advantage A^t_{i,t} = (G_{i,t} − mean)/(std + 1e-6) with
 * G_{i,t} = Σ_{k≥t} γ^{k−t} r_{i,k} (γ = the code's `lam = 0.9`), normalised over the group's scored
 * episodes' turns at the same index t; sample std, a lone value → mean 0, std 1 (the code's singleton
 * case); A_{i,t} = (A^T_i + A^t_{i,t})/2. Options: gamma (default 0.9).
 */
export function matchtirCredit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  checkShapes(input, 'matchtir');
  const gamma = (options.gamma as number | undefined) ?? 0.9;
  const turnAdvantages = zeroRows(input);
  for (const group of groupRanges(input.groupSizes)) {
    const scored = scoredEpisodes(input, group);
    if (scored.length === 0) continue;
    const rewards = scored.map((episode) => stepRewards(input.turnRewards[episode], input.rewards[episode]));
    const sums = rewards.map((turns) => turns.reduce((sum, value) => sum + value, 0));
    const trajectory = matchtirMoments(sums);
    const returns = rewards.map((turns) => discountedSums(turns, gamma));
    const longest = Math.max(...returns.map((turns) => turns.length));
    const byTurn = Array.from({ length: longest }, (_, turn) =>
      matchtirMoments(returns.filter((turns) => turn < turns.length).map((turns) => turns[turn])),
    );
    scored.forEach((episode, k) => {
      const episodeAdvantage = (sums[k] - trajectory.mean) / (trajectory.scale + EPSILON);
      turnAdvantages[episode] = returns[k].map(
        (value, turn) => (episodeAdvantage + (value - byTurn[turn].mean) / (byTurn[turn].scale + EPSILON)) / 2,
      );
    });
  }
  return { turnAdvantages, metrics: turnMetrics(turnAdvantages, input) };
}

/** `algorithm.turnCredit: matchtir`: the entry `grpo list` prints and configs name. */
export const matchtirCreditPart = defineTurnCredit({
  name: 'matchtir',
  fn: matchtirCredit,
  description:
    'A = (A^traj + A^turn)/2: GRPO over Σ turn rewards, plus discounted turn returns z-scored per turn index; γ 0.9',
  citation: 'MatchTIR, Qu et al. 2026; quchangle1/MatchTIR core_algos.compute_grpo_outcome_advantage',
  options: z.object({ gamma: gammaOption }).partial().strict(),
});

/** The mean and spread of the scored episodes' turn advantages (every estimator's `credit/` metrics). */
export function turnMetrics(turnAdvantages: number[][], input: TurnCreditInput): Record<string, number> {
  const values = turnAdvantages.filter((_, episode) => !Number.isNaN(input.rewards[episode])).flat();
  if (values.length === 0) return {};
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    'credit/turnAdvantage/mean': mean,
    'credit/turnAdvantage/absMean': values.reduce((sum, value) => sum + Math.abs(value), 0) / values.length,
  };
}
