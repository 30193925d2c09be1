"""Reference for src/algorithms/advantages-riskpo.test.ts: RiskPO's advantage (#249, arXiv 2510.00911),
ported line by line in float64 torch from the authors' RTkenny/RiskPO verl/trainer/ppo/core_algos.py,
compute_grpo_bundle_rvar_outcome_advantage_quantile_tracking (use_q_track_mode 'batch', 'track',
'mix'; use_mean_as_baseline False and risk_seeking_upper_tail False, as their scripts), with bundle_uid
assigned to consecutive questions as their ray_trainer.py does (i % bundle_size over the prompts), and
the quantile tracker of their ray_trainer.py fit (alpha_list 0.05..0.95; the first step sets q to
torch.quantile of all papers' scores, later steps take one torch.optim.SGD step, lr_q, of the
gradient -(alpha - mean(S < q))).

Run with Debian's torch: /usr/bin/python3 scripts/reference/riskpo.py > test/fixtures/riskpo.json
"""
import json
from collections import defaultdict

import torch

torch.set_default_dtype(torch.float64)


def riskpo(scores, index, bundle_uid, q_track_down=None, q_track_up=None, use_q_track_mode="batch", quantile_down=0.2, quantile_up=0.8, w_mix=1.5, use_mixing_risk_measure=True,
           natural_baseline_adv=False, norm_adv_by_std_in_grpo=True, credit_assign_mode="sum-mean", epsilon=1e-6):
    bundle_to_questions = defaultdict(set)
    bundle_to_question_responses = defaultdict(lambda: defaultdict(list))
    for i in range(len(scores)):
        bundle_to_questions[bundle_uid[i]].add(index[i])
        bundle_to_question_responses[bundle_uid[i]][index[i]].append((i, scores[i]))
    bundle_paper_scores, bundle_paper_combinations, question_stds, question_means = {}, {}, {}, {}
    for bundle_id, questions in bundle_to_questions.items():
        paper_scores, paper_combinations, lists = [], [], []
        for q_id in sorted(questions):
            responses = bundle_to_question_responses[bundle_id][q_id]
            lists.append(responses)
            values = torch.tensor([float(s) for _, s in responses])
            std = torch.std(values)
            question_stds[q_id] = std if std > 1e-3 else 1.0
            question_means[q_id] = torch.mean(values)
        num_papers = min(len(r) for r in lists)
        for paper_idx in range(num_papers):
            indices, paper_score = [], 0
            for responses in lists:
                response_idx, response_score = responses[paper_idx]
                indices.append(response_idx)
                paper_score += response_score
            paper_scores.append(paper_score)
            paper_combinations.append(indices)
        bundle_paper_scores[bundle_id] = torch.tensor(paper_scores)
        bundle_paper_combinations[bundle_id] = paper_combinations
    advantages = torch.zeros_like(scores)
    for bundle_id in bundle_to_questions.keys():
        paper_scores = bundle_paper_scores[bundle_id]
        if len(paper_scores) == 1:
            q_down, q_up, std = paper_scores[0], paper_scores[0], torch.tensor(1.0)
        else:
            q_down = torch.quantile(paper_scores, quantile_down)
            q_up = torch.quantile(paper_scores, quantile_up)
            std = torch.std(paper_scores)
        if q_track_down is not None and use_q_track_mode == "track":
            q_down, q_up = q_track_down, q_track_up
        elif q_track_down is not None and use_q_track_mode == "mix":
            q_down, q_up = (q_track_down + q_down) / 2, (q_track_up + q_up) / 2
        for combination in bundle_paper_combinations[bundle_id]:
            paper_score = sum(scores[idx] for idx in combination)
            adv = torch.clamp(paper_score - q_down, min=0) - torch.clamp(paper_score - q_up, min=0)
            if natural_baseline_adv:
                adv = adv + q_down - q_up
            adv = adv / (quantile_up - quantile_down + epsilon)
            if use_mixing_risk_measure:
                cvar = -torch.clamp(q_down - paper_score, min=0) / (quantile_down + epsilon)
                adv = (w_mix * cvar + adv) / (w_mix + 1)
            if norm_adv_by_std_in_grpo:
                adv = adv / (std + epsilon)
            local_indices, local_ratios = [], []
            for r in combination:
                if credit_assign_mode == "uniform":
                    advantages[r] = adv
                if credit_assign_mode == "score":
                    advantages[r] = (0.5 if scores[r] > 0.0 else 1.5) * adv
                if credit_assign_mode == "std":
                    advantages[r] = adv / (question_stds[index[r]] + epsilon)
                if credit_assign_mode == "sum-mean":
                    local_indices.append(r)
                    local_ratios.append(scores[r] - question_means[index[r]])
            if credit_assign_mode == "sum-mean" and local_ratios:
                total = torch.stack(local_ratios).sum()
                if total.abs().item() > 1e-6:
                    for r, ratio in zip(local_indices, local_ratios):
                        advantages[r] = adv * (ratio / total)
                else:
                    for r in local_indices:
                        advantages[r] = adv / len(local_indices)
    return advantages, torch.cat([bundle_paper_scores[b].view(-1) for b in bundle_paper_scores])


ALPHA_LIST = torch.tensor([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8,
                           0.85, 0.9, 0.95])


def track(q, flat, lr_q=0.1):
    """One call of their tracker: warm-up (q None) or one SGD step."""
    if q is None:
        return torch.quantile(flat, ALPHA_LIST)
    parameter = torch.nn.Parameter(q.clone())
    optimizer = torch.optim.SGD([parameter], lr=lr_q)
    repeated = flat.repeat(parameter.shape[0], 1)
    parameter.grad = -(ALPHA_LIST - (repeated < parameter.unsqueeze(1)).double().mean(dim=1))
    optimizer.step()
    return parameter.detach()


def nearest(q, level):
    return q[(torch.abs(ALPHA_LIST - level)).argmin().item()].item()


def main():
    generator = torch.Generator().manual_seed(249)
    # 7 questions, ragged groups (the fewest answers of a bundle sets its paper count), rewards in
    # {0, 0.5, 1} and a few continuous ones so quantiles interpolate.
    group_sizes = [6, 5, 6, 6, 4, 6, 3]
    rewards = []
    for size in group_sizes:
        for _ in range(size):
            pick = torch.randint(0, 4, (1,), generator=generator).item()
            rewards.append([0.0, 0.5, 1.0, round(torch.rand(1, generator=generator).item(), 4)][pick])
    scores = torch.tensor(rewards)
    index = [g for g, size in enumerate(group_sizes) for _ in range(size)]
    cases = []
    for options in [
        {},
        {"creditAssignment": "uniform"},
        {"creditAssignment": "std", "quantileUp": 0.9},
        {"creditAssignment": "score", "naturalBaseline": True},
        {"mixWeight": 0, "normalizeByStd": False, "bundleSize": 3},
        {"bundleSize": 1, "creditAssignment": "uniform"},
        {"bundleSize": 2, "quantileDown": 0.1, "quantileUp": 0.5},
    ]:
        bundle_size = options.get("bundleSize", 5)
        bundle_uid = [q // bundle_size for q in index]
        mix = options.get("mixWeight", 1.5)
        advantages, _ = riskpo(scores, index, bundle_uid, quantile_down=options.get("quantileDown", 0.2),
                            quantile_up=options.get("quantileUp", 0.8), w_mix=mix, use_mixing_risk_measure=mix > 0,
                            natural_baseline_adv=options.get("naturalBaseline", False),
                            norm_adv_by_std_in_grpo=options.get("normalizeByStd", True),
                            credit_assign_mode=options.get("creditAssignment", "sum-mean"))
        cases.append({"options": options, "advantages": advantages.tolist()})
    # Tracking over three steps of the same batch shifted by +0.1 per step (defaults, bundles of 5):
    # step 1 uses the bundles' own quantiles and warms the tracker up; steps 2 and 3 use the tracked
    # levels nearest alpha and beta ('track'), or their mean with the bundles' ('mix'), then move them.
    tracking = []
    for mode in ["track", "mix"]:
        q = None
        steps = []
        for step in range(3):
            shifted = scores + 0.1 * step
            bundle_uid = [i // 5 for i in index]
            down = None if q is None else nearest(q, 0.2)
            up = None if q is None else nearest(q, 0.8)
            advantages, flat = riskpo(shifted, index, bundle_uid, q_track_down=down, q_track_up=up, use_q_track_mode=mode)
            q = track(q, flat)
            steps.append({"advantages": advantages.tolist(), "tracker": q.tolist()})
        tracking.append({"mode": mode, "steps": steps})
    print(json.dumps({"rewards": rewards, "groupSizes": group_sizes, "cases": cases, "tracking": tracking}, indent=1))


if __name__ == "__main__":
    main()
