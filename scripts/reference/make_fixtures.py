"""Writes the small random-weight checkpoints under test/fixtures/models/<name>/ (config.json,
model.safetensors or shards + index, reference.json) and test/fixtures/safetensors/ (dtype cases).

Each reference.json has the TinyStories fixture's format (float64 forward/backward/greedy, computed
by hf_reference.py, which validate_tinystories.py checks against transformers' numbers first) plus
`rope.inverse_frequencies` (float32, as transformers computes them) and `greedy.min_margin` (the
smallest top-1 minus top-2 logit along the greedy path; seeds are chosen so it is comfortably > 0).

Run from the repository root:  /usr/bin/python3 scripts/reference/make_fixtures.py
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import (  # noqa: E402
    compute_reference, expected_tensor_names, forward, parse_config, read_safetensors, rope_inverse_frequencies, write_safetensors,
)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
OUT = os.path.join(ROOT, "test/fixtures")

BASE = {"num_hidden_layers": 2, "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}

# name -> (config.json fields, stored dtype, number of shards)
FIXTURES = {
    "qwen2-bias-untied": ({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 96, "hidden_size": 32,
        "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": False,
        "use_sliding_window": False, "sliding_window": 128,
    }, "F32", 1),
    "qwen3-qk-norm": ({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 112, "hidden_size": 32,
        "intermediate_size": 48, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 256, "tie_word_embeddings": True,
        "attention_bias": False, "use_sliding_window": False, "sliding_window": None,
    }, "BF16", 1),
    "llama-rope-llama3": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128, "hidden_size": 32,
        "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "max_position_embeddings": 2048, "tie_word_embeddings": True,
        "attention_bias": False, "mlp_bias": False,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 256},
    }, "F32", 1),
    "llama-rope-linear-bias": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 100, "hidden_size": 32,
        "intermediate_size": 40, "num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "max_position_embeddings": 512, "tie_word_embeddings": False,
        "attention_bias": True, "mlp_bias": False, "rope_scaling": {"type": "linear", "factor": 4.0},
    }, "F32", 1),
    "mistral-sharded-f16": ({
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": 120, "hidden_size": 32,
        "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "max_position_embeddings": 1024, "tie_word_embeddings": False, "sliding_window": 4096,
    }, "F16", 2),
}


def random_params(config, seed):
    """Weights large enough that the logits are far from uniform and greedy decoding is decisive."""
    generator = torch.Generator().manual_seed(seed)
    shapes = {}
    hidden, head_dim = config["hidden_size"], config["head_dim"]
    for name in expected_tensor_names(config):
        if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
            size = head_dim if ("q_norm" in name or "k_norm" in name) else hidden
            shapes[name] = ("norm", [size])
        elif name.endswith(".bias"):
            shapes[name] = ("bias", None)
        else:
            shapes[name] = ("matrix", None)
    params = {}
    intermediate = config["intermediate_size"]
    for name, (kind, shape) in shapes.items():
        if kind == "norm":
            params[name] = 1.0 + 0.2 * torch.randn(shape, generator=generator)
            continue
        shape = matrix_shape(name, config, intermediate)
        if kind == "bias":
            params[name] = 0.3 * torch.randn(shape[:1], generator=generator)
        else:
            fan_in = shape[1] if len(shape) == 2 else 1
            scale = 0.3 if "embed_tokens" in name else 1.5 / fan_in ** 0.5
            params[name] = scale * torch.randn(shape, generator=generator)
    return params


def matrix_shape(name, config, intermediate):
    hidden, head_dim, vocab = config["hidden_size"], config["head_dim"], config["vocab_size"]
    q_width, kv_width = config["num_heads"] * head_dim, config["num_kv_heads"] * head_dim
    if "embed_tokens" in name or name.startswith("lm_head"):
        return [vocab, hidden]
    table = {
        "q_proj": [q_width, hidden], "k_proj": [kv_width, hidden], "v_proj": [kv_width, hidden],
        "o_proj": [hidden, q_width], "gate_proj": [intermediate, hidden], "up_proj": [intermediate, hidden],
        "down_proj": [hidden, intermediate],
    }
    for key, shape in table.items():
        if key in name:
            return shape
    raise KeyError(name)


def round_to_storage(params, dtype):
    """The values the TypeScript loader will see: stored dtype, widened back to float32."""
    target = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dtype]
    return {name: t.to(target).to(torch.float32) for name, t in params.items()}


def greedy_margin(params, config, output_ids, prompt_length):
    """Smallest top-1 minus top-2 logit over the positions that chose a greedy token (float64)."""
    params64 = {name: t.to(torch.float64) for name, t in params.items()}
    with torch.no_grad():
        logits = forward(params64, config, torch.tensor([output_ids[:-1]], dtype=torch.long))[0]
    top2 = logits[prompt_length - 1:].topk(2, dim=-1).values
    return float((top2[:, 0] - top2[:, 1]).min())


def write_shards(folder, params, dtype, shards):
    names = list(params)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), params, dtype)
        return
    per_shard = (len(names) + shards - 1) // shards
    weight_map = {}
    for index in range(shards):
        file = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
        chunk = {name: params[name] for name in names[index * per_shard:(index + 1) * per_shard]}
        write_safetensors(os.path.join(folder, file), chunk, dtype)
        weight_map.update({name: file for name in chunk})
    total = sum(t.numel() * (4 if dtype == "F32" else 2) for t in params.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as handle:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, handle, indent=2)


def make_model_fixture(name, fields, dtype, shards):
    raw_config = {**BASE, **fields}
    config = parse_config(raw_config)
    for seed in range(100):
        params = round_to_storage(random_params(config, 1000 + seed), dtype)
        generator = torch.Generator().manual_seed(seed)
        input_ids = [1] + torch.randint(3, config["vocab_size"], (11,), generator=generator).tolist()
        reference = compute_reference(params, config, input_ids, 20, [2])
        margin = greedy_margin(params, config, reference["greedy"]["output_ids"], len(input_ids))
        if margin > 0.05:
            break
    reference["greedy"]["min_margin"] = round(margin, 6)
    reference["rope"] = {"inverse_frequencies": [float(v) for v in rope_inverse_frequencies(config).tolist()]}
    reference = {
        "about": f"float64 PyTorch reference (scripts/reference/make_fixtures.py, seed {1000 + seed}) for this random-weight "
                 f"{raw_config['model_type']} checkpoint stored as {dtype}; values are from the stored weights",
        **reference,
    }
    folder = os.path.join(OUT, "models", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump(raw_config, handle, indent=2)
    write_shards(folder, params, dtype, shards)
    with open(os.path.join(folder, "reference.json"), "w") as handle:
        json.dump(reference, handle, separators=(",", ":"))
    check = {}
    for file in sorted(os.listdir(folder)):
        if file.endswith(".safetensors"):
            check.update(read_safetensors(os.path.join(folder, file)))
    assert all(torch.equal(check[n], params[n]) for n in params), name
    print(f"{name}: seed {1000 + seed}, loss {reference['backward']['value']:.4f}, greedy margin {margin:.3f}, "
          f"{sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 1024:.0f} KB")


def make_dtype_fixture():
    """One tensor of awkward values stored as F32, F16 and BF16, with the float32 bits each must load as."""
    values = np.array([0.0, -0.0, 1.0, -2.5, 1 / 3, 65504.0, 70000.0, 6.0e-8, 5.96e-8, 6.1e-5, 1e-40, 3.0e38,
                       float("inf"), float("-inf"), float("nan"), 0.1, -1e-3, 1.00390625], dtype=np.float32)
    folder = os.path.join(OUT, "safetensors")
    os.makedirs(folder, exist_ok=True)
    tensor = torch.from_numpy(values.reshape(3, 6))
    tensors = {}
    expected = {}
    for dtype, torch_dtype in (("F32", torch.float32), ("F16", torch.float16), ("BF16", torch.bfloat16)):
        stored = tensor.to(torch_dtype)
        widened = stored.to(torch.float32).numpy().reshape(-1)
        expected[dtype.lower()] = [int(b) for b in widened.view(np.uint32)]
        tensors[dtype.lower()] = (stored, dtype)
    for dtype_name, (stored, dtype) in tensors.items():
        write_safetensors(os.path.join(folder, f"values-{dtype_name}.safetensors"), {"values": stored.to(torch.float32)}, dtype)
    with open(os.path.join(folder, "values.json"), "w") as handle:
        json.dump({"about": "float32 bit patterns (uint32) that values-<dtype>.safetensors must load as (torch's conversion)",
                   "shape": [3, 6], "input": [float(v) if np.isfinite(v) else str(v) for v in values], "bits": expected}, handle)


if __name__ == "__main__":
    torch.set_num_threads(1)
    make_dtype_fixture()
    for fixture_name, (fields, stored_dtype, shard_count) in FIXTURES.items():
        make_model_fixture(fixture_name, fields, stored_dtype, shard_count)
