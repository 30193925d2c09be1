"""Reference for src/algorithms/advantages-trust.test.ts: Trust-GRPO's rewards and advantages
(SophiaVL-R1, #228, arXiv 2505.17018), ported in float64 numpy/torch from the authors'
kxfan2002/SophiaVL-R1 verl/workers/reward/custom.py, CustomRewardManager.__call__ with n > 0 (one
call per prompt group): the all-≥0.9 / all-≤0.1 check, the thinking reward queried only where the
answer score is ≥ 0.2 (0 otherwise), the correct/incorrect means, discount_factor =
exp(-steps/T)*0.3 scaled by exp(correct_avg - incorrect_avg) when correct_avg < incorrect_avg and a
correct response exists, score = answer + discount_factor*process; then the GRPO advantage of their
EasyR1 trainer: (score - mean)/(std + 1e-6), torch.std (N-1), a group of one keeps mean 0, std 1.

The reward model's answers are the `thinking` inputs (what get_process_reward would return if asked).

Run with Debian's torch: /usr/bin/python3 scripts/reference/trust_grpo.py > test/fixtures/trust-grpo.json
"""
import json
import math

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def custom_reward_group(answer_score, thinking, steps, T=500):
    """custom.py's n > 0 branch for one group; returns the per-response score."""
    answer_score = np.array(answer_score, dtype=np.float64)
    process_score = [0.0] * len(answer_score)
    if (answer_score >= 0.9).all() or (answer_score <= 0.1).all():
        process_score = np.zeros_like(answer_score)
        discount_factor = 0
    else:
        for index in range(len(answer_score)):
            if answer_score[index] >= 0.2:
                process_score[index] = thinking[index]
            else:
                process_score[index] = 0
        process_score = np.array(process_score)
        correct_mask = answer_score >= 0.5
        incorrect_mask = ~correct_mask
        correct_avg = process_score[correct_mask].mean() if correct_mask.any() else 0
        incorrect_avg = process_score[incorrect_mask].mean() if incorrect_mask.any() else 0
        discount_factor = math.exp(-steps / T) * 0.3
        if correct_avg < incorrect_avg:
            if not correct_mask.any():
                discount_factor *= 1
            else:
                discount_factor *= np.exp(correct_avg - incorrect_avg)
    return [float(answer_score[i] + discount_factor * process_score[i]) for i in range(len(answer_score))]


def grpo_advantage(scores, group_sizes, eps=1e-6):
    out, start = [], 0
    for size in group_sizes:
        s = torch.tensor(scores[start:start + size])
        if size == 1:
            mean, std = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean, std = s.mean(), s.std()
        out += ((s - mean) / (std + eps)).tolist()
        start += size
    return out


def main():
    rng = np.random.default_rng(228)
    levels = [0.0, 0.1, 0.15, 0.3, 0.5, 0.6, 0.9, 1.0]
    groups = [
        ([1, 1, 0, 0], [0.3, 0.4, 0.8, 0.6]),  # ALGORITHMS.md §5.6's group: the gate zeroes the wrong ones
        ([1, 0.3, 0.3, 0], [0.2, 0.9, 0.7, 0.5]),  # μ_c < μ_i: the trust weight exp(μ_c − μ_i)
        ([1, 1, 0.9, 1], [0.1, 0.5, 0.2, 0.9]),  # all ≥ 0.9: no thinking reward
        ([0, 0.1, 0, 0.05], [0.9, 0.9, 0.1, 0.3]),  # all ≤ 0.1: none
        ([0.3, 0.4, 0.2], [0.8, 0.1, 0.5]),  # no correct response: weight α·exp(−step/T)
        ([0.6], [0.7]),  # a group of one
    ]
    for size in [5, 6, 3, 8]:
        groups.append(
            ([float(rng.choice(levels)) for _ in range(size)], [round(float(rng.uniform()), 4) for _ in range(size)])
        )
    answers = [a for g in groups for a in g[0]]
    thinking = [t for g in groups for t in g[1]]
    sizes = [len(g[0]) for g in groups]
    cases = []
    for step in [0, 37, 500]:
        scores = [s for g in groups for s in custom_reward_group(g[0], g[1], step)]
        cases.append({"step": step, "rewards": scores, "advantages": grpo_advantage(scores, sizes)})
    json.dump({"outcomes": answers, "thinking": thinking, "groupSizes": sizes, "cases": cases}, __import__("sys").stdout, indent=1)


if __name__ == "__main__":
    main()
