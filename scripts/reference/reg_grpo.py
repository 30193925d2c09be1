"""Reference for src/algorithms/policy-losses-reg-grpo.test.ts: the Reg-GRPO loss of DeepVideo-R1
(#63, arXiv 2506.07464), written in float64 torch from the paper's Eq. 5, 7 and 8 (Appendix A.4):
target A_i = (r_i - mu_r)/(sigma_r + 1e-6) (the grpo z-score, torch's sample std), predicted
A_theta,i = (rho_i - mu_rho)/(sigma_rho + eps) with rho_i = sum_t (logprob - old) over completion i and
torch's sample std (gradient through mu and sigma), L = mean over the groups whose targets are not
all 0 of the mean over the group of (A_i - A_theta,i)^2, plus beta * the k3 KL to the reference
averaged per sequence then over the batch's sequences. Gradients by autograd with respect to logprob.
The batch is text-rl-papers.json's (three groups of four, the third all-zero rewards: it drops out).

Run: /usr/bin/python3 scripts/reference/reg_grpo.py > test/fixtures/reg-grpo.json
"""
import json
import pathlib

import torch

torch.set_default_dtype(torch.float64)
ROOT = pathlib.Path(__file__).resolve().parents[2]
batch = json.loads((ROOT / "test/fixtures/text-rl-papers.json").read_text())["batch"]
old = torch.tensor(batch["oldLogprobs"])
mask = torch.tensor(batch["mask"])
rewards = torch.tensor(batch["rewards"], dtype=torch.float64)
sizes = batch["groupSizes"]
# A reference policy 0.3 below / 0.2 above the old one on alternate tokens, for the KL case.
ref = old + torch.tensor([[(-0.3 if (b + t) % 2 else 0.2) for t in range(old.shape[1])] for b in range(old.shape[0])])


def targets():
    out = torch.zeros_like(rewards)
    start = 0
    for n in sizes:
        r = rewards[start : start + n]
        out[start : start + n] = (r - r.mean()) / (r.std() + 1e-6)
        start += n
    return out


def reg_grpo(logprob, eps, beta):
    rho = ((logprob - old) * mask).sum(dim=1)
    a = targets()
    terms, start = [], 0
    for n in sizes:
        target = a[start : start + n]
        if bool((target != 0).any()):
            x = rho[start : start + n]
            predicted = (x - x.mean()) / (x.std() + eps)
            terms.append(((target - predicted) ** 2).mean())
        start += n
    loss = torch.stack(terms).sum() / len(terms)
    if beta:
        d = ref - logprob
        kl = (torch.exp(d) - 1 - d) * mask
        loss = loss + beta * (kl.sum(dim=1) / mask.sum(dim=1)).mean()
    return loss


cases = []
for name, eps, beta in (("default", 1e-6, 0.0), ("epsilon 0.1", 0.1, 0.0), ("with k3 KL, beta 0.04", 1e-6, 0.04)):
    logprob = (old + torch.tensor(batch["logRatio"])).clone().requires_grad_(True)
    loss = reg_grpo(logprob, eps, beta)
    loss.backward()
    cases.append(
        {
            "name": name,
            "epsilon": eps,
            "klCoefficient": beta,
            "value": loss.item(),
            "gradient": [float(g) for g in (logprob.grad * mask).flatten()],
        }
    )
print(json.dumps({"refLogprobs": [float(v) for v in ref.flatten()], "cases": cases}, indent=1))
