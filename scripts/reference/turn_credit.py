"""Reference for src/algorithms/turn-credit.test.ts: the three turn-credit estimators written
independently with torch, following the authors' code paths — IGPO's `compute_grpo_outcome_advantage`
(GuoqingWang1/IGPO, verl/trainer/ppo/core_algos.py: joint/separate group stats with population
variance, std = sqrt(var + 1e-8), count <= 1 -> std 1, then turn-level discounted accumulation) and
GiGPO's `episode_norm_reward` / `build_step_group` / `step_norm_reward` (langfengQ/verl-agent,
gigpo/core_gigpo.py: torch.std (sample), a one-member step group -> mean = its value).
Run with Debian's torch: /usr/bin/python3 scripts/reference/turn_credit.py (prints JSON)."""
import json
import math
import torch

EPS = 1e-6


def discounted(values, gamma):
    out, running = [0.0] * len(values), 0.0
    for t in reversed(range(len(values))):
        running = values[t] + gamma * running
        out[t] = running
    return out


def igpo(rewards, gains, turns, group_sizes, gamma, pooling, scale=True):
    out, start = [[0.0] * n for n in turns], 0
    for size in group_sizes:
        eps = [i for i in range(start, start + size) if not math.isnan(rewards[i]) and turns[i] > 0]
        seqs = {i: list(gains[i][: turns[i] - 1]) + [rewards[i]] for i in eps}
        finals = torch.tensor([seqs[i][-1] for i in eps], dtype=torch.float64)
        inter = torch.tensor([v for i in eps for v in seqs[i][:-1]], dtype=torch.float64)

        def stats(x):
            if x.numel() == 0:
                return 0.0, 1.0
            m = x.mean()
            s = torch.sqrt(((x - m) ** 2).mean() + 1e-8) if x.numel() > 1 else torch.tensor(1.0)
            return float(m), float(s)

        joint = stats(torch.cat([finals, inter]))
        fs, gs = (joint, joint) if pooling == "joint" else (stats(finals), stats(inter))
        for i in eps:
            norm = []
            for t, v in enumerate(seqs[i]):
                m, s = fs if t == len(seqs[i]) - 1 else gs
                norm.append((v - m) / (s + EPS) if scale else v - m)
            out[i] = discounted(norm, gamma)
        start += size
    return out


def gigpo(rewards, turn_rewards, keys, group_sizes, gamma, omega, mode):
    out, start = [[0.0] * len(t) for t in turn_rewards], 0
    for size in group_sizes:
        eps = [i for i in range(start, start + size) if not math.isnan(rewards[i]) and len(turn_rewards[i]) > 0]
        r = torch.tensor([rewards[i] for i in eps], dtype=torch.float64)
        if len(eps) == 1:
            m, s = 0.0, 1.0
        else:
            m, s = float(r.mean()), float(torch.std(r))
        for i in eps:
            a = (rewards[i] - m) / (s + EPS) if mode == "mean-std" else rewards[i] - m
            out[i] = [a] * len(turn_rewards[i])
        groups = {}
        for i in eps:
            steps = [0.0 if x is None else x for x in turn_rewards[i]]
            steps[-1] += rewards[i]
            for t, g in enumerate(discounted(steps, gamma)):
                groups.setdefault(keys[i][t], []).append((i, t, g))
        for members in groups.values():
            x = torch.tensor([g for _, _, g in members], dtype=torch.float64)
            gm = float(x.mean())
            gs = float(torch.std(x)) if len(members) > 1 else 1.0
            for i, t, g in members:
                out[i][t] += omega * ((g - gm) / (gs + EPS) if mode == "mean-std" else g - gm)
        start += size
    return out


nan = float("nan")
igpo_case = dict(rewards=[1.0, 0.0, -1.0, nan], gains=[[0.5, 0.5, 9.0], [-1.0, 9.0], [9.0], [0.3, 0.3]],
                 turns=[3, 2, 1, 2], group_sizes=[4])
gigpo_case = dict(rewards=[1.0, 0.0, 1.0, 0.4], turn_rewards=[[None, None], [None, None], [None, None, None], [None]],
                  keys=[["s0", "s1"], ["s0", "s2"], ["s0", "s1", "s3"], ["s0"]], group_sizes=[3, 1])
print(json.dumps({
    "igpo_joint_gamma_0.5": igpo(**igpo_case, gamma=0.5, pooling="joint"),
    "igpo_separate_gamma_1": igpo(**igpo_case, gamma=1.0, pooling="separate"),
    "gigpo_mean_gamma_0.5": gigpo(**gigpo_case, gamma=0.5, omega=1.0, mode="mean"),
    "gigpo_mean_std_gamma_0.5_omega_0.5": gigpo(**gigpo_case, gamma=0.5, omega=0.5, mode="mean-std"),
}, indent=1))
