"""Reference for src/algorithms/advantages-structured.test.ts (MRN, papers.tsv 141): ReFine-RFT's
multi-reward normalisation, the lines of MRPOTrainer.compute_loss in jiezhu23/ReFine-RFT
src/refinerft/trainer/mrpo_trainer.py ("NEW advantage calculation") in float64 torch, on a batch of
two groups of four with the five rewards and weights of train_configs_mrpo_lora_r64a128_aircrafts.yaml
(format, accuracy, think_punishment, accuracy_mllm, embedding_similarity; weights 1, 1, 1, 0.1, 0.1).

Run: /usr/bin/python3 scripts/reference/refine_rft_mrn.py > test/fixtures/refine-rft-mrn.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)
num_generations = 4
reward_weights = torch.tensor([1.0, 1.0, 1.0, 0.1, 0.1])
# [B*G, K]: rows are samples, columns the five rewards
rewards_per_func = torch.tensor([
    [1, 1, 1, 1.0, 0.91],
    [1, 0, 1, 0.6, 0.52],
    [0, 1, 0, 1.0, 0.88],
    [1, 0, 0, 0.0, 0.35],
    [1, 1, 1, 0.9, 0.97],
    [1, 1, 1, 0.9, 0.97],
    [1, 1, 0, 0.7, 0.81],
    [0, 0, 0, 0.1, 0.12],
])
mean_grouped_rewards = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[1]).mean(dim=1)
std_grouped_rewards = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[1]).std(dim=1)
mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
std_grouped_rewards = std_grouped_rewards.repeat_interleave(num_generations, dim=0)
advantages = (rewards_per_func - mean_grouped_rewards) / (std_grouped_rewards + 1e-4)
advantages = (advantages * reward_weights).sum(dim=1)
print(json.dumps({
    "rewardComponents": rewards_per_func.T.tolist(),
    "rewardWeights": reward_weights.tolist(),
    "groupSize": num_generations,
    "advantages": advantages.tolist(),
}, indent=1))
