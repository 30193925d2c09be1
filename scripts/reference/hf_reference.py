"""A small, self-contained PyTorch re-implementation of the Hugging Face Llama / Mistral / Qwen2 / Qwen3
causal-LM forward pass, used only to produce test fixtures (transformers is not available here).

It mirrors transformers' modeling code: rotate-half RoPE (default, linear and llama3 inverse
frequencies computed with the same float32 ops as modeling_rope_utils.py), grouped-query attention,
SwiGLU MLP, RMSNorm (computed in float32 in HF; here in the model's dtype, float64 for references),
q/k/v biases (Qwen2), per-head q/k RMSNorm before RoPE (Qwen3), tied or untied lm_head.
It also reads and writes safetensors without the `safetensors` package.

Not shipped, not imported by the library. Run with Debian's python3 (/usr/bin/python3) and python3-torch.
"""
import json
import math
import struct

import numpy as np
import torch

SAFETENSORS_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16}


# ---------------------------------------------------------------- safetensors

def read_safetensors(path):
    """Returns {name: float32 torch tensor} for F32/F16/BF16 files."""
    with open(path, "rb") as handle:
        raw = handle.read()
    (header_length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_length])
    start = 8 + header_length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        chunk = raw[start + begin:start + end]
        if entry["dtype"] == "BF16":
            bits = np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(chunk, dtype=np.dtype(SAFETENSORS_DTYPES[entry["dtype"]]).newbyteorder("<"))
        tensors[name] = torch.from_numpy(array.astype(np.float32).reshape(entry["shape"]).copy())
    return tensors


def write_safetensors(path, tensors, dtype="F32"):
    """Writes {name: tensor} (insertion order) with an 8-byte-aligned, space-padded header."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name, tensor in tensors.items():
        array = tensor.detach().to(torch.float32).numpy()
        if dtype == "F32":
            blob = array.astype("<f4").tobytes()
        elif dtype == "F16":
            blob = array.astype("<f2").tobytes()
        elif dtype == "BF16":
            blob = bfloat16_bits(array).astype("<u2").tobytes()
        else:
            raise ValueError(dtype)
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text.encode()) % 8) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text.encode())))
        handle.write(text.encode())
        for blob in blobs:
            handle.write(blob)


def bfloat16_bits(array):
    """float32 -> bfloat16 bit patterns, round to nearest even, using torch's own conversion."""
    as_bf16 = torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)).to(torch.bfloat16)
    return as_bf16.view(torch.int16).numpy().view(np.uint16)


# ---------------------------------------------------------------- config

def parse_config(raw):
    """The subset of an HF config.json the forward needs, with transformers' per-class defaults."""
    model_type = raw["model_type"]
    hidden = raw["hidden_size"]
    heads = raw["num_attention_heads"]
    default_head_dim = 128 if model_type == "qwen3" else hidden // heads
    bias_flag = bool(raw.get("attention_bias", False))
    return {
        "model_type": model_type,
        "vocab_size": raw["vocab_size"],
        "hidden_size": hidden,
        "intermediate_size": raw["intermediate_size"],
        "num_layers": raw["num_hidden_layers"],
        "num_heads": heads,
        "num_kv_heads": raw.get("num_key_value_heads") or heads,
        "head_dim": raw.get("head_dim") or default_head_dim,
        "eps": raw.get("rms_norm_eps", 1e-6),
        "rope_theta": raw.get("rope_theta", 10000.0),
        "rope_scaling": raw.get("rope_scaling"),
        "tie": raw.get("tie_word_embeddings", False),
        "qkv_bias": model_type == "qwen2" or (model_type in ("llama", "qwen3") and bias_flag),
        "o_bias": model_type in ("llama", "qwen3") and bias_flag,
        "qk_norm": model_type == "qwen3",
    }


def rope_inverse_frequencies(config):
    """float32 inverse frequencies, op for op as transformers' modeling_rope_utils (default/linear/llama3)."""
    dim = config["head_dim"]
    base = config["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    scaling = config["rope_scaling"]
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv_freq
    if kind == "linear":
        return inv_freq / scaling["factor"]
    if kind == "llama3":
        factor = scaling["factor"]
        low = scaling["low_freq_factor"]
        high = scaling["high_freq_factor"]
        old_context = scaling["original_max_position_embeddings"]
        low_wavelength = old_context / low
        high_wavelength = old_context / high
        wavelength = 2 * math.pi / inv_freq
        scaled = torch.where(wavelength > low_wavelength, inv_freq / factor, inv_freq)
        smooth = (old_context / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelength < high_wavelength) * ~(wavelength > low_wavelength)
        return torch.where(medium, smoothed, scaled)
    raise ValueError(f"unsupported rope type {kind}")


# ---------------------------------------------------------------- model

def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def linear(x, params, name, bias):
    out = x @ params[name + ".weight"].T
    return out + params[name + ".bias"] if bias else out


def attention(x, params, prefix, config, cos, sin):
    batch, length, _ = x.shape
    heads, kv_heads, head_dim = config["num_heads"], config["num_kv_heads"], config["head_dim"]
    q = linear(x, params, prefix + "q_proj", config["qkv_bias"]).view(batch, length, heads, head_dim)
    k = linear(x, params, prefix + "k_proj", config["qkv_bias"]).view(batch, length, kv_heads, head_dim)
    v = linear(x, params, prefix + "v_proj", config["qkv_bias"]).view(batch, length, kv_heads, head_dim)
    if config["qk_norm"]:
        q = rms_norm(q, params[prefix + "q_norm.weight"], config["eps"])
        k = rms_norm(k, params[prefix + "k_norm.weight"], config["eps"])
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, heads, T, D]
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    repeat = heads // kv_heads
    k = k.repeat_interleave(repeat, dim=1)
    v = v.repeat_interleave(repeat, dim=1)
    scores = (q @ k.transpose(-1, -2)) * head_dim ** -0.5
    causal = torch.ones(length, length, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(causal, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    out = out.transpose(1, 2).reshape(batch, length, heads * head_dim)
    return linear(out, params, prefix + "o_proj", config["o_bias"])


def embedding_name(params):
    """Tied checkpoints store the shared matrix under either name (TinyStories keeps lm_head.weight)."""
    return "model.embed_tokens.weight" if "model.embed_tokens.weight" in params else "lm_head.weight"


def forward(params, config, input_ids):
    """Logits [B, T, V] for input_ids [B, T] (LongTensor), in the dtype of params."""
    embed = params[embedding_name(params)]
    dtype = embed.dtype
    x = embed[input_ids]
    length = input_ids.shape[1]
    # HF computes the angles in float32 and casts cos/sin to the activation dtype.
    inv_freq = rope_inverse_frequencies(config)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]
    embedding = torch.cat((angles, angles), dim=-1)
    cos, sin = embedding.cos().to(dtype), embedding.sin().to(dtype)
    for layer in range(config["num_layers"]):
        prefix = f"model.layers.{layer}."
        h = rms_norm(x, params[prefix + "input_layernorm.weight"], config["eps"])
        x = x + attention(h, params, prefix + "self_attn.", config, cos, sin)
        h = rms_norm(x, params[prefix + "post_attention_layernorm.weight"], config["eps"])
        gate = h @ params[prefix + "mlp.gate_proj.weight"].T
        up = h @ params[prefix + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ params[prefix + "mlp.down_proj.weight"].T
    x = rms_norm(x, params["model.norm.weight"], config["eps"])
    head = embed if config["tie"] else params["lm_head.weight"]
    return x @ head.T


def expected_tensor_names(config):
    names = ["model.embed_tokens.weight"]
    for layer in range(config["num_layers"]):
        p = f"model.layers.{layer}."
        names += [p + "input_layernorm.weight"]
        for proj in ("q", "k", "v"):
            names.append(p + f"self_attn.{proj}_proj.weight")
            if config["qkv_bias"]:
                names.append(p + f"self_attn.{proj}_proj.bias")
        if config["qk_norm"]:
            names += [p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight"]
        names.append(p + "self_attn.o_proj.weight")
        if config["o_bias"]:
            names.append(p + "self_attn.o_proj.bias")
        names += [p + "post_attention_layernorm.weight"]
        names += [p + f"mlp.{m}_proj.weight" for m in ("gate", "up", "down")]
    names.append("model.norm.weight")
    if not config["tie"]:
        names.append("lm_head.weight")
    return names


# ---------------------------------------------------------------- reference values

def round_sig(value, digits=10):
    """Floats for JSON: enough digits to test float64 agreement to ~1e-9 relative, not 17 noisy ones."""
    return float(f"{value:.{digits}g}")


def compute_reference(params32, config, input_ids, greedy_new_tokens, eos_ids, top_k=5):
    """The reference.json body: float64 logprobs, loss and gradients, and a greedy continuation."""
    params = {name: t.to(torch.float64).requires_grad_(True) for name, t in params32.items()}
    ids = torch.tensor([input_ids], dtype=torch.long)
    logits = forward(params, config, ids)[0]
    logprobs = torch.log_softmax(logits, dim=-1)
    next_token = logprobs[:-1].gather(1, ids[0, 1:, None])[:, 0]
    top_values, top_ids = logprobs.topk(top_k, dim=-1)
    loss = -next_token.mean()
    loss.backward()
    gradients = {}
    # Keyed by the names stored in the checkpoint file, as the TinyStories reference does.
    for name in sorted(params):
        grad = params[name].grad.reshape(-1)
        gradients[name] = {
            "shape": list(params[name].shape),
            "l2": round_sig(grad.norm().item()),
            "first8": [round_sig(v) for v in grad[:8].tolist()],
        }
    return {
        "forward": {
            "input_ids": input_ids,
            "last_position_logprobs": [round_sig(v) for v in logprobs[-1].tolist()],
            "next_token_logprob": [round_sig(v) for v in next_token.tolist()],
            "top5_per_position": [
                {"ids": i.tolist(), "logprobs": [round_sig(v) for v in lp.tolist()]} for i, lp in zip(top_ids, top_values)
            ],
        },
        "backward": {
            "loss": "mean next-token negative log-likelihood of input_ids",
            "value": round_sig(loss.item()),
            "gradients": gradients,
        },
        "greedy": greedy(params, config, input_ids, greedy_new_tokens, eos_ids),
    }


@torch.no_grad()
def greedy(params, config, prompt_ids, max_new_tokens, eos_ids):
    ids = list(prompt_ids)
    for _ in range(max_new_tokens):
        logits = forward(params, config, torch.tensor([ids], dtype=torch.long))[0, -1]
        token = int(torch.argmax(logits))
        ids.append(token)
        if token in eos_ids:
            break
    return {"prompt_ids": list(prompt_ids), "max_new_tokens": max_new_tokens, "stop_at_eos": True, "output_ids": ids}
