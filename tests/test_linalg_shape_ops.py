"""Matrix products (mm, bmm, mv, dot, vdot, addmm, baddbmm, addmv, addbmm_,
the int8 _int_mm and _weight_int8pack_mm, and the composite matmul / linear /
einsum on top of them)
and concatenation (cat,
stack) against CPU: dtypes, non-contiguous and empty inputs, beta / alpha,
in-place and out= forms, errors, and gradients through autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torch_tpu import runtime
from tpu_testing import assert_same, to_cpu, to_tpu

FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
INTS = [torch.int64, torch.int32, torch.int8, torch.uint8]


def make(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 6, shape, generator=g).to(dtype)
    if not dtype.is_floating_point and not dtype.is_complex:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g, dtype=torch.float32 if not dtype.is_complex else dtype).to(dtype)


def leaf(x, device):
    x = x.detach() if device == "cpu" else to_tpu(x).detach()
    return x.requires_grad_()


def assert_grads(fn, *inputs, **tol):
    """fn(*inputs) and the gradients of every floating input (through a
    random output gradient) agree between CPU and tpu."""
    cpu_in = [leaf(x, "cpu") if x.is_floating_point() else x for x in inputs]
    tpu_in = [leaf(x, "tpu") if x.is_floating_point() else to_tpu(x) for x in inputs]
    expected = fn(*cpu_in)
    actual = fn(*tpu_in)
    grad = make(expected.shape, expected.dtype, seed=99)
    expected.backward(grad)
    actual.backward(to_tpu(grad))
    kw = tol or {}
    torch.testing.assert_close(actual.cpu(), expected, **kw)
    for c, t in zip(cpu_in, tpu_in):
        if c.is_floating_point():
            torch.testing.assert_close(t.grad.cpu(), c.grad, **kw)


# ---- products ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.complex64], ids=str)
def test_mm_dtypes(dtype):
    tol = dict(rtol=1e-5, atol=1e-5) if dtype.is_complex else {}  # tpu_testing compares complex exactly
    assert_same(torch.mm, make((5, 7), dtype, 1), make((7, 3), dtype, 2), **tol)


def test_f32_products_match_cpu_closely():
    # HIGHEST precision: a long contraction stays at f32 accuracy.
    a, b = make((16, 256), seed=1), make((256, 8), seed=2)
    assert_same(torch.mm, a, b, rtol=1e-5, atol=1e-5)


def test_int8_products_wrap_like_cpu():
    a, b = torch.full((2, 40), 3, dtype=torch.int8), torch.full((40, 2), 5, dtype=torch.int8)
    assert_same(torch.mm, a, b)


@pytest.mark.parametrize("shapes", [((0, 4), (4, 3)), ((3, 0), (0, 5)), ((3, 4), (4, 0))], ids=str)
def test_mm_empty(shapes):
    assert_same(torch.mm, make(shapes[0]), make(shapes[1]))


def test_mm_non_contiguous():
    base = make((8, 10))
    assert_same(torch.mm, base.t(), base[:, ::2])
    assert_same(torch.mm, base[1::2, 3:7], base[2:6, ::3])


def test_mm_out_and_errors():
    a, b = make((3, 4), seed=1), make((4, 5), seed=2)
    assert_same(lambda x, y: torch.mm(x, y, out=torch.empty(0, device=x.device)), a, b)
    assert_same(torch.mm, a, make((5, 6)))  # shapes cannot be multiplied
    assert_same(torch.mm, make((4,)), b)  # self must be a matrix
    assert_same(torch.mm, a, b.double())  # dtypes differ
    assert_same(torch.mm, a.bool(), b.bool())  # NotImplementedError, as on CPU
    assert_same(lambda x, y: torch.mm(x, y, out=torch.empty(0, dtype=torch.float64, device=x.device)), a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_bmm(dtype):
    assert_same(torch.bmm, make((2, 3, 4), dtype, 1), make((2, 4, 5), dtype, 2))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_reduced_precision_products_of_transposed_operands(dtype):
    # A batch of one and a transposed operand: XLA folds both into a plain
    # dot, which its CPU runtime could not run as bf16 x bf16 -> f32.
    x, y = make((8, 3), dtype, 3), make((8, 4), dtype, 4)
    assert_same(lambda a, b: torch.bmm(a.t()[None], b[None]), x, y)
    assert_same(lambda a, b: torch.mm(a.t(), b), x, y)
    assert_same(lambda a, b: torch.addmm(b[:3], a.t(), b, beta=0.5), x, y)


def test_bmm_views_empty_out_and_errors():
    base = make((3, 6, 4))
    assert_same(torch.bmm, base.transpose(1, 2), base[:, ::2, :])
    assert_same(torch.bmm, make((0, 3, 4)), make((0, 4, 5)))
    assert_same(lambda x, y: torch.bmm(x, y, out=torch.empty(0, device=x.device)), make((2, 3, 4)), make((2, 4, 5)))
    assert_same(torch.bmm, make((2, 3, 4)), make((3, 4, 5)))
    assert_same(torch.bmm, make((3, 4)), make((4, 5)))
    assert_same(torch.bmm, make((2, 3, 4)), make((2, 4, 5), torch.float64))
    assert_same(torch.bmm, make((2, 3, 4)).bool(), make((2, 4, 5)).bool())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_mv_and_dot(dtype):
    assert_same(torch.mv, make((3, 4), dtype, 1), make((4,), dtype, 2))
    assert_same(torch.dot, make((6,), dtype, 1), make((6,), dtype, 2))


def test_mv_dot_vdot_edges_and_errors():
    assert_same(torch.dot, make((0,)), make((0,)))
    assert_same(torch.mv, make((0, 3)), make((3,)))
    assert_same(torch.mv, make((6, 4))[::2], make((8,))[::2])
    assert_same(torch.vdot, make((5,), torch.complex64, 1), make((5,), torch.complex64, 2), rtol=1e-5, atol=1e-5)
    assert_same(torch.vdot, make((5,), seed=1), make((5,), seed=2))
    assert_same(lambda x, y: torch.mv(x, y, out=torch.empty(0, device=x.device)), make((3, 4)), make((4,)))
    assert_same(torch.dot, make((4,)), make((5,)))
    assert_same(torch.dot, make((4, 1)), make((4,)))
    assert_same(torch.dot, make((4,)), make((4,), torch.float64))
    assert_same(torch.dot, make((4,), torch.bool), make((4,), torch.bool))
    assert_same(torch.mv, make((3, 4)), make((5,)))
    assert_same(torch.mv, make((3, 4)), make((4, 1)))
    assert_same(torch.mv, make((3, 4), torch.bool), make((4,), torch.bool))


@pytest.mark.parametrize("self_shape", [(3, 5), (5,), (1, 5), (3, 1), ()], ids=str)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (1, -1.5)], ids=str)
def test_addmm(self_shape, beta, alpha):
    s, a, b = make(self_shape, seed=0), make((3, 4), seed=1), make((4, 5), seed=2)
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=beta, alpha=alpha), s, a, b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int64], ids=str)
def test_addmm_dtypes(dtype):
    s, a, b = make((3, 5), dtype, 0), make((3, 4), dtype, 1), make((4, 5), dtype, 2)
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=2, alpha=3), s, a, b)


def test_addmm_beta_zero_ignores_nan_and_integer_scalars_truncate():
    nan = torch.full((3, 5), float("nan"))
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=0), nan, make((3, 4)), make((4, 5)))
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=0), nan, make((3, 0)), make((0, 5)))
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=2), make((3, 5)), make((3, 0)), make((0, 5)))
    ones = torch.ones(3, 5, dtype=torch.long)
    assert_same(lambda s, x, y: torch.addmm(s, x, y, beta=2.7, alpha=1.5), ones,
                torch.ones(3, 4, dtype=torch.long), torch.ones(4, 5, dtype=torch.long))


def test_addmm_in_place_out_and_errors():
    s, a, b = make((3, 5)), make((3, 4), seed=1), make((4, 5), seed=2)

    def in_place(s, x, y):
        s = s.clone() if s.device.type == "cpu" else s + 0
        return s.addmm_(x, y, beta=0.5, alpha=2)

    assert_same(in_place, s, a, b)
    assert_same(in_place, s.t().contiguous().t(), a, b)  # a non-contiguous destination
    assert_same(lambda s, x, y: torch.addmm(s, x, y, out=torch.empty(0, device=x.device)), make((5,)), a, b)
    assert_same(lambda s, x, y: s.addmm_(x, y), make((5,)), a, b)  # bad in-place shape
    assert_same(torch.addmm, make((4,)), a, b)  # does not expand
    assert_same(torch.addmm, make((2, 3, 5)), a, b)
    assert_same(torch.addmm, s.double(), a, b)
    assert_same(torch.addmm, s, make((4,)), b)
    assert_same(torch.addmm, s, a, make((3, 5)))
    assert_same(torch.addmm, s.bool(), a.bool(), b.bool())


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1)], ids=str)
def test_baddbmm_and_addmv(beta, alpha):
    assert_same(lambda s, x, y: torch.baddbmm(s, x, y, beta=beta, alpha=alpha),
                make((3, 5)), make((2, 3, 4), seed=1), make((2, 4, 5), seed=2))
    assert_same(lambda s, x, y: torch.addmv(s, x, y, beta=beta, alpha=alpha),
                make((3,)), make((3, 4), seed=1), make((4,), seed=2))


def test_baddbmm_addmv_in_place_out_and_errors():
    s3, b1, b2 = make((2, 3, 5)), make((2, 3, 4), seed=1), make((2, 4, 5), seed=2)
    v, m, w = make((3,)), make((3, 4), seed=1), make((4,), seed=2)
    assert_same(lambda s, x, y: (s + 0).baddbmm_(x, y, alpha=0.25), s3, b1, b2)
    assert_same(lambda s, x, y: (s + 0).addmv_(x, y, beta=3), v, m, w)
    assert_same(lambda s, x, y: torch.baddbmm(s, x, y, out=torch.empty(0, device=x.device)), s3, b1, b2)
    assert_same(lambda s, x, y: torch.addmv(s, x, y, out=torch.empty(0, device=x.device)), make((1,)), m, w)
    assert_same(torch.baddbmm, make((3, 4)), b1, b2)
    assert_same(torch.baddbmm, s3.double(), b1, b2)
    assert_same(lambda s, x, y: s.baddbmm_(x, y), make((3, 5)), b1, b2)
    assert_same(torch.addmv, make((4,)), m, w)
    assert_same(torch.addmv, v, m, make((4, 1)))
    assert_same(lambda s, x, y: s.addmv_(x, y), make((1,)), m, w)


def test_addbmm_in_place():
    b1, b2 = make((2, 3, 4), seed=1), make((2, 4, 5), seed=2)
    assert_same(lambda s, x, y: (s + 0).addbmm_(x, y, beta=0.5, alpha=2.0), make((3, 5)), b1, b2)
    assert_same(lambda s, x, y: (s + 0).addbmm_(x, y), make((3, 5), torch.float64), b1, b2)  # dtypes differ


@pytest.mark.parametrize("shape", [(5, 7, 3), (17, 64, 32), (1, 1, 1), (0, 4, 3), (4, 0, 3)], ids=str)
@pytest.mark.parametrize("lhs", [torch.int8, torch.uint8], ids=str)
def test_int_mm(shape, lhs):
    m, k, n = shape
    a, b = make((m, k), lhs), make((k, n), torch.int8, seed=1)
    a = (a * 41).to(lhs)  # the whole int8 / uint8 range
    b = (b * 25).to(torch.int8)
    out = assert_same(torch._int_mm, a, b)
    assert out.dtype == torch.int32


def test_int_mm_views_wrap_out_and_errors():
    a, b = (make((6, 8), torch.int8) * 25).to(torch.int8), (make((8, 4), torch.int8, seed=1) * 25).to(torch.int8)
    assert_same(lambda x, y: torch._int_mm(x.t().contiguous().t(), y[:, 1:]), a, b)
    assert_same(lambda x, y: torch._int_mm(x[::2], y.t().contiguous().t()), a, b)
    # int32 sums wrap as CPU's accumulator does.
    big = torch.full((2, 200000), 127, dtype=torch.int8)
    assert_same(torch._int_mm, big, big.t().contiguous())
    assert_same(lambda x, y: torch._int_mm(x, y, out=torch.empty(6, 4, dtype=torch.int32, device=x.device)), a, b)
    assert_same(lambda x, y: torch._int_mm(x, y, out=torch.empty(0, dtype=torch.int32, device=x.device)), a, b)  # refused
    for x, y, match in [(a.float(), b, "self dtype to be int8 or uint8"), (a, b[:2], "needs to match"),
                        (a[0], b, "dimension 2"), (a, b.int(), "mat2 dtype to be of type int8")]:
        with pytest.raises(RuntimeError, match=match):
            torch._int_mm(to_tpu(x), to_tpu(y))
    with pytest.raises(RuntimeError, match="result dtype to be of type kInt"):
        torch._int_mm(to_tpu(a), to_tpu(b), out=torch.empty(6, 4, device="tpu"))
    with pytest.raises(RuntimeError, match=r"result.size\(0\) to be 6"):
        torch._int_mm(to_tpu(a), to_tpu(b), out=torch.empty(2, 4, dtype=torch.int32, device="tpu"))


def test_int_mm_fused_and_compiled():
    """torchao's int8 linear: the int32 product scaled back to float."""
    import torch_tpu

    a, w = (make((32, 16), torch.int8) * 25).to(torch.int8), (make((8, 16), torch.int8, seed=1) * 25).to(torch.int8)
    expected = torch._int_mm(a, w.t()).float() * 0.01
    with torch_tpu.eager_mode("fused"):
        torch.testing.assert_close(to_cpu(torch._int_mm(to_tpu(a), to_tpu(w).t()).float() * 0.01), expected)
    f = torch.compile(lambda x, w, s: torch._int_mm(x, w.t()).float() * s, backend="tpu")
    torch.testing.assert_close(to_cpu(f(to_tpu(a), to_tpu(w), torch.tensor(0.01, device="tpu"))), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(5, 16, 8), (1, 32, 3), (0, 4, 3), (7, 64, 2)], ids=str)
def test_weight_int8pack_mm(dtype, shape):
    """torchao's int8 weight-only linear: x @ w.T * scales, rounded once
    (16-bit results equal CPU's bit for bit)."""
    m, k, n = shape
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g)
    s = (torch.rand(n, generator=g) * 0.02).to(dtype)
    tol = {} if dtype != torch.float32 else dict(rtol=1e-5, atol=1e-5)
    out = assert_same(torch.ops.aten._weight_int8pack_mm, x, w, s, **(tol or dict(rtol=0, atol=0)))
    assert out.dtype == dtype


def test_weight_int8pack_mm_views_and_errors():
    x, w, s = make((5, 16)), torch.randint(-128, 128, (16, 8), dtype=torch.int8).t(), make((8,), seed=1)
    expected = x @ w.float().t() * s  # CPU's kernel wants a contiguous weight; this one need not
    torch.testing.assert_close(torch.ops.aten._weight_int8pack_mm(to_tpu(x), to_tpu(w), to_tpu(s)).cpu(), expected)
    for args, match in [((x, w.float(), s), "B to be int8"), ((x, w, s[:3]), "scales to be 1d tensor with size 8"),
                        ((x[0], w, s), "A to be 2D"), ((x, w[:, :3], s), "B to be 2D tensor with 16 columns"),
                        ((x.double(), w, s.double()), "32-bit or 16-bit float"),
                        ((x, w, s.double()), "scales to have A's dtype")]:
        with pytest.raises(RuntimeError, match=match):
            torch.ops.aten._weight_int8pack_mm(*to_tpu(args))


def test_changing_beta_alpha_do_not_recompile():
    s, a, b = to_tpu(make((3, 5))), to_tpu(make((3, 4))), to_tpu(make((4, 5)))
    torch.addmm(s, a, b, beta=0.5, alpha=0.5).cpu()
    before = runtime.cache_stats()["compiles"]
    for i in range(4):
        torch.addmm(s, a, b, beta=0.1 * (i + 2), alpha=0.3 * (i + 2)).cpu()
    assert runtime.cache_stats()["compiles"] == before


# ---- matmul and linear (composite) ---------------------------------------------

MATMUL_SHAPES = [
    ((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
    ((2, 1, 3, 4), (1, 5, 4, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    a, b = make(shapes[0], seed=1), make(shapes[1], seed=2)
    assert_same(torch.matmul, a, b)
    assert_grads(torch.matmul, a, b)


def test_matmul_bf16_and_errors():
    a, b = make((2, 3, 4), torch.bfloat16, 1), make((4, 5), torch.bfloat16, 2)
    assert_same(torch.matmul, a, b)
    assert_same(torch.matmul, make(()), make((3, 4)))
    assert_same(torch.matmul, make((2, 3, 4)), make((3, 4, 5)))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("in_shape", [(3, 4), (2, 3, 4), (4,)], ids=str)
def test_linear(in_shape, bias):
    x, w = make(in_shape, seed=1), make((5, 4), seed=2)
    args = (x, w, make((5,), seed=3)) if bias else (x, w)
    assert_same(F.linear, *args)
    assert_grads(F.linear, *args)


def test_linear_bf16_and_non_contiguous_input():
    x, w, b = make((3, 4), torch.bfloat16, 1), make((5, 4), torch.bfloat16, 2), make((5,), torch.bfloat16, 3)
    assert_same(F.linear, x, w, b)
    assert_grads(F.linear, make((4, 6), seed=1).t(), make((5, 4), seed=2), make((5,), seed=3))


def test_einsum_reaches_the_products():
    a, b = make((2, 3, 4), seed=1), make((2, 4, 5), seed=2)
    assert_same(lambda x, y: torch.einsum("bij,bjk->bik", x, y), a, b)


# ---- cat / stack -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dtype, dim):
    parts = [make((2, 3), dtype, 1), make((2, 3), dtype, 2), make((2, 3), dtype, 3)]
    assert_same(lambda *xs: torch.cat(xs, dim), *parts)


def test_cat_type_promotion_and_views():
    assert_same(lambda *xs: torch.cat(xs), make((2,), torch.int32), make((3,), torch.float16), make((1,), torch.bool))
    assert_same(lambda *xs: torch.cat(xs, 1), make((3, 2), torch.int64), make((3, 4)))
    base = make((6, 8))
    assert_same(lambda x, y: torch.cat([x, y], 1), base.t()[:, :3], base[::2, 1::2].t()[:8:1, :3])
    assert_same(lambda x: torch.cat([x, x, x], 0), make((4,)))  # one tensor, three times


def test_cat_empty_and_legacy_empty():
    assert_same(lambda *xs: torch.cat(xs, 1), torch.empty(0), make((3, 4)), torch.empty(0, dtype=torch.int64))
    assert_same(lambda *xs: torch.cat(xs), torch.empty(0), torch.empty(0, dtype=torch.int64))
    assert_same(lambda *xs: torch.cat(xs), make((0, 3)), make((2, 3)), make((0, 3)))
    assert_same(lambda *xs: torch.cat(xs, 1), make((0, 3)), make((0, 2)))


def test_cat_out():
    a, b = make((2, 3), seed=1), make((1, 3), seed=2)
    assert_same(lambda x, y: torch.cat([x, y], out=torch.empty(0, dtype=torch.float64, device=x.device)), a, b)
    assert_same(lambda x, y: torch.cat([x, y], out=torch.empty(0, dtype=torch.int64, device=x.device)), a, b)

    def into_view(x, y):
        dst = torch.zeros(4, 5, device=x.device)
        torch.cat([x, y], out=dst[:3, 1:4])
        return dst

    assert_same(into_view, a, b)


def test_cat_errors():
    a = make((3, 4))
    assert_same(lambda: torch.cat([]))  # ValueError on both
    assert_same(lambda x: torch.cat([x, x[0, 0]]), a)
    assert_same(lambda x: torch.cat([x, x[0]]), a)
    assert_same(lambda x, y: torch.cat([x, y], 1), a, make((4, 4)))
    assert_same(lambda x: torch.cat([x, x], 2), a)
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([to_tpu(a), a])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    parts = [make((2, 3), seed=1), make((2, 3), seed=2)]
    assert_same(lambda *xs: torch.stack(xs, dim), *parts)
    assert_same(lambda *xs: torch.stack(xs, dim), make((2, 3), torch.int64), make((2, 3), torch.int32))


def test_stack_errors_and_others():
    assert_same(lambda x, y: torch.stack([x, y]), make((3, 4)), make((3, 5)))
    assert_same(lambda x, y: torch.hstack([x, y]), make((3, 4)), make((3, 2)))
    assert_same(lambda x, y: torch.vstack([x, y]), make((4,)), make((4,)))


def test_cat_and_stack_backward():
    assert_grads(lambda x, y: torch.cat([x, y], 1), make((3, 2), seed=1), make((3, 4), seed=2))
    assert_grads(lambda x, y: torch.stack([x, y], 1), make((3, 2), seed=1), make((3, 2), seed=2))
    assert_grads(lambda x, y: torch.cat([x, torch.tanh(y)], 0) * 2, make((1, 2), seed=1), make((3, 2), seed=2))


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_cat_of_many_tensors(mode):
    # Beyond 32 operands the lowering joins groups of 32 (compile time).
    import torch_tpu

    parts = [make((i % 3 + 1, 4), seed=i) for i in range(1100)]
    with torch_tpu.eager_mode(mode):
        assert_same(lambda *xs: torch.cat(xs), *parts)
        assert_same(lambda *xs: torch.stack(xs, 2), *[make((2, 4), seed=i) for i in range(70)])
        mixed = [p.to(torch.float64 if i % 5 else torch.int32) for i, p in enumerate(parts[:40])]
        assert_same(lambda *xs: torch.cat(xs), *mixed)
    assert_grads(lambda *xs: torch.cat(xs, 0), *parts[:65])


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices], ids=lambda f: f.__name__)
def test_triangle_indices(fn):
    for args in [(3, 4), (4, 3, 1), (5, 5, -2), (0, 3), (3, 3, 10), (4, 6, -9)]:
        got = fn(*args, device="tpu")
        assert got.device.type == "tpu"
        torch.testing.assert_close(got.cpu(), fn(*args), rtol=0, atol=0)
    assert fn(3, 3, dtype=torch.int32, device="tpu").dtype == torch.int32
