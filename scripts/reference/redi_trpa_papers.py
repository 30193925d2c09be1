"""Reference for src/algorithms/policy-losses-{redi,trpa}.test.ts: the losses of two papers of issue 31,
written independently in float64 torch from the authors' code paths, with gradients by autograd
with respect to logprob:

- REDI (#72, arXiv 2505.24850): Tim-Siu/reinforcement-distillation trl/trl/trainer/dpo2_trainer.py,
  dpo_loss with loss_type "reinforce" (per pair -c_pos * logp(y+)/|y+| + c_neg * logp(y-)/|y-|,
  lengths clamped at 1, optional neg weighting exp(gamma * logp(y-)/|y-|)), then the trainer's mean
  over pairs; coefficients 1 and 0.8 from experiments_trl/recipes/redi/redi_1_08_1e-6/config.yaml.
  Pairs here: positive row k with negative row k, in the order the labels list them.
- TRPA (#261, arXiv 2504.04524): XueruiSu/Trust-Region-Preference-Approximation
  verl/trainer/ppo/core_algos.py compute_pairwise_policy_loss (pairs of different preference levels
  within each group, anisotropy when the better level is 1, fallback when no pair) plus
  verl/workers/actor/dp_actor.py update_policy's trust region tr_kl_loss_coef * masked_mean(
  low_var_kl(logprob, old_log_prob)) (or sqrt(kl + 0.25) with use_sqrt_trkl); beta 0.1, anisotropy
  2.5, coefficient 0.001 from main_TRPA.sh. Preference levels here are the rewards (higher better,
  the authors' level 1 = reward 3, as in their deepscaler math reward).

The batch is the one of scripts/reference/text_rl_papers.py (seed 31), with a reference policy added.

Run with Debian's torch: /usr/bin/python3 scripts/reference/redi_trpa_papers.py > test/fixtures/redi-trpa-papers.json
"""
import json

import torch

torch.set_default_dtype(torch.float64)


def make_batch(seed):
    generator = torch.Generator().manual_seed(seed)
    B, T = 12, 6
    old = -0.2 - 2.0 * torch.rand(B, T, generator=generator)
    log_ratio = 0.5 * (torch.rand(B, T, generator=generator) - 0.5)
    lengths = [6, 4, 5, 2, 6, 3, 1, 5, 6, 4, 2, 3]
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(T)] for n in lengths])
    ref = old + 0.8 * (torch.rand(B, T, generator=generator) - 0.5)
    return {"old": old, "logRatio": log_ratio, "mask": mask, "ref": ref, "lengths": lengths}


def redi_loss(logprob, mask, labels, chosen_coef=1.0, rejected_coef=0.8, gamma=None):
    lengths = torch.clamp(mask.sum(dim=1), min=1.0)
    normalized = (logprob * mask).sum(dim=1) / lengths
    positives = [b for b, label in enumerate(labels) if label == 1]
    negatives = [b for b, label in enumerate(labels) if label == 0]
    assert len(positives) == len(negatives)
    chosen = normalized[positives]
    rejected = normalized[negatives]
    loss_chosen = -chosen_coef * chosen
    loss_rejected = rejected_coef * rejected
    if gamma is not None:
        loss_rejected = loss_rejected * torch.exp(gamma * rejected)
    return (loss_chosen + loss_rejected).mean()


def low_var_kl(logprob, ref_logprob):
    kl = ref_logprob - logprob
    ratio = torch.exp(kl)
    kld = ratio - kl - 1
    return torch.clamp(kld, min=-10, max=10)


def trpa_loss(logprob, old, ref, mask, levels, groups, beta=0.1, anisotropy=2.5, coefficient=0.001, use_sqrt=False):
    """levels: the authors' preference levels (1 best); groups: each row's group id."""
    agg = (logprob * mask).sum(dim=1) / mask.sum(dim=1)
    agg_ref = (ref * mask).sum(dim=1) / mask.sum(dim=1)
    log_ratio = agg - agg_ref
    levels = torch.tensor(levels, dtype=torch.float64)
    h_list = []
    for g in sorted(set(groups)):
        rows = torch.tensor([b for b, h in enumerate(groups) if h == g])
        group_levels = levels[rows]
        unique_levels = torch.sort(torch.unique(group_levels)).values
        for i in range(len(unique_levels)):
            for j in range(i + 1, len(unique_levels)):
                better = rows[(group_levels == unique_levels[i]).nonzero(as_tuple=True)[0]]
                worse = rows[(group_levels == unique_levels[j]).nonzero(as_tuple=True)[0]]
                for w in better:
                    for l in worse:
                        scale = anisotropy * beta if unique_levels[i] == 1 else beta
                        h_list.append(scale * (log_ratio[w] - log_ratio[l]))
    if h_list:
        pg = -torch.log(torch.sigmoid(torch.stack(h_list))).mean()
    else:
        sign = torch.where(levels == 1, torch.tensor(1.0), torch.tensor(-1.0))
        pg = -torch.log(torch.sigmoid(sign * log_ratio)).mean()
    kl = (low_var_kl(logprob, old) * mask).sum() / mask.sum()
    trust = torch.sqrt(kl + 0.25) if use_sqrt else kl
    return pg + coefficient * trust, len(h_list)


def case(name, loss, batch, value_fn, options, extra):
    logprob = (batch["old"] + batch["logRatio"]).clone().requires_grad_(True)
    value = value_fn(logprob)
    if isinstance(value, tuple):
        value, pairs = value
        extra = {**extra, "pairs": pairs}
    value.backward()
    return {
        "name": name,
        "loss": loss,
        "options": options,
        "value": float(value),
        "gradient": [float(g) for g in (logprob.grad * batch["mask"]).flatten()],
        **extra,
    }


def main():
    batch = make_batch(31)
    old, ref, mask = batch["old"], batch["ref"], batch["mask"]
    groups = [0] * 4 + [1] * 4 + [2] * 4
    # REDI: six correct and six wrong traces (sequenceLabels), paired in order.
    labels = [1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1]
    # TRPA: rewards of deepscaler's math rule (3 correct, -0.5 wrong, -1 no answer, -3 bad format)
    # and the authors' levels 1-4; group 2 holds a single level (no pair of its own).
    rewards = [3, -0.5, 3, -1, -0.5, -0.5, 3, -3, -1, -1, -1, -1]
    level_of = {3: 1, -0.5: 2, -1: 3, -3: 4}
    levels = [level_of[r] for r in rewards]
    one_level = [-0.5] * 4 + [3, 3, 3, 3] + [-1] * 4  # every group a single level: the fallback
    cases = [
        case("REDI defaults (1, 0.8)", "redi", batch, lambda lp: redi_loss(lp, mask, labels), {}, {"labels": labels}),
        case("REDI 1, 0.5 with negative weighting gamma 1", "redi", batch,
             lambda lp: redi_loss(lp, mask, labels, 1.0, 0.5, 1.0),
             {"negativeCoefficient": 0.5, "negativeWeightingGamma": 1.0}, {"labels": labels}),
        case("TRPA defaults (beta 0.1, anisotropy 2.5, c 0.001)", "trpa", batch,
             lambda lp: trpa_loss(lp, old, ref, mask, levels, groups),
             {"correctReward": 3}, {"rewards": rewards}),
        case("TRPA beta 0.5, anisotropy 1, c 0.1, square root", "trpa", batch,
             lambda lp: trpa_loss(lp, old, ref, mask, levels, groups, 0.5, 1.0, 0.1, True),
             {"correctReward": 3, "beta": 0.5, "anisotropy": 1, "trustRegionCoefficient": 0.1,
              "squareRootTrustRegion": True}, {"rewards": rewards}),
        case("TRPA without any pair (fallback)", "trpa", batch,
             lambda lp: trpa_loss(lp, old, ref, mask, [level_of[r] for r in one_level], groups),
             {"correctReward": 3}, {"rewards": one_level}),
    ]
    out = {
        "batch": {
            "oldLogprobs": old.tolist(),
            "logRatio": batch["logRatio"].tolist(),
            "refLogprobs": ref.tolist(),
            "mask": mask.tolist(),
            "groupSizes": [4, 4, 4],
        },
        "losses": cases,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
