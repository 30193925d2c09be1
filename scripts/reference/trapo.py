"""Reference for recipes/papers/trapo.test.ts: TraPO's (#97, arXiv 2512.13106) trajectory selection,
written in float64 torch from the authors' trainer (github.com/ShenzhiYang2000/TRAPO,
Weakly_Supervised/Research/Semi_RL/semi_ray_trainer.py): `_compute_trajectory_cosine` (cut to the
shortest reference, z-score each trajectory over time with torch's sample std + 1e-8,
F.cosine_similarity against every reference, mean over references) and the kept set
`filter_dict_by_topk` (k = max(1, int(n * top_k_ratio))) ∪ `filter_dict_by_threshold` (>= thres),
with their defaults topk 0.1, thres 0.4 (scripts/run/run_semi.sh).

Run with Debian's torch: /usr/bin/python3 scripts/reference/trapo.py > test/fixtures/trapo.json
"""
import json

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def trajectory_cosine(references, queries):
    min_len = min(len(r) for r in references)
    database = torch.stack([torch.tensor(r[:min_len]) for r in references])
    query = torch.stack([torch.tensor(q[:min_len]) for q in queries])
    query_norm = (query - query.mean(dim=1, keepdim=True)) / (query.std(dim=1, keepdim=True) + 1e-8)
    db_norm = (database - database.mean(dim=1, keepdim=True)) / (database.std(dim=1, keepdim=True) + 1e-8)
    cosine_sim = F.cosine_similarity(db_norm.unsqueeze(1), query_norm.unsqueeze(0), dim=2)
    return cosine_sim.mean(dim=0)


def kept(scores, top_k_ratio, threshold):
    n = scores.numel()
    k = max(1, int(n * top_k_ratio))
    _, topk_indices = torch.topk(scores, k, largest=True, sorted=False)
    chosen = set(topk_indices.tolist()) | {i for i, s in enumerate((scores >= threshold).tolist()) if s}
    return [i in chosen for i in range(n)]


cases = []
# Four labeled trajectories (one longer: cut to 5 points) and six unlabeled ones.
references = [
    [0.0, 0.125, 0.25, 0.5, 0.625],
    [0.125, 0.125, 0.375, 0.5, 0.75, 0.875],
    [0.25, 0.375, 0.375, 0.625, 0.875],
    [0.5, 0.375, 0.625, 0.625, 0.75],
]
queries = [
    [0.0, 0.25, 0.25, 0.5, 0.75],  # rising like the labeled ones
    [0.75, 0.625, 0.5, 0.25, 0.125],  # falling
    [0.5, 0.5, 0.5, 0.5, 0.5],  # flat: z-scores 0, cosine 0
    [0.125, 0.0, 0.25, 0.125, 0.375, 0.5],  # noisy rise, one point longer
    [0.375, 0.625, 0.25, 0.5, 0.375],  # no trend
    [0.875, 0.75, 0.875, 0.625, 0.75],  # slightly falling
]
for ratio, threshold in [(0.1, 0.4), (0.5, 0.99), (0.1, -1.0)]:
    scores = trajectory_cosine(references, queries)
    cases.append(
        {
            "references": references,
            "queries": queries,
            "topKRatio": ratio,
            "threshold": threshold,
            "scores": scores.tolist(),
            "kept": kept(scores, ratio, threshold),
        }
    )
print(json.dumps({"cases": cases}, indent=1))
