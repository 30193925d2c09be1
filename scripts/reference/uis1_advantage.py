"""Reference for src/algorithms/turn-credit-uis1.test.ts: UI-S1's (#96, arXiv 2509.11543) advantage,
restated in float64 torch after the authors' compute_step_discounted_returns and
compute_uis1_outcome_advantage / episode_norm_reward / step_norm_reward (X-PLUG/MobileAgent
UI-S1/uis1/core_uis1.py at 93afb00), on the step rows their trainer builds: one row per model turn,
keyed by prompt uid, trajectory uid and step id, the row's score its step reward, extract_match its
"matched" flag (a score >= 0.9 under their 0.1*format + 0.9*action score).

Run: /usr/bin/python3 scripts/reference/uis1_advantage.py > test/fixtures/uis1-advantage.json
"""
import json
from collections import defaultdict

import torch

torch.set_default_dtype(torch.float64)


def step_discounted_returns(rows, gamma):
    returns = {}
    for traj in sorted({row["traj"] for row in rows}):
        steps = [row for row in rows if row["traj"] == traj]
        running = 0.0
        for row in reversed(steps):
            if row["match"]:
                running = row["score"] + gamma * running
                returns[id(row)] = running
            else:
                running = 0.0
                returns[id(row)] = row["score"]
    return [returns[id(row)] for row in rows]


def normed(values, keys, remove_std, lone_mean_zero, epsilon=1e-6):
    by_key = defaultdict(list)
    for key, value in zip(keys, values):
        by_key[key].append(value)
    out = []
    for key, value in zip(keys, values):
        group = by_key[key]
        if len(group) == 1:
            mean = torch.tensor(0.0) if lone_mean_zero else torch.mean(torch.tensor(group))
            std = torch.tensor(1.0)
        else:
            mean = torch.mean(torch.tensor(group))
            std = torch.std(torch.tensor([group]))
        out.append(float(value - mean if remove_std else (value - mean) / (std + epsilon)))
    return out


def uis1(rows, gamma, step_w=1.0, episode_w=1.0, mode="mean_std_norm"):
    remove_std = mode == "mean_norm"
    returns = step_discounted_returns(rows, gamma)
    episode = normed([row["score"] for row in rows], [row["uid"] for row in rows], remove_std, True)
    step = normed(returns, [f"{row['uid']}-{row['step']}" for row in rows], remove_std, False)
    return [episode_w * e + step_w * s for e, s in zip(episode, step)]


def rows_of(groups):
    rows = []
    for uid, episodes in enumerate(groups):
        for traj, scores in enumerate(episodes):
            for step, score in enumerate(scores):
                rows.append({"uid": uid, "traj": f"{uid}-{traj}", "step": step, "score": score, "match": score >= 0.9})
    return rows


def per_episode(groups, values):
    out, k = [], 0
    for episodes in groups:
        for scores in episodes:
            out.append(values[k:k + len(scores)])
            k += len(scores)
    return out


# Turn rewards per episode, groups of episodes: 1.0 exact (with thought), 0.55 type only, 0.1 parsed, 0.9 exact without thought.
GROUPS = [
    [[1.0, 1.0, 0.55, 1.0], [1.0, 0.1, 1.0], [0.9, 1.0, 1.0, 1.0], [0.55]],
    [[1.0, 0.55]],
    [[0.55]],
]
CASES = [
    {"gamma": 0.5, "stepWeight": 1.0, "episodeWeight": 1.0, "normalization": "mean-std"},
    {"gamma": 0.9, "stepWeight": 0.5, "episodeWeight": 1.0, "normalization": "mean"},
]

print(json.dumps({
    "groups": GROUPS,
    "cases": [
        {**case, "turnAdvantages": per_episode(GROUPS, uis1(
            rows_of(GROUPS), case["gamma"], case["stepWeight"], case["episodeWeight"],
            "mean_std_norm" if case["normalization"] == "mean-std" else "mean_norm"))}
        for case in CASES
    ],
}, indent=1))
