"""Reference for src/algorithms/flow-steps.test.ts: one Flow-GRPO `sde`, one `cps` and one DanceGRPO
step (and the Euler step) in float64 PyTorch, written from the semantics of the official code
(yifan123/flow_grpo `sde_step_with_logprob`; XueZeyue/DanceGRPO `flux_step` with sde_solver=True).
Given the same x, v and noise, the TypeScript steps must give the same mean, std and log-probs.
Run with Debian's torch: /usr/bin/python3 scripts/reference/flow_sde_reference.py
Writes test/fixtures/flow/sde-steps.json."""
import json
import math
import torch

torch.manual_seed(0)
B, D, N, SHIFT = 2, 5, 4, 3.0
s = torch.linspace(1, 0, N + 1, dtype=torch.float64)
sigmas = SHIFT * s / (1 + (SHIFT - 1) * s)  # SD3 time shift


def step(kind, x, v, i, level, noise=None, given=None):
    sigma, sigma_next = sigmas[i], sigmas[i + 1]
    dt = sigma_next - sigma
    if kind == "sde":
        denominator = sigmas[1] if sigma == 1 else sigma  # the code's torch.where(sigma == 1, sigma_max, sigma)
        std_t = torch.sqrt(sigma / (1 - denominator)) * level
        mean = x * (1 + std_t**2 / (2 * sigma) * dt) + v * (1 + std_t**2 * (1 - sigma) / (2 * sigma)) * dt
        std = std_t * torch.sqrt(-dt)
    elif kind == "cps":
        std = sigma_next * math.sin(level * math.pi / 2)
        x0 = x - sigma * v
        x1 = x + (1 - sigma) * v
        mean = x0 * (1 - sigma_next) + x1 * torch.sqrt(sigma_next**2 - std**2)
    elif kind == "dance":
        mean = x + dt * v
        x0 = x - sigma * v
        score = -(x - x0 * (1 - sigma)) / sigma**2
        mean = mean + (-0.5 * level**2 * score) * dt
        std = level * torch.sqrt(sigma - sigma_next)
    else:  # ode
        mean = x + v * dt
        std = torch.tensor(0.0, dtype=torch.float64)
    nxt = given if given is not None else mean + std * noise
    if kind == "sde":
        lp = -((nxt - mean) ** 2) / (2 * std**2) - torch.log(std) - math.log(math.sqrt(2 * math.pi))
    elif kind == "cps":
        lp = -((nxt - mean) ** 2)
    elif kind == "dance":
        lp = -((nxt - mean) ** 2) / (2 * std**2)  # the code's constant terms are a separate, unused statement
    else:
        lp = None
    return {
        "mean": mean.flatten().tolist(),
        "std": float(std),
        "next": nxt.flatten().tolist(),
        "logProb": None if lp is None else lp.mean(dim=1).tolist(),
    }


cases = []
for kind, level in [("sde", 0.7), ("cps", 0.7), ("dance", 0.3), ("ode", 0.0)]:
    for i in [0, 2, 3]:
        if kind == "cps" and i == N - 1:
            continue  # std = σ'·sin(·) = 0 at the last step: x' = μ, no density
        x = torch.randn(B, D, dtype=torch.float64)
        v = torch.randn(B, D, dtype=torch.float64)
        v_ref = v + 0.1 * torch.randn(B, D, dtype=torch.float64)
        noise = torch.randn(B, D, dtype=torch.float64)
        given = x + 0.2 * torch.randn(B, D, dtype=torch.float64)
        drawn = step(kind, x, v, i, level, noise=noise)
        scored = step(kind, x, v, i, level, given=given)
        reference = step(kind, x, v_ref, i, level, noise=noise)
        std = drawn["std"]
        kl = None
        if std > 0:
            m = torch.tensor(drawn["mean"], dtype=torch.float64).view(B, D)
            mr = torch.tensor(reference["mean"], dtype=torch.float64).view(B, D)
            kl = (((m - mr) ** 2) / (2 * std**2)).mean(dim=1).tolist()
        cases.append({
            "kind": kind, "index": i, "noiseLevel": level,
            "x": x.flatten().tolist(), "v": v.flatten().tolist(), "vReference": v_ref.flatten().tolist(),
            "noise": noise.flatten().tolist(), "given": given.flatten().tolist(),
            "drawn": drawn, "scored": scored, "kl": kl,
        })

json.dump({"B": B, "D": D, "sigmas": sigmas.tolist(), "cases": cases},
          open("test/fixtures/flow/sde-steps.json", "w"), indent=0)
