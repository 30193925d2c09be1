"""Reference for src/algorithms/{advantages-opmd,advantages-asymre,policy-losses-opmd,policy-losses-rec}.test.ts:
the parts of #205 ("Group-Relative REINFORCE Is Secretly an Off-Policy Algorithm", arXiv 2509.24203)
written independently in float64 torch, following the authors' code paths in Trinity-RFT
(yaochaorui/Trinity-RFT): OPMDGroupAdvantage (advantage_fn/opmd_advantage.py), ASYMREGroupAdvantage
(advantage_fn/asymre_advantage.py), OPMDPolicyLossFn (policy_loss_fn/opmd_policy_loss.py) and, on
branch cr/rec, RECPolicyLossFn (policy_loss_fn/rec_policy_loss.py): ratio detached, masked_mean with
+1e-8 in the denominator, gradients by autograd with respect to logprob.

One convention is ours, not theirs: an unscored sample (None) is left out of its group's statistics
and gets advantage 0 (their code has no unscored samples); a group of one scored sample gets
baseline 0, as their `len(exps) == 1` branch.

Run with Debian's torch: /usr/bin/python3 scripts/reference/group_reinforce.py > test/fixtures/group-reinforce.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)


def group_advantages(rewards, sizes, baseline_of):
    out, start = [], 0
    for size in sizes:
        group = rewards[start : start + size]
        scored = torch.tensor([float(r) for r in group if r is not None], dtype=torch.float64)
        baseline = torch.tensor(0.0) if scored.numel() <= 1 else baseline_of(scored)
        out += [0.0 if r is None else float(r - baseline) for r in group]
        start += size
    return out


def opmd_baseline(kind, tau):
    if kind == "mean":
        return lambda r: torch.mean(r)
    return lambda r: tau * (torch.logsumexp(r / tau, dim=-1) - torch.log(torch.tensor(float(r.numel()))))


def asymre_baseline(shift):
    return lambda r: torch.mean(r) + shift


def masked_mean(values, mask):
    return (values * mask).sum() / (mask.sum() + 1e-8)


def opmd_loss(logprob, old_logprob, mask, advantages, tau=1.0):
    return masked_mean(-advantages * logprob, mask) / (1.0 + tau), {}


def rec_loss(
    logprob,
    old_logprob,
    mask,
    advantages,
    epsilon_low=0.2,
    epsilon_high=0.2,
    epsilon_low_prime=0.6,
    epsilon_high_prime=2.0,
    clip_mode="none",
    weight="none",
    regularizer="none",
    regularizer_coef=0.0,
    temp=1.0,
):
    ratio = torch.exp(logprob - old_logprob).detach()
    band = (ratio >= 1 - epsilon_low) & (ratio <= 1 + epsilon_high)
    if clip_mode == "two-side":
        keep = band
    elif clip_mode == "one-side":
        keep = ((ratio <= 1 + epsilon_high) & (advantages >= 0)) | ((advantages <= 0) & (ratio >= 1 - epsilon_low))
    elif clip_mode == "ring":
        keep = (
            band
            | ((advantages >= 0) & (ratio <= 1 - epsilon_low_prime))
            | ((advantages <= 0) & (ratio >= 1 + epsilon_high_prime))
        )
    else:
        keep = torch.ones_like(ratio, dtype=torch.bool)
    if weight == "importance-sampling":
        advantages = advantages * ratio
    elif weight == "advantage":
        advantages = advantages * torch.exp(advantages / temp)
    losses = -advantages * logprob * keep.to(logprob.dtype)
    if regularizer == "forward-kl":
        losses = losses - regularizer_coef * logprob
    elif regularizer == "k2":
        losses = losses + regularizer_coef * (logprob - old_logprob).square()
    return masked_mean(losses, mask), {"clipFraction": float(masked_mean((~keep).to(logprob.dtype), mask))}


# Ratios chosen on both sides of every bound (0.4/0.8/1.2/3 with the defaults), never within 1e-3 of one.
RATIOS = [[0.3, 0.7, 0.9, 1.1], [1.3, 3.5, 0.5, 1.0], [2.5, 0.85, 1.6, 0.2]]
OLD = [[-1.2, -0.4, -2.0, -0.7], [-0.9, -1.6, -0.3, -1.1], [-0.5, -1.4, -0.8, -2.3]]
MASK = [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]
ADVANTAGES = [0.8, -0.6, 0.0]
TOKEN_ADVANTAGES = [[0.8, -0.3, 0.5, -1.1], [-0.6, 0.4, -0.2, 0.0], [1.2, -0.9, 0.0, 0.0]]


def loss_case(name, fn, options, per_token=False):
    old = torch.tensor(OLD)
    logprob = (old + torch.log(torch.tensor(RATIOS))).clone().requires_grad_(True)
    mask = torch.tensor(MASK, dtype=torch.float64)
    rows = TOKEN_ADVANTAGES if per_token else [[a] * 4 for a in ADVANTAGES]
    loss, metrics = fn(logprob, old, mask, torch.tensor(rows), **options)
    loss.backward()
    return {
        "name": name,
        "loss": fn.__name__.replace("_loss", ""),
        "options": options,
        "perTokenAdvantages": per_token,
        "value": float(loss),
        "gradient": [float(g) for g in logprob.grad.flatten()],
        "metrics": metrics,
    }


REC_OPTIONS = {
    "clipMode": "clip_mode",
    "weight": "weight",
    "regularizer": "regularizer",
    "regularizerCoefficient": "regularizer_coef",
    "temperature": "temp",
    "epsilonLow": "epsilon_low",
    "epsilonHigh": "epsilon_high",
    "epsilonLowPrime": "epsilon_low_prime",
    "epsilonHighPrime": "epsilon_high_prime",
}


def rec_case(name, options, per_token=False):
    case = loss_case(name, rec_loss, {REC_OPTIONS[k]: v for k, v in options.items()}, per_token)
    case["options"] = options
    return case


def main():
    rewards = [0.2, 0.9, 0.5, 0.4, 1, 0, 1, 0, 1, 1, 1, 0.7, None, 0.3, 2.0, None, None]
    sizes = [4, 4, 3, 1, 3, 2]
    advantage_cases = [
        {"estimator": "opmd", "options": {}, "baseline": opmd_baseline("mean", 1.0)},
        {"estimator": "opmd", "options": {"baseline": "logavgexp"}, "baseline": opmd_baseline("logavgexp", 1.0)},
        {"estimator": "opmd", "options": {"baseline": "logavgexp", "tau": 0.25}, "baseline": opmd_baseline("logavgexp", 0.25)},
        {"estimator": "asymre", "options": {}, "baseline": asymre_baseline(-0.1)},
        {"estimator": "asymre", "options": {"baselineShift": 0.3}, "baseline": asymre_baseline(0.3)},
    ]
    advantages = [
        {
            "estimator": c["estimator"],
            "options": c["options"],
            "rewards": rewards,
            "groupSizes": sizes,
            "advantages": group_advantages(rewards, sizes, c["baseline"]),
        }
        for c in advantage_cases
    ]
    losses = [
        loss_case("opmd tau 1", opmd_loss, {}),
        loss_case("opmd tau 0 (AsymRE's loss)", opmd_loss, {"tau": 0.0}),
        loss_case("opmd tau 0.5, per-token advantages", opmd_loss, {"tau": 0.5}, per_token=True),
        rec_case("rec defaults (vanilla REINFORCE)", {}),
        rec_case("REC-OneSide-NoIS", {"clipMode": "one-side"}),
        rec_case("REC-OneSide-IS", {"clipMode": "one-side", "weight": "importance-sampling"}),
        rec_case("REC-TwoSide-IS", {"clipMode": "two-side", "weight": "importance-sampling"}),
        rec_case("REC-Ring-NoIS", {"clipMode": "ring"}),
        rec_case("REC-Ring-NoIS, per-token advantages", {"clipMode": "ring"}, per_token=True),
        rec_case("REP AsymRE (forward-kl 0.1)", {"regularizer": "forward-kl", "regularizerCoefficient": 0.1}),
        rec_case("REP Kimi OPMD (k2 0.1)", {"regularizer": "k2", "regularizerCoefficient": 0.1}),
        rec_case("RED-Weight (advantage, temperature 0.5)", {"weight": "advantage", "temperature": 0.5}),
        rec_case(
            "one-side IS with epsilons 0.1/0.3 and k2 0.2, per-token advantages",
            {"clipMode": "one-side", "weight": "importance-sampling", "epsilonLow": 0.1, "epsilonHigh": 0.3, "regularizer": "k2", "regularizerCoefficient": 0.2},
            per_token=True,
        ),
    ]
    batch = {"ratios": RATIOS, "oldLogprobs": OLD, "mask": MASK, "advantages": ADVANTAGES, "tokenAdvantages": TOKEN_ADVANTAGES}
    print(json.dumps({"advantages": advantages, "batch": batch, "losses": losses}, indent=1))


if __name__ == "__main__":
    main()
