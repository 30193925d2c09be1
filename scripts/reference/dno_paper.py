"""Reference for src/algorithms/policy-losses-dno.test.ts: DNO (#222, Rosset et al. 2024, arXiv
2404.03715), Algorithm 1, written independently in float64 torch, with gradients by autograd with
respect to logprob.

Line 2: r_t(x, y) = E_{y' ~ pi_t}[P(y > y' | x)], estimated on the group's other members (draws of
pi_t), P = 1 / 0.5 / 0 for a higher / equal / lower reward.
Line 3: maximise over pi the mean over pairs (y1, y2) of
  sigmoid(r_t(y1) - r_t(y2)) * logsigmoid(eta * log pi/pi_t (y1) - eta * log pi/pi_t (y2))
  + sigmoid(r_t(y2) - r_t(y1)) * logsigmoid(eta * log pi/pi_t (y2) - eta * log pi/pi_t (y1)),
with pi_t = pi_old, log pi(y) = the sum of the completion's token log-probs, the pairs every two
members of a group, the mean over a group's pairs and then over groups. The loss is minus that.

The batch is the one of scripts/reference/redi_trpa_papers.py (seed 31).

Run with Debian's torch: /usr/bin/python3 scripts/reference/dno_paper.py > test/fixtures/dno-paper.json
"""
import itertools
import json

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def make_batch(seed):
    generator = torch.Generator().manual_seed(seed)
    B, T = 12, 6
    old = -0.2 - 2.0 * torch.rand(B, T, generator=generator)
    log_ratio = 0.5 * (torch.rand(B, T, generator=generator) - 0.5)
    lengths = [6, 4, 5, 2, 6, 3, 1, 5, 6, 4, 2, 3]
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(T)] for n in lengths])
    return {"old": old, "logRatio": log_ratio, "mask": mask}


def groups_of(group_sizes):
    starts = [sum(group_sizes[:g]) for g in range(len(group_sizes))]
    return [list(range(s, s + n)) for s, n in zip(starts, group_sizes)]


def win_rates(rewards, group_sizes):
    rates = [0.0] * len(rewards)
    for rows in groups_of(group_sizes):
        for i in rows:
            wins = sum(1.0 if rewards[i] > rewards[j] else 0.5 if rewards[i] == rewards[j] else 0.0 for j in rows if j != i)
            rates[i] = wins / (len(rows) - 1)
    return rates


def dno_loss(logprob, old, mask, rates, group_sizes, eta):
    s = ((logprob - old) * mask).sum(dim=1)
    r = torch.tensor(rates)
    per_group = []
    for rows in groups_of(group_sizes):
        terms = []
        for a, b in itertools.combinations(rows, 2):
            terms.append(
                torch.sigmoid(r[a] - r[b]) * F.logsigmoid(eta * s[a] - eta * s[b])
                + torch.sigmoid(r[b] - r[a]) * F.logsigmoid(eta * s[b] - eta * s[a])
            )
        per_group.append(torch.stack(terms).mean())
    return -torch.stack(per_group).mean(), sum(len(rows) * (len(rows) - 1) // 2 for rows in groups_of(group_sizes))


def main():
    batch = make_batch(31)
    old, mask = batch["old"], batch["mask"]
    # Group 2 is all ties (every win-rate 1/2): its pairs pull the log-ratios together.
    rewards = [1, 0, 0.5, 1, 0, 0, 0, 0, 0.2, 0.9, 0.5, 0.4]
    cases = []
    for name, group_sizes, eta in [
        ("eta 1, three groups of four", [4, 4, 4], 1.0),
        ("eta 0.5, three groups of four", [4, 4, 4], 0.5),
        ("eta 2, ragged groups 5, 3, 4", [5, 3, 4], 2.0),
    ]:
        rates = win_rates(rewards, group_sizes)
        logprob = (old + batch["logRatio"]).clone().requires_grad_(True)
        value, pairs = dno_loss(logprob, old, mask, rates, group_sizes, eta)
        value.backward()
        cases.append({
            "name": name,
            "loss": "dno",
            "options": {"eta": eta},
            "groupSizes": group_sizes,
            "winRates": rates,
            "pairs": pairs,
            "value": float(value),
            "gradient": [float(g) for g in (logprob.grad * mask).flatten()],
        })
    out = {
        "batch": {
            "oldLogprobs": old.tolist(),
            "logRatio": batch["logRatio"].tolist(),
            "mask": mask.tolist(),
            "rewards": rewards,
        },
        "losses": cases,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
