"""One GRPO step in PyTorch with the shapes of bench/grpo-step.ts, for a side-by-side speed comparison.

Is: a hand-run reference (Debian's python3-torch, never in CI or npm test). For the tinystories-656k
fixture (weights read from its model.safetensors), the ~25M random Llama of bench/generate.ts
(vocab 8192, hidden 512, MLP 1536, 6 layers, 8 heads, tied embeddings, N(0, 0.02) init) and a random
model with SmolLM2-135M's shape (vocab 49152, hidden 576, MLP 1536, 30 layers, 9 heads, 3 KV heads,
rope theta 1e5, tied embeddings), it runs
  1. rollout: the P prompts prefilled in one batch, each prompt's KV cache repeated G times, then a
     simple decode loop over a preallocated KV cache (temperature 1 multinomial sampling, no stop
     ids), recording the sampled ids' logprobs (the old-policy logprobs);
  2. reward: the share of even ids in each completion; GRPO advantages (r - mean) / (std + 1e-4)
     per group (unbiased std, as the TypeScript estimator);
  3. training: forward of prompt + completion, logprobs of the completion tokens (lm_head only on
     the rows that predict them), entropy as a metric, PPO-clip loss (eps 0.2) with token-mean
     aggregation, backward per micro-batch of --micro-batch completions (gradients accumulated),
     grad-norm clip 1.0, AdamW (lr 1e-5, betas 0.9/0.99, eps 1e-8, wd 0);
after one untimed warm-up step of the same shape, with torch.set_num_threads(--threads, default 2). Each model
runs in its own subprocess so the peak RSS (ru_maxrss) printed is that model's alone.

BLAS: Debian's python3-torch is built with BLAS_INFO=generic and links libblas.so.3, which resolves to
whatever the libblas.so.3 alternative names. With only libblas3 installed that is the Fortran reference
BLAS (3-4 GFLOP/s here against ~70 for OpenBLAS on one core), and every matmul in this script would
run 20x too slowly. So the script runs torch against OpenBLAS (the OpenMP build, whose thread count
follows torch.set_num_threads): $GRPO_TORCH_BLAS_DIR, else Debian's libopenblas0-openmp or
-pthread directory, else .tmp/openblas (bench/reference/fetch-openblas.sh unpacks the Debian
package there without root), put first on LD_LIBRARY_PATH of the per-model child; the child checks
which libblas it loaded and refuses the reference BLAS (--allow-reference-blas to time it anyway).
OPENBLAS_CORETYPE is set from the CPU flags when unset (see _openblas_core_type).

Written as a competent PyTorch 1.13 user would: KV-cached decode under inference_mode, RoPE tables
and the causal mask built once per forward, grouped-query attention as one product per key-value head (no copies of
K/V per query head), logits only on the rows that are scored. 1.13 has no
F.scaled_dot_product_attention (it came in 2.0), so attention is softmax(QK^T/sqrt(D))V by matmuls.
Prints one JSON line per model with the fields of `npm run bench -- grpo-step --json`, plus
stepCpuSeconds and rolloutCpuSeconds (process CPU time of the timed step and of its rollout) and blas/blasGflops (the library torch's matmul
ran on and a 1024^3 matmul's speed in this process).

Run:  /usr/bin/python3 bench/reference/grpo_step.py [--models fixture,random-25m,smollm2-135m-shape] [--threads 2]
      [--prompts 8] [--group-size 8] [--prompt-length 32] [--new-tokens 32] [--micro-batch 64] [--allow-reference-blas]
Is not: a transformers model (plain functions, same maths as src/model/transformer.ts).
"""
import argparse
import json
import math
import os
import resource
import struct
import subprocess
import sys
import time


def _openblas_core_type():
    """OpenBLAS does not recognise some virtualised CPUs (model name "Intel(R) Xeon(R) Processor") and
    falls back to generic kernels (~25 GFLOP/s instead of ~150 at 1024^3 here); name the core type
    from the CPU flags unless the caller set OPENBLAS_CORETYPE. Must run before torch loads OpenBLAS."""
    try:
        with open("/proc/cpuinfo") as file:
            flags = set(next(line for line in file if line.startswith("flags")).split())
    except (OSError, StopIteration):
        return
    core = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    if core:
        os.environ.setdefault("OPENBLAS_CORETYPE", core)


HERE = os.path.dirname(os.path.abspath(__file__))
MULTIARCH = "usr/lib/x86_64-linux-gnu"
BLAS_DIRS = [f"/{MULTIARCH}/openblas-openmp", f"/{MULTIARCH}/openblas-pthread",
             os.path.join(HERE, f"../../.tmp/openblas/{MULTIARCH}/openblas-openmp")]


def optimised_blas_dir():
    """The directory whose libblas.so.3 torch should load: $GRPO_TORCH_BLAS_DIR or the first OpenBLAS found."""
    chosen = os.environ.get("GRPO_TORCH_BLAS_DIR")
    if chosen:
        if not os.path.exists(os.path.join(chosen, "libblas.so.3")):
            sys.exit(f"GRPO_TORCH_BLAS_DIR: {chosen} holds no libblas.so.3")
        return os.path.abspath(chosen)
    return next((os.path.abspath(d) for d in BLAS_DIRS if os.path.exists(os.path.join(d, "libblas.so.3"))), None)


_openblas_core_type()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FIXTURE = os.path.join(HERE, "../../../shared/fixtures/models/tinystories-656k")
RANDOM_25M = {"vocab_size": 8192, "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 6,
              "num_attention_heads": 8, "num_key_value_heads": 8, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}
# SmolLM2-135M's shape (bench/generate.ts SMOLLM2_135M_SHAPE), random weights: GQA 9 query / 3 KV heads.
SMOLLM2_135M = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                "num_attention_heads": 9, "num_key_value_heads": 3, "rms_norm_eps": 1e-5, "rope_theta": 100000.0}
RANDOM_MODELS = {"random-25m": RANDOM_25M, "smollm2-135m-shape": SMOLLM2_135M}


def read_safetensors(path):
    with open(path, "rb") as file:
        (header_length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(header_length))
        data = file.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {info['dtype']}, this script reads F32 only")
        start, end = info["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[start:end]), dtype=torch.float32).reshape(info["shape"]).clone()
    return tensors


def load_model(name):
    if name == "fixture":
        with open(os.path.join(FIXTURE, "config.json")) as file:
            config = json.load(file)
        weights = read_safetensors(os.path.join(FIXTURE, "model.safetensors"))
        # Tied embeddings: the file may hold the shared matrix under either name (this one: lm_head).
        shared = weights.pop("lm_head.weight", None)
        weights.setdefault("model.embed_tokens.weight", shared)
    else:
        config = dict(RANDOM_MODELS[name])
        generator = torch.Generator().manual_seed(7)
        H, I, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
        KV = config["num_key_value_heads"] * H // config["num_attention_heads"]
        weights = {"model.embed_tokens.weight": torch.randn(V, H, generator=generator) * 0.02, "model.norm.weight": torch.ones(H)}
        for layer in range(config["num_hidden_layers"]):
            prefix = f"model.layers.{layer}"
            for proj, shape in [("self_attn.q_proj", (H, H)), ("self_attn.k_proj", (KV, H)), ("self_attn.v_proj", (KV, H)),
                                ("self_attn.o_proj", (H, H)), ("mlp.gate_proj", (I, H)), ("mlp.up_proj", (I, H)), ("mlp.down_proj", (H, I))]:
                weights[f"{prefix}.{proj}.weight"] = torch.randn(*shape, generator=generator) * 0.02
            weights[f"{prefix}.input_layernorm.weight"] = torch.ones(H)
            weights[f"{prefix}.post_attention_layernorm.weight"] = torch.ones(H)
    config["head_dim"] = config["hidden_size"] // config["num_attention_heads"]
    params = {key: value.requires_grad_(True) for key, value in weights.items()}
    return config, params


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope_tables(positions, config):
    """cos and sin [T, D] for rotate-half RoPE at `positions` [T], built once per forward."""
    D = config["head_dim"]
    inverse = 1.0 / (config["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    angles = positions.to(torch.float32)[:, None] * inverse  # [T, D/2]
    angles = torch.cat([angles, angles], -1)
    return angles.cos(), angles.sin()


def rope(x, cos, sin):
    # x [B, heads, T, D]; rotate-half convention.
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


def forward(config, params, ids, positions, cache=None, cache_length=0, rows=None):
    """Hidden states -> logits. With `cache` (per layer [k, v] of [B, Hkv, capacity, D]) the new keys are
    written in place at cache_length and attention sees the first cache_length + T of them."""
    B, T = ids.shape
    Hq, Hkv, D = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    group = Hq // Hkv
    eps = config["rms_norm_eps"]
    cos, sin = rope_tables(positions, config)
    S = cache_length + T
    mask = torch.ones(T, S, dtype=torch.bool).tril(S - T).logical_not() if T > 1 else None
    x = params["model.embed_tokens.weight"][ids]
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}"
        h = rms_norm(x, params[f"{p}.input_layernorm.weight"], eps)
        q = (h @ params[f"{p}.self_attn.q_proj.weight"].t()).view(B, T, Hq, D).transpose(1, 2)
        k = (h @ params[f"{p}.self_attn.k_proj.weight"].t()).view(B, T, Hkv, D).transpose(1, 2)
        v = (h @ params[f"{p}.self_attn.v_proj.weight"].t()).view(B, T, Hkv, D).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if cache is not None:
            cache[layer][0][:, :, cache_length:S] = k
            cache[layer][1][:, :, cache_length:S] = v
            k = cache[layer][0][:, :, :S]
            v = cache[layer][1][:, :, :S]
        # Grouped-query attention without copies of K/V: the group's query heads are rows of one product,
        # q [B, Hkv, group·T, D] against k, v [B, Hkv, S, D].
        q = q.reshape(B, Hkv, group * T, D)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
        if mask is not None:
            scores = scores.view(B, Hkv, group, T, S).masked_fill(mask, float("-inf")).view(B, Hkv, group * T, S)
        attended = (scores.softmax(-1) @ v).view(B, Hq, T, D).transpose(1, 2).reshape(B, T, Hq * D)
        x = x + attended @ params[f"{p}.self_attn.o_proj.weight"].t()
        h = rms_norm(x, params[f"{p}.post_attention_layernorm.weight"], eps)
        gate = h @ params[f"{p}.mlp.gate_proj.weight"].t()
        up = h @ params[f"{p}.mlp.up_proj.weight"].t()
        x = x + (F.silu(gate) * up) @ params[f"{p}.mlp.down_proj.weight"].t()
    x = rms_norm(x, params["model.norm.weight"], eps)
    if rows is not None:
        x = x[:, rows]
    return x @ params["model.embed_tokens.weight"].t()


@torch.inference_mode()
def rollout(config, params, prompts, group_size, new_tokens, generator):
    P, L = prompts.shape
    B = P * group_size
    Hkv, D = config["num_key_value_heads"], config["head_dim"]
    cache = [[torch.zeros(P, Hkv, L + new_tokens, D), torch.zeros(P, Hkv, L + new_tokens, D)] for _ in range(config["num_hidden_layers"])]
    logits = forward(config, params, prompts, torch.arange(L), cache, 0, rows=torch.tensor([L - 1]))[:, 0]  # [P, V]
    cache = [[k.repeat_interleave(group_size, 0), v.repeat_interleave(group_size, 0)] for k, v in cache]
    logits = logits.repeat_interleave(group_size, 0)  # [B, V]
    ids = torch.empty(B, new_tokens, dtype=torch.long)
    logprobs = torch.empty(B, new_tokens)
    for step in range(new_tokens):
        logp = logits.log_softmax(-1)
        chosen = torch.multinomial(logp.exp(), 1, generator=generator)[:, 0]
        ids[:, step] = chosen
        logprobs[:, step] = logp.gather(1, chosen[:, None])[:, 0]
        if step + 1 < new_tokens:
            logits = forward(config, params, chosen[:, None], torch.full((1,), L + step), cache, L + step)[:, 0]
    return ids, logprobs


def policy_step(config, params, optimizer, prompts, group_size, ids, old_logprobs, advantages, micro_batch):
    """One optimiser step over B completions in micro-batches of `micro_batch` rows, gradients accumulated
    (token-mean over all B·N tokens, as the TypeScript trainer's micro-batches)."""
    P, L = prompts.shape
    B, N = ids.shape
    full = torch.cat([prompts.repeat_interleave(group_size, 0), ids], 1)  # [B, L + N]
    optimizer.zero_grad(set_to_none=True)
    total_loss, total_entropy = 0.0, 0.0
    for first in range(0, B, micro_batch):
        rows = slice(first, min(B, first + micro_batch))
        logits = forward(config, params, full[rows], torch.arange(L + N), rows=torch.arange(L - 1, L + N - 1))  # [b, N, V]
        logp_all = logits.log_softmax(-1)
        logprobs = logp_all.gather(2, ids[rows, :, None])[..., 0]
        with torch.no_grad():
            total_entropy += -(logp_all.exp() * logp_all).sum(-1).sum().item() / (B * N)
        ratio = (logprobs - old_logprobs[rows]).exp()
        A = advantages[rows, None]
        loss = -torch.min(ratio * A, ratio.clamp(0.8, 1.2) * A).sum() / (B * N)  # token-mean: every token counts once
        loss.backward()
        total_loss += loss.item()
        del logits, logp_all, logprobs, ratio, loss
    torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
    optimizer.step()
    return total_loss, total_entropy


def grpo_step(config, params, optimizer, prompts_count, group_size, prompt_length, new_tokens, seed, micro_batch):
    generator = torch.Generator().manual_seed(seed)
    prompts = torch.randint(1, config["vocab_size"], (prompts_count, prompt_length), generator=generator)
    cpu_start = time.process_time()
    start = time.perf_counter()
    ids, old_logprobs = rollout(config, params, prompts, group_size, new_tokens, generator)
    ids, old_logprobs = ids.clone(), old_logprobs.clone()  # inference tensors cannot enter autograd
    rollout_seconds = time.perf_counter() - start
    rollout_cpu_seconds = time.process_time() - cpu_start
    start = time.perf_counter()
    rewards = (ids % 2 == 0).float().mean(1).view(prompts_count, group_size)
    advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).view(-1)
    reward_seconds = time.perf_counter() - start
    start = time.perf_counter()
    loss, _ = policy_step(config, params, optimizer, prompts, group_size, ids, old_logprobs, advantages, micro_batch)
    train_seconds = time.perf_counter() - start
    B = prompts_count * group_size
    return {"rolloutTokens": B * new_tokens, "rolloutSeconds": rollout_seconds, "trainTokens": B * (prompt_length + new_tokens),
            "trainSeconds": train_seconds, "rewardSeconds": reward_seconds, "loss": loss,
            "stepCpuSeconds": time.process_time() - cpu_start, "rolloutCpuSeconds": rollout_cpu_seconds}


def loaded_blas():
    """The BLAS libraries mapped into this process (what torch's matmuls run on)."""
    with open("/proc/self/maps") as file:
        paths = {line.split()[-1] for line in file if "blas" in line.split()[-1].rsplit("/", 1)[-1]}
    return sorted(paths)


def reference_blas(paths):
    """True when libblas.so.3 is Debian's libblas3 (the Fortran reference implementation)."""
    return any(os.path.realpath(path).startswith(f"/{MULTIARCH}/blas/") for path in paths)


def blas_gflops():
    """A 1024^3 float32 matmul in this process: what torch's BLAS gives at the chosen thread count."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a @ b
    start = time.perf_counter()
    a @ b
    return 2 * 1024 ** 3 / (time.perf_counter() - start) / 1e9


def run_case(arguments):
    blas = loaded_blas()
    if reference_blas(blas) and not arguments.allow_reference_blas:
        sys.exit("grpo_step.py: torch loaded the reference BLAS (" + ", ".join(blas) + "), about 20x slower than "
                 "OpenBLAS at every matmul. Install libopenblas0-openmp, run bench/reference/fetch-openblas.sh, "
                 "or point GRPO_TORCH_BLAS_DIR at a directory holding an optimised libblas.so.3 "
                 "(--allow-reference-blas times it anyway).")
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    config, params = load_model(arguments.models)
    optimizer = torch.optim.AdamW(list(params.values()), lr=1e-5, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0)
    # Warm-up of the same shape, as the TypeScript bench: the timed step is a run's steady state.
    grpo_step(config, params, optimizer, arguments.prompts, arguments.group_size, arguments.prompt_length,
              arguments.new_tokens, 1, arguments.micro_batch)
    step = grpo_step(config, params, optimizer, arguments.prompts, arguments.group_size, arguments.prompt_length, arguments.new_tokens, 2, arguments.micro_batch)
    step.update({
        "model": arguments.models, "backend": f"pytorch-{torch.__version__}", "threads": torch.get_num_threads(),
        "openblasCoreType": os.environ.get("OPENBLAS_CORETYPE", ""), "blas": ",".join(blas), "blasGflops": blas_gflops(),
        "prompts": arguments.prompts, "groupSize": arguments.group_size, "promptLength": arguments.prompt_length,
        "newTokens": arguments.new_tokens, "microBatch": arguments.micro_batch, "parameters": sum(p.numel() for p in params.values()),
        "rolloutTokensPerSecond": step["rolloutTokens"] / step["rolloutSeconds"],
        "trainTokensPerSecond": step["trainTokens"] / step["trainSeconds"],
        "stepSeconds": step["rolloutSeconds"] + step["rewardSeconds"] + step["trainSeconds"],
        "peakRssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    })
    print(json.dumps(step), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="fixture,random-25m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompt-length", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--micro-batch", type=int, default=64, help="completions per forward/backward (gradients accumulate)")
    parser.add_argument("--allow-reference-blas", action="store_true", help="time torch on the reference BLAS")
    parser.add_argument("--child", action="store_true", help="run the one model named by --models in this process")
    arguments = parser.parse_args()
    if arguments.micro_batch < 1:
        parser.error(f"--micro-batch: must be a positive integer, got {arguments.micro_batch}")
    if arguments.child:
        run_case(arguments)
        return
    # The loader reads LD_LIBRARY_PATH at process start, so the BLAS choice is made for the children.
    environment = dict(os.environ)
    blas_dir = optimised_blas_dir()
    if blas_dir:
        environment["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [blas_dir, os.environ.get("LD_LIBRARY_PATH")]))
    for model in arguments.models.split(","):
        if model != "fixture" and model not in RANDOM_MODELS:
            sys.exit(f"--models: unknown model '{model}'; known: fixture, {', '.join(RANDOM_MODELS)}")
        rest = [a for a in sys.argv[1:] if not a.startswith("--models") and a != arguments.models]
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--models", model, *rest], env=environment)
        if child.returncode != 0:
            sys.exit(child.returncode)


if __name__ == "__main__":
    main()
