/**
 * ProRAG's dual-granularity advantage (#100, Wang, Zhao, Dou 2026, "ProRAG: Process-Supervised
 * Reinforcement Learning for Retrieval-Augmented Generation", arXiv 2601.21912), as the authors'
 * `_generate_and_score_completions` computes it (github.com/lilinwz/ProRAG prorag/rl/trainer.py at
 * c7a6411; step scores from prorag/rl/rollout.py, β from scripts/rl.sh):
 *
 *   outcome part  A^out_i = (R_i − mean_g R)/(std_g R + 1e-4), sample std (torch.std) over the
 *                 group's scored episodes; R_i the episode's combined reward.
 *   step part     every model turn (a reasoning step) has a step score s_{i,t} (the environment's turn
 *                 reward: in the paper the MCTS-trained PRM's score plus a step-format term). The
 *                 scores are pooled over the group with each turn weighted by its token count w_{i,t}
 *                 (the code repeats a step's score on every generated token and pools the tokens):
 *                 μ = Σ w·s / Σ w,  σ = √(Σ w·(s − μ)² / Σ w + 1e-8), σ = 1 when Σ w ≤ 1;
 *                 A^step_{i,t} = (s_{i,t} − μ)/σ.
 *   A_{i,t} = A^out_i + β·A^step_{i,t},  β = 0.3 (the launch script; the trainer's default is 0.5).
 *
 * Our choices where the code has no case [I]: a turn whose reward is null has no step score — it
 * enters no pool and its step part is 0; a group with one scored episode has A^out = 0 (torch.std of
 * one value is NaN there). The trainer passes each turn's loss-token count (`turnTokenCounts`, over
 * the episode's rows); an input without them weighs every turn 1.
 *
 * Is not: the PRM (its MCTS data construction and training), the ProRAG rollout or its rewards.
 */
import { z } from 'zod';
import { defineTurnCredit, type TurnCreditInput, type TurnCreditResult, turnMetrics } from './turn-credit.js';

/** The outcome z-score's ε (the authors' `std_rewards + 1e-4`). */
const OUTCOME_EPSILON = 1e-4;
/** Added to the pooled variance before the square root (`(group_vars + 1e-8).sqrt()`). */
const VARIANCE_EPSILON = 1e-8;

/** Options of {@link proragCredit}. */
export interface ProragOptions {
  /** β, the weight of the step part (default 0.3). */
  beta?: number;
}

/** Mean and sample std of the group's outcomes; one value → mean itself (A^out = 0). */
function outcomeStats(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  if (values.length === 1) return { mean, std: 1 };
  const squares = values.reduce((sum, value) => sum + (value - mean) ** 2, 0);
  return { mean, std: Math.sqrt(squares / (values.length - 1)) };
}

/**
 * 'prorag': A_{i,t} = A^out_i + β·A^step_{i,t} — the group z-score of the episode reward plus β times
 * the turn's step score normalised over the group's token-weighted pool of step scores (file header).
 */
export function proragCredit(input: TurnCreditInput, options: Record<string, unknown>): TurnCreditResult {
  const beta = (options.beta as number | undefined) ?? 0.3;
  const total = input.groupSizes.reduce((sum, size) => sum + size, 0);
  if (total !== input.rewards.length || input.turnRewards.length !== input.rewards.length)
    throw new Error(
      `prorag: groupSizes sum to ${total}, rewards has ${input.rewards.length} episodes and turnRewards ${input.turnRewards.length}; they must agree.`,
    );
  input.turnTokenCounts?.forEach((counts, episode) => {
    if (counts.length !== input.turnRewards[episode]!.length)
      throw new Error(
        `prorag: turnTokenCounts[${episode}] has ${counts.length} turns but turnRewards[${episode}] has ${input.turnRewards[episode]!.length}.`,
      );
  });
  const weightOf = (episode: number, turn: number) => input.turnTokenCounts?.[episode]?.[turn] ?? 1;
  const turnAdvantages = input.turnRewards.map((turns) => turns.map(() => 0));
  let start = 0;
  for (const size of input.groupSizes) {
    const scored = Array.from({ length: size }, (_, k) => start + k).filter(
      (episode) => !Number.isNaN(input.rewards[episode]) && input.turnRewards[episode]!.length > 0,
    );
    start += size;
    if (scored.length === 0) continue;
    const outcome = outcomeStats(scored.map((episode) => input.rewards[episode]!));
    let weight = 0;
    let weighted = 0;
    for (const episode of scored)
      input.turnRewards[episode]!.forEach((score, turn) => {
        if (score === null) return;
        weight += weightOf(episode, turn);
        weighted += weightOf(episode, turn) * score;
      });
    const mean = weight > 0 ? weighted / weight : 0;
    let squares = 0;
    for (const episode of scored)
      input.turnRewards[episode]!.forEach((score, turn) => {
        if (score !== null) squares += weightOf(episode, turn) * (score - mean) ** 2;
      });
    const std = weight <= 1 ? 1 : Math.sqrt(squares / weight + VARIANCE_EPSILON);
    for (const episode of scored) {
      const outcomeAdvantage = (input.rewards[episode]! - outcome.mean) / (outcome.std + OUTCOME_EPSILON);
      turnAdvantages[episode] = input.turnRewards[episode]!.map(
        (score) => outcomeAdvantage + (score === null ? 0 : (beta * (score - mean)) / std),
      );
    }
  }
  return { turnAdvantages, metrics: turnMetrics(turnAdvantages, input) };
}

/** `algorithm.turnCredit: prorag`: the entry `grpo list` prints and configs name. */
export const proragCreditPart = defineTurnCredit({
  name: 'prorag',
  fn: proragCredit,
  description:
    "A = A^out + β·A^step: the episode reward's group z-score (ε 1e-4) plus each turn's step score normalised over the group's pooled step scores; β 0.3",
  citation: 'ProRAG (#100), Wang, Zhao, Dou 2026, arXiv 2601.21912; lilinwz/ProRAG prorag/rl/trainer.py',
  options: z
    .object({ beta: z.number().finite().min(0).describe('weight of the step (process) advantage') })
    .partial()
    .strict(),
});
