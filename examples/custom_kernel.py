"""Custom kernels: an RMSNorm op whose tpu kernels you write yourself.

`mylib::rms_norm` is an ordinary PyTorch custom op (torch.library) with a
CPU implementation in torch. Its tpu forward kernel is written with the
StableHLO builder, and its backward kernel in JAX (the backward is
`jax.vjp` of the JAX forward; JAX only lowers it, the tpu device runs it).
Each kernel is one program, where the same computation in torch ops is five
or more; under fused eager and torch.compile the kernels join the graph
around them. A small model uses the op in every layer and trains on tpu
and on the CPU; the losses agree.

    python examples/custom_kernel.py [--steps 30] [--compare-cpu]

Needs jax for the backward kernel (`pip install jax`).
"""

from __future__ import annotations

import torch
from torch import nn

import torch_tpu
from common import run_example

EPS = 1e-6


# ---- the op ----------------------------------------------------------------------

def reference_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2 over the last dim) + eps) * weight, computed in f32."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


@torch.library.custom_op("mylib::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return reference_rms_norm(x, weight, eps)


@torch.library.custom_op("mylib::rms_norm_backward", mutates_args=())
def rms_norm_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    # Written out: autograd does not run inside a custom op's implementation.
    xf, gf, wf = x.float(), grad.float(), weight.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    gw = (gf * xf * r).reshape(-1, x.shape[-1]).sum(0)
    gwx = gf * wf
    gx = r * gwx - xf * r.pow(3) * (gwx * xf).mean(-1, keepdim=True)
    return gx.to(x.dtype), gw.to(weight.dtype)


def _setup_context(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _backward(ctx, grad):
    x, weight = ctx.saved_tensors
    gx, gw = rms_norm_backward(grad, x, weight, ctx.eps)
    return gx, gw, None


rms_norm.register_autograd(_backward, setup_context=_setup_context)


# ---- its tpu kernels ---------------------------------------------------------------

@torch_tpu.kernels.register_stablehlo(rms_norm)
def _rms_norm_kernel(b, x, weight, eps):
    """The forward, built op by op: the builder checks every shape."""
    shape, last = list(x.shape), len(x.shape) - 1
    xf = b.convert(x, "f32")
    (sum_sq,) = b.reduce([b.multiply(xf, xf)], [b.constant(0.0, "f32")], [last],
                         lambda bb, acc: [bb.add(acc[0], acc[1])])
    rows = shape[:last]
    mean_sq = b.divide(sum_sq, b.constant(float(shape[last]), "f32", rows))
    inv = b.rsqrt(b.add(mean_sq, b.constant(eps, "f32", rows)))
    y = b.multiply(xf, b.broadcast_in_dim(inv, shape, list(range(last))))
    y = b.multiply(y, b.broadcast_in_dim(b.convert(weight, "f32"), shape, [last]))
    return b.convert(y, x.dtype)


def _jax_rms_norm(x, weight, eps):
    import jax.numpy as jnp

    xf = x.astype(jnp.float32)
    y = xf * jnp.reciprocal(jnp.sqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)) * weight.astype(jnp.float32)
    return y.astype(x.dtype)


@torch_tpu.kernels.register_jax(rms_norm_backward)
def _rms_norm_backward_kernel(grad, x, weight, eps):
    import jax

    _, vjp = jax.vjp(lambda x_, w_: _jax_rms_norm(x_, w_, eps), x, weight)
    return vjp(grad)


# ---- a model that uses it ---------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, EPS)


class Classifier(nn.Module):
    def __init__(self, features=32, hidden=128, layers=3, classes=10):
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.blocks = nn.ModuleList(
            nn.Sequential(RMSNorm(hidden), nn.Linear(hidden, hidden), nn.GELU()) for _ in range(layers))
        self.out = nn.Sequential(RMSNorm(hidden), nn.Linear(hidden, classes))

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


def make_step(device: str, batch: int = 64, features: int = 32, classes: int = 10):
    """One AdamW step of the classifier on random clustered data; returns
    (step function, model)."""
    torch.manual_seed(0)
    model = Classifier(features=features, classes=classes).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(1)
    centers = torch.randn(classes, features, generator=g) * 2
    batches = []
    for _ in range(8):  # separate tensors, as a data loader hands them over
        labels = torch.randint(0, classes, (batch,), generator=g)
        inputs = centers[labels] + torch.randn(batch, features, generator=g)
        batches.append((inputs.to(device), labels.to(device)))

    def step(i: int) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        inputs, labels = batches[i % 8]
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        opt.step()
        return loss

    return step, model


if __name__ == "__main__":
    run_example("custom_kernel", __doc__, make_step, steps=30)
