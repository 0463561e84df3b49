"""One rank of an attention scenario over DTensors on the tpu backend.

``python distributed_attention_worker.py SCENARIO RANK WORLD_SIZE``, started
by tests/test_distributed_attention.py as distributed_worker.py is by
tests/test_distributed.py (whose helpers it shares). Each scenario checks
its results against the same computation on CPU and raises on a mismatch.
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from distributed_worker import WORLD, check, init

FUSED = "aten._scaled_dot_product_fused_attention_overrideable"


class OpNames(TorchDispatchMode):
    """Records the names of the ops dispatched under it."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def randn(*shape, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def full(t) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def scenario_dtensor_attention() -> None:
    """F.scaled_dot_product_attention over DTensors sharded by heads (tensor
    parallelism) or by batch, with grouped-query attention and masks
    (replicated where they broadcast, their gradient then a partial sum):
    outputs and gradients against CPU, and the fused kernel, not the math
    path, runs."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    init()
    mesh = init_device_mesh("tpu", (WORLD,))
    B, H, L, E = 2, 4, 8, 16
    cases = [
        # (name, q / kv heads, placement of q, k, v, mask shape and kind, mask placement, kwargs)
        ("heads, causal", H, H, Shard(1), None, None, dict(is_causal=True)),
        ("batch", H, H, Shard(0), None, None, {}),
        ("heads, grouped-query", H, H // 2, Shard(1), None, None, dict(enable_gqa=True, is_causal=True)),
        ("heads, float mask over heads", H, H, Shard(1), ((B, 1, L, L), "float"), Replicate(), {}),
        ("heads, float mask per head", H, H, Shard(1), ((B, H, L, L), "float"), Shard(1), {}),
        ("batch, bool mask", H, H, Shard(0), ((B, 1, L, L), "bool"), Shard(0), {}),
        ("replicated", H, H, Replicate(), None, None, dict(scale=0.3)),
    ]
    for seed, (name, q_heads, kv_heads, placement, mask_spec, mask_placement, kwargs) in enumerate(cases):
        q = randn(B, q_heads, L, E, seed=10 * seed).requires_grad_()
        k = randn(B, kv_heads, L, E, seed=10 * seed + 1).requires_grad_()
        v = randn(B, kv_heads, L, E, seed=10 * seed + 2).requires_grad_()
        mask = None
        if mask_spec is not None:
            shape, kind = mask_spec
            mask = randn(*shape, seed=10 * seed + 3)
            mask = (mask > -1).logical_or(torch.eye(L, dtype=torch.bool)) if kind == "bool" else mask.requires_grad_()
        grad = randn(B, q_heads, L, E, seed=10 * seed + 4)
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)
        expected.backward(grad)

        def shard(t, p=placement):
            d = distribute_tensor(t.detach().to("tpu"), mesh, [p])
            return d.requires_grad_() if t.requires_grad else d

        dq, dk, dv = shard(q), shard(k), shard(v)
        dmask = shard(mask, mask_placement) if mask is not None else None
        with OpNames() as ops:
            out = F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dmask, **kwargs)
        if FUSED not in ops.names:
            raise AssertionError(f"{name}: the fused kernel did not run: {sorted(ops.names)}")
        if out.placements != (placement,):
            raise AssertionError(f"{name}: output placed {out.placements}, expected {placement}")
        check(full(out), expected.detach(), f"{name}: output", atol=1e-5)
        out.backward(distribute_tensor(grad.to("tpu"), mesh, [placement]))
        for what, d, t in (("query", dq, q), ("key", dk, k), ("value", dv, v), ("mask", dmask, mask)):
            if t is not None and t.requires_grad:
                check(full(d.grad), t.grad, f"{name}: gradient of the {what}", atol=1e-5)

    # One key / value head for four query heads: splitting heads two ways
    # would part query heads from their key head, so the rules gather them.
    q = randn(B, H, L, E, seed=90).requires_grad_()
    k, v = (randn(B, 1, L, E, seed=91 + i).requires_grad_() for i in range(2))
    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    expected.sum().backward()
    dq = distribute_tensor(q.detach().to("tpu"), mesh, [Shard(1)]).requires_grad_()
    dk, dv = (distribute_tensor(t.detach().to("tpu"), mesh, [Shard(1)]).requires_grad_() for t in (k, v))
    out = F.scaled_dot_product_attention(dq, dk, dv, enable_gqa=True)
    out.sum().backward()
    check(full(out), expected.detach(), "one key head: output", atol=1e-5)
    check(full(dk.grad), k.grad, "one key head: gradient of the key", atol=1e-5)

    # Compiled: the graph's fused attention takes the same rules.
    q, k, v = (randn(B, H, L, E, seed=100 + i).requires_grad_() for i in range(3))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected.sum().backward()
    dq, dk, dv = (distribute_tensor(t.detach().to("tpu"), mesh, [Shard(1)]).requires_grad_() for t in (q, k, v))
    attend = torch.compile(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), backend="tpu")
    out = attend(dq, dk, dv)
    out.sum().backward()
    check(full(out), expected.detach(), "compiled: output", atol=1e-5)
    check(full(dk.grad), k.grad, "compiled: gradient of the key", atol=1e-5)

    # Tensor parallelism with DTensors through the attention (use_local_output
    # False): the projections' column shards become head shards.
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    model = Attention(dim=16, heads=4, kv_heads=2)
    x = randn(2, 8, 16, seed=7)
    expected = model(x)
    expected.square().sum().backward()
    parallel = parallelize_module(copy.deepcopy(model).to("tpu"), mesh, {
        "q": ColwiseParallel(use_local_output=False), "kv": ColwiseParallel(use_local_output=False),
        "out": RowwiseParallel(),
    })
    with OpNames() as ops:
        out = parallel(x.to("tpu"))
    if FUSED not in ops.names:
        raise AssertionError(f"tensor-parallel attention: the fused kernel did not run: {sorted(ops.names)}")
    out.square().sum().backward()
    check(full(out), expected.detach(), "tensor-parallel attention: output", atol=1e-5)
    for (pname, p), ref in zip(parallel.named_parameters(), model.parameters()):
        check(full(p.grad), ref.grad, f"tensor-parallel attention: gradient of {pname}", atol=1e-5)
    dist.destroy_process_group()


class Attention(nn.Module):
    """A causal self-attention block: the shape of a transformer layer's."""

    def __init__(self, dim: int = 16, heads: int = 2, kv_heads: int = 2, causal: bool = True):
        super().__init__()
        self.heads, self.kv_heads, self.causal = heads, kv_heads, causal
        self.head_dim = dim // heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2 * self.kv_heads, self.head_dim).transpose(1, 2).chunk(2, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                           enable_gqa=self.heads != self.kv_heads)
        return self.out(y.transpose(1, 2).reshape(b, n, -1))


def refused(call, error, text: str, what: str) -> None:
    """`call()` raises `error` whose message holds `text`."""
    try:
        call()
    except error as e:
        if text not in str(e):
            raise
    else:
        raise AssertionError(f"{what} under context parallelism was not refused")


def scenario_context_parallel() -> None:
    """torch.distributed.tensor.experimental.context_parallel: each rank
    holds a block of the sequence and ring attention passes key / value
    blocks around; the loss and the gradients (summed over ranks) of an
    attention block against the whole sequence on CPU, causal with and
    without load balancing, both rotation methods, non-causal, grouped-query,
    compiled with backend="tpu"; a mask, dropout, and a backward outside
    the context, refused by name."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental._attention import _cp_options, set_rotate_method

    init()
    mesh = init_device_mesh("tpu", (WORLD,))
    cases = [
        ("causal, load-balanced", dict(), True, "alltoall", False),
        ("causal, in order", dict(), False, "alltoall", False),
        ("causal, all-gather rotation", dict(), True, "allgather", False),
        ("non-causal", dict(causal=False), False, "alltoall", False),
        ("grouped-query, causal", dict(heads=4, kv_heads=2), True, "alltoall", False),
        ("compiled, causal", dict(), True, "alltoall", True),
    ]
    for seed, (name, model_args, balance, rotation, compiled) in enumerate(cases):
        torch.manual_seed(seed)
        model = Attention(**model_args)
        x, y = randn(2, 16, 16, seed=100 + seed), randn(2, 16, 16, seed=200 + seed)
        expected_loss = F.mse_loss(model(x), y)
        expected_loss.backward()

        tpu_model = copy.deepcopy(model).to("tpu")
        tpu_model.zero_grad()
        xt, yt = x.to("tpu"), y.to("tpu")
        _cp_options.enable_load_balance = balance
        set_rotate_method(rotation)
        run = torch.compile(tpu_model, backend="tpu") if compiled else tpu_model
        with context_parallel(mesh, buffers=[xt, yt], buffer_seq_dims=[1, 1]):
            if xt.shape[1] != 16 // WORLD:
                raise AssertionError(f"{name}: the sequence was not sharded: {tuple(xt.shape)}")
            loss = F.mse_loss(run(xt), yt)
            loss.backward()
        # Each rank's loss is the mean over its block; the blocks are equal.
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        check(loss.detach(), expected_loss.detach(), f"{name}: loss", atol=1e-5)
        for (pname, p), ref in zip(tpu_model.named_parameters(), model.parameters()):
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
            check(p.grad, ref.grad, f"{name}: gradient of {pname}", atol=1e-5)

    # The backward outside the context would gather load-balanced blocks
    # out of order: refused by name.
    model = Attention().to("tpu")
    x = torch.randn(2, 16, 16, device="tpu")
    _cp_options.enable_load_balance = True
    with context_parallel(mesh, buffers=[x], buffer_seq_dims=[1]):
        loss = model(x).square().mean()
    refused(loss.backward, RuntimeError, "inside the same context_parallel block", "a backward outside the block")

    def attend(buffers, **kwargs):
        q = buffers[0]
        with context_parallel(mesh, buffers=buffers, buffer_seq_dims=[2] * len(buffers)):
            F.scaled_dot_product_attention(q, q, q, **kwargs)

    q = torch.randn(1, 2, 8, 4, device="tpu")
    refused(lambda: attend([q], is_causal=True, dropout_p=0.1), NotImplementedError, "takes no dropout", "dropout")
    q = torch.randn(1, 2, 8, 4, device="tpu")
    mask = torch.ones(1, 1, 8, 8, dtype=torch.bool, device="tpu")
    refused(lambda: attend([q, mask], attn_mask=mask), NotImplementedError, "fused_attention_overrideable: "
            "context parallelism takes no attn_mask", "a mask")
    dist.destroy_process_group()


class Block(nn.Module):
    """Embedding, a pre-norm attention block and MLP, and an output head:
    the layout of a transformer for a torchtitan-style parallel plan."""

    def __init__(self, vocab: int = 50, dim: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attention_norm = nn.LayerNorm(dim)
        self.attention = Attention(dim=dim, heads=4, kv_heads=2)
        self.mlp_norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = h + self.attention(self.attention_norm(h))
        h = h + self.down(F.gelu(self.up(self.mlp_norm(h))))
        return self.head(self.norm(h))


def scenario_sequence_parallel() -> None:
    """Tensor and sequence parallelism over a transformer block, as
    torchtitan lays it out: the norms and residual stream sharded on the
    sequence, attention split by heads through the fused kernel, the MLP
    column / row split, the head's logits left sharded on the vocabulary
    for loss_parallel's cross entropy. Loss and every gradient against CPU."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        loss_parallel,
        parallelize_module,
    )

    init()
    mesh = init_device_mesh("tpu", (WORLD,))
    torch.manual_seed(0)
    model = Block()
    tokens = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(1))
    targets = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(2))
    expected = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())
    expected.backward()

    parallel = parallelize_module(copy.deepcopy(model).to("tpu"), mesh, {
        "embed": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "attention_norm": SequenceParallel(),
        "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        "attention.q": ColwiseParallel(use_local_output=False),
        "attention.kv": ColwiseParallel(use_local_output=False),
        "attention.out": RowwiseParallel(output_layouts=Shard(1)),
        "mlp_norm": SequenceParallel(),
        "up": ColwiseParallel(input_layouts=Shard(1)),
        "down": RowwiseParallel(output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "head": ColwiseParallel(input_layouts=Shard(1), use_local_output=False),
    })
    with OpNames() as ops:
        logits = parallel(tokens.to("tpu"))
    if FUSED not in ops.names:
        raise AssertionError(f"sequence parallel: the fused kernel did not run: {sorted(ops.names)}")
    with loss_parallel():
        loss = F.cross_entropy(logits.flatten(0, 1), targets.to("tpu").flatten())
        loss.backward()
    check(full(loss).detach(), expected.detach(), "sequence parallel: loss", atol=1e-5)
    for (name, p), ref in zip(parallel.named_parameters(), model.parameters()):
        check(full(p.grad), ref.grad, f"sequence parallel: gradient of {name}", atol=1e-5)
    dist.destroy_process_group()


def scenario_flex_context_parallel() -> None:
    """FlexAttention under context parallelism (PyTorch's module-wrapper
    API: the query stays sharded, key and value are gathered, the block
    mask is made for each rank's query block): outputs and gradients,
    unsharded, against CPU attention with the same mask, eager and compiled
    with backend="tpu", with and without load balancing."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental._attention import (
        _context_parallel_shard,
        _ContextParallel,
        _HeadTailLoadBalancer,
        context_parallel_unshard,
    )
    from torch.distributed.tensor.parallel import parallelize_module
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    init()
    mesh = init_device_mesh("tpu", (WORLD,))
    L = 256  # PyTorch's CP block masks need WORLD * 128 | L

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def sliding_window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < 100)

    class Flex(nn.Module):
        def __init__(self, compiled):
            super().__init__()
            self.attend = torch.compile(flex_attention, backend="tpu") if compiled else flex_attention

        def forward(self, *args, **kwargs):
            return self.attend(*args, **kwargs)

    positions = torch.arange(L)
    for seed, (mask_mod, compiled, balance) in enumerate([
        (causal, True, True), (sliding_window, True, False), (causal, False, True),
    ]):
        name = f"{mask_mod.__name__}, {'compiled' if compiled else 'eager'}, balanced {balance}"
        q, k, v = (randn(1, 2, L, 16, seed=300 + 3 * seed + i).requires_grad_() for i in range(3))
        dense_mask = mask_mod(0, 0, positions[:, None], positions[None, :])
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=dense_mask)
        expected.sum().backward()

        block_mask = create_block_mask(mask_mod, 1, 1, L, L, device="tpu")
        balancer = _HeadTailLoadBalancer(L, WORLD, torch.device("tpu")) if balance else None
        local = _context_parallel_shard(mesh, [t.detach().to("tpu") for t in (q, k, v)] + [block_mask],
                                        [2, 2, 2, 2], load_balancer=balancer)
        lq, lk, lv = (t.requires_grad_() for t in local[:3])
        attention = parallelize_module(Flex(compiled), mesh, _ContextParallel(
            seq_dim=2, attention_type=_ContextParallel.AttentionType.FLEX))
        out = attention(lq, lk, lv, block_mask=local[3])
        out.sum().backward()
        whole = context_parallel_unshard(mesh, [out.detach(), lq.grad, lk.grad, lv.grad], [2] * 4,
                                         load_balancer=balancer)
        check(whole[0], expected.detach(), f"{name}: output", atol=1e-5)
        for what, got, t in zip(("query", "key", "value"), whole[1:], (q, k, v)):
            check(got, t.grad, f"{name}: gradient of the {what}", atol=1e-5)
    dist.destroy_process_group()


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items()
             if name.startswith("scenario_")}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
