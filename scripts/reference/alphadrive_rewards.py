"""Reference for src/rewards/driving-plan.test.ts: AlphaDrive's (#69, arXiv 2503.07608) three planning
rewards, restated in plain Python from the authors' plan_speed_reward / plan_path_reward /
plan_format_reward (hustvl/AlphaDrive src/r1-v/src/open_r1/grpo.py, read in the fork
mr-d-self-driving/AlphaDrive at bb4104c): one call per group of completions of one prompt, as their
launch script (one prompt per device) makes it, with a running count of the actions seen so far.

Run: /usr/bin/python3 scripts/reference/alphadrive_rewards.py > test/fixtures/alphadrive-rewards.json
"""
import json
import re
from collections import Counter

SPEED = {"ACCELERATE": 0.9, "DECELERATE": 1.0, "STOP": 1.0, "KEEP": 0.8}
PATH = {"LEFT_TURN": 1.0, "RIGHT_TURN": 1.0, "LEFT_CHANGE": 1.0, "RIGHT_CHANGE": 1.0, "STRAIGHT": 0.8}


def plan_reward(group, solution, weights, diversity_weight=0.4):
    seen = Counter()
    scores = []
    for text in group:
        gold_match = re.search(r"<answer>(.*?)</answer>", solution)
        if not gold_match:
            scores.append(0)
            continue
        gold = {word for word in gold_match.group(1).strip().split(", ") if word in weights}
        match = re.search(r"<answer>(.*?)</answer>", text)
        content = match.group(1).strip() if match else text.replace("<answer>", "").replace("</answer>", "")
        actions = {re.sub(r"[^\w]", "", word) for word in content.split(", ") if word in weights}
        seen.update(actions)
        tp = len(actions & gold)
        fp = len(actions - gold)
        fn = len(gold - actions)
        precision = tp / (tp + fp + 1e-6)
        recall = tp / (tp + fn + 1e-6)
        f1 = 0 if tp == 0 and fp == 0 and fn == 0 else 2 * (precision * recall) / (precision + recall + 1e-6)
        complexity = sum(weights[word] for word in actions) / (len(actions) + 1e-6)
        novel = all(seen[word] == 1 for word in actions)
        scores.append(f1 * complexity + (diversity_weight if novel else -diversity_weight))
    return scores


def plan_format(group):
    pattern = r"<think>.*?</think>\s*<answer>.*?</answer>"
    return [1.0 if re.fullmatch(pattern, text, re.DOTALL) else 0.0 for text in group]


CASES = [
    # (name, solution, group)
    ("exact plan, then the same plan again, then another", "<answer> DECELERATE, LEFT_TURN </answer>",
     ["<think>slow for the turn</think><answer> DECELERATE, LEFT_TURN </answer>",
      "<think>same</think><answer> DECELERATE, LEFT_TURN </answer>",
      "<think>go</think><answer> ACCELERATE, STRAIGHT </answer>",
      "<think>x</think> <answer> KEEP, LEFT_TURN </answer>"]),
    ("every action listed (the F1 guard against listing all)", "<answer> STOP, STRAIGHT </answer>",
     ["<answer> KEEP, ACCELERATE, DECELERATE, STOP, STRAIGHT, LEFT_TURN </answer>",
      "<think>red\nlight</think>\n<answer> STOP, STRAIGHT </answer>"]),
    ("no space after the comma, no tags, lowercase", "<answer> KEEP, STRAIGHT </answer>",
     ["<think>a</think><answer>KEEP,STRAIGHT</answer>", "KEEP, STRAIGHT", "<answer> keep, straight </answer>",
      "<think>a</think><answer> KEEP, STRAIGHT </answer> trailing"]),
    ("a gold plan with two speed actions", "<answer> DECELERATE, STOP, RIGHT_CHANGE </answer>",
     ["<answer> STOP, RIGHT_CHANGE </answer>", "<answer> DECELERATE, STOP, RIGHT_CHANGE </answer>"]),
    ("a gold plan without tags scores 0", "DECELERATE, LEFT_TURN",
     ["<answer> DECELERATE, LEFT_TURN </answer>"]),
]

print(json.dumps([
    {"name": name, "solution": solution, "group": group,
     "speed": plan_reward(group, solution, SPEED), "path": plan_reward(group, solution, PATH),
     "format": plan_format(group)}
    for name, solution, group in CASES
], indent=1))
