"""The LoRA fixture for the TinyStories-656K checkpoint, in plain torch (no peft): writes a PEFT-format
adapter (adapter_config.json + adapter_model.safetensors, PEFT's tensor names and shapes), then reads
that saved adapter back, applies it to the base weights as PEFT does (W + lora_alpha/r · B @ A, or
lora_alpha/√r with use_rslora) in float64, and writes the next-token log-probabilities of the
reference sequence with and without the adapter.

Output: test/fixtures/lora-tinystories/{adapter_config.json, adapter_model.safetensors, reference.json};
`grpo score --model <tinystories> --adapter test/fixtures/lora-tinystories` must match reference.json
to 1e-4 (src/cli/lora-commands.test.ts). Run:  /usr/bin/python3 scripts/reference/lora_reference.py
Not shipped, not imported by the library.
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import forward, parse_config, read_safetensors, round_sig, write_safetensors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "../../../shared/fixtures/models/tinystories-656k")
OUT = os.path.normpath(os.path.join(HERE, "../../test/fixtures/lora-tinystories"))
MODULE_PARENT = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
                 "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def make_adapter(params, config):
    """A non-trivial adapter (B random, unlike a fresh one) on four kinds of linear, saved in PEFT's format."""
    rank, alpha = 4, 8
    targets = ["q_proj", "v_proj", "o_proj", "down_proj"]
    generator = torch.Generator().manual_seed(17)
    tensors = {}
    for layer in range(config["num_layers"]):
        for module in targets:
            path = f"model.layers.{layer}.{MODULE_PARENT[module]}.{module}"
            out_features, in_features = params[path + ".weight"].shape
            bound = 1 / math.sqrt(in_features)  # PEFT: kaiming_uniform_(a=√5) on [r, in]
            a = (torch.rand(rank, in_features, generator=generator) * 2 - 1) * bound
            b = torch.randn(out_features, rank, generator=generator) * 0.1
            tensors[f"base_model.model.{path}.lora_A.weight"] = a
            tensors[f"base_model.model.{path}.lora_B.weight"] = b
    os.makedirs(OUT, exist_ok=True)
    write_safetensors(os.path.join(OUT, "adapter_model.safetensors"), tensors)
    adapter_config = {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": "tinystories-656k",
        "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0, "target_modules": targets, "use_rslora": False,
        "bias": "none", "fan_in_fan_out": False, "inference_mode": True,
    }
    with open(os.path.join(OUT, "adapter_config.json"), "w") as handle:
        json.dump(adapter_config, handle, indent=2)
        handle.write("\n")


def apply_saved_adapter(params, directory):
    """Base weights (float64) with every adapted linear replaced by W + s · B @ A, read from the saved files."""
    adapter_config = json.load(open(os.path.join(directory, "adapter_config.json")))
    tensors = read_safetensors(os.path.join(directory, "adapter_model.safetensors"))
    rank = adapter_config["r"]
    scaling = adapter_config["lora_alpha"] / (math.sqrt(rank) if adapter_config.get("use_rslora") else rank)
    merged = {name: t.to(torch.float64) for name, t in params.items()}
    for name, a in tensors.items():
        if not name.endswith(".lora_A.weight"):
            continue
        path = name[len("base_model.model."):-len(".lora_A.weight")]
        b = tensors[name.replace(".lora_A.", ".lora_B.")]
        merged[path + ".weight"] = merged[path + ".weight"] + scaling * (b.to(torch.float64) @ a.to(torch.float64))
    return merged


def next_token_logprobs(params, config, input_ids):
    ids = torch.tensor([input_ids], dtype=torch.long)
    logprobs = torch.log_softmax(forward(params, config, ids)[0], dim=-1)
    return [round_sig(v) for v in logprobs[:-1].gather(1, ids[0, 1:, None])[:, 0].tolist()]


def main():
    config = parse_config(json.load(open(os.path.join(BASE, "config.json"))))
    params = read_safetensors(os.path.join(BASE, "model.safetensors"))
    make_adapter(params, config)
    input_ids = json.load(open(os.path.join(BASE, "reference.json")))["forward"]["input_ids"]
    base = {name: t.to(torch.float64) for name, t in params.items()}
    reference = {
        "input_ids": input_ids,
        "next_token_logprob": next_token_logprobs(apply_saved_adapter(params, OUT), config, input_ids),
        "base_next_token_logprob": next_token_logprobs(base, config, input_ids),
    }
    with open(os.path.join(OUT, "reference.json"), "w") as handle:
        json.dump(reference, handle, indent=1)
        handle.write("\n")
    difference = max(abs(a - b) for a, b in zip(reference["next_token_logprob"], reference["base_next_token_logprob"]))
    print(f"wrote {OUT}; {len(input_ids)} tokens; adapter moves a logprob by up to {difference:.4f}")


if __name__ == "__main__":
    main()
