"""minGPT: a character-level GPT trained on a generated text.

A decoder-only transformer (token and position embeddings, pre-norm blocks
of causal self-attention and a GELU MLP, tied nothing, AdamW) as in Andrej
Karpathy's minGPT, small enough to train on the CPU platform in seconds.

    python examples/mingpt.py [--device tpu] [--steps 30] [--compare-cpu]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 32
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0


# Named sizes for the benchmarks: the default above, and nanoGPT's
# character-level configuration, large enough that a GPU's kernels, not
# launches, take most of a step.
SIZES = {"small": {}, "medium": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256}}


def config(size: str = "small") -> GPTConfig:
    """The configuration of a named size, with the corpus's vocabulary."""
    return GPTConfig(vocab_size=corpus()[1], **SIZES[size])


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):  # GPT-2's scaled init of residual projections
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    def forward(self, idx, targets=None, positions=None):
        # `positions`: each token's place in its window, when the tokens are
        # not the window in order (context parallelism gives each rank a
        # block of it, rearranged for load balance).
        if positions is None:
            positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def corpus(length: int = 4096, seed: int = 0) -> tuple[torch.Tensor, int]:
    """A character stream with structure to learn: words from a small
    vocabulary in a random order, encoded as integers."""
    words = ["the", "tpu", "runs", "programs", "from", "xla", "and", "torch", "trains", "models", "fast"]
    g = torch.Generator().manual_seed(seed)
    order = torch.randint(len(words), (length // 4,), generator=g).tolist()
    text = " ".join(words[i] for i in order)[:length]
    chars = sorted(set(text))
    return torch.tensor([chars.index(c) for c in text]), len(chars)


def windows(cfg: GPTConfig, batch: int, seed: int):
    """Random windows of the text, `batch` per call, on the host: inputs
    and next-character targets are the window less its last or first
    character."""
    data, _ = corpus()
    g = torch.Generator().manual_seed(seed)
    offsets = torch.arange(cfg.block_size + 1)

    def next_windows() -> torch.Tensor:
        starts = torch.randint(len(data) - cfg.block_size - 1, (batch,), generator=g)
        return data[starts[:, None] + offsets]

    return next_windows


def make_step(device: str, cfg: GPTConfig | None = None, batch: int = 16, seed: int = 0,
              backend: str | None = None, whole_step: bool = False, train: bool = True,
              graphed: bool = False):
    """One AdamW training step per call on `device`, from a fixed seed.

    With `backend`, the model runs under torch.compile(backend=backend);
    with `whole_step` as well, the whole step does (forward, backward and
    the optimizer's step, made capturable so its step count stays on the
    device). With `graphed`, the step is captured into a device graph and
    replayed (examples/graph_step.py). With `train=False` a step is the
    evaluation forward and loss, without gradients."""
    cfg = cfg or config()
    torch.manual_seed(seed)
    model = GPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1, capturable=whole_step or graphed)
    next_windows = windows(cfg, batch, seed + 1)

    forward = torch.compile(model, backend=backend) if backend and not whole_step else model

    def update(x, y):
        _, loss = forward(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if not train:
        model.eval()
        update = torch.no_grad()(lambda x, y: forward(x, y)[1])
    if backend and whole_step:
        update = torch.compile(update, backend=backend)
    if graphed:
        try:
            from examples.graph_step import graphed as capture
        except ImportError:  # examples/ on the path
            from graph_step import graphed as capture
        update = capture(update)

    def step(i: int) -> torch.Tensor:
        chunk = next_windows().to(device)  # gathered on the host and uploaded
        return update(chunk[:, :-1], chunk[:, 1:])

    return step, model


def main() -> None:
    # Imported here: the model code needs only torch (benchmarks/torchax_step.py
    # runs it where torch_tpu is not installed).
    try:
        from examples import common
    except ImportError:  # run as a script from examples/
        import common
    common.run_example("minGPT", __doc__, make_step, steps=30)


if __name__ == "__main__":
    main()
