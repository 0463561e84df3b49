"""torch.set_float32_matmul_precision on tpu: float32 (and complex64)
products and convolutions carry XLA's precision for the level in force
("highest" HIGHEST, "high" HIGH, "medium" DEFAULT), in every mode; the
level is part of each op's key, so a program built under one level is never
launched under another. XLA's CPU compiler computes f32 at every level, so
results are checked against CPU at each one and the levels themselves in
the programs' StableHLO."""

from __future__ import annotations

import os
import re

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from torch_tpu import runtime
from tpu_testing import to_cpu, to_tpu

LEVELS = {"highest": ["HIGHEST"], "high": ["HIGH"], "medium": []}  # DEFAULT is not printed


@pytest.fixture(autouse=True)
def restore_precision():
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


def programs_built() -> int:
    """Programs compiled or loaded from the disk tier so far."""
    stats = runtime.cache_stats()
    return stats["compiles"] + stats["disk_hits"]


def precisions(text: str) -> list[str]:
    return sorted(set(re.findall(r"precision (\w+)", text)))


def fused_program(fn, *args):
    """fn's result on the host and the StableHLO of the graph that made it."""
    with torch_tpu.eager_mode("fused"):
        out = to_cpu(fn(*args))
    return out, torch_tpu.diagnostics.last_graph()


def g(shape, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=gen, dtype=dtype)
    return torch.randn(shape, generator=gen).to(dtype)


CASES = {
    "mm": (lambda a, b: a @ b, [(8, 16), (16, 4)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(8, 4), (8, 16), (16, 4)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b), [(3, 8, 4), (3, 8, 16), (3, 16, 4)]),
    "matmul_bmm": (lambda a, b: torch.matmul(a, b), [(2, 3, 8, 16), (2, 3, 16, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(5, 16), (4, 16), (4,)]),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(3, 8, 16), (3, 16, 4)]),
    "mv": (lambda a, v: a @ v, [(8, 16), (16,)]),
    "dot": (lambda a, b: torch.dot(a, b), [(16,), (16,)]),
    "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [(2, 3, 8, 8), (5, 3, 3, 3)]),
    "conv_transpose1d": (lambda x, w: F.conv_transpose1d(x, w, stride=2), [(2, 3, 9), (3, 4, 3)]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             [(1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8)]),
}


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("case", list(CASES))
def test_float32_products_carry_the_level_and_match_cpu(case, level):
    fn, shapes = CASES[case]
    args = [g(s, seed=i) for i, s in enumerate(shapes)]
    torch.set_float32_matmul_precision(level)
    out, text = fused_program(fn, *[to_tpu(a) for a in args])
    assert precisions(text) == LEVELS[level], text
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("level", list(LEVELS))
def test_gradients_carry_the_level(level):
    """The backward's products (matmul, convolution and attention
    gradients) follow the level too."""
    torch.set_float32_matmul_precision(level)
    x = g((2, 3, 6, 6))
    w = g((4, 3, 3, 3), seed=1)
    q = g((1, 2, 5, 8), seed=2)
    lin = g((8, 8), seed=3)

    def loss(x, w, q, lin):
        y = F.conv2d(x, w).flatten(1)[:, :8] @ lin
        a = F.scaled_dot_product_attention(q, q, q)
        return y.square().sum() + a.square().sum()

    cpu = [t.clone().requires_grad_() for t in (x, w, q, lin)]
    loss(*cpu).backward()
    tpu = [to_tpu(t).requires_grad_() for t in (x, w, q, lin)]
    with torch_tpu.eager_mode("fused"):
        loss(*tpu).backward()
        grads = [to_cpu(t.grad) for t in tpu]
    assert precisions(torch_tpu.diagnostics.last_graph()) == LEVELS[level]
    for got, t in zip(grads, cpu):
        torch.testing.assert_close(got, t.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("level", ["high", "medium"])
def test_other_dtypes_keep_their_precision(level):
    """float64 products stay HIGHEST and 16-bit floats DEFAULT (accumulated
    in f32) at every level; complex64 follows the level."""
    torch.set_float32_matmul_precision(level)
    a, b = g((4, 8), torch.float64), g((8, 3), torch.float64, seed=1)
    assert precisions(fused_program(torch.mm, to_tpu(a), to_tpu(b))[1]) == ["HIGHEST"]
    a, b = g((4, 8), torch.bfloat16), g((8, 3), torch.bfloat16, seed=1)
    assert precisions(fused_program(torch.mm, to_tpu(a), to_tpu(b))[1]) == []
    a, b = g((8,), torch.complex64), g((8,), torch.complex64, seed=1)
    out, text = fused_program(torch.vdot, to_tpu(a), to_tpu(b))
    assert precisions(text) == LEVELS[level]
    torch.testing.assert_close(out, torch.vdot(a, b), rtol=1e-4, atol=1e-4)


def test_strict_eager_compiles_once_per_level(tmp_path):
    """Each level is its own program in strict eager; going back to a level
    finds its program in the cache."""
    a, b = to_tpu(g((24, 40))), to_tpu(g((40, 12), seed=1))
    torch_tpu.diagnostics.set_dump_dir(tmp_path)
    try:
        with torch_tpu.eager_mode("strict"):
            texts = {}
            for level in ("highest", "medium", "high"):
                torch.set_float32_matmul_precision(level)
                before = set(os.listdir(tmp_path))
                (a @ b).cpu()
                new = [f for f in set(os.listdir(tmp_path)) - before if f.endswith(".mlir")]
                texts[level] = "".join(open(tmp_path / f).read() for f in new)
            for level in LEVELS:
                torch.set_float32_matmul_precision(level)
                built = programs_built()
                (a @ b).cpu()
                assert programs_built() == built, level
    finally:
        torch_tpu.diagnostics.set_dump_dir(None)
    # A program of 24 x 40 x 12 products was built at each level (other
    # programs, such as the copies, may be there too).
    for level, expected in LEVELS.items():
        dots = [m for m in re.findall(r"stablehlo.dot_general[^\n]*24x40xf32[^\n]*", texts[level])]
        assert dots, (level, texts[level])
        assert all(precisions(d) == expected for d in dots), (level, dots)


def test_compiled_graph_takes_the_level_of_its_call():
    """A replayed torch.compile graph is captured again under another level
    rather than replaying the program built for the first. Dynamo itself
    recompiles between "highest" and the others (its guard on TF32), not
    between "high" and "medium": those share one graph."""
    lin = torch.nn.Linear(16, 8)
    model = torch.nn.Linear(16, 8).to("tpu")
    model.load_state_dict(lin.state_dict())
    compiled = torch.compile(model, backend="tpu")
    x = g((4, 16))
    with torch.no_grad():
        expected = lin(x)
        torch.set_float32_matmul_precision("high")
        for _ in range(3):  # captured twice, then replayed
            torch.testing.assert_close(compiled(to_tpu(x)).cpu(), expected)
        assert precisions(torch_tpu.diagnostics.last_graph()) == ["HIGH"]
        torch.set_float32_matmul_precision("medium")
        built = programs_built()
        for _ in range(3):
            torch.testing.assert_close(compiled(to_tpu(x)).cpu(), expected)
        assert programs_built() > built
        assert precisions(torch_tpu.diagnostics.last_graph()) == []
        torch.set_float32_matmul_precision("high")
        built = programs_built()
        torch.testing.assert_close(compiled(to_tpu(x)).cpu(), expected)
        assert programs_built() == built
    replays = [s for s in torch_tpu.diagnostics.replay_status() if s["failure"] is None and s["plans"] == 2]
    assert replays, torch_tpu.diagnostics.replay_status()
