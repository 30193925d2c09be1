"""Reference for src/algorithms/advantages-tempo.test.ts: TEMPO's (#247, arXiv 2509.18314) token
advantages, restated in float64 torch after the authors' estimator (github.com/fatebreaker/tempo
verl/trainer/ppo/core_algos.py `compute_tempo_outcome_advantage` at 0a1c273): the GRPO outcome term
(r_i - mean)/(std + eps) with torch's sample std, plus at each token (branch_mean - ancestor_mean)/(std
+ eps), the branch being the completions of the previous branch that share token j, and the rest of a
completion filled with its value once its previous branch holds it alone.

Responses are right-padded with PAD = -1, an id no completion uses, so an ended completion matches
no token (the authors pad with the tokenizer's pad id).

Run: /usr/bin/python3 scripts/reference/tempo_advantage.py > test/fixtures/tempo-advantage.json
"""
import json
from collections import defaultdict

import torch

torch.set_default_dtype(torch.float64)
PAD = -1


def tempo(completions, rewards, index, epsilon=1e-6):
    width = max(len(c) for c in completions)
    responses = torch.tensor([c + [PAD] * (width - len(c)) for c in completions])
    response_mask = torch.tensor([[1.0] * len(c) + [0.0] * (width - len(c)) for c in completions])
    scores = torch.tensor(rewards)
    response_scores = scores.clone()
    id2index = defaultdict(list)
    for i in range(len(completions)):
        id2index[index[i]].append(i)
    token_level_scores = torch.zeros_like(response_mask)
    for i in range(len(completions)):
        previous_branch = id2index[index[i]]
        group_scores = torch.stack([response_scores[k] for k in previous_branch])
        group_mean = group_scores.mean()
        group_std = group_scores.std()
        for j in range(width):
            if response_mask[i, j].item() == 0:
                break
            branch = [k for k in previous_branch if responses[i, j] == responses[k, j]]
            ancestor_mean = torch.stack([response_scores[k] for k in previous_branch]).mean()
            branch_mean = torch.stack([response_scores[k] for k in branch]).mean()
            token_level_scores[i, j] = (response_scores[i] - group_mean + branch_mean - ancestor_mean) / (
                group_std + epsilon
            )
            if len(previous_branch) == 1:
                token_level_scores[i, j:] = token_level_scores[i, j]
                break
            previous_branch = branch
    token_level_scores = token_level_scores * response_mask
    return [[float(v) for v in token_level_scores[i, : len(c)]] for i, c in enumerate(completions)]


CASES = [
    {
        "name": "one group of five: a shared stem, a fork at token 1 and one at token 3, ragged lengths",
        "completions": [[5, 7, 1, 2, 9], [5, 7, 1, 3], [5, 8, 4], [5, 7, 1, 2, 9, 6], [6, 2]],
        "rewards": [1.0, 0.0, 1.0, 0.5, 0.0],
        "groupSizes": [5],
    },
    {
        "name": "two groups: identical completions never branch; a lone-path group",
        "completions": [[3, 3, 3], [3, 3, 3], [3, 4], [2, 2], [2, 5, 5, 5]],
        "rewards": [1.0, 0.0, 0.25, 2.0, -1.0],
        "groupSizes": [3, 2],
    },
]

cases = []
for case in CASES:
    index = [g for g, size in enumerate(case["groupSizes"]) for _ in range(size)]
    for epsilon in (1e-6, 0.1):
        cases.append({**case, "epsilon": epsilon, "tokenAdvantages": tempo(case["completions"], case["rewards"], index, epsilon)})
print(json.dumps({"cases": cases}, indent=1))
