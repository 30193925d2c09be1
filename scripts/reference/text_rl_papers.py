"""Reference for src/algorithms/{policy-losses-disco,policy-losses-drpo,policy-losses-nft}.test.ts: the
losses of three text-RL papers of issue 31, written independently in float64 torch from the authors'
code paths, with gradients by autograd with respect to logprob:

- DisCO (#23, arXiv 2505.12366): Optimization-AI/DisCO verl/verl/trainer/ppo/core_algos.py,
  compute_policy_loss_disco_logL / compute_policy_loss_disco_Lratio (log-sum-exp over negatives) and
  compute_policy_loss_discob_logL / compute_policy_loss_discob_Lratio (DisCO-b: mean over negatives);
  defaults from scripts/train/run_disco_{logL,Lratio}_1.5b_8k.sh (delta 1e-4, beta 1e3, tau 10 / 1,
  ppo_kl_type kl).
- DRPO (#256, arXiv 2510.04474): Optimization-AI/DRPO verl/verl/trainer/ppo/core_algos.py,
  compute_policy_loss_drpo; Lambda 0.1 from scripts/train/run_drpo_1.5b_8k.sh.
- NFT (#48, arXiv 2505.18116): NVlabs/NFT dp_actor.py (update_policy, neg_weight >= 0, ratio_type
  'token') with correct_rate from ray_nft_trainer.py compute_dapo_nft_outcome_advantage; defaults
  from config/nft_trainer.yaml and train_7B.sh (neg_weight 1, clamp_negative 1, clamp_positive 0,
  normalize 1), reduced as theirs: sum over tokens / 1000.

The eps of DisCO's log-sum-exp surrogate is torch.finfo(float32).eps, the dtype the authors train in
(our float64 port would otherwise use float64's eps; both are below 1e-6 relative).

Run with Debian's torch: /usr/bin/python3 scripts/reference/text_rl_papers.py > test/fixtures/text-rl-papers.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)
FLOAT32_EPS = 1.1920928955078125e-07


def masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


def disco_loss(logprob, old, mask, group_of, rewards, score="log-likelihood", negatives="log-sum-exp",
               tau=None, delta=1e-4, beta=1e3, kl="k1", length_lambda=None, max_length=None):
    """One call of the authors' function on the whole batch (no all_gather: one process)."""
    if tau is None:
        tau = 10.0 if score == "log-likelihood" else 1.0
    log_ratio = logprob - old
    ratio = torch.exp(log_ratio)
    if kl == "k3":
        ppo_kl = masked_mean(-log_ratio + ratio - 1, mask)
    else:
        ppo_kl = masked_mean(-log_ratio, mask)
    per_token = logprob if score == "log-likelihood" else ratio
    scores = (per_token * mask).sum(dim=1) / mask.sum(dim=1)
    length_ratio = mask.sum(dim=1) / (max_length if max_length is not None else mask.size(-1))
    groups = sorted(set(group_of))
    total = torch.tensor(0.0)
    for g in groups:
        rows = [i for i, h in enumerate(group_of) if h == g]
        s = scores[rows]
        r = torch.tensor([rewards[i] for i in rows])
        pos = r == 1
        neg = r == 0
        if pos.sum() == 0 or neg.sum() == 0:
            continue  # valid_mask: the authors drop all-correct and all-wrong groups
        if negatives == "mean":
            neg_term = (s * neg).sum() / neg.sum()
        else:
            masked = (s / tau).masked_fill(~neg, float("-inf"))
            top = masked.max()
            exps = torch.exp(((s / tau) - top.detach()) * neg) * neg
            sum_exp = exps.sum()
            neg_term = tau * sum_exp / (sum_exp.detach() + FLOAT32_EPS)
        if length_lambda is None:
            weight = torch.ones_like(s)
        else:
            weight = torch.exp((1 - length_ratio[rows]) / length_lambda)
        total = total + ((weight * (s - neg_term)) * pos).sum() / (weight * pos).sum()
    pg = total / len(groups)
    constraint = torch.clamp(beta * (ppo_kl - delta), min=0).detach() * ppo_kl
    return -pg + constraint, {"kl": float(ppo_kl), "constraintActive": float(ppo_kl > delta)}


def straight_through_min(x, low):
    return x + (torch.clamp(x, min=low) - x).detach()


def nft_loss(logprob, old, mask, group_of, rewards, neg_weight=1.0, clamp_negative=1.0, clamp_positive=0.0,
             normalize="negative-rate"):
    correct = torch.tensor([float(r) for r in rewards])
    rate = torch.zeros(len(rewards))
    kept = torch.ones(len(rewards))
    for g in set(group_of):
        rows = [i for i, h in enumerate(group_of) if h == g]
        rate[rows] = correct[rows].mean()
        if rate[rows[0]] in (0.0, 1.0):
            kept[rows] = 0.0  # DAPO's filter_groups, which the authors run NFT with (they assert 0 < c < 1)
    rate = torch.clamp(rate, min=0.02, max=0.98)[:, None]
    ratio = torch.exp((logprob - old).clamp(max=10.0))
    proxy = (1.0 - rate * ratio) / (1.0 - rate)
    negative = -torch.log(straight_through_min(proxy, abs(clamp_negative)))
    positive = -torch.log(straight_through_min(ratio, clamp_positive))
    losses = negative * (1.0 - correct[:, None]) * neg_weight + correct[:, None] * positive
    if normalize == "negative-rate":
        losses = losses * (1.0 - rate)
    elif normalize == "square-root":
        losses = losses * ((1.0 - rate) / rate) ** 0.5
    return torch.sum((losses * mask * kept[:, None]).sum(dim=1) / 1000.0), {}


def make_batch(seed):
    generator = torch.Generator().manual_seed(seed)
    B, T = 12, 6
    old = -0.2 - 2.0 * torch.rand(B, T, generator=generator)
    log_ratio = 0.5 * (torch.rand(B, T, generator=generator) - 0.5)
    lengths = [6, 4, 5, 2, 6, 3, 1, 5, 6, 4, 2, 3]
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(T)] for n in lengths])
    # Three groups of four: mixed (2/4 correct), mixed (1/4 correct), all wrong (no signal).
    rewards = [1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    group_of = [0] * 4 + [1] * 4 + [2] * 4
    return {"old": old, "logRatio": log_ratio, "mask": mask, "rewards": rewards, "groupOf": group_of}


def case(name, loss, fn, batch, options):
    logprob = (batch["old"] + batch["logRatio"]).clone().requires_grad_(True)
    value, metrics = fn(logprob, batch["old"], batch["mask"], batch["groupOf"], batch["rewards"], **options)
    value.backward()
    return {
        "name": name,
        "loss": loss,
        "options": options,
        "value": float(value),
        "gradient": [float(g) for g in (logprob.grad * batch["mask"]).flatten()],
        "metrics": metrics,
    }


DISCO_OPTIONS = {"score": "score", "negatives": "negatives", "tau": "tau", "delta": "klBound", "beta": "klPenalty",
                 "kl": "klBoundEstimator", "length_lambda": "lengthLambda", "max_length": "maxLength"}


def main():
    batch = make_batch(31)
    cases = [
        case("DisCO log-L (defaults: tau 10, KL hinge active)", "disco", disco_loss, batch, {}),
        case("DisCO L-ratio (tau 1)", "disco", disco_loss, batch, {"score": "likelihood-ratio"}),
        case("DisCO-b log-L (mean over negatives)", "disco", disco_loss, batch, {"negatives": "mean"}),
        case("DisCO-b L-ratio, k3 constraint", "disco", disco_loss, batch,
             {"score": "likelihood-ratio", "negatives": "mean", "kl": "k3"}),
        case("DisCO log-L tau 2, constraint inactive (delta 1)", "disco", disco_loss, batch, {"tau": 2.0, "delta": 1.0}),
        case("DRPO (lambda 0.1, L_max = padded width)", "drpo", disco_loss, batch, {"length_lambda": 0.1}),
        case("DRPO lambda 0.5, L_max 8, k3", "drpo", disco_loss, batch,
             {"length_lambda": 0.5, "max_length": 8, "kl": "k3"}),
        case("NFT defaults (clamp_negative 1, normalize 1)", "nft", nft_loss, batch, {}),
        case("NFT clamp_negative 0.05, neg_weight 0.5", "nft", nft_loss, batch, {"clamp_negative": 0.05, "neg_weight": 0.5}),
        case("NFT normalize 2 (square root)", "nft", nft_loss, batch, {"normalize": "square-root", "clamp_negative": 0.05}),
        case("NFT normalize 0 (none), clamp_positive 1", "nft", nft_loss, batch, {"normalize": "none", "clamp_positive": 1.0}),
    ]
    for c in cases:
        if c["loss"] != "nft":
            c["options"] = {DISCO_OPTIONS[k]: v for k, v in c["options"].items()}
        else:
            c["options"] = {{"neg_weight": "negativeWeight", "clamp_negative": "clampNegative",
                              "clamp_positive": "clampPositive", "normalize": "normalize"}[k]: v
                            for k, v in c["options"].items()}
    out = {
        "batch": {
            "oldLogprobs": batch["old"].tolist(),
            "logRatio": batch["logRatio"].tolist(),
            "mask": batch["mask"].tolist(),
            "rewards": batch["rewards"],
            "groupSizes": [4, 4, 4],
        },
        "losses": cases,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
