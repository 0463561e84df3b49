"""A Llama-style decoder: RMSNorm, rotary position embeddings, grouped-query
attention and a SwiGLU MLP; trained briefly, then greedy generation with a
key/value cache.

The cache has a fixed size (max_seq_len) and the position is a device
tensor: each generated token writes its key and value with index_copy_ and
attends under a mask computed from the position, so every decoding step
runs the same programs (no recompile per token).

    python examples/llama.py [--device tpu] [--steps 20] [--compare-cpu]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

try:
    from examples import common
except ImportError:  # run as a script from examples/
    import common


@dataclass
class LlamaConfig:
    vocab_size: int = 64
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    hidden_dim: int = 128
    max_seq_len: int = 48
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5


def rope_tables(cfg: LlamaConfig) -> tuple[torch.Tensor, torch.Tensor]:
    head_dim = cfg.dim // cfg.n_heads
    inv_freq = 1.0 / cfg.rope_theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(cfg.max_seq_len).float(), inv_freq)
    return angles.cos(), angles.sin()  # (max_seq_len, head_dim / 2)


def apply_rope(x, cos, sin):
    """x: (batch, heads, seq, head_dim); cos, sin: (seq, head_dim / 2)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads = cfg.n_heads, cfg.n_kv_heads
        self.head_dim = cfg.dim // cfg.n_heads
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * self.head_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin, cache=None, pos=None, mask=None):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            # Decoding: write this step's key and value at `pos`, attend to
            # the cache under `mask` (positions <= pos).
            k_cache, v_cache = cache
            k_cache.index_copy_(2, pos, k)
            v_cache.index_copy_(2, pos, v)
            y = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attn_norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x, cos, sin, cache=None, pos=None, mask=None):
        x = x + self.attn(self.attn_norm(x), cos, sin, cache, pos, mask)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))

    def new_cache(self, batch: int):
        cfg = self.cfg
        shape = (batch, cfg.n_kv_heads, cfg.max_seq_len, cfg.dim // cfg.n_heads)
        device, dtype = self.output.weight.device, self.output.weight.dtype
        return [(torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))
                for _ in self.layers]

    def decode_step(self, token, pos, cache):
        """token: (batch, 1); pos: a 1-element long tensor on the device."""
        cos, sin = self.rope_cos.index_select(0, pos), self.rope_sin.index_select(0, pos)
        positions = torch.arange(self.cfg.max_seq_len, device=pos.device)
        mask = (positions <= pos).view(1, 1, 1, -1)
        h = self.embed(token)
        for layer, layer_cache in zip(self.layers, cache):
            h = layer(h, cos, sin, layer_cache, pos, mask)
        return self.output(self.norm(h))

    @torch.no_grad()
    def generate(self, prompt, new_tokens: int, graphed: bool = False):
        """Greedy decoding with the KV cache; the prompt is fed one token at
        a time through the same decoding program. With `graphed`, the
        decoding step is captured once into a device graph
        (torch.accelerator.Graph) and replayed for every token: one launch
        per token, no Python model code."""
        batch, length = prompt.shape
        assert length + new_tokens <= self.cfg.max_seq_len
        cache = self.new_cache(batch)
        pos = torch.zeros(1, dtype=torch.long, device=prompt.device)

        def step(token):  # the next token (greedy), the position advanced
            logits = self.decode_step(token, pos, cache)
            pos.add_(1)
            return logits[:, -1].argmax(dim=-1, keepdim=True)

        if graphed:
            static_token = torch.zeros(batch, 1, dtype=torch.long, device=prompt.device)
            graph = torch.accelerator.Graph()
            with graph:  # records the step; the cache and position change only at replays
                static_next = step(static_token)

            def step(token):  # the replayed step
                static_token.copy_(token)
                graph.replay()
                return static_next.clone()  # the next replay overwrites static_next

        out = [prompt[:, i:i + 1] for i in range(length)]
        for i in range(length + new_tokens - 1):
            next_token = step(out[i])
            if i + 1 >= length:
                out.append(next_token)
        return torch.cat(out, dim=1)


def sequences(cfg: LlamaConfig, count: int, length: int, seed: int = 0) -> torch.Tensor:
    """Arithmetic-progression token sequences (x, x+d, x+2d, ... mod vocab):
    learnable, so the loss falls."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(cfg.vocab_size, (count, 1), generator=g)
    step = torch.randint(1, 4, (count, 1), generator=g)
    return (start + step * torch.arange(length)) % cfg.vocab_size


def make_step(device: str, cfg: LlamaConfig | None = None, batch: int = 8, seq: int = 24, seed: int = 0,
              backend: str | None = None):
    """One training step per call on `device`; with `backend`, the model runs
    under torch.compile(backend=backend)."""
    cfg = cfg or LlamaConfig()
    torch.manual_seed(seed)
    model = Llama(cfg).to(device)
    forward = torch.compile(model, backend=backend) if backend else model
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    data = sequences(cfg, 256, seq + 1)  # on the host, batches uploaded per step

    def step(i: int) -> torch.Tensor:
        j = (i * batch) % len(data)
        chunk = data[j:j + batch].to(device)
        logits = forward(chunk[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step, model


def main() -> None:
    args, model = common.run_example("Llama", __doc__, make_step, steps=20)
    prompt = sequences(model.cfg, 2, 6, seed=1).to(args.device)
    print("greedy generation from", prompt.tolist())
    print("  ->", model.generate(prompt, 8).tolist())


if __name__ == "__main__":
    main()
