/**
 * The algorithm settings of the TRL-0.14-era GRPOTrainer that the vision papers' code forks (R1-V,
 * VLM-R1, Med-R1, Reason-RFT, R1-AQA, BigCharts-R1 and SURDS all train with a copy of its
 * `compute_loss`): one update per batch, so the ratio is 1 and the loss is the code's
 * exp(logp − logp.detach())·A; advantages (r − mean)/(std + 1e-4) with torch's std over G − 1; a
 * sequence mean of token means; the k3 KL at β 0.04.
 *
 * Is not: a preset (`--preset grpo` is DeepSeekMath's, with ε 1e-6), nor anything a recipe must use:
 * a recipe whose paper changed one of these spells its own.
 */
export const trlGrpoAlgorithm = {
  advantage: 'grpo',
  advantageOptions: { epsilon: 1e-4 },
  loss: 'ppo-clip',
  aggregation: 'seq-mean-token-mean',
  klCoefficient: 0.04,
  klEstimator: 'k3',
};
