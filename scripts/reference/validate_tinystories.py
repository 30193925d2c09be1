"""Checks hf_reference.py against the shared TinyStories-656K fixture's reference.json (which was made
with transformers): float64 log-probabilities, loss, per-tensor gradients and the greedy continuation.
Run before trusting any fixture make_fixtures.py writes:  /usr/bin/python3 scripts/reference/validate_tinystories.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import compute_reference, parse_config, read_safetensors  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/fixtures/models/tinystories-656k")


def main():
    raw_config = json.load(open(os.path.join(FIXTURE, "config.json")))
    config = parse_config(raw_config)
    params = read_safetensors(os.path.join(FIXTURE, "model.safetensors"))
    expected = json.load(open(os.path.join(FIXTURE, "reference.json")))
    ours = compute_reference(params, config, expected["forward"]["input_ids"], expected["greedy"]["max_new_tokens"], [2])

    def max_abs(a, b):
        return max(abs(x - y) for x, y in zip(a, b))

    def max_rel(a, b):
        return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))

    forward, ref_forward = ours["forward"], expected["forward"]
    report = {
        "last_position_logprobs max abs": max_abs(forward["last_position_logprobs"], ref_forward["last_position_logprobs"]),
        "next_token_logprob max abs": max_abs(forward["next_token_logprob"], ref_forward["next_token_logprob"]),
        "top5 ids equal": all(a["ids"] == b["ids"] for a, b in zip(forward["top5_per_position"], ref_forward["top5_per_position"])),
        "loss rel": abs(ours["backward"]["value"] - expected["backward"]["value"]) / expected["backward"]["value"],
        "gradient l2 max rel": max(
            abs(g["l2"] - expected["backward"]["gradients"][n]["l2"]) / expected["backward"]["gradients"][n]["l2"]
            for n, g in ours["backward"]["gradients"].items()
        ),
        "gradient first8 max abs": max(
            max_abs(g["first8"], expected["backward"]["gradients"][n]["first8"]) for n, g in ours["backward"]["gradients"].items()
        ),
        "gradient names equal": sorted(ours["backward"]["gradients"]) == sorted(expected["backward"]["gradients"]),
        "greedy equal": ours["greedy"]["output_ids"] == expected["greedy"]["output_ids"],
    }
    for key, value in report.items():
        print(f"{key}: {value}")
    ok = (
        report["last_position_logprobs max abs"] < 1e-4
        and report["next_token_logprob max abs"] < 1e-4
        and report["top5 ids equal"]
        and report["loss rel"] < 1e-5
        and report["gradient l2 max rel"] < 1e-5
        and report["gradient names equal"]
        and report["greedy equal"]
    )
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
