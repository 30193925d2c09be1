"""Reference logprobs of a tiny random-weight Idefics3 (SmolVLM) checkpoint, for
src/model/vision/vision-language-reference.test.ts. Plain PyTorch (Debian has no transformers), written from
transformers' modeling_idefics3.py semantics:

- vision (Idefics3VisionTransformer): Conv2d patch embedding (kernel = stride = patch, padding
  "valid"), flatten(2).transpose(1, 2); position ids by Idefics3VisionEmbeddings' bucketize recipe
  (all patches valid: full tiles); N x [LayerNorm -> attention (q/k/v/out_proj with biases, scale
  head_dim^-0.5, no mask, softmax) -> residual -> LayerNorm -> fc1 -> gelu (tanh or exact) -> fc2 ->
  residual] -> post_layernorm;
- connector (Idefics3Connector): pixel_shuffle's views and permutes, then modality_projection.proj
  (no bias);
- inputs_merger: inputs_embeds[input_ids == image_token_id] = image_hidden_states.view(-1, H);
- text model: Llama (hf_reference.py's attention / RMSNorm / RoPE), lm_head tied or not by the
  top-level tie_word_embeddings.

Weights and pixels come from a deterministic recipe that the TypeScript test reproduces bit for bit
(a 32-bit integer hash per element, below), so the checkpoint itself need not be committed: the JSON
holds the recipe, a checksum per tensor, the config.json object, the ids and the expected logprobs.
This script also writes the checkpoint in the HF layout (config.json + model.safetensors) to
--checkpoint-dir and computes the reference from the files it wrote.

Also the gradients of -mean(logprobs) w.r.t. the connector and a few language-model weights (the
tower frozen, as our default). Computed in float64 from the float32 weights. Run from the repository root:
  /usr/bin/python3 scripts/reference/idefics3_reference.py [--checkpoint-dir DIR]
"""
import argparse
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import attention, parse_config, read_safetensors, rms_norm, write_safetensors  # noqa: E402
from hf_reference import rope_inverse_frequencies  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
OUT = os.path.join(ROOT, "test/fixtures/idefics3/reference.json")
MASK = 0xFFFFFFFF


def uniform(seed, count):
    """count values in [0, 1): a 32-bit integer hash (lowbias32) of seed * 0x9E3779B1 + k. Mirrored in TS."""
    out = []
    for k in range(count):
        x = (seed * 0x9E3779B1 + k) & MASK
        x ^= x >> 16
        x = (x * 0x7FEB352D) & MASK
        x ^= x >> 15
        x = (x * 0x846CA68B) & MASK
        x ^= x >> 16
        out.append(x / 4294967296.0)
    return out


def recipe_tensor(entry):
    """offset + scale * (2u - 1), rounded to float32."""
    size = 1
    for dim in entry["shape"]:
        size *= dim
    values = [entry["offset"] + entry["scale"] * (2 * u - 1) for u in uniform(entry["seed"], size)]
    return torch.tensor(values, dtype=torch.float64).to(torch.float32).reshape(entry["shape"])


def checkpoint_recipe(config):
    """[{name, shape, seed, scale, offset}] in HF Idefics3ForConditionalGeneration names and order."""
    vision, text = config["vision_config"], config["text_config"]
    E, I, p, C = vision["hidden_size"], vision["intermediate_size"], vision["patch_size"], vision["num_channels"]
    patches = (vision["image_size"] // p) ** 2
    entries = []

    def add(name, shape, scale, offset=0.0):
        entries.append({"name": name, "shape": shape, "seed": 1000 + len(entries), "scale": scale, "offset": offset})

    v = "model.vision_model."
    add(v + "embeddings.patch_embedding.weight", [E, C, p, p], (C * p * p) ** -0.5)
    add(v + "embeddings.patch_embedding.bias", [E], 0.1)
    add(v + "embeddings.position_embedding.weight", [patches, E], 0.5)
    for layer in range(vision["num_hidden_layers"]):
        prefix = f"{v}encoder.layers.{layer}."
        for norm in ("layer_norm1", "layer_norm2"):
            add(prefix + norm + ".weight", [E], 0.2, 1.0)
            add(prefix + norm + ".bias", [E], 0.1)
        for name in ("k_proj", "v_proj", "q_proj", "out_proj"):
            add(prefix + f"self_attn.{name}.weight", [E, E], 1.5 * E ** -0.5)
            add(prefix + f"self_attn.{name}.bias", [E], 0.1)
        add(prefix + "mlp.fc1.weight", [I, E], 1.5 * E ** -0.5)
        add(prefix + "mlp.fc1.bias", [I], 0.1)
        add(prefix + "mlp.fc2.weight", [E, I], 1.5 * I ** -0.5)
        add(prefix + "mlp.fc2.bias", [E], 0.1)
    add(v + "post_layernorm.weight", [E], 0.2, 1.0)
    add(v + "post_layernorm.bias", [E], 0.1)
    s = config["scale_factor"]
    H, V, TI = text["hidden_size"], text["vocab_size"], text["intermediate_size"]
    heads, kv = text["num_attention_heads"], text["num_key_value_heads"]
    D = H // heads
    add("model.connector.modality_projection.proj.weight", [H, E * s * s], 1.5 * (E * s * s) ** -0.5)
    t = "model.text_model."
    add(t + "embed_tokens.weight", [V, H], 1.0)
    for layer in range(text["num_hidden_layers"]):
        prefix = f"{t}layers.{layer}."
        add(prefix + "self_attn.q_proj.weight", [heads * D, H], 1.5 * H ** -0.5)
        add(prefix + "self_attn.k_proj.weight", [kv * D, H], 1.5 * H ** -0.5)
        add(prefix + "self_attn.v_proj.weight", [kv * D, H], 1.5 * H ** -0.5)
        add(prefix + "self_attn.o_proj.weight", [H, heads * D], 1.5 * H ** -0.5)
        add(prefix + "mlp.gate_proj.weight", [TI, H], 1.5 * H ** -0.5)
        add(prefix + "mlp.up_proj.weight", [TI, H], 1.5 * H ** -0.5)
        add(prefix + "mlp.down_proj.weight", [H, TI], 1.5 * TI ** -0.5)
        add(prefix + "input_layernorm.weight", [H], 0.2, 1.0)
        add(prefix + "post_attention_layernorm.weight", [H], 0.2, 1.0)
    add(t + "norm.weight", [H], 0.2, 1.0)
    if not config["tie_word_embeddings"]:
        add("lm_head.weight", [V, H], 2.0 * H ** -0.5)
    return entries


# ---------------------------------------------------------------- vision tower and connector

def layer_norm(x, params, name, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], params[name + ".weight"], params[name + ".bias"], eps)


def vision_position_ids(vision, batch):
    """Idefics3VisionEmbeddings' recipe with a patch attention mask of all ones (full tiles)."""
    side = vision["image_size"] // vision["patch_size"]
    boundaries = torch.arange(1 / side, 1.0, 1 / side)
    fractional = torch.arange(0, 1 - 1e-6, 1 / side)
    buckets = torch.bucketize(fractional, boundaries, right=True)
    ids = (buckets[:, None] * side + buckets).flatten()
    # Our tower uses positions 0..P-1 for full tiles; a recipe giving anything else would be a finding.
    assert torch.equal(ids, torch.arange(side * side)), ids
    return ids[None, :].expand(batch, -1)


def vision_forward(params, vision, pixel_values):
    E, heads, eps = vision["hidden_size"], vision["num_attention_heads"], vision["layer_norm_eps"]
    v = "model.vision_model."
    conv = torch.nn.functional.conv2d(
        pixel_values, params[v + "embeddings.patch_embedding.weight"], params[v + "embeddings.patch_embedding.bias"],
        stride=vision["patch_size"])
    x = conv.flatten(2).transpose(1, 2)
    batch, length, _ = x.shape
    x = x + params[v + "embeddings.position_embedding.weight"][vision_position_ids(vision, batch)]
    act = vision["hidden_act"]
    for layer in range(vision["num_hidden_layers"]):
        prefix = f"{v}encoder.layers.{layer}."
        residual = x
        h = layer_norm(x, params, prefix + "layer_norm1", eps)
        proj = lambda name, h=h: h @ params[prefix + f"self_attn.{name}.weight"].T + params[prefix + f"self_attn.{name}.bias"]
        split = lambda t: t.view(batch, length, heads, E // heads).transpose(1, 2)
        q, k, vv = split(proj("q_proj")), split(proj("k_proj")), split(proj("v_proj"))
        weights = torch.softmax((q @ k.transpose(2, 3)) * (E // heads) ** -0.5, dim=-1)
        out = (weights @ vv).transpose(1, 2).reshape(batch, length, E)
        x = residual + out @ params[prefix + "self_attn.out_proj.weight"].T + params[prefix + "self_attn.out_proj.bias"]
        residual = x
        h = layer_norm(x, params, prefix + "layer_norm2", eps)
        h = h @ params[prefix + "mlp.fc1.weight"].T + params[prefix + "mlp.fc1.bias"]
        h = torch.nn.functional.gelu(h, approximate="tanh" if act == "gelu_pytorch_tanh" else "none")
        x = residual + h @ params[prefix + "mlp.fc2.weight"].T + params[prefix + "mlp.fc2.bias"]
    return layer_norm(x, params, v + "post_layernorm", eps)


def pixel_shuffle(x, scale_factor):
    bsz, seq, embed_dim = x.size()
    height = width = int(seq ** 0.5)
    x = x.view(bsz, height, width, embed_dim)
    x = x.view(bsz, height, int(width / scale_factor), embed_dim * scale_factor)
    x = x.permute(0, 2, 1, 3)
    x = x.reshape(bsz, int(width / scale_factor), int(height / scale_factor), embed_dim * (scale_factor ** 2))
    x = x.permute(0, 2, 1, 3)
    return x.reshape(bsz, int(seq / (scale_factor ** 2)), embed_dim * (scale_factor ** 2))


# ---------------------------------------------------------------- language model

def text_forward(params, text, inputs_embeds):
    """hf_reference.forward from input embeddings; params under the text model's own names."""
    x = inputs_embeds
    length = x.shape[1]
    inv_freq = rope_inverse_frequencies(text)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]
    embedding = torch.cat((angles, angles), dim=-1)
    cos, sin = embedding.cos().to(x.dtype), embedding.sin().to(x.dtype)
    for layer in range(text["num_layers"]):
        prefix = f"model.layers.{layer}."
        h = rms_norm(x, params[prefix + "input_layernorm.weight"], text["eps"])
        x = x + attention(h, params, prefix + "self_attn.", text, cos, sin)
        h = rms_norm(x, params[prefix + "post_attention_layernorm.weight"], text["eps"])
        gate = h @ params[prefix + "mlp.gate_proj.weight"].T
        up = h @ params[prefix + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ params[prefix + "mlp.down_proj.weight"].T
    x = rms_norm(x, params["model.norm.weight"], text["eps"])
    head = params["model.embed_tokens.weight"] if text["tie"] else params["lm_head.weight"]
    return x @ head.T


def idefics3_logprobs(params, config, input_ids, pixel_values):
    """Per-token logprobs [B, T-1] of input_ids [B, T] given pixel_values [N, C, S, S]; and the image features."""
    vision = config["vision_config"]
    text = parse_config({**config["text_config"], "tie_word_embeddings": config["tie_word_embeddings"]})
    image_hidden = pixel_shuffle(vision_forward(params, vision, pixel_values), config["scale_factor"])
    features = image_hidden @ params["model.connector.modality_projection.proj.weight"].T  # [N, tokens, H]
    text_params = {("model." + k[len("model.text_model."):]) if k.startswith("model.text_model.") else k: value
                   for k, value in params.items()}
    inputs_embeds = text_params["model.embed_tokens.weight"][input_ids].clone()
    mask = input_ids == config["image_token_id"]
    inputs_embeds[mask] = features.reshape(-1, features.shape[-1])
    logits = text_forward(text_params, text, inputs_embeds)
    logprobs = torch.log_softmax(logits, dim=-1)
    chosen = logprobs[:, :-1].gather(-1, input_ids[:, 1:, None])[..., 0]
    return chosen, features.reshape(-1, features.shape[-1])


# ---------------------------------------------------------------- cases

def make_config(hidden_act, scale_factor, tied):
    return {
        "architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3", "image_token_id": 63,
        "scale_factor": scale_factor, "tie_word_embeddings": tied, "torch_dtype": "float32",
        "vision_config": {
            "model_type": "idefics3_vision", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "image_size": 32, "patch_size": 8, "num_channels": 3,
            "layer_norm_eps": 1e-6, "hidden_act": hidden_act,
        },
        "text_config": {
            "model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0, "max_position_embeddings": 128, "hidden_act": "silu", "bos_token_id": 1,
            "eos_token_id": 2,
        },
    }


def prompt_ids(tokens_per_image):
    """Two rows: row 0 holds two images, row 1 one, each wrapped in <fake_token_around_image> (60)."""
    image = [60] + [63] * tokens_per_image + [60]
    rows = [[1, 5, 9] + image + [11, 12] + image + [13, 14, 15], [1, 7] + image + [21, 22, 23, 24, 25, 26, 27]]
    length = max(len(row) for row in rows)
    return [row + [3 + (i % 40) for i in range(length - len(row))] for row in rows]


GRADIENT_NAMES = [
    "model.connector.modality_projection.proj.weight",
    "model.text_model.embed_tokens.weight",
    "model.text_model.layers.0.self_attn.q_proj.weight",
    "model.text_model.layers.1.mlp.down_proj.weight",
    "lm_head.weight",
]

CASES = {
    "gelu-tanh-untied-scale2": make_config("gelu_pytorch_tanh", 2, False),
    "gelu-exact-tied-scale4": make_config("gelu", 4, True),
}


def build_case(name, config, folder):
    vision = config["vision_config"]
    tokens = (vision["image_size"] // vision["patch_size"]) ** 2 // config["scale_factor"] ** 2
    recipe = checkpoint_recipe(config)
    tensors = {entry["name"]: recipe_tensor(entry) for entry in recipe}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump(config, handle, indent=2)
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    params = {k: value.to(torch.float64) for k, value in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    images, S = 3, vision["image_size"]
    pixel_entry = {"shape": [images, 3, S, S], "seed": 77, "scale": 1.0, "offset": 0.0}
    pixels = recipe_tensor(pixel_entry).to(torch.float64)
    ids = prompt_ids(tokens)
    # Gradients of loss = -mean(logprobs) w.r.t. the trainable side (connector, language model); the tower is frozen.
    for name in GRADIENT_NAMES:
        if name in params:
            params[name].requires_grad_(True)
    logprobs, features = idefics3_logprobs(params, config, torch.tensor(ids), pixels)
    (-logprobs.mean()).backward()
    gradients = {name: {"l2": float(params[name].grad.norm()),
                        "first8": [round(v, 12) for v in params[name].grad.flatten()[:8].tolist()]}
                 for name in GRADIENT_NAMES if name in params}
    logprobs, features = logprobs.detach(), features.detach()
    return {
        "config": config,
        "tensors": [{**entry, "sum": float(tensors[entry["name"]].to(torch.float64).sum())} for entry in recipe],
        "pixel_values": {**pixel_entry, "sum": float(recipe_tensor(pixel_entry).to(torch.float64).sum())},
        "image_count": images,
        "tokens_per_image": tokens,
        "input_ids": ids,
        "logprobs": [[round(v, 10) for v in row] for row in logprobs.tolist()],
        "gradients": gradients,
        "image_features": {"shape": list(features.shape), "first8": [round(v, 10) for v in features.flatten()[:8].tolist()],
                           "l2": float(features.norm())},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint-dir", default=None, help="where the HF-layout checkpoints go (default: a temp dir)")
    args = parser.parse_args()
    base = args.checkpoint_dir or tempfile.mkdtemp(prefix="idefics3-reference-")
    cases = {name: build_case(name, config, os.path.join(base, name)) for name, config in CASES.items()}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as handle:
        json.dump({"generator": "scripts/reference/idefics3_reference.py", "cases": cases}, handle, separators=(",", ":"))
        handle.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes); checkpoints in {base}")


if __name__ == "__main__":
    main()
