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
out["branch"] = {"parents": parents, "trees": trees, "leafRewards": leaf_rewards.tolist(), "advantages": tree_advantages}
with open("test/fixtures/flow/grpo-variants.json", "w") as f:
    json.dump(out, f, indent=1)
print(tree_advantages)
