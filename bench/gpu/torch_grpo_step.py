"""One GRPO step and a 4096³ matmul in PyTorch on CUDA: the baseline bench/gpu/run.sh compares with.

Is: a hand-run reference for a lent GPU machine (never in CI or npm test). A random-weight model with
Qwen2.5-0.5B's config (transformers' Qwen2ForCausalLM: vocab 151936, hidden 896, MLP 4864, 24 layers,
14 heads, 2 KV heads, tied embeddings, rope theta 1e6) runs the step of bench/grpo-step.ts:
  1. rollout: P prompts of --prompt-length random ids, G completions each of exactly --new-tokens ids
     (transformers' generate: KV cache, temperature 1 multinomial sampling, no stop ids), with the sampled
     ids' logprobs from the generation scores (the old-policy logprobs);
  2. reward: the share of even ids per completion; GRPO advantages (r − mean) / (std + 1e-4) per group;
  3. training: per micro-batch of --micro-batch completions, forward of prompt + completion, the
     completion tokens' logprobs, PPO-clip loss (ε 0.2) with token-mean aggregation, backward
     (gradients accumulated), grad-norm clip 1.0, AdamW (lr 1e-5, betas 0.9/0.99, eps 1e-8, wd 0);
after one untimed warm-up step, in float32 with TF32 off (`--dtype float32`) or bfloat16 weights and
activations (`--dtype bfloat16`). Prints one JSON line per measurement. Also the float32 (TF32 off)
matmul throughput at 4096³ (`--matmul`).
Is not: TRL's trainer (no reference model, no logging); a test.
"""
import argparse
import json
import time

import torch


def matmul_gflops(size: int) -> float:
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    repeats = 20
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def build_model(dtype):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(device="cuda", dtype=dtype)
    model.generation_config.pad_token_id = 0
    return model


def step(model, optimizer, args, seed):
    torch.manual_seed(seed)
    prompts = torch.randint(1, model.config.vocab_size, (args.prompts, args.prompt_length), device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    model.eval()
    with torch.no_grad():
        out = model.generate(
            prompts.repeat_interleave(args.group_size, 0), do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
            min_new_tokens=args.new_tokens, max_new_tokens=args.new_tokens, output_scores=True,
            return_dict_in_generate=True, eos_token_id=None,
        )
        completion = out.sequences[:, args.prompt_length:]
        scores = torch.stack(out.scores, 1).float().log_softmax(-1)
        old_logprobs = scores.gather(-1, completion.unsqueeze(-1)).squeeze(-1)
    torch.cuda.synchronize()
    rollout = time.perf_counter() - start
    start = time.perf_counter()
    rewards = (completion % 2 == 0).float().mean(1).view(args.prompts, args.group_size)
    advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).view(-1)
    model.train()
    sequences = out.sequences.clone()
    total_tokens = completion.numel()
    for begin in range(0, sequences.shape[0], args.micro_batch):
        rows = slice(begin, begin + args.micro_batch)
        logits = model(sequences[rows]).logits[:, args.prompt_length - 1:-1].float()
        logprobs = logits.log_softmax(-1).gather(-1, completion[rows].unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(logprobs - old_logprobs[rows])
        adv = advantages[rows].unsqueeze(1)
        loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).sum() / total_tokens
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    train = time.perf_counter() - start
    return rollout, train


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompt-length", type=int, default=256)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--matmul", action="store_true")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.matmul:
        print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                          "matmul4096_fp32_gflops": matmul_gflops(4096)}), flush=True)
        return
    dtype = getattr(torch, args.dtype)
    model = build_model(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0)
    step(model, optimizer, args, 1)
    rollout, train = step(model, optimizer, args, 2)
    completions = args.prompts * args.group_size
    print(json.dumps({
        "dtype": args.dtype, "completions": completions, "promptLength": args.prompt_length,
        "newTokens": args.new_tokens, "rolloutSeconds": rollout, "trainSeconds": train,
        "stepSeconds": rollout + train, "completionTokensPerSecond": completions * args.new_tokens / (rollout + train),
        "peakGpuMemoryGiB": torch.cuda.max_memory_allocated() / 2**30,
    }), flush=True)


if __name__ == "__main__":
    main()
