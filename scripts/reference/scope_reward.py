"""Reference for src/rewards/scope.test.ts: SCOPE (papers.tsv 136, arXiv 2512.15146), the authors' code
paths re-run in plain Python on small inputs:

- confidence: szu-tera/SCOPE verl/trainer/ppo/myutils.py split_steps, compute_confidence and
  calculate_avg_step_conf, as vllm_rollout_spmd.py calls them (split token "\\n\\n", vLLM logprobs=0: each
  token's dict holds the sampled token's Logprob only). The tokenizer is a stand-in whose tokens are
  their own text, so `split_token in token` is the text test the TypeScript port makes.
- the subgroup vote: grouputils.py _batch_conf_vote / _majority_vote_with_confidence with answers
  given directly (their extract_answer / simplify_expression_string replaced by the identity) and
  group_vote_num = n, so random.sample only permutes the pool; the cases have no weight ties, so
  the label does not depend on the permutation.
- the Pareto choice of the subgroup size: the "search_params" block of ray_trainer.py on given
  candidate metrics.

Run: /usr/bin/python3 scripts/reference/scope_reward.py > test/fixtures/scope-reward.json
"""
import json
import random
from collections import defaultdict

import numpy as np


class Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


def split_steps(tokens, split_token):
    start = 0
    result = []
    for i, token in enumerate(tokens):
        if split_token in token:
            result.append((start, i + 1))
            start = i + 1
    if start < len(tokens):
        result.append((start, len(tokens)))
    return result


def compute_confidence(logprobs):
    confs = []
    for token_logprobs in logprobs:
        if token_logprobs:
            mean_logprob = np.mean([lp.logprob for lp in token_logprobs.values()])
            confs.append(round(-mean_logprob, 3))
    return confs


def calculate_avg_step_conf(steps, logprobs):
    avg_step_conf = 0
    for start, end in steps:
        confidences = compute_confidence(logprobs[start:end])
        step_conf = np.mean(confidences)
        avg_step_conf += step_conf
    avg_step_conf /= len(steps)
    return avg_step_conf


def confidence_of(tokens, logprobs):
    # vLLM logprobs=0: one entry per token, the sampled token's (keyed by a stand-in id)
    per_token = [{0: Logprob(lp)} for lp in logprobs]
    return float(calculate_avg_step_conf(split_steps(tokens, "\n\n"), per_token))


def majority_vote_with_confidence(answers, confidence):
    answers = [a for a in answers if a is not None]
    if len(answers) == 0:
        return "None"
    score = defaultdict(float)
    for item, conf in zip(answers, confidence):
        score[item] += conf
    return max(score, key=score.get)


def batch_conf_vote(answers, n, group_vote_num, group_size, confidence):
    labels = []
    pairs = list(zip(answers, confidence))
    for i in range(len(answers) // n):
        prompt_pairs = pairs[i * n:(i + 1) * n]
        for _ in range(n // group_size):
            sampled = random.sample(prompt_pairs, group_vote_num)
            labels.append(majority_vote_with_confidence([a for a, _ in sampled], [c for _, c in sampled]))
    return [x for x in labels for _ in range(group_size)]


def pareto_choice(candidates, lam):
    def is_dominated(a, b):
        ra, da = a["rate"], a["diversity"]
        rb, db = b["rate"], b["diversity"]
        return rb >= ra and db >= da and (rb > ra or db > da)

    front = [c for c in candidates if not any(c["size"] != o["size"] and is_dominated(c, o) for o in candidates)]
    rates = [c["rate"] for c in front]
    diversities = [c["diversity"] for c in front]
    r_min, r_max = min(rates), max(rates)
    d_min, d_max = min(diversities), max(diversities)
    best, best_distance = None, float("inf")
    for c in front:
        nr = (c["rate"] - r_min) / (r_max - r_min + 1e-8)
        nd = (c["diversity"] - d_min) / (d_max - d_min + 1e-8)
        distance = np.sqrt(lam * (1.0 - nr) ** 2 + (1.0 - lam) * (1.0 - nd) ** 2)
        if distance < best_distance:
            best_distance, best = distance, c
    return best["size"]


random.seed(0)

confidence_cases = [
    {"tokens": ["a", ".\n\n", "b", "c"], "logprobs": [-1.0, -0.5, -2.0, -0.2]},
    {"tokens": ["x", "y", "\n\n", "\n\n", "z"], "logprobs": [-0.12345, -0.3, -0.05, -1.5, -0.0004]},
    {"tokens": ["one step only"], "logprobs": [-0.7]},
    {"tokens": ["s", ":\n\n"], "logprobs": [-0.25, -0.75]},
]
for case in confidence_cases:
    case["confidence"] = confidence_of(case["tokens"], case["logprobs"])

# two prompts of four; answers by prompt, confidences chosen so no two weights tie
vote_answers = ["4", "4", "4", "5", "7", "7", "8", "8"]
vote_confidence = [0.2, 0.3, 0.1, 0.9, 0.5, 0.4, 1.2, 0.05]
vote_labels = batch_conf_vote(vote_answers, 4, 4, 4, vote_confidence)
vote_scores = [1.0 if a == label else 0.0 for a, label in zip(vote_answers, vote_labels)]

pareto_cases = []
for candidates, lam in [
    ([(1, 0.55, 2.5), (2, 0.6, 2.0), (4, 0.7, 1.5), (8, 0.8, 1.0)], 0.7),
    ([(1, 0.55, 2.5), (2, 0.6, 2.0), (4, 0.7, 1.5), (8, 0.8, 1.0)], 0.3),
    ([(1, 0.5, 3.0), (2, 0.45, 2.0), (4, 0.75, 1.0), (8, 0.75, 1.0)], 0.7),
    ([(1, 0.6, 1.0), (2, 0.6, 1.0), (4, 0.6, 1.0)], 0.7),
    ([(1, 0.4, 2.0), (2, 0.9, 1.2), (4, 0.9, 1.1), (8, 0.95, 1.0), (16, 0.2, 1.0)], 0.5),
]:
    rows = [{"size": s, "rate": r, "diversity": d} for s, r, d in candidates]
    pareto_cases.append({"candidates": rows, "lambda": lam, "chosen": pareto_choice(rows, lam)})

print(json.dumps({
    "confidence": confidence_cases,
    "vote": {"answers": vote_answers, "confidence": vote_confidence, "labels": vote_labels, "scores": vote_scores},
    "pareto": pareto_cases,
}, indent=1))
