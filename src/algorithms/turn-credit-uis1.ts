/**
 * UI-S1's advantage for semi-online multi-turn episodes (#96, Lu et al. 2025, arXiv 2509.11543),
 * as the authors' `compute_uis1_outcome_advantage` and `compute_step_discounted_returns`
 * (X-PLUG/MobileAgent UI-S1/uis1/core_uis1.py, at 93afb00) compute it from per-step scores:
 *
 *   step returns   G_{i,t} = r_{i,t} + γ·G_{i,t+1} while turn t matched the expert's action; a turn
 *                  that did not match gets G_{i,t} = r_{i,t} and cuts the sum (earlier turns see no
 *                  reward past it): the paper's discounted future return, broken at the patch.
 *   episode part   A^E_{i,t} = (r_{i,t} − mean)/(std + 1e-6) over every turn of every scored episode
 *                  of the group (the code pools all step rows of a prompt: `compute_mean_std_cross_all_data`).
 *   step part      A^S_{i,t} = (G_{i,t} − mean)/(std + 1e-6) over the group's turns at the same index t.
 *   A_{i,t} = w_E·A^E_{i,t} + w_S·A^S_{i,t}.
 * std is torch.std (sample, N − 1). A one-value pool: episode part mean 0 and std 1 (so A^E = r);
 * step part mean = the value and std 1 (so A^S = 0), as the code's two singleton cases differ.
 * `normalization: 'mean'` only centres (the code's `mode="mean_norm"`); the authors' launch script
 * (UI-S1/scripts/train_example.sh) uses `mean_std_norm`, γ = 0.5 and w_S = 1, the defaults here.
 *
 * A turn "matched" when its reward is at least `matchThreshold` (default 0.9): with UI-S1's step
 * score 0.1·format + 0.9·action (action 1 exact, 0.5 type only, 0.1 parsed), only an exact action
 * reaches 0.9, which is the code's `extract_match`. A turn without a reward (null) scores 0 and did
 * not match. The episode's combined reward is used only to know whether the episode was scored (NaN:
 * its turns get 0 and enter no statistic); the authors' advantage reads the step scores alone.
 *
 * Is not: the semi-online rollout itself (the patching environment is `semiOnlineEnvironment`).
 */
import { z } from 'zod';
import { gammaOption, turnNormalizationOption } from './option-schemas.js';
import { defineTurnCredit, type TurnCreditInput, type TurnCreditResult, turnMetrics } from './turn-credit.js';

const EPSILON = 1e-6;

/** Sample mean and std (torch.std); `lone` says what one value gives. */
function stats(values: readonly number[], lone: 'zero-mean' | 'own-mean'): { mean: number; std: number } {
  if (values.length === 1) return { mean: lone === 'zero-mean' ? 0 : values[0]!, std: 1 };
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  const squares = values.reduce((sum, value) => sum + (value - mean) ** 2, 0);
  return { mean, std: Math.sqrt(squares / (values.length - 1)) };
}

/** The authors' discounted returns: accumulate backwards while matched; an unmatched turn keeps its own reward and resets. */
export function brokenDiscountedReturns(
  rewards: readonly number[],
  matched: readonly boolean[],
  gamma: number,
): number[] {
  const returns = new Array<number>(rewards.length);
  let running = 0;
  for (let turn = rewards.length - 1; turn >= 0; turn--) {
    if (matched[turn]) {
      running = rewards[turn]! + gamma * running;
      returns[turn] = running;
    } else {
      running = 0;
      returns[turn] = rewards[turn]!;
    }
  }
  return returns;
}

/**
 * 'ui-s1': A = w_E·(r − mean_group)/(std + 1e-6) + w_S·(G − mean_turn)/(std + 1e-6), G the
 * discounted future return cut at the first unmatched turn (see the file header).
 * Options: gamma (0.5), stepWeight (1), episodeWeight (1), normalization ('mean-std'), matchThreshold (0.9).
 */
export function uis1Credit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  const gamma = (options.gamma as number | undefined) ?? 0.5;
  const stepWeight = (options.stepWeight as number | undefined) ?? 1;
  const episodeWeight = (options.episodeWeight as number | undefined) ?? 1;
  const centreOnly = options.normalization === 'mean';
  const matchThreshold = (options.matchThreshold as number | undefined) ?? 0.9;
  const total = input.groupSizes.reduce((sum, size) => sum + size, 0);
  if (total !== input.rewards.length || input.turnRewards.length !== input.rewards.length)
    throw new Error(
      `ui-s1: groupSizes sum to ${total}, rewards has ${input.rewards.length} episodes and turnRewards ${input.turnRewards.length}; they must agree.`,
    );
  const turnAdvantages = input.turnRewards.map((turns) => turns.map(() => 0));
  const scale = (value: number, { mean, std }: { mean: number; std: number }) =>
    centreOnly ? value - mean : (value - mean) / (std + EPSILON);
  let start = 0;
  for (const size of input.groupSizes) {
    const scored = Array.from({ length: size }, (_, k) => start + k).filter(
      (episode) => !Number.isNaN(input.rewards[episode]) && input.turnRewards[episode]!.length > 0,
    );
    start += size;
    if (scored.length === 0) continue;
    const rewards = scored.map((episode) => input.turnRewards[episode]!.map((reward) => reward ?? 0));
    const returns = rewards.map((turns, k) =>
      brokenDiscountedReturns(
        turns,
        input.turnRewards[scored[k]!]!.map((reward) => reward !== null && reward >= matchThreshold),
        gamma,
      ),
    );
    const episodeStats = stats(rewards.flat(), 'zero-mean');
    const longest = Math.max(...returns.map((turns) => turns.length));
    const turnStats = Array.from({ length: longest }, (_, turn) =>
      stats(
        returns.filter((turns) => turn < turns.length).map((turns) => turns[turn]!),
        'own-mean',
      ),
    );
    scored.forEach((episode, k) => {
      turnAdvantages[episode] = rewards[k]!.map(
        (reward, turn) =>
          episodeWeight * scale(reward, episodeStats) + stepWeight * scale(returns[k]![turn]!, turnStats[turn]!),
      );
    });
  }
  return { turnAdvantages, metrics: turnMetrics(turnAdvantages, input) };
}

/** `algorithm.turnCredit: ui-s1`: the entry `grpo list` prints and configs name. */
export const uis1CreditPart = defineTurnCredit({
  name: 'ui-s1',
  fn: uis1Credit,
  description:
    "A = w_E·A^E + w_S·A^S: turn rewards z-scored over the group's turns, plus discounted future returns (cut at an unmatched turn) z-scored per turn index; γ 0.5",
  citation: 'UI-S1 (#96), Lu et al. 2025, arXiv 2509.11543; X-PLUG/MobileAgent UI-S1/uis1/core_uis1.py',
  options: z
    .object({
      gamma: gammaOption,
      stepWeight: z.number().finite().min(0),
      episodeWeight: z.number().finite().min(0),
      normalization: turnNormalizationOption,
      matchThreshold: z.number().finite(),
    })
    .partial()
    .strict(),
});
