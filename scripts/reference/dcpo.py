"""Reference for src/algorithms/advantages-dcpo.test.ts: DCPO's advantages (#198, arXiv 2601.12730),
written in float64 torch from the authors' code path.

Source: 597358816/DCPO, verl/trainer/ray_trainer.py fit, branch alg == "DCPO" (temperature from the
previous update's entropy_loss against trainer.entropy_base, _compute_bool_reward_by_score with
threshold 0.05 and absolute=False, entropy_factor = exp(old_log_probs_t - old_log_probs), alpha from
entropy_delta and the true ratio), with verl/trainer/core_algos.py compute_grpo_outcome_advantage
(sample std, eps 1e-6). entropy_base 0.5 from examples/qwen-math-7b-DCPO.sh.

The log-probs at the two temperatures come from a random softmax "policy" over 7 tokens, so
old_log_probs_t really is the same logits divided by T.

Run with Debian's torch: /usr/bin/python3 scripts/reference/dcpo.py > test/fixtures/dcpo.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)


def compute_grpo_outcome_advantage(scores, index, eps=1e-6):
    scores = scores.clone()
    groups = {}
    for i, g in enumerate(index):
        groups.setdefault(g, []).append(scores[i])
    mean = {g: torch.mean(torch.tensor(v)) for g, v in groups.items()}
    std = {g: torch.std(torch.tensor(v)) for g, v in groups.items()}
    for i, g in enumerate(index):
        scores[i] = (scores[i] - mean[g]) / (std[g] + eps)
    return scores


def dcpo_advantages(scores, index, old_log_probs, old_log_probs_t, entropy, entropy_base=0.5):
    advantages = compute_grpo_outcome_advantage(scores, index)[:, None].expand_as(old_log_probs)
    entropy_delta = entropy_base - entropy
    bool_reward = scores > 0.05
    entropy_factor = torch.exp(old_log_probs_t - old_log_probs)
    true_ratio = (bool_reward == 1).sum() / len(scores)
    alpha = entropy_delta
    alpha = abs(alpha)
    alpha = min(alpha, 0.1)
    alpha = alpha / true_ratio
    alpha = alpha / (alpha + 1)
    return (1 - alpha) * advantages + alpha * bool_reward.to(advantages.dtype).unsqueeze(1) * entropy_factor


def temperature_of(entropy, entropy_base=0.5):
    return 1.2 if entropy <= entropy_base else 0.8


def main():
    generator = torch.Generator().manual_seed(198)
    N, T, V = 8, 5, 7
    logits = 2.0 * torch.randn(N, T, V, generator=generator)
    tokens = torch.randint(0, V, (N, T), generator=generator)
    scores = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.3, 0.0])  # groups of 4; 0.3 > 0.05 is marked
    index = [0] * 4 + [1] * 4

    def log_probs(temperature):
        return torch.log_softmax(logits / temperature, dim=-1).gather(-1, tokens[..., None])[..., 0]

    old = log_probs(1.0)
    cases = []
    for entropy in [0.0, 0.45, 0.9, 0.57]:
        temperature = temperature_of(entropy)
        target = log_probs(temperature)
        cases.append({
            "previousEntropy": entropy,
            "temperature": temperature,
            "targetLogprobs": target.tolist(),
            "tokenAdvantages": dcpo_advantages(scores, index, old, target, entropy).tolist(),
        })
    print(json.dumps({"rewards": scores.tolist(), "groupSizes": [4, 4], "oldLogprobs": old.tolist(), "cases": cases},
                     indent=1))


if __name__ == "__main__":
    main()
