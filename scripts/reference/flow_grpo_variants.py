"""Reference for src/flow/flow-grpo-variants.test.ts: the per-step policy loss of Flow-GRPO, GRPO-Guard and
TempFlow-GRPO on one Flow-GRPO `sde` step, and its gradient in the current velocity, in float64 PyTorch;
and BranchGRPO's tree advantages (end of file).
Written from the semantics of the code the TypeScript follows:
- GRPO-Guard (arXiv:2510.22319): verl-project/verl-omni `GRPOGuardLoss.compute_loss`
  (verl_omni/trainer/diffusion/diffusion_algos.py); its ratio is checked equal to X-GenGroup/Flow-Factory's
  `GRPOGuardTrainer.optimize` (exp((logp - logp_old)·s + mse/(2s))) below;
- TempFlow-GRPO (arXiv:2508.04324): Shredded-Pork/TempFlow-GRPO scripts/train_sd3_pr.py
  (`- 2.25 * std_dev_t * advantages * ratio`, std_dev_t = the step's std_t·√(−dt) as its sde step returns);
- Flow-GRPO: yifan123/flow_grpo scripts/train_sd3.py (ratio = exp(logp − logp_old), ppo-clip, mean).
The old policy's velocity is v_old, the current one v = v_old + δ, x' is drawn from the old step.
Run with Debian's torch: /usr/bin/python3 scripts/reference/flow_grpo_variants.py
Writes test/fixtures/flow/grpo-variants.json."""
import json
import math
import torch

torch.manual_seed(0)
B, D, N, SHIFT, LEVEL, CLIP = 4, 6, 4, 3.0, 0.7, 0.012
s = torch.linspace(1, 0, N + 1, dtype=torch.float64)
sigmas = SHIFT * s / (1 + (SHIFT - 1) * s)  # SD3 time shift


def sde_step(x, v, i, given):
    """Flow-GRPO sde_step_with_logprob: mean, transition std, log-prob of `given` (mean over D)."""
    sigma, sigma_next = sigmas[i], sigmas[i + 1]
    dt = sigma_next - sigma
    denominator = sigmas[1] if sigma == 1 else sigma
    std_t = torch.sqrt(sigma / (1 - denominator)) * LEVEL
    mean = x * (1 + std_t**2 / (2 * sigma) * dt) + v * (1 + std_t**2 * (1 - sigma) / (2 * sigma)) * dt
    std = std_t * torch.sqrt(-dt)
    lp = -((given - mean) ** 2) / (2 * std**2) - torch.log(std) - math.log(math.sqrt(2 * math.pi))
    return mean, std, std_t, dt, lp.mean(dim=1)


def clipped(ratio, advantages):
    unclipped = -advantages * ratio
    clipped_loss = -advantages * torch.clamp(ratio, 1.0 - CLIP, 1.0 + CLIP)
    return torch.maximum(unclipped, clipped_loss)


cases = []
for i in [0, 1, 2]:
    x = torch.randn(B, D, dtype=torch.float64)
    v_old = torch.randn(B, D, dtype=torch.float64)
    delta = 0.3 * torch.randn(B, D, dtype=torch.float64)
    advantages = torch.tensor([1.2, -0.7, 0.4, -1.9], dtype=torch.float64)
    with torch.no_grad():
        mean_old, std, std_t, dt, _ = sde_step(x, v_old, i, torch.zeros(B, D, dtype=torch.float64))
        given = mean_old + std * torch.randn(B, D, dtype=torch.float64)
        _, _, _, _, lp_old = sde_step(x, v_old, i, given)
    case = {"index": i, "x": x.flatten().tolist(), "v": (v_old + delta).flatten().tolist(),
            "next": given.flatten().tolist(), "oldLogProb": lp_old.tolist(), "oldMean": mean_old.flatten().tolist(),
            "advantages": advantages.tolist(), "dt": float(dt), "std": float(std), "results": {}}
    for algorithm in ["flow-grpo", "grpo-guard", "tempflow-grpo"]:
        v = (v_old + delta).clone().requires_grad_(True)
        mean, std, std_t, dt, lp = sde_step(x, v, i, given)
        if algorithm == "grpo-guard":  # verl-omni GRPOGuardLoss
            sqrt_dt = torch.sqrt(-dt)
            scale = sqrt_dt * std_t
            mean_diff_sq = ((mean - mean_old) ** 2).mean(dim=1)
            ratio = torch.exp((lp - lp_old + mean_diff_sq / (2 * scale**2)) * scale)
            flow_factory = torch.exp((lp - lp_old) * scale + mean_diff_sq / (2 * scale))
            assert torch.allclose(ratio, flow_factory, rtol=1e-12, atol=0)
            loss = clipped(ratio, advantages).mean() / sqrt_dt**2
        elif algorithm == "tempflow-grpo":  # train_sd3_pr.py
            ratio = torch.exp(lp - lp_old)
            unclipped = -2.25 * std * advantages * ratio
            clipped_loss = -2.25 * std * advantages * torch.clamp(ratio, 1.0 - CLIP, 1.0 + CLIP)
            loss = torch.maximum(unclipped, clipped_loss).mean()
        else:
            ratio = torch.exp(lp - lp_old)
            loss = clipped(ratio, advantages).mean()
        loss.backward()
        clipped_count = int(((ratio - 1).abs() > CLIP).sum())
        case["results"][algorithm] = {"loss": float(loss), "ratio": ratio.tolist(),
                                      "gradient": v.grad.flatten().tolist(), "clipped": clipped_count}
    cases.append(case)

out = {"B": B, "D": D, "noiseLevel": LEVEL, "clipRange": CLIP, "sigmas": sigmas.tolist(), "cases": cases}
with open("test/fixtures/flow/grpo-variants.json", "w") as f:
    json.dump(out, f, indent=1)
for case in cases:
    print(case["index"], {k: (round(r["loss"], 6), r["clipped"]) for k, r in case["results"].items()})

# BranchGRPO's tree advantages (Fredreic1849/BranchGRPO train_branchgrpo_flux.py,
# compute_node_rewards_from_leaves with mean fusion + compute_hierarchical_advantages_by_depth), for two
# trees of 3 steps split at steps 0 and 2 (4 leaves each): parents[d][r] is node r's parent at depth d − 1.
parents = [[], [0, 0, 1, 1], [0, 1, 2, 3], [0, 0, 1, 1, 2, 2, 3, 3]]
trees = [[0, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]
leaf_rewards = torch.tensor([0.9, 0.1, 0.4, 0.4, 0.3, 0.3, 0.3, 0.3], dtype=torch.float64)
rewards = [None] * 4
rewards[3] = leaf_rewards
leaves_of = [[[r] for r in range(8)]]  # leaf descendants of each node, deepest depth first
for d in [3, 2, 1]:
    groups = [[] for _ in trees[d - 1]]
    for r, parent in enumerate(parents[d]):
        groups[parent].extend(leaves_of[0][r])
    leaves_of.insert(0, groups)
    rewards[d - 1] = torch.stack([leaf_rewards[g].mean() for g in groups])
tree_advantages = []
for d in [1, 2, 3]:
    row = torch.zeros(len(trees[d]), dtype=torch.float64)
    for t in set(trees[d]):
        rows = [r for r, tt in enumerate(trees[d]) if tt == t]
        if len(rows) <= 1:
            continue
        values = rewards[d][rows]
        if values.std() < 1e-6:
            continue
        row[rows] = (values - values.mean()) / (values.std() + 1e-8)
    tree_advantages.append(row.tolist())

# fusion 'probability' (tree_prob_weighted): a node's reward = softmax(alpha=1 · children's edge log-probs) ·
# children's rewards, bottom up; edge log-probs given per depth (index d = the child's depth).
edge_log_probs = [[], [-1.0, -1.5, -0.2, -0.2], [-0.3, -0.7, -0.1, -0.9], [-1.1, -0.4, -0.6, -0.6, -0.2, -0.8, -0.5, -0.5]]
prob_rewards = [None] * 4
prob_rewards[3] = leaf_rewards
for d in [3, 2, 1]:
    values = []
    for parent in range(len(trees[d - 1])):
        children = [r for r, p in enumerate(parents[d]) if p == parent]
        if len(children) == 1:
            values.append(prob_rewards[d][children[0]])
            continue
        weights = torch.softmax(torch.tensor([edge_log_probs[d][r] for r in children], dtype=torch.float64), dim=0)
        values.append(torch.sum(weights * prob_rewards[d][children]))
    prob_rewards[d - 1] = torch.stack(values)
prob_advantages = []
for d in [1, 2, 3]:
    row = torch.zeros(len(trees[d]), dtype=torch.float64)
    for t in set(trees[d]):
        rows = [r for r, tt in enumerate(trees[d]) if tt == t]
        values = prob_rewards[d][rows]
        if len(rows) > 1 and values.std() >= 1e-6:
            row[rows] = (values - values.mean()) / (values.std() + 1e-8)
    prob_advantages.append(row.tolist())


def width_pruned(mode, ratio, advantages_by_depth, last_split):
    """The code's width pruning over training samples (parent step = child depth − 1), as (depth, row) kept."""
    samples = [{"depth": d, "row": r, "step": d - 1, "advantage": advantages_by_depth[d - 1][r]}
               for d in range(1, 4) for r in range(len(trees[d]))]
    last = [x for x in samples if x["step"] > last_split]
    other = [x for x in samples if x["step"] <= last_split]
    if mode == 1:
        def branch_of(x):  # the ancestor at depth last_split + 1 (the code's find_last_split_branch)
            d, r = x["depth"] - 1, parents[x["depth"]][x["row"]]
            while d > last_split + 1:
                d, r = d - 1, parents[d][r]
            return (d, r)
        groups = {}
        for x in last:
            groups.setdefault(branch_of(x), []).append(x)
        kept = []
        for group in groups.values():
            keep_count = max(1, int(len(group) * ratio))
            kept.extend(sorted(group, key=lambda x: x["advantage"], reverse=True)[:keep_count])
    else:
        ordered = sorted(last, key=lambda x: x["advantage"], reverse=True)
        keep_count = max(2, int(len(ordered) * ratio))
        best = keep_count // 2
        worst = keep_count - best
        kept = ordered[:best] + (ordered[-worst:] if worst > 0 else [])
    return sorted([x["depth"], x["row"]] for x in other + kept)


# A tree split at step 0 only (so steps 1 and 2 come after the last split): 2 trees × 2 leaves.
parents_w = [[], [0, 0, 1, 1], [0, 1, 2, 3], [0, 1, 2, 3]]
trees_w = [[0, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]
advantages_w = [[0.7, -0.7, 0.0, 0.0], [0.9, -0.9, 0.3, -0.3], [0.5, -0.5, -0.2, 0.2]]
trees, parents_saved = trees_w, parents
parents = parents_w
width = {"parents": parents_w, "advantages": advantages_w,
         "perBranch": width_pruned(1, 0.5, advantages_w, 0), "bestWorst": width_pruned(2, 0.5, advantages_w, 0)}
parents, trees = parents_saved, [[0, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]]
out["branch"] = {"parents": parents, "trees": trees, "leafRewards": leaf_rewards.tolist(), "advantages": tree_advantages,
                 "edgeLogProbs": edge_log_probs, "probabilityAdvantages": prob_advantages, "width": width}
with open("test/fixtures/flow/grpo-variants.json", "w") as f:
    json.dump(out, f, indent=1)
print(tree_advantages, prob_advantages, width, sep='\n')
