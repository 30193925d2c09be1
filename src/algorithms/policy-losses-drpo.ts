/**
 * DRPO: decoupled reward policy optimisation (Li et al., #256, arXiv 2510.04474). DisCO's log-L
 * objective with the positives re-weighted by their length, w_i ∝ exp((1 − |o_i|/L)/λ): shorter correct
 * answers pull harder, but a long correct answer still gets a positive weight — the length signal is
 * decoupled from the incorrect ones, so correctness is never traded for brevity.
 *
 * Is: the loss and its entry, exact to the authors' code (Optimization-AI/DRPO,
 * `verl/verl/trainer/ppo/core_algos.py`, `compute_policy_loss_drpo`), with the defaults of their
 * `scripts/train/run_drpo_1.5b_8k.sh` (λ = 0.1, δ = 1e-4, β = 1e3, τ = 10, ppo_kl_type 'kl').
 * L is `options.maxLength` (the trainer's sampling.maxNewTokens), else the padded width T: the
 * authors' eos_mask.size(-1), which with their use_max_seq_len is the maximum response length.
 * Is not: a length reward — no reward or advantage is changed; DRPO is only this weighting.
 */
import { z } from 'zod';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
} from './policy-losses-common.js';
import {
  type DiscoLossOptions,
  discoOptionFields,
  discriminativeLoss,
  refusesPerTokenTerms,
} from './policy-losses-disco.js';

/** DRPO's options: DisCO's, and λ of the length weight. */
export interface DrpoLossOptions extends DiscoLossOptions {
  /** λ in w = exp((1 − |o|/L)/λ) [Lambda] (default 0.1, the authors' script). */
  lengthLambda?: number;
}

/**
 * DRPO loss: DisCO (`discriminativeLoss`) with J_g = Σ_pos w_i·(s_i − τ·log Σ_neg e^{s/τ})/Σ_pos w_i,
 * w_i = exp((1 − |o_i|/L)/λ), λ = 0.1, L = options.maxLength or T; s = mean_t logπ_θ by default, and
 * DisCO's other options and defaults. Needs whole groups.
 * #256 (arXiv 2510.04474); Optimization-AI/DRPO core_algos.py compute_policy_loss_drpo.
 */
export function drpoLoss(input: PolicyLossInput, options: PolicyLossOptions & DrpoLossOptions = {}): PolicyLossResult {
  const lambda = options.lengthLambda ?? 0.1;
  if (!(lambda > 0)) throw new RangeError(`options.lengthLambda must be > 0, got ${lambda}.`);
  return discriminativeLoss(input, options, 'drpo', (prepared, tokens) => {
    const maxLength = options.maxLength ?? prepared.T;
    if (!(maxLength > 0)) throw new RangeError(`options.maxLength must be > 0, got ${maxLength}.`);
    return Float32Array.from(tokens, (length) => Math.exp((1 - length / maxLength) / lambda));
  });
}

/** `algorithm.loss: drpo`: the entry `grpo list` prints and configs name. */
export const drpoLossPart = definePolicyLoss({
  name: 'drpo',
  fn: drpoLoss,
  description: 'DisCO log-L with positives weighted exp((1 − |o|/L)/λ), λ = 0.1, L = maxNewTokens; whole groups',
  citation: 'DRPO (#256, arXiv 2510.04474); Optimization-AI/DRPO core_algos.py compute_policy_loss_drpo',
  needs: ['wholeGroups'],
  options: z
    .object({
      ...discoOptionFields,
      lengthLambda: z.number().positive().describe('λ of the length weight exp((1 − |o|/L)/λ) (default 0.1)'),
    })
    .partial()
    .strict(),
  refuses: (_options, settings) => refusesPerTokenTerms('drpo', settings),
});
