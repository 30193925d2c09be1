"""Reference for src/algorithms/advantages-zoom-zero.test.ts: Zoom-Zero's token-selective credit
assignment (#148, arXiv 2512.14273), ported in float64 torch from the authors' xiaoqian-shen/Zoom-Zero:
verl/workers/reward/custom.py (mask_iou = the first start of the marker ids in the valid response ids,
else valid_response_length - 1; mask_answer = max(0, mask_iou - 5)) and verl/trainer/core_algos.py
compute_grpo_select_outcome_advantage (format and zoom on every token, iou before mask_answer and from
mask_iou on, answer between them, the sum / 3; mean and torch.std over the concatenated valid tokens of
each uid's responses, a uid with one response keeps mean 0 and std 1; (score - mean) / (std + 1e-6)).

The completions are right-padded to one length with an eos mask, as verl's batch is.

Run with Debian's torch: /usr/bin/python3 scripts/reference/zoom_zero.py > test/fixtures/zoom-zero.json
"""
import json
import sys
from collections import defaultdict

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

MARKER = [29, 9697]  # the ids custom.py searches for
ANSWER_TOKENS = 5


def find_sublist_indices(lst, sublst):
    n, m = len(lst), len(sublst)
    indices = []
    for i in range(n - m + 1):
        if lst[i:i + m] == sublst:
            indices.append(i)
            break
    return indices


def masks(completions):
    mask_iou, mask_answer = [], []
    for ids in completions:
        glue_start_loc = find_sublist_indices(ids, MARKER)
        m = glue_start_loc[0] if len(glue_start_loc) > 0 else len(ids) - 1
        mask_iou.append(m)
        mask_answer.append(max(0, m - ANSWER_TOKENS))
    return torch.tensor(mask_iou, dtype=torch.float64), torch.tensor(mask_answer, dtype=torch.float64)


def compute_grpo_select_outcome_advantage(token_level_rewards, eos_mask, index, epsilon=1e-6):
    valid_reward = ["iou", "answer", "format", "zoom"]
    all_scores = {}
    for key in valid_reward:
        all_scores[key] = torch.zeros(len(eos_mask), dtype=torch.float64)
    for key, scores in token_level_rewards.items():
        if key not in valid_reward:
            continue
        response_length = eos_mask.shape[-1]
        bsz = scores.shape[0]
        for i in range(bsz):
            all_scores[key][i] = scores[i]
    response_length = eos_mask.shape[-1]
    bsz = eos_mask.shape[0]
    iou_mask_id = token_level_rewards["mask_iou"]
    answer_mask_id = token_level_rewards["mask_answer"]
    range_tensor = torch.arange(response_length).unsqueeze(0).expand(bsz, response_length)
    before_mask = (range_tensor < answer_mask_id.unsqueeze(1)) * eos_mask
    after_mask = (range_tensor >= iou_mask_id.unsqueeze(1)) * eos_mask
    iou_mask = before_mask + after_mask
    answer_mask = (1 - iou_mask) * eos_mask
    scores_format = all_scores["format"].unsqueeze(-1).tile([1, response_length]) * eos_mask
    scores_iou = all_scores["iou"].unsqueeze(-1).tile([1, response_length]) * iou_mask
    scores_zoom = all_scores["zoom"].unsqueeze(-1).tile([1, response_length]) * eos_mask
    scores_answer = all_scores["answer"].unsqueeze(-1).tile([1, response_length]) * answer_mask
    scores = (scores_format + scores_zoom + scores_iou + scores_answer) / 3.0
    id2mean, id2std = {}, {}
    id2score = defaultdict(list)
    for i in range(eos_mask.shape[0]):
        valid_tokens = eos_mask[i] == 1
        id2score[index[i]].append(scores[i][valid_tokens])
    for idx in id2score:
        if len(id2score[idx]) == 1:
            id2mean[idx] = torch.tensor(0.0)
            id2std[idx] = torch.tensor(1.0)
        elif len(id2score[idx]) > 1:
            id2mean[idx] = torch.mean(torch.cat(id2score[idx]))
            id2std[idx] = torch.std(torch.cat(id2score[idx]))
    for i in range(eos_mask.shape[0]):
        scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon) * eos_mask[i]
    return scores


def main():
    rng = np.random.default_rng(148)
    group_sizes = [4, 3, 1, 5]
    completions, rewards = [], {"format": [], "iou": [], "answer": [], "zoom": []}
    for size in group_sizes:
        for _ in range(size):
            length = int(rng.integers(3, 14))
            ids = [int(x) for x in rng.integers(0, 40, size=length)]
            if rng.uniform() < 0.7 and len(completions) not in (5, 10):  # two never carry it
                at = int(rng.integers(0, length - 1))
                ids[at:at + 2] = [29, 9697]
                ids = ids[:length]
            completions.append(ids)
            rewards["format"].append(float(rng.choice([0.0, 1.0])))
            rewards["iou"].append(round(float(rng.uniform()), 4))
            rewards["answer"].append(float(rng.choice([0.0, 1.0])))
            rewards["zoom"].append(float(rng.choice([0.0, 1.0])))
    length = max(len(c) for c in completions)
    eos_mask = torch.tensor([[1.0] * len(c) + [0.0] * (length - len(c)) for c in completions])
    mask_iou, mask_answer = masks(completions)
    index = [g for g, size in enumerate(group_sizes) for _ in range(size)]
    token_level = {key: torch.tensor(values) for key, values in rewards.items()}
    token_level["mask_iou"] = mask_iou
    token_level["mask_answer"] = mask_answer
    advantages = compute_grpo_select_outcome_advantage(token_level, eos_mask, index)
    without_zoom = {k: v for k, v in token_level.items() if k != "zoom"}
    advantages_no_zoom = compute_grpo_select_outcome_advantage(without_zoom, eos_mask, index)
    out = {
        "marker": MARKER,
        "answerTokens": ANSWER_TOKENS,
        "groupSizes": group_sizes,
        "completions": completions,
        "rewards": rewards,
        "maskIou": mask_iou.tolist(),
        "advantages": [advantages[i][: len(c)].tolist() for i, c in enumerate(completions)],
        "advantagesWithoutZoom": [advantages_no_zoom[i][: len(c)].tolist() for i, c in enumerate(completions)],
    }
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
