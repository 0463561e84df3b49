"""DLRM: a recommendation model with embedding tables (EmbeddingBag, sum
pooling over variable-length bags), a bottom MLP for dense features, the
pairwise dot-product interaction, and a top MLP predicting a click;
trained with Adagrad on synthetic clicks.

    python examples/dlrm.py [--device tpu] [--steps 20] [--compare-cpu]
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

try:
    from examples import common
except ImportError:  # run as a script from examples/
    import common

TABLE_SIZES = (100, 50, 200)
DENSE_FEATURES = 13
EMBED_DIM = 16
BAG_SIZE = 3  # ids per bag (fixed so every step has the same shapes)


def mlp(sizes, last_activation: bool) -> nn.Sequential:
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, sparse_tables: bool = False):
        """sparse_tables: the tables' gradients are sparse COO tensors (rows
        of the ids in the batch only), as in the reference DLRM."""
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(n, EMBED_DIM, mode="sum", sparse=sparse_tables)
                                    for n in TABLE_SIZES)
        self.bottom = mlp([DENSE_FEATURES, 32, EMBED_DIM], last_activation=True)
        features = len(TABLE_SIZES) + 1
        pairs = features * (features - 1) // 2
        self.top = mlp([EMBED_DIM + pairs, 32, 1], last_activation=False)
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("pair_rows", rows, persistent=False)
        self.register_buffer("pair_cols", cols, persistent=False)

    def forward(self, dense, ids, offsets):
        """dense: (batch, 13); ids[t]: flat ids of table t; offsets[t]: bag starts."""
        x = self.bottom(dense)
        embedded = [table(i, o) for table, i, o in zip(self.tables, ids, offsets)]
        features = torch.stack([x] + embedded, dim=1)  # (batch, features, dim)
        dots = torch.bmm(features, features.transpose(1, 2))
        interactions = dots[:, self.pair_rows, self.pair_cols]
        return self.top(torch.cat([x, interactions], dim=1)).squeeze(1)


def clicks(count: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(count, DENSE_FEATURES, generator=g)
    ids = [torch.randint(n, (count, BAG_SIZE), generator=g) for n in TABLE_SIZES]
    score = dense[:, 0] + sum((i[:, 0] % 2).float() for i in ids) - 1.5
    labels = (score + 0.5 * torch.randn(count, generator=g) > 0).float()
    return dense, ids, labels


def make_step(device: str, batch: int = 32, seed: int = 0, backend: str | None = None,
              sparse_tables: bool = False):
    """One training step per call on `device`; with `backend`, the model runs
    under torch.compile(backend=backend)."""
    torch.manual_seed(seed)
    model = DLRM(sparse_tables).to(device)
    forward = torch.compile(model, backend=backend) if backend else model
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    dense, ids, labels = clicks(512)  # on the host, batches uploaded per step
    offsets = (torch.arange(batch) * BAG_SIZE).to(device)

    def step(i: int) -> torch.Tensor:
        j = (i * batch) % len(dense)
        bag_ids = [t[j:j + batch].flatten().to(device) for t in ids]
        logits = forward(dense[j:j + batch].to(device), bag_ids, [offsets] * len(ids))
        loss = F.binary_cross_entropy_with_logits(logits, labels[j:j + batch].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step, model


def main() -> None:
    common.run_example("DLRM", __doc__, make_step, steps=20)


if __name__ == "__main__":
    main()
