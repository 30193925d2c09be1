"""Reference for src/algorithms/advantages-prof.test.ts: PROF's filter and advantage (#126, arXiv
2509.03403), ported in float64 torch from the authors' amazon-science/PROF-GRPO
prof_grpo/prof_grpo_both/prof_ray_trainer.py: compute_verify_step_level_score (the PRM's step scores,
-99 padded, centred on the batch mean of all valid steps, times 2 and 2r - 1, averaged over the
response's steps), filter_trajectories (prm_critic = score - len_step_reward_coef * (L < 2 or L > 30);
per uid, n_remove = min(prof_filter, n); positives (r == 1) and negatives (r == 0) sorted ascending by
prm_critic; n_pos_to_remove = min(n_remove, round((delta + n_remove) / 2)); ...), then verl's
compute_grpo_outcome_advantage on the kept trajectories (torch.std, N - 1, eps 1e-6; a group of one
keeps mean 0, std 1).

The PRM's step probabilities are the `steps` inputs (what Qwen2.5-Math-PRM-7B would return).

Run with Debian's torch: /usr/bin/python3 scripts/reference/prof.py > test/fixtures/prof.json
"""
import json
from collections import defaultdict

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
PAD = -99.0


def compute_verify_step_level_score(scores, final_rewards):
    valid_mask = scores != PAD
    len_segs = valid_mask.sum(dim=1)
    score_uns_mean = scores[valid_mask].mean()
    score_processed = (scores - score_uns_mean) * 2
    scaled_values = score_processed * (2 * final_rewards - 1).unsqueeze(1)
    sum_of_scaled_values = torch.sum(scaled_values * valid_mask, dim=1)
    scores_ic = sum_of_scaled_values / torch.clamp(len_segs, min=1)
    scores_ic[len_segs == 0] = 0.0
    return scores_ic.numpy(), len_segs.numpy()


def filter_trajectories(uids, scores_ic, len_segs, seq_reward, prof_filter, len_step_reward_coef):
    n_remove_per_group = int(prof_filter)
    prompt_uid2idx_score = defaultdict(list)
    for idx, (uid, prm_val, len_seg, gt) in enumerate(zip(uids, scores_ic, len_segs, seq_reward)):
        prm_critic = prm_val - len_step_reward_coef * ((len_seg < 2) or (len_seg > 30))
        prompt_uid2idx_score[uid].append((idx, prm_critic, gt.item()))
    kept = []
    for uid, idx_score_list in prompt_uid2idx_score.items():
        n_total = len(idx_score_list)
        n_remove = min(n_remove_per_group, n_total)
        if n_remove <= 0:
            kept.extend([item[0] for item in idx_score_list])
            continue
        pos_samples = [item for item in idx_score_list if item[2] == 1]
        neg_samples = [item for item in idx_score_list if item[2] == 0]
        delta = len(pos_samples) - len(neg_samples)
        n_pos_to_remove = min(n_remove, round((delta + n_remove) / 2))
        kept_pos, kept_neg = list(pos_samples), list(neg_samples)
        if n_pos_to_remove > 0:
            pos_samples.sort(key=lambda x: x[1])
            num_removable_pos = min(n_pos_to_remove, len(pos_samples))
            removed = {item[0] for item in pos_samples[:num_removable_pos]}
            kept_pos = [item for item in pos_samples if item[0] not in removed]
            n_neg_to_remove = n_remove - num_removable_pos
            if n_neg_to_remove > 0 and len(neg_samples) > 0:
                neg_samples.sort(key=lambda x: x[1])
                removed = {item[0] for item in neg_samples[: min(n_neg_to_remove, len(neg_samples))]}
                kept_neg = [item for item in neg_samples if item[0] not in removed]
        else:
            if n_remove > 0 and len(neg_samples) > 0:
                neg_samples.sort(key=lambda x: x[1])
                removed = {item[0] for item in neg_samples[: min(n_remove, len(neg_samples))]}
                kept_neg = [item for item in neg_samples if item[0] not in removed]
        kept.extend([item[0] for item in kept_pos + kept_neg])
    return kept


def grpo_advantage(scores, uids, eps=1e-6):
    by_uid = defaultdict(list)
    for s, u in zip(scores, uids):
        by_uid[u].append(s)
    mean, std = {}, {}
    for u, values in by_uid.items():
        if len(values) == 1:
            mean[u], std[u] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean[u], std[u] = torch.mean(torch.tensor(values)), torch.std(torch.tensor([values]))
    return [float((s - mean[u]) / (std[u] + eps)) for s, u in zip(scores, uids)]


def main():
    rng = np.random.default_rng(126)
    groups = [
        # (outcomes, step counts); the step scores are drawn below
        ([1, 1, 1, 1, 1, 0, 0, 0], [3, 1, 5, 4, 31, 2, 6, 3]),  # P = 5, N = 3: 3 correct and 1 incorrect leave
        ([1, 0, 0, 0, 0, 0, 1, 0], [2, 4, 3, 40, 5, 2, 7, 3]),  # P = 2, N = 6: round(0) = 0, 4 incorrect leave
        ([1, 1, 1, 1, 1, 1, 1, 1], [2, 3, 4, 5, 6, 7, 8, 9]),  # all correct
        ([0, 0, 0, 0, 0, 0, 0, 0], [2, 3, 4, 5, 6, 7, 8, 9]),  # all wrong
        ([1, 1, 1, 0, 0], [2, 3, 4, 5, 6]),  # n = 5, remove 4: round(2.5) = 2 (half to even)
        ([1, 0, 0, 0, 0.5], [2, 3, 1, 5, 6]),  # a reward of 0.5 is neither: it leaves
        ([1, 1, 0, 0, 1, 0], [3, 3, 3, 3, 3, 3]),  # P = N = 3: round(2) = 2 correct, 2 incorrect
        ([1], [4]),  # a group of one: removed when the filter is on
    ]
    steps, outcomes, sizes, uids = [], [], [], []
    for g, (rs, lens) in enumerate(groups):
        sizes.append(len(rs))
        for r, L in zip(rs, lens):
            steps.append([round(float(v), 3) for v in rng.uniform(0, 1, size=L)])
            outcomes.append(float(r))
            uids.append(g)
    steps[17] = list(steps[18])  # two all-correct responses with equal scores and counts (a tie)
    width = max(len(s) for s in steps)
    scores = torch.tensor([s + [PAD] * (width - len(s)) for s in steps])
    reward = torch.tensor(outcomes)
    scores_ic, len_segs = compute_verify_step_level_score(scores, reward)
    cases = []
    for prof_filter, coef in [(4, 10.0), (4, 0.0), (2, 10.0), (0, 10.0), (9, 0.0)]:
        kept = sorted(filter_trajectories(uids, scores_ic, len_segs, reward, prof_filter, coef))
        advantages = [0.0] * len(outcomes)
        for i, a in zip(kept, grpo_advantage([outcomes[i] for i in kept], [uids[i] for i in kept])):
            advantages[i] = a
        keep = [1 if i in kept else 0 for i in range(len(outcomes))]
        cases.append({"removePerGroup": prof_filter, "lengthPenalty": coef, "keep": keep, "advantages": advantages})
    print(json.dumps({"groupSizes": sizes, "outcomes": outcomes, "steps": steps, "cases": cases}))


if __name__ == "__main__":
    main()
