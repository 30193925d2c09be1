"""Reference for src/algorithms/advantages-care.test.ts: GRPO-CARE's consistency bonus and advantages
(#24, arXiv 2506.16141), ported in float64 torch from the authors' TencentARC/GRPO-CARE
src/r1-v/src/open_r1/trainer/grpo_trainer_ref_ema.py, compute_loss with use_care (one call per prompt
group: their per-device batch is one prompt's num_generations completions), with the settings of
scripts/run_grpo_care_margin0.01_video_r1.sh (bonus_coefficient 0.5, confidence_upper_bound 0.95,
consistency_margin 0.01): avg_ref_logps_answer = (ref_per_token_logps * mask_answer).sum(1) /
(mask_answer.sum(1) + 1e-6), exp, clamp(max=0.95); accurate_mask = (acc > 0.1) * (acc >= acc.mean());
confident_mask = conf >= conf[accurate].mean() - margin; bonus = acc * 0.5 where both; rewards +=
bonus; advantages (r - mean) / (std + 1e-4) with torch.std (N-1).

mask_answer is given here as a token range per completion (their get_thinking_answer_masks finds it
in the tokenizer's pieces; the test builds token texts whose `<answer>` span is that range). A range
(0, 0) is a completion without `<answer>`: an empty mask.

Run with Debian's torch: /usr/bin/python3 scripts/reference/grpo_care.py > test/fixtures/grpo-care.json
"""
import json

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def care_group(rewards, accuracy, ref_logps, spans, T, coef=0.5, upper=0.95, margin=0.01):
    """compute_loss's use_care block and advantage for one group; returns (rewards, bonus, advantages)."""
    n = len(rewards)
    ref = torch.tensor(ref_logps)  # [n, T]
    seq = torch.arange(T).expand(n, -1)
    first = torch.tensor([s[0] for s in spans]).unsqueeze(1)
    end = torch.tensor([s[1] for s in spans]).unsqueeze(1)
    mask_answer = ((seq >= first) * (seq < end)).double()
    accuracy_rewards = torch.tensor(accuracy)
    rewards = torch.tensor(rewards).clone()
    avg_ref_logps_answer = (ref * mask_answer).sum(dim=1) / (mask_answer.sum(dim=1) + 1e-6)
    avg_ref_ps_answer = torch.clamp(torch.exp(avg_ref_logps_answer), max=upper)
    bonus_rewards = torch.zeros_like(accuracy_rewards)
    mean_accuracy_rewards = accuracy_rewards.mean()
    accurate_mask = (accuracy_rewards > 0.1) * (accuracy_rewards >= mean_accuracy_rewards)
    mean_selected_confidence = avg_ref_ps_answer[accurate_mask].mean()
    confident_mask = avg_ref_ps_answer >= (mean_selected_confidence - margin)
    bonus_mask = accurate_mask * confident_mask
    bonus_rewards[bonus_mask] = accuracy_rewards[bonus_mask]
    bonus_rewards = bonus_rewards * coef
    rewards += bonus_rewards
    advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-4)
    return rewards.tolist(), bonus_rewards.tolist(), advantages.tolist(), avg_ref_ps_answer.tolist()


def main():
    rng = np.random.default_rng(24)
    T = 10
    cases = []
    # (accuracy, format) per sample; the run's combined reward is accuracy + format (their sum of rewards_per_func)
    groups = [
        [(1, 1), (1, 1), (0, 1), (1, 0), (0, 0)],  # three accurate: the likelier ones get the bonus
        [(0, 1), (0, 0), (0, 1), (0, 1)],  # none accurate (their mean over none is NaN): no bonus
        [(0.5, 1), (0.05, 1), (0.3, 0), (0.8, 1), (0.2, 1), (1, 1)],  # graded accuracy, a > 0.1 and ≥ mean
        [(1, 1), (1, 1), (1, 1), (1, 1)],  # all accurate: the margin decides
    ]
    for group in groups:
        n = len(group)
        accuracy = [float(a) for a, _ in group]
        rewards = [float(a + f) for a, f in group]
        ref = rng.uniform(-1.5, -0.01, size=(n, T)).round(4).tolist()
        spans = []
        for k in range(n):
            if k == n - 1 and group is groups[1]:
                spans.append((0, 0))  # no <answer>: empty mask, confidence exp(0) clamped to 0.95
            else:
                first = int(rng.integers(1, 5))
                spans.append((first, first + int(rng.integers(1, 4))))
        out_rewards, bonus, advantages, confidence = care_group(rewards, accuracy, ref, spans, T)
        cases.append({
            "accuracy": accuracy,
            "rewards": rewards,
            "refLogprobs": ref,
            "spans": spans,
            "expectedRewards": out_rewards,
            "expectedBonus": bonus,
            "expectedConfidence": confidence,
            "expectedAdvantages": advantages,
        })
    print(json.dumps({"tokens": T, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
