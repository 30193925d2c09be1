"""Reference for src/algorithms/policy-losses-llds.test.ts: the LLDS loss (#188, arXiv 2512.04220),
written in float64 torch from the authors' code path, with gradients by autograd with respect to
logprob.

Source: vengdeng/LLDS-On-Group-Relative-Policy-Optimization-Collapse-in-Search-R1,
verl/workers/actor/dp_actor.py update_policy (chunk_noreduce True: chunk_sums_vectorized /
expand_chunk_mask, the action-level gate; False: the response-level gate), with
verl/trainer/ppo/core_algos.py compute_policy_loss for the PPO term and masked_mean over the
response mask for both terms. Answer masking off (their MASK_ANS=false), so coeff_map = lambda
everywhere. Defaults from train_grpo_nqhot.sh: NO_REDUCE_LAMBDA 0.2, ISCHUNK true, clip 0.2.

The batch has masked gaps inside rows (tool output under state masking), so a row holds several
actions, and per-token advantages of both signs.

Run with Debian's torch: /usr/bin/python3 scripts/reference/llds.py > test/fixtures/llds.json
"""
import json

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


def expand_chunk_mask(chunk_mask, chunk_id):
    B, N = chunk_id.shape
    padded_mask = torch.cat([torch.zeros(B, 1, dtype=chunk_mask.dtype), chunk_mask], dim=1)
    return padded_mask.gather(1, chunk_id)


def chunk_sums_vectorized(mask, values):
    B, N = mask.shape
    mask = mask.bool()
    prev = F.pad(mask[:, :-1], (1, 0), value=False)
    starts = mask & ~prev
    chunk_id = starts.cumsum(dim=1).to(torch.long) * mask.to(torch.long)
    lengths = chunk_id.max(dim=1).values
    k_max = int(lengths.max().item())
    if k_max == 0:
        return values.new_zeros((B, 0)), lengths, chunk_id
    out = values.new_zeros((B, k_max + 1))
    out.scatter_add_(1, chunk_id.clamp_max(k_max), values * mask)
    return out[:, 1:], lengths, chunk_id


def compute_policy_loss(old_log_prob, log_prob, advantages, eos_mask, cliprange):
    negative_approx_kl = log_prob - old_log_prob
    ratio = torch.exp(negative_approx_kl)
    ratio = torch.clamp(ratio, min=-100, max=100)
    pg_losses = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1.0 - cliprange, 1.0 + cliprange)
    return masked_mean(torch.max(pg_losses, pg_losses2), eos_mask)


def llds_loss(log_prob, old_log_prob, advantages, response_mask, no_reduce_lambda=0.2, chunk=True, clip=0.2):
    pg_loss = compute_policy_loss(old_log_prob, log_prob, advantages, response_mask, clip)
    positive_advantage_mask = (advantages >= 0).float()
    penalty_term = old_log_prob.detach() - log_prob
    coeff_map = torch.full_like(log_prob, no_reduce_lambda)
    diff_log_prob = old_log_prob.detach() - log_prob
    base_penalty_term = torch.maximum(torch.zeros_like(log_prob), diff_log_prob)
    if chunk:
        masked_response_mask = response_mask * positive_advantage_mask
        sum_val, _, chunk_ids = chunk_sums_vectorized(masked_response_mask, penalty_term)
        chunk_mask = (sum_val > 0).to(torch.long)
        original_token_mask = expand_chunk_mask(chunk_mask, chunk_ids)
        valid_penalty_tokens = original_token_mask.detach() * base_penalty_term
    else:
        masked_response_mask = response_mask * positive_advantage_mask
        current_penalty_term = diff_log_prob * positive_advantage_mask
        penalty_sentence = (current_penalty_term * masked_response_mask).sum(dim=-1)
        penalty_sentence = torch.maximum(torch.zeros_like(penalty_sentence), penalty_sentence)
        penalty_sentence = (penalty_sentence > 0).to(penalty_sentence.dtype)  # their in-place "[> 0] = 1.0"
        valid_penalty_tokens = penalty_sentence.unsqueeze(-1) * base_penalty_term * positive_advantage_mask
    loss_noreduce = masked_mean(valid_penalty_tokens * coeff_map, response_mask)
    return pg_loss + loss_noreduce, float(loss_noreduce)


def make_batch(seed):
    generator = torch.Generator().manual_seed(seed)
    B, T = 6, 8
    old = -0.2 - 2.0 * torch.rand(B, T, generator=generator)
    # Log-ratios in ±0.35: some tokens past the 0.2 clip, none within 1e-3 of a bound or of 0.
    log_ratio = 0.7 * (torch.rand(B, T, generator=generator) - 0.5)
    log_ratio = torch.where(log_ratio.abs() < 0.01, torch.full_like(log_ratio, 0.05), log_ratio)
    masks = [
        [1, 1, 1, 0, 0, 1, 1, 1],  # two actions around masked tool output
        [1, 1, 1, 1, 1, 1, 0, 0],
        [1, 1, 0, 1, 0, 1, 1, 0],  # three actions
        [1, 1, 1, 1, 0, 0, 0, 0],
        [1, 0, 0, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 1, 1],
    ]
    mask = torch.tensor(masks, dtype=torch.float64)
    # Row 0: its first action lost likelihood, its second gained overall but has one token that fell,
    # and the row as a whole lost: the action gate penalises the first action only, the response gate
    # also the falling token of the second. Row 2: the row gained overall but its middle action lost.
    log_ratio[0] = torch.tensor([-0.3, -0.15, 0.05, 0.3, -0.3, 0.12, -0.06, 0.08])
    log_ratio[2] = torch.tensor([0.25, 0.3, 0.1, -0.08, 0.2, 0.15, -0.04, 0.1])
    # Per-sequence advantages of both signs and one zero (zero counts as preserving: A >= 0).
    sequence_advantages = [0.8, -0.6, 1.2, 0.0, -1.1, 0.5]
    advantages = torch.tensor(sequence_advantages)[:, None].expand(B, T).clone()
    return {"old": old, "logRatio": log_ratio, "mask": mask, "advantages": sequence_advantages, "tokenAdvantages": advantages}


def case(name, batch, options, per_token=None):
    logprob = (batch["old"] + batch["logRatio"]).clone().requires_grad_(True)
    advantages = batch["tokenAdvantages"] if per_token is None else per_token
    value, displacement = llds_loss(logprob, batch["old"], advantages, batch["mask"], **options)
    value.backward()
    renamed = {{"no_reduce_lambda": "likelihoodCoefficient", "chunk": "gate", "clip": "epsilonLow"}[k]: v
               for k, v in options.items()}
    if "gate" in renamed:
        renamed["gate"] = "action" if renamed["gate"] else "response"
    if "epsilonLow" in renamed:
        renamed["epsilonHigh"] = renamed["epsilonLow"]
    return {
        "name": name,
        "options": renamed,
        "perTokenAdvantages": None if per_token is None else per_token.flatten().tolist(),
        "value": float(value),
        "displacement": displacement,
        "gradient": [float(g) for g in (logprob.grad * batch["mask"]).flatten()],
    }


def main():
    batch = make_batch(188)
    # Per-token advantages whose sign changes inside a row: the preserving runs split there.
    signs = torch.tensor([[1, 1, -1, 1, 1, 1, -1, 1]] * 6, dtype=torch.float64)
    per_token = batch["tokenAdvantages"].abs() * signs
    cases = [
        case("defaults: action gate, lambda 0.2", batch, {}),
        case("response gate", batch, {"chunk": False}),
        case("action gate, lambda 1, clip 0.1", batch, {"no_reduce_lambda": 1.0, "clip": 0.1}),
        case("per-token advantages, action gate", batch, {}, per_token),
        case("per-token advantages, response gate", batch, {"chunk": False}, per_token),
    ]
    out = {
        "batch": {
            "oldLogprobs": batch["old"].tolist(),
            "logRatio": batch["logRatio"].tolist(),
            "mask": batch["mask"].tolist(),
            "advantages": batch["advantages"],
        },
        "cases": cases,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
