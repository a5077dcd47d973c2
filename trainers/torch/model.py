"""model — GPT-2 and the Llama-style decoder with h_l heads in layer l, in PyTorch, with the built-in engine's math.

Design. One parameter per llm.c tensor per layer (wte, wpe, ln1w ... in kernels/model.c order), so the project's
model files load and save by stacking/unstacking and the seed init is the built-in's. The math follows kernels/:
LayerNorm and RMSNorm eps 1e-5; GELU the tanh form; RoPE rotate-half on each layer's head size d = C/h_l, pair
(i, i + d/2) at position t turned by t * theta^(-2i/d) (angles in float64, as llama_kernels.c); SwiGLU
W_down(W_up h * silu(W_gate h)); the classifier tied to wte over the padded vocabulary, the loss a softmax over the
first vocab_size logits averaged over all B*T positions. Attention is causal softmax(q k^T / sqrt(d)) v: through
F.scaled_dot_product_attention when torch has it (flash on a GPU) unless the attention probabilities are needed
(eval.attn_distance), else the plain form.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")
EPS = 1e-5


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


class Rope:
    """cos/sin tables per head size, built once per (d, T, device)."""

    def __init__(self, theta):
        self.theta, self.cache = float(theta), {}

    def tables(self, d, T, device, dtype):
        key = (d, T, device, dtype)
        if key not in self.cache:
            half = d // 2
            inv = torch.pow(torch.tensor(self.theta, dtype=torch.float64), -2.0 * torch.arange(half, dtype=torch.float64) / d)
            ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
            self.cache[key] = (ang.cos().to(device=device, dtype=dtype), ang.sin().to(device=device, dtype=dtype))
        return self.cache[key]

    def apply(self, x):   # x (B, h, T, d)
        d, T = x.shape[-1], x.shape[-2]
        cs, sn = self.tables(d, T, x.device, x.dtype)
        a, b = x[..., : d // 2], x[..., d // 2:]
        return torch.cat((a * cs - b * sn, a * sn + b * cs), dim=-1)


class Attention:
    """Causal attention over one layer's heads; collects D_l (docs/FORMATS.md attn_distance) when asked."""

    def __init__(self, use_sdpa):
        self.use_sdpa = use_sdpa and HAVE_SDPA
        self.collect = None     # None, or a list of L floats: sum over sequences of D_l

    def __call__(self, q, k, v, layer):
        if self.use_sdpa and self.collect is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        T, d = q.shape[-2], q.shape[-1]
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        a = s.masked_fill(mask, float("-inf")).softmax(-1)
        if self.collect is not None:
            t0 = T // 2
            t = torch.arange(T, device=q.device, dtype=torch.float64)
            dist = (t[t0:, None] - t[None, :]).clamp(min=0)
            per = (a[..., t0:, :].double() * dist).sum(-1)     # (B, h, T - t0)
            self.collect[layer] += float(per.mean(dim=(1, 2)).sum())
        return a @ v


class Block(nn.Module):
    def __init__(self, arch, C, H, heads):
        super().__init__()
        self.arch, self.h = arch, heads
        z = lambda *s: nn.Parameter(torch.zeros(*s))
        if arch == "gpt2":
            self.ln1w, self.ln1b, self.qkvw, self.qkvb = z(C), z(C), z(3 * C, C), z(3 * C)
            self.attprojw, self.attprojb, self.ln2w, self.ln2b = z(C, C), z(C), z(C), z(C)
            self.fcw, self.fcb, self.fcprojw, self.fcprojb = z(4 * C, C), z(4 * C), z(C, 4 * C), z(C)
        else:
            self.attnormw, self.qkvw, self.attprojw, self.mlpnormw = z(C), z(3 * C, C), z(C, C), z(C)
            self.fcw, self.fcgw, self.fcprojw = z(H, C), z(H, C), z(C, H)

    def attend(self, x, qkv, att, rope, layer):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in qkv.split(C, dim=2))
        if rope is not None:
            q, k = rope.apply(q), rope.apply(k)
        return att(q, k, v, layer).transpose(1, 2).reshape(B, T, C)

    def forward(self, x, att, rope, layer):
        C = x.shape[-1]
        if self.arch == "gpt2":
            h = F.layer_norm(x, (C,), self.ln1w, self.ln1b, EPS)
            y = self.attend(x, F.linear(h, self.qkvw, self.qkvb), att, None, layer)
            x = x + F.linear(y, self.attprojw, self.attprojb)
            h = F.layer_norm(x, (C,), self.ln2w, self.ln2b, EPS)
            h = F.gelu(F.linear(h, self.fcw, self.fcb), approximate="tanh")
            return x + F.linear(h, self.fcprojw, self.fcprojb)
        h = rms_norm(x, self.attnormw)
        y = self.attend(x, F.linear(h, self.qkvw), att, rope, layer)
        x = x + F.linear(y, self.attprojw)
        h = rms_norm(x, self.mlpnormw)
        return x + F.linear(F.linear(h, self.fcw) * F.silu(F.linear(h, self.fcgw)), self.fcprojw)


class Model(nn.Module):
    def __init__(self, job, use_sdpa=True):
        super().__init__()
        m = job["model"]
        self.arch, self.V, self.L = m["arch"], m["vocab_size"], m["n_layer"]
        C, Vp, maxT = m["d_model"], m["padded_vocab_size"], m["seq_len"]
        self.wte = nn.Parameter(torch.zeros(Vp, C))
        if self.arch == "gpt2":
            self.wpe = nn.Parameter(torch.zeros(maxT, C))
            self.lnfw, self.lnfb = nn.Parameter(torch.zeros(C)), nn.Parameter(torch.zeros(C))
            self.rope = None
        else:
            self.normfw = nn.Parameter(torch.zeros(C))
            self.rope = Rope(m["rope_theta"])
        self.blocks = nn.ModuleList(Block(self.arch, C, m.get("ffn_hidden", 0), h) for h in m["heads"])
        self.att = Attention(use_sdpa)

    # llm.c order: global tensors are themselves, per-layer ones are stacked over the blocks
    def tensor_names(self):
        if self.arch == "gpt2":
            return ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb",
                    "fcprojw", "fcprojb", "lnfw", "lnfb"]
        return ["wte", "attnormw", "qkvw", "attprojw", "mlpnormw", "fcw", "fcgw", "fcprojw", "normfw"]

    def _is_global(self, n):
        return n in ("wte", "wpe", "lnfw", "lnfb", "normfw")

    @torch.no_grad()
    def load_tensors(self, arrays):
        for n, a in zip(self.tensor_names(), arrays):
            t = torch.from_numpy(a)
            if self._is_global(n):
                getattr(self, n).copy_(t)
            else:
                for l, b in enumerate(self.blocks):
                    getattr(b, n).copy_(t[l])

    @torch.no_grad()
    def get_tensors(self):
        out = []
        for n in self.tensor_names():
            if self._is_global(n):
                out.append(getattr(self, n).detach().float().cpu().numpy())
            else:
                out.append(torch.stack([getattr(b, n).detach().float().cpu() for b in self.blocks]).numpy())
        return out

    def forward(self, idx, targets):
        """The loss averaged over all B*T positions (training and validation)."""
        return F.cross_entropy(self.logits(idx).float().reshape(-1, self.V), targets.reshape(-1))

    def losses(self, idx, targets):
        """(B, T) float32: -log p(targets[b, t] | idx[b, :t+1]) at every position (zero-shot scoring)."""
        lg = self.logits(idx).float()
        return F.cross_entropy(lg.reshape(-1, self.V), targets.reshape(-1), reduction="none").view(targets.shape)

    def logits(self, idx):
        """(B, T, vocab_size) logits of the tied classifier over the real vocabulary."""
        T = idx.shape[1]
        x = F.embedding(idx, self.wte)
        if self.arch == "gpt2":
            x = x + self.wpe[:T]
        for l, b in enumerate(self.blocks):
            x = b(x, self.att, self.rope, l)
        if self.arch == "gpt2":
            x = F.layer_norm(x, (x.shape[-1],), self.lnfw, self.lnfb, EPS)
        else:
            x = rms_norm(x, self.normfw)
        return F.linear(x, self.wte)[..., : self.V]
