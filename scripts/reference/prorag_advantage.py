"""Reference for src/algorithms/turn-credit-prorag.test.ts: ProRAG's (#100, arXiv 2601.21912)
dual-granularity advantage, restated in float64 torch after the authors' trainer
(github.com/lilinwz/ProRAG prorag/rl/trainer.py `_generate_and_score_completions` at c7a6411), on
the token rows their rollout builds (prorag/rl/rollout.py): each generated token of a step carries
the step's score and mask 1; retrieval and separator tokens carry score 0 and mask 0. A turn whose
score is None (no step score here) is written with mask 0, which is the choice the TypeScript makes.

Run: /usr/bin/python3 scripts/reference/prorag_advantage.py > test/fixtures/prorag-advantage.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)


def token_rows(episodes, with_counts):
    """Per episode: (scores, mask) over its tokens, each turn repeated over its token count."""
    rows = []
    for episode in episodes:
        scores, mask = [], []
        for score, count in zip(episode["turns"], episode["counts"]):
            n = count if with_counts else 1
            scores += [0.0 if score is None else score] * n
            mask += [0.0 if score is None else 1.0] * n
            scores += [0.0, 0.0]  # a retrieval / separator span after the step: mask 0
            mask += [0.0, 0.0]
        rows.append((scores, mask))
    return rows


def prorag(episodes, beta, with_counts):
    """The authors' code for one group (num_generations = len(episodes)); per token advantages."""
    rows = token_rows(episodes, with_counts)
    width = max(len(s) for s, _ in rows)
    prm = torch.tensor([s + [0.0] * (width - len(s)) for s, _ in rows]).unsqueeze(0)
    mask = torch.tensor([m + [0.0] * (width - len(m)) for _, m in rows]).unsqueeze(0)
    rewards = torch.tensor([e["reward"] for e in episodes])
    mean = rewards.view(-1, len(episodes)).mean(dim=1).repeat_interleave(len(episodes))
    std = rewards.view(-1, len(episodes)).std(dim=1).repeat_interleave(len(episodes))
    outcome = (rewards - mean) / (std + 1e-4)
    valid = mask.bool()
    counts = valid.sum(dim=(1, 2), keepdim=True).double()
    means = (prm * mask).sum(dim=(1, 2), keepdim=True) / counts.clamp(min=1.0)
    variances = ((prm - means).pow(2) * mask).sum(dim=(1, 2), keepdim=True) / counts.clamp(min=1.0)
    stds = (variances + 1e-8).sqrt()
    stds = torch.where(counts <= 1, torch.ones_like(stds), stds)
    step = ((prm - means) / stds * mask).squeeze(0)
    advantages = outcome.unsqueeze(1) + beta * step
    return advantages, rows


def per_turn(episodes, advantages, rows, with_counts):
    """Each turn's advantage: the value on its first generated token (every token of a step is equal)."""
    out = []
    for k, episode in enumerate(episodes):
        turns, position = [], 0
        for score, count in zip(episode["turns"], episode["counts"]):
            turns.append(float(advantages[k, position]))
            position += (count if with_counts else 1) + 2
        out.append(turns)
    return out


# One group: rewards and per-turn step scores (None = no score) with each turn's token count.
GROUP = [
    {"reward": 1.0, "turns": [1.0, 0.0, None], "counts": [2, 1, 4]},
    {"reward": 0.0, "turns": [0.5, 1.0], "counts": [1, 3]},
    {"reward": 2.0, "turns": [None], "counts": [5]},
]

cases = []
for beta in (0.5, 0.3):
    for with_counts in (False, True):
        advantages, rows = prorag(GROUP, beta, with_counts)
        cases.append(
            {
                "beta": beta,
                "tokenCounts": with_counts,
                "group": GROUP,
                "turnAdvantages": per_turn(GROUP, advantages, rows, with_counts),
            }
        )
print(json.dumps({"cases": cases}, indent=1))
