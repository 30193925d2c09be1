"""Reference for src/nn/optimizer.test.ts: torch.optim.AdamW on a fixed parameter and gradient
sequence, with warmup-free constant lr. Run with Debian's torch: /usr/bin/python3 scripts/reference/adamw.py
Writes test/fixtures/adamw.json."""
import json
import torch

torch.manual_seed(0)
p = torch.tensor([0.5, -1.25, 2.0, 0.0, 3.0], dtype=torch.float32, requires_grad=True)
q = torch.tensor([1.0, -2.0], dtype=torch.float32, requires_grad=True)
grads = [
    [[0.1, -0.2, 0.3, 0.0, -1.5], [0.7, 0.05]],
    [[-0.4, 0.25, 0.0, 1e-3, 2.0], [-0.3, 0.2]],
    [[0.05, 0.05, -0.6, 0.2, 0.1], [0.0, -1.0]],
]
opt = torch.optim.AdamW(
    [{"params": [p], "weight_decay": 0.1}, {"params": [q], "weight_decay": 0.0}],
    lr=0.05, betas=(0.9, 0.95), eps=1e-8,
)
steps = []
for gp, gq in grads:
    p.grad = torch.tensor(gp)
    q.grad = torch.tensor(gq)
    opt.step()
    steps.append({"p": p.detach().tolist(), "q": q.detach().tolist()})
json.dump({"initial": {"p": [0.5, -1.25, 2.0, 0.0, 3.0], "q": [1.0, -2.0]}, "grads": grads,
           "lr": 0.05, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weightDecay": 0.1, "steps": steps},
          open("test/fixtures/adamw.json", "w"), indent=1)
