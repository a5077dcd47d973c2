#!/usr/bin/env python3
"""tests/gpu/torch_gpt2.py — the PyTorch anchor of tests/gpu/run.sh: GPT-2 124M trained the nanoGPT way, timed
the way bench/bench_cuda_gpt2.c times ours, so the GPU check can print ours / PyTorch from one run.

The model is nanoGPT's GPT-2 (12 layers, 12 heads, d 768, vocabulary padded to 50304, biases, tied embeddings,
GELU tanh, LayerNorm eps 1e-5): attention through F.scaled_dot_product_attention(is_causal=True), the forward
under torch.autocast(bfloat16) with float32 weights, AdamW(fused=True, lr 6e-4, betas 0.9/0.95, eps 1e-8,
weight decay 0.1 on matrices only), gradient clipping at 1.0. A step is what ours is: zero_grad, forward,
backward, clip, optimizer step, and the loss brought to the host (loss.item(), a sync, as our trainer does).
One fixed batch of random tokens; `--warmup` untimed steps (with --compile, torch.compile's compilation happens
there and its time is printed), then `--rounds` rounds of `--steps` steps, each round timed by the wall clock
around it (the per-step loss.item() makes that honest); tokens/s is the median round.

Prints "RESULT torch mode=eager|compile B=.. T=.. tok_s=.. ms_step=.. peak_gib=.." last. Without PyTorch (or
without a CUDA device for it) it prints "RESULT torch absent: <why>" and exits 3.

    python3 tests/gpu/torch_gpt2.py [--B 16] [--T 1024] [--steps 10] [--rounds 3] [--warmup 3] [--compile]
"""
import argparse
import math
import sys
import time


def build(torch, B, T):
    nn = torch.nn
    F = torch.nn.functional
    C, L, H, V = 768, 12, 12, 50304

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.ln_2 = nn.LayerNorm(C)
            self.c_fc = nn.Linear(C, 4 * C)
            self.mlp_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(b, t, H, C // H).transpose(1, 2)
            k = k.view(b, t, H, C // H).transpose(1, 2)
            v = v.view(b, t, H, C // H).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(1024, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, V, bias=False)
            self.lm_head.weight = self.wte.weight
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight") else 0.02
                    nn.init.normal_(p, mean=0.0, std=std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            t = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))

    return GPT()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (compiles during warmup)")
    a = ap.parse_args()
    if a.B < 1 or not 1 <= a.T <= 1024 or a.steps < 1 or a.rounds < 1 or a.warmup < 1:
        print("torch_gpt2.py: need B >= 1, 1 <= T <= 1024, steps, rounds, warmup >= 1", file=sys.stderr)
        return 2
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        print(f"RESULT torch absent: PyTorch cannot be imported here ({type(e).__name__}: {e})")
        return 3
    if not torch.cuda.is_available():
        print(f"RESULT torch absent: PyTorch {torch.__version__} sees no CUDA device")
        return 3
    torch.manual_seed(1337)
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model = build(torch, a.B, a.T).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    run = torch.compile(model) if a.compile else model
    g = torch.Generator(device=dev).manual_seed(42)
    x = torch.randint(0, 50257, (a.B, a.T), device=dev, generator=g)
    y = torch.randint(0, 50257, (a.B, a.T), device=dev, generator=g)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = run(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    mode = "compile" if a.compile else "eager"
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}: GPT-2 124M ({nparams} parameters), "
          f"B={a.B} T={a.T}, {mode}, bf16 autocast, SDPA, fused AdamW", flush=True)
    t0 = time.perf_counter()
    for _ in range(a.warmup):
        loss = step()
    torch.cuda.synchronize()
    print(f"warmup ({a.warmup} steps{', compilation included' if a.compile else ''}): {time.perf_counter() - t0:.1f} s, "
          f"loss {loss:.4f}", flush=True)
    torch.cuda.reset_peak_memory_stats()
    rates = []
    for r in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        dt = time.perf_counter() - t0
        rates.append(a.B * a.T * a.steps / dt)
        print(f"  round {r + 1}: {rates[-1]:.0f} tok/s, loss {loss:.4f}", flush=True)
    rates.sort()
    med = rates[len(rates) // 2]
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"RESULT torch mode={mode} B={a.B} T={a.T} tok_s={med:.0f} ms_step={1e3 * a.B * a.T / med:.2f} peak_gib={peak:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
