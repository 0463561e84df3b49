"""8-bit floats on the device: torch.float8_e4m3fn, float8_e5m2 and the two
"fnuz" variants. Transfers keep every bit pattern; casts round and overflow
as PyTorch's CPU casts do (e4m3fn saturates at +-448, the fnuz types turn
overflow into NaN, e5m2 into infinity); the ops CPU runs on them agree; and
torch._scaled_mm (per-tensor and per-row scales) matches CPU and the
formula CUDA documents."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch

from hlo_testing import build
from tpu_testing import to_tpu

F8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]
IDS = [str(d).removeprefix("torch.") for d in F8]


def all_patterns(dtype):
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)


def bits(x):
    return x.cpu().view(torch.uint8)


def assert_same_float8(got, want):
    """Bit-identical, except that a NaN may have another sign or payload
    (XLA and c10 pick different ones; neither is observable but through a
    bit view)."""
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = want.float().isnan()
    assert torch.equal(got.float().isnan(), nan)
    assert torch.equal(got.view(torch.uint8)[~nan], want.view(torch.uint8)[~nan])


def probe_values(dtype):
    """Every value of the format, the midpoints between neighbours (ties),
    points just off them, overflow, infinities, NaN, signed zeros and
    subnormals, as f32."""
    values = all_patterns(dtype).float()
    finite = values[values.isfinite()].unique()
    mid = (finite[1:] + finite[:-1]) / 2
    near = torch.cat([mid * (1 + 2**-20), mid * (1 - 2**-20)])
    big = torch.finfo(dtype).max
    extra = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, big * 1.01, -big * 1.06, big * 4, 1e30,
                          -1e30, 2**-30, -(2**-30), 1e-45])
    scales = torch.tensor([1e-3, 1.0, 30.0, 400.0, 5e4])
    random = (torch.randn(5, 400, generator=torch.Generator().manual_seed(0)) * scales[:, None]).flatten()
    return torch.cat([finite, mid, near, extra, random]).float()


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_transfers_keep_every_bit_pattern(dtype):
    x = all_patterns(dtype)
    t = x.to("tpu")
    assert t.dtype == dtype and t.device.type == "tpu"
    assert torch.equal(bits(t), x.view(torch.uint8))
    # and through a device program (a copy through a view)
    assert torch.equal(bits(t.view(16, 16).t().contiguous().t()), x.view(torch.uint8).view(16, 16))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
@pytest.mark.parametrize("wide", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_widening_matches_cpu(dtype, wide):
    x = all_patterns(dtype)
    got = x.to("tpu").to(wide).cpu()
    want = x.to(wide)
    assert torch.equal(got.isnan(), want.isnan())
    keep = ~want.isnan()
    assert torch.equal(got[keep], want[keep])
    assert torch.equal(got[keep].signbit(), want[keep].signbit())


@pytest.mark.parametrize("dtype", F8, ids=IDS)
@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_narrowing_rounds_and_overflows_like_cpu(dtype, source):
    values = probe_values(dtype)
    if source in (torch.bfloat16, torch.float16):
        values = values.to(source).float().unique()  # exact in the source type
    x = values.to(source)
    assert_same_float8(x.to("tpu").to(dtype), x.to(dtype))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_integer_and_bool_sources(dtype):
    for x in [torch.arange(-1000, 1000, 7), torch.arange(256, dtype=torch.int32).to(torch.uint8),
              torch.tensor([True, False]), torch.arange(-100, 100, dtype=torch.int32)]:
        assert_same_float8(x.to("tpu").to(dtype), x.to(dtype))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
@pytest.mark.parametrize("target", F8, ids=IDS)
def test_float8_to_float8(dtype, target):
    x = all_patterns(dtype)
    assert_same_float8(x.to("tpu").to(target), x.to(target))


@pytest.mark.parametrize("name", ["f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz"])
def test_builder_constants_round_like_torch(run, name):
    dtype = {"f8e4m3fn": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2,
             "f8e4m3fnuz": torch.float8_e4m3fnuz, "f8e5m2fnuz": torch.float8_e5m2fnuz}[name]
    values = probe_values(dtype)[::7].tolist()
    outs = run(build(lambda B: [B.constant(v, name, [2]) for v in values]))
    want = torch.tensor(values, dtype=torch.float32).to(dtype).view(torch.uint8)
    for v, out, w in zip(values, outs, want.tolist()):
        assert out.dtype == np.uint8 and list(out) == [w, w], (v, out, w)


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_factories_and_fills(dtype):
    # Values out of range raise as CPU's do (infinity fits e5m2 only; NaN
    # fits every type); in range, they round as casts do.
    for value in [0.0, 1.0, -2.5, 0.3, 1000.0, -1e9, math.inf, math.nan, 1e-3, 300.0]:
        fills = [lambda device: torch.full((3,), value, dtype=dtype, device=device),
                 lambda device: torch.empty(2, 2, dtype=dtype, device=device).fill_(value),
                 lambda device: torch.zeros(2, dtype=dtype, device=device).fill_(torch.tensor(value))]
        for fill in fills:
            try:
                want = fill("cpu")
            except RuntimeError as e:
                with pytest.raises(RuntimeError, match="without overflow"):
                    fill("tpu")
                continue
            assert_same_float8(fill("tpu"), want)
    assert_same_float8(torch.zeros(4, dtype=dtype, device="tpu"), torch.zeros(4, dtype=dtype))
    assert_same_float8(torch.ones(4, dtype=dtype, device="tpu"), torch.ones(4, dtype=dtype))


def f8_sample(dtype, *shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 4).to(dtype)


def same_results(fn, *args):
    """fn on CPU and tpu give bit-identical tensors (NaN patterns included)."""
    want = fn(*args)
    got = fn(*to_tpu(args)).cpu()
    if want.dtype in F8:
        assert_same_float8(got, want)
    else:
        assert got.dtype == want.dtype and torch.equal(got, want)


def write_column(x):
    y = x.clone()
    y[:, 1] = 0.5
    return y


SHAPE_OPS = {
    "clone": lambda x: x.clone(),
    "transpose_contiguous": lambda x: x.t().contiguous(),
    "slice": lambda x: x[1:, ::2].contiguous(),
    "cat": lambda x: torch.cat([x, x[:1]]),
    "stack": lambda x: torch.stack([x, x], 1),
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(2, 1),
    "index": lambda x: x[torch.tensor([2, 0, 2])],
    "index_put": lambda x: x.clone().index_put_((torch.tensor([0, 3]),), x[1]),
    "where": lambda x: torch.where(x.view(torch.uint8) > 100, x, x.roll(1, 0)),
    "eq": lambda x: x == x.flip(0),
    "ne": lambda x: x != x.roll(1, 0),
    "isnan": lambda x: x.isnan(),
    "view_uint8": lambda x: x.view(torch.uint8) + 0,
    "uint8_view_back": lambda x: (x.view(torch.uint8) ^ 0x80).view(x.dtype).clone(),
    "setitem": write_column,
    "mm": lambda x: x @ x.t(),
}


@pytest.mark.parametrize("dtype", F8, ids=IDS)
@pytest.mark.parametrize("op", SHAPE_OPS)
def test_ops_cpu_runs_on_float8(dtype, op):
    same_results(SHAPE_OPS[op], f8_sample(dtype, 4, 6))


def test_copy_into_a_view_converts_and_saturates():
    x = torch.zeros(4, 6, dtype=torch.float8_e4m3fn)
    src = torch.tensor([[1.0, 1000.0, -math.inf], [0.3, math.nan, -500.0]])

    def write(x, src):
        y = x.clone()
        y[1:3, ::2] = src
        return y

    same_results(write, x, src)


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_printing_and_save_load(dtype):
    x = f8_sample(dtype, 3, 4)
    t = x.to("tpu")
    assert " ".join(repr(t).replace("device='tpu:0',", "").split()) == " ".join(repr(x).split())
    buf = io.BytesIO()
    torch.save({"w": t}, buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location="tpu")["w"]
    assert loaded.device.type == "tpu" and loaded.dtype == dtype
    assert torch.equal(bits(loaded), x.view(torch.uint8))
    assert t.element_size() == 1 and t.nbytes == 12


# ---- torch._scaled_mm ---------------------------------------------------------------------


def scaled_mm_case(m=16, k=32, n=24, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, seed=0):
    a = f8_sample(a_dtype, m, k, seed=seed)
    b = f8_sample(b_dtype, n, k, seed=seed + 1).t()  # column-major, as CUDA wants it
    return a, b


def reference(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None):
    """The formula CUDA documents, in f64."""
    r = (a.double() @ b.double()) * scale_a.double().reshape(scale_a.shape if scale_a.dim() == 2 else (1, 1))
    r = r * scale_b.double().reshape(scale_b.shape if scale_b.dim() == 2 else (1, 1))
    if bias is not None:
        r = r + bias.double()
    out_dtype = out_dtype or a.dtype
    if scale_result is not None and out_dtype in F8:
        r = r * scale_result.double()
    return r.float().to(out_dtype)


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16, None])
@pytest.mark.parametrize("scaling", ["tensor", "row"])
def test_scaled_mm_matches_cpu(out_dtype, scaling):
    a, b = scaled_mm_case()
    if scaling == "tensor":
        sa, sb = torch.tensor(0.37), torch.tensor(1.9)
    else:
        sa = torch.rand(16, 1, generator=torch.Generator().manual_seed(2)) + 0.5
        sb = torch.rand(1, 24, generator=torch.Generator().manual_seed(3)) + 0.5
    got = torch._scaled_mm(*to_tpu((a, b, sa, sb)), out_dtype=out_dtype).cpu()
    want = torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype)
    assert got.dtype == want.dtype == (out_dtype or a.dtype)
    if got.dtype in F8:  # one rounding each; allow a neighbour where sums round differently
        diff = (got.view(torch.uint8).int() - want.view(torch.uint8).int()).abs()
        assert int(diff.max()) <= 1
    else:
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2 if got.dtype != torch.float32 else 3e-5,
                                   atol=1e-2 if got.dtype != torch.float32 else 1e-4)
    torch.testing.assert_close(got.float(), reference(a, b, sa, sb, out_dtype=out_dtype).float(),
                               rtol=0.07, atol=1e-3)


def test_scaled_mm_bias_result_scale_and_mixed_formats():
    a, b = scaled_mm_case(8, 48, 16, torch.float8_e5m2, torch.float8_e4m3fn)
    sa, sb = torch.tensor(0.5), torch.tensor(0.25)
    for bias in [torch.randn(16), torch.randn(16).bfloat16()]:
        got = torch._scaled_mm(*to_tpu((a, b, sa, sb)), bias=bias.to("tpu"), out_dtype=torch.float32).cpu()
        want = torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.float32)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-5)
    # scale_result multiplies an 8-bit result (CUDA's D scale) and nothing else
    sr = torch.tensor(4.0)
    got8 = torch._scaled_mm(*to_tpu((a, b, sa, sb)), scale_result=sr.to("tpu"), out_dtype=torch.float8_e4m3fn)
    assert_same_float8(got8, reference(a, b, sa, sb, scale_result=sr, out_dtype=torch.float8_e4m3fn))
    got32 = torch._scaled_mm(*to_tpu((a, b, sa, sb)), scale_result=sr.to("tpu"), out_dtype=torch.float32).cpu()
    torch.testing.assert_close(got32, reference(a, b, sa, sb, out_dtype=torch.float32), rtol=1e-6, atol=1e-5)


def test_scaled_mm_out_variant_and_empty():
    a, b = scaled_mm_case()
    sa, sb = torch.tensor(1.0), torch.tensor(2.0)
    out = torch.empty(0, dtype=torch.bfloat16, device="tpu")
    r = torch._scaled_mm(*to_tpu((a, b, sa, sb)), out_dtype=torch.bfloat16, out=out)
    assert r is out and out.shape == (16, 24)
    torch.testing.assert_close(out.cpu().float(), torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16).float())
    e = torch._scaled_mm(*to_tpu((a[:0], b, sa, sb)), out_dtype=torch.float32)
    assert e.shape == (0, 24)
    z = torch._scaled_mm(*to_tpu((a[:, :0], b[:0], sa, sb)), out_dtype=torch.float32)
    assert torch.equal(z.cpu(), torch.zeros(16, 24))


def test_scaled_mm_errors_name_the_problem():
    a, b = scaled_mm_case()
    sa, sb = torch.tensor(1.0, device="tpu"), torch.tensor(1.0, device="tpu")
    ta, tb = a.to("tpu"), b.to("tpu")
    with pytest.raises(RuntimeError, match="mat1 must be a matrix"):
        torch._scaled_mm(ta[0], tb, sa, sb)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch._scaled_mm(ta, tb[:8], sa, sb)
    with pytest.raises(RuntimeError, match="float8 types"):
        torch._scaled_mm(ta.float(), tb, sa, sb)
    with pytest.raises(ValueError, match="blockwise scaling is not supported"):
        torch._scaled_mm(ta, tb, torch.ones(16, device="tpu"), torch.ones(24, device="tpu"))
    with pytest.raises(ValueError, match="float32"):
        torch._scaled_mm(ta, tb, sa.double(), sb)
    with pytest.raises(RuntimeError, match="Bias must be size 24"):
        torch._scaled_mm(ta, tb, sa, sb, bias=torch.ones(3, device="tpu"), out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="out_dtype"):
        torch._scaled_mm(ta, tb, sa, sb, out_dtype=torch.int32)


class ScaledLinear(torch.autograd.Function):
    """A float8 linear as torchao's Float8Linear computes it: dynamic
    per-tensor scales from amax, e4m3 for the forward, e5m2 for gradients."""

    @staticmethod
    def to_float8(x, dtype):
        amax = x.abs().amax().float().clamp(min=1e-12)
        scale = torch.finfo(dtype).max / amax
        return (x.float() * scale).clamp(-torch.finfo(dtype).max, torch.finfo(dtype).max).to(dtype), scale.reciprocal()

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        x8, sx = ScaledLinear.to_float8(x, torch.float8_e4m3fn)
        w8, sw = ScaledLinear.to_float8(w, torch.float8_e4m3fn)
        return torch._scaled_mm(x8, w8.t(), sx, sw, out_dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        g8, sg = ScaledLinear.to_float8(grad, torch.float8_e5m2)
        w8, sw = ScaledLinear.to_float8(w, torch.float8_e4m3fn)
        x8, sx = ScaledLinear.to_float8(x, torch.float8_e4m3fn)
        grad_x = torch._scaled_mm(g8, w8.t().contiguous().t(), sg, sw, out_dtype=grad.dtype)
        grad_w = torch._scaled_mm(g8.t().contiguous(), x8.t().contiguous().t(), sg, sx, out_dtype=grad.dtype)
        return grad_x, grad_w


def float8_train_steps(x, w, target, steps=3):
    w = w.clone().requires_grad_()
    opt = torch.optim.SGD([w], lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ScaledLinear.apply(x, w), target)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), w.detach()


def test_float8_training_steps_match_cpu():
    g = torch.Generator().manual_seed(0)
    x, w, target = torch.randn(32, 64, generator=g), torch.randn(48, 64, generator=g) * 0.1, torch.randn(32, 48, generator=g)
    want_losses, want_w = float8_train_steps(x, w, target)
    got_losses, got_w = float8_train_steps(*to_tpu((x, w, target)))
    torch.testing.assert_close(got_losses.cpu(), want_losses, rtol=2e-3, atol=1e-4)
    torch.testing.assert_close(got_w.cpu(), want_w, rtol=2e-3, atol=2e-4)


def test_scaled_mm_under_torch_compile():
    def f(x, w):
        x8, sx = ScaledLinear.to_float8(x, torch.float8_e4m3fn)
        w8, sw = ScaledLinear.to_float8(w, torch.float8_e4m3fn)
        return torch._scaled_mm(x8, w8.t(), sx, sw, out_dtype=torch.bfloat16).relu()

    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(16, 32, generator=g), torch.randn(24, 32, generator=g)
    eager = f(x.to("tpu"), w.to("tpu")).cpu()
    compiled = torch.compile(f, backend="tpu", fullgraph=True)(x.to("tpu"), w.to("tpu")).cpu()
    assert torch.equal(compiled, eager)
    torch.testing.assert_close(eager.float(), f(x, w).float(), rtol=1e-2, atol=1e-2)


def test_unsupported_float8_formats_raise_clearly():
    with pytest.raises(NotImplementedError, match="Float8_e8m0fnu.*not supported on tpu"):
        torch.ones(2, dtype=torch.float8_e8m0fnu).to("tpu")


def test_debug_eager_checks_float8_ops():
    import torch_tpu

    g = torch.Generator().manual_seed(2)
    x, w, target = (torch.randn(8, 32, generator=g).to("tpu"), torch.randn(16, 32, generator=g).to("tpu"),
                    torch.randn(8, 16, generator=g).to("tpu"))
    with torch_tpu.eager_mode("debug", check_finite=True, compare_cpu=True):
        losses, _ = float8_train_steps(x, w, target)
        assert bool(torch.isfinite(losses).all())
        with pytest.raises(RuntimeError, match="aten.log.default produced NaN or Inf"):
            (x.to(torch.float8_e4m3fn).float() - 10).log()


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_multiply_saturates_like_cpu(dtype):
    x = torch.tensor([288.0, 2.0, -300.0, 0.5, 1e-3]).to(dtype)
    y = torch.tensor([2.0, 2.0, 2.0, -3.0, 7.0]).to(dtype)
    assert_same_float8((x.to("tpu") * y.to("tpu")), x * y)


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_python_numbers_meet_float8_as_cpu_casts_them(dtype):
    x = f8_sample(dtype, 3, 4)
    mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(1)) > 0.5
    for value in [-math.inf, 1e6, 0.3]:
        assert_same_float8(torch.where(mask.to("tpu"), x.to("tpu"), value), torch.where(mask, x, value))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_max_and_min_over_types_without_infinity(dtype):
    x = f8_sample(dtype, 4, 6)
    t = x.to("tpu")
    assert_same_float8(t.amax(1), x.float().amax(1).to(dtype))
    assert_same_float8(t.amin(), x.float().amin().to(dtype))
    assert torch.equal(t.argmax(1).cpu(), x.float().argmax(1))
    assert_same_float8(torch.nn.functional.max_pool1d(t[None], 2)[0], torch.nn.functional.max_pool1d(x.float()[None], 2)[0].to(dtype))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_double_sources_round_through_float_as_c10_does(dtype):
    x = torch.tensor([1.0625 + 2**-40, -1.0625 - 2**-40, 0.3, 3.0 + 2**-30], dtype=torch.float64)
    assert_same_float8(x.to("tpu").to(dtype), x.to(dtype))


def test_an_overflowing_python_float_wrapped_for_an_op_casts_like_cpu():
    # CPU wraps it without fill_'s overflow check: inf in f16; integers keep the check.
    mask = torch.tensor([True, False])
    x = torch.zeros(2, dtype=torch.float16)
    assert torch.equal(torch.where(mask.to("tpu"), x.to("tpu"), 1e6).cpu(), torch.where(mask, x, 1e6))
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.where(mask.to("tpu"), torch.zeros(2, dtype=torch.int8, device="tpu"), 1000)


@pytest.mark.parametrize("dtype", F8, ids=IDS)
def test_infinity_tests_and_nan_to_num_over_every_bit_pattern(dtype):
    # CPU has no float8 kernels for these: the reference is the f32 value.
    # Types without an infinity hold none (their largest value is finite).
    x = all_patterns(dtype)
    t = x.to("tpu")
    wide = x.float()
    for op in (torch.isinf, torch.isposinf, torch.isneginf, torch.isnan):
        assert torch.equal(op(t).cpu(), op(wide)), op.__name__
    number = ~wide.isnan()  # (a NaN's sign is the encoding's business)
    assert torch.equal(torch.signbit(t).cpu()[number], torch.signbit(wide)[number])
    big = torch.finfo(dtype).max
    expected = torch.nan_to_num(wide, nan=0.0, posinf=big, neginf=-big).to(dtype)
    assert torch.equal(bits(torch.nan_to_num(t)), expected.view(torch.uint8))
    expected = torch.nan_to_num(wide, nan=1.0, posinf=2.0, neginf=-2.0).to(dtype)
    assert torch.equal(bits(torch.nan_to_num(t, 1.0, 2.0, -2.0)), expected.view(torch.uint8))


@pytest.mark.parametrize("dtype", F8, ids=IDS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_every_value(dtype, descending):
    # e5m2fnuz's smallest normals are f16 subnormals, which XLA's CPU
    # compiler flushed when it compared them as f16.
    x = all_patterns(dtype)
    x = x[torch.randperm(256, generator=torch.Generator().manual_seed(0))]
    values, indices = x.to("tpu").sort(descending=descending, stable=True)
    want_values, want_indices = x.float().sort(descending=descending, stable=True)
    assert torch.equal(values.cpu().float().nan_to_num(7.0), want_values.nan_to_num(7.0))
    assert torch.equal(indices.cpu(), want_indices)
