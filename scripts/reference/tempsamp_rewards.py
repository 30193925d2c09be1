"""Reference for src/rewards/temporal-grounding.test.ts: TempSamp-R1's (#209, arXiv 2509.18056) temporal
grounding reward, restated in plain Python from parse_timestamp_from_text, compute_temporal_iou,
_timestamp_iou_reward, _temporal_format_reward (loose and TIMELENS_STRICT_FORMAT=1) and
transform_rewards of the open-source TempSamp-R1 (ZhangZikun6666/TempSamp-R1,
scripts/timelens/timelens_reward.py at 55a9228); overall = shaped IoU + 0.1 * format, as their
compute_score with GTPO_REWARD_SHAPING=1.

Run: /usr/bin/python3 scripts/reference/tempsamp_rewards.py > test/fixtures/tempsamp-rewards.json
"""
import json
import math
import re


def parse(text):
    if not text:
        return None
    search = text
    m = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    if m:
        search = m.group(1)
    matches = re.findall(r"(\d+\.?\d*)\s*(?:to|and)\s*(\d+\.?\d*)", search)
    if matches:
        return float(matches[-1][0]), float(matches[-1][1])
    matches = re.findall(r"(\d+\.?\d*)\s*-\s*(\d+\.?\d*)", search)
    if matches:
        return float(matches[-1][0]), float(matches[-1][1])
    nums = re.findall(r"\b(\d+\.?\d*)\b", search)
    if len(nums) >= 2:
        return float(nums[0]), float(nums[1])
    return None


def iou(pred, gt):
    inter = max(0, min(pred[1], gt[1]) - max(pred[0], gt[0]))
    union = max(pred[1], gt[1]) - min(pred[0], gt[0])
    return inter / union if union > 0 else 0.0


def iou_reward(text, truth):
    gt = parse(truth)
    pred = parse(text)
    return 0.0 if gt is None or pred is None else iou(pred, gt)


SPAN = r"\d+\.?\d*\s*(?:to|and|-)\s*\d+\.?\d*"


def format_reward(text, strict):
    if not text:
        return 0.0
    if strict:
        stripped = text.rstrip()
        blocks = re.findall(r"<answer>(.*?)</answer>", stripped, re.DOTALL)
        if len(blocks) != 1 or not stripped.endswith("</answer>"):
            return 0.0
        if "\n" in blocks[0] or "\r" in blocks[0]:
            return 0.0
        return 1.0 if re.search(SPAN, blocks[0]) else 0.0
    m = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    return 1.0 if m and re.search(SPAN, m.group(1)) else 0.0


def shape(value, threshold, alpha):
    if value >= threshold:
        return threshold + math.log(value - threshold + 1.0) * 0.01
    denom = math.exp(alpha) - 1.0
    if denom <= 0:
        return max(0.0, value)
    return threshold - (math.exp(alpha * (threshold - value)) - 1.0) / denom


TRUTH = "7.0 to 11.0"
COMPLETIONS = [
    "<answer> 7.00 to 11.00 </answer>",
    "<answer> 8 to 11 </answer>",
    "<answer> 5.5 and 9 </answer>",
    "<answer> 6-10 </answer>",
    "<answer> from 1 then 2 to 3 then 9 to 12 </answer>",
    "the event is at 9 12",
    "<answer>\n7 to 10\n</answer>",
    "<answer> 7 to 10 </answer> trailing",
    "<answer> 12 to 20 </answer>",
    "<answer> no span </answer>",
    "<answer> 11 to 7 </answer>",
    "",
]
cases = []
for text in COMPLETIONS:
    raw = iou_reward(text, TRUTH)
    cases.append(
        {
            "completion": text,
            "iou": raw,
            "shaped": shape(raw, 0.8, 1.0),
            "shaped_t05_a3": shape(raw, 0.5, 3.0),
            "format": format_reward(text, False),
            "strict_format": format_reward(text, True),
            "overall": shape(raw, 0.8, 1.0) + 0.1 * format_reward(text, False),
        }
    )
print(json.dumps({"truth": TRUTH, "cases": cases}, indent=1))
