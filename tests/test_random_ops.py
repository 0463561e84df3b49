"""Random ops on the device's counter-based generator: statistics, ranges,
dtypes, user generators (seeding, state replay, counters that never
overlap), no recompiles when seeds or parameters change, in-place writes
through views, and CPU's errors."""

from __future__ import annotations

import math

import pytest
import torch

from torch_tpu import runtime

TPU = "tpu"
N = 100_000


def gen(seed):
    return torch.Generator(TPU).manual_seed(seed)


def same_error(fn, match=None):
    """fn("cpu") raises; fn("tpu") raises the same exception type."""
    with pytest.raises(Exception) as cpu:
        fn("cpu")
    with pytest.raises(type(cpu.value), match=match):
        out = fn(TPU)
        if isinstance(out, torch.Tensor):
            out.cpu()


def compiles():
    return runtime.cache_stats()["compiles"]


# ---- generators ------------------------------------------------------------


def test_tpu_generators():
    for g in (torch.Generator(TPU), torch.Generator(device="tpu:0"), torch.Generator(device=torch.device(TPU))):
        assert g.device.type == TPU
        g.manual_seed(11)
        assert g.initial_seed() == 11
        a = torch.rand(64, device=TPU, generator=g).cpu()
        g.manual_seed(11)
        assert torch.equal(torch.rand(64, device=TPU, generator=g).cpu(), a)


def test_same_seed_same_numbers_and_calls_differ():
    g1, g2 = gen(5), gen(5)
    a = torch.randn(1000, device=TPU, generator=g1).cpu()
    b = torch.randn(1000, device=TPU, generator=g2).cpu()
    assert torch.equal(a, b)
    c = torch.randn(1000, device=TPU, generator=g1).cpu()
    assert not torch.equal(a, c)
    d = torch.randn(1000, device=TPU, generator=gen(6)).cpu()
    assert not torch.equal(a, d)


def test_counters_advance_and_never_overlap():
    g = gen(123)
    a = torch.rand(1000, device=TPU, generator=g).cpu()
    assert g.get_offset() == 1000
    b = torch.rand(3000, device=TPU, generator=g).cpu()
    assert g.get_offset() == 4000
    torch.randn(10, device=TPU, generator=g)
    assert g.get_offset() == 4020  # normal draws two counters per element
    # streams of consecutive calls share no values (24 random bits each:
    # a chance match among these pairs is ~1e-1 likely per 1e7 pairs)
    assert len(set(a.tolist()) & set(b.tolist())) <= 2
    g.set_offset(1000)
    assert torch.equal(torch.rand(3000, device=TPU, generator=g).cpu(), b)


def test_state_replay():
    g = gen(99)
    torch.rand(7, device=TPU, generator=g)
    state = g.get_state()
    x = torch.randint(0, 1000, (50,), device=TPU, generator=g).cpu()
    y = torch.empty(20, device=TPU).normal_(generator=g).cpu()
    g.set_state(state)
    assert torch.equal(torch.randint(0, 1000, (50,), device=TPU, generator=g).cpu(), x)
    assert torch.equal(torch.empty(20, device=TPU).normal_(generator=g).cpu(), y)
    clone = g.clone_state()
    z = torch.rand(5, device=TPU, generator=g).cpu()
    g.graphsafe_set_state(clone)
    assert torch.equal(torch.rand(5, device=TPU, generator=g).cpu(), z)


def test_default_generator_seeding():
    torch.tpu.manual_seed(2024)
    a = torch.rand(100, device=TPU).cpu()
    torch.manual_seed(2024)
    b = torch.rand(100, device=TPU).cpu()
    assert torch.equal(a, b)
    state = torch.tpu.get_rng_state()
    c = torch.randn(100, device=TPU).cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(torch.randn(100, device=TPU).cpu(), c)
    assert not torch.equal(torch.randn(100, device=TPU).cpu(), c)


def test_a_cpu_generator_is_refused_as_cuda_refuses_it():
    with pytest.raises(RuntimeError, match="Expected a 'tpu' device type for generator but found 'cpu'"):
        torch.rand(3, device=TPU, generator=torch.Generator())
    x = torch.empty(3, device=TPU)
    with pytest.raises(RuntimeError, match="device type for generator"):
        x.normal_(generator=torch.Generator())
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.multinomial(torch.ones(3, device=TPU), 2, generator=torch.Generator())


def test_a_tpu_generator_given_to_a_cpu_op_is_refused_as_cuda_refuses_it():
    g = torch.Generator(device=TPU)
    for draw in (lambda: torch.randperm(5, generator=g), lambda: torch.rand(3, generator=g),
                 lambda: torch.randint(0, 9, (3,), generator=g), lambda: torch.empty(3).normal_(generator=g),
                 lambda: torch.multinomial(torch.ones(3), 2, generator=g)):
        with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'tpu'"):
            draw()


def test_no_recompile_when_seed_offset_or_parameters_change():
    x = torch.empty(256, device=TPU)
    xi = torch.empty(256, dtype=torch.int64, device=TPU)
    p = torch.full((256,), 0.5, device=TPU)

    def step(i, g):
        x.uniform_(-i, i + 1, generator=g)
        x.normal_(i, i + 1, generator=g)
        x.bernoulli_(1 / (i + 2), generator=g)
        x.exponential_(i + 1, generator=g)
        x.geometric_(1 / (i + 2), generator=g)
        x.log_normal_(i, i + 1, generator=g)
        x.cauchy_(i, i + 1, generator=g)
        xi.random_(-i, i + 5, generator=g)
        xi.random_(generator=g)
        torch.bernoulli(p, generator=g)
        torch.normal(p, i + 1.0, generator=g)
        torch.multinomial(p, 3, generator=g)
        torch.randperm(256, device=TPU, generator=g)
        torch.nn.functional.dropout(x, 0.1 * (i + 1))

    def round_(i):  # ends in a read: in fused mode each round is one graph
        step(i, gen(i))
        step(i, None)
        x.cpu()

    round_(0)  # x and xi are still unwritten here: a program of its own
    round_(1)
    before = compiles()
    for i in range(2, 5):
        round_(i)
    assert compiles() == before


# ---- uniform -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_uniform_statistics_and_range(dtype):
    x = torch.empty(N, dtype=dtype, device=TPU).uniform_(-2, 3, generator=gen(1)).cpu()
    assert x.dtype == dtype
    assert x.min() >= -2 and x.max() < 3
    x = x.double()
    assert abs(x.mean().item() - 0.5) < 0.03
    assert abs(x.var().item() - 25 / 12) < 0.06
    u = torch.rand(N, dtype=dtype, device=TPU).cpu()
    assert u.min() >= 0 and u.max() < 1
    assert len(u.unique()) > (100 if dtype == torch.bfloat16 else 1000)


def test_uniform_rounding_never_reaches_to():
    # bf16 has 8 bits: a draw just below 1 rounds up to 1 unless turned back
    x = torch.empty(N, dtype=torch.bfloat16, device=TPU).uniform_(0, 1).cpu()
    assert x.max() < 1
    x = torch.empty(1000, device=TPU).uniform_(1.5, 1.5).cpu()
    assert torch.all(x == 1.5)


def test_uniform_writes_through_views():
    base = torch.zeros(40, 50, device=TPU)
    t = base.t()
    t.uniform_(1, 2)
    b = base.cpu()
    assert b.min() >= 1 and b.max() < 2
    z = torch.zeros(10, device=TPU)
    z[::2].uniform_(5, 6)
    z = z.cpu()
    assert torch.all(z[1::2] == 0) and torch.all(z[::2] >= 5)


def test_zero_dim_and_empty():
    s = torch.empty((), device=TPU).uniform_(3, 4).cpu()
    assert s.shape == () and 3 <= s.item() < 4
    assert torch.randn((), device=TPU).cpu().shape == ()
    assert torch.rand(0, 3, device=TPU).cpu().shape == (0, 3)
    assert torch.randn(0, device=TPU).cpu().shape == (0,)
    assert torch.randint(0, 5, (0,), device=TPU).cpu().shape == (0,)
    assert torch.empty(0, device=TPU).bernoulli_(0.5).cpu().shape == (0,)
    assert torch.empty(0, device=TPU).exponential_().cpu().shape == (0,)
    assert torch.randperm(0, device=TPU).cpu().shape == (0,)
    g = gen(0)
    torch.rand(0, device=TPU, generator=g)
    assert g.get_offset() <= 1


def test_complex_uniform_and_normal():
    z = torch.randn(N, dtype=torch.complex64, device=TPU).cpu()
    assert z.dtype == torch.complex64
    assert abs(z.real.var().item() - 0.5) < 0.02 and abs(z.imag.var().item() - 0.5) < 0.02
    assert abs((z.real * z.imag).mean().item()) < 0.02
    u = torch.empty(1000, dtype=torch.complex64, device=TPU).uniform_(1, 2).cpu()
    assert u.real.min() >= 1 and u.imag.max() < 2


@pytest.mark.parametrize(
    "fn",
    [
        lambda d: torch.empty(3, device=d).uniform_(2, 1),
        lambda d: torch.empty(3, device=d).uniform_(float("-inf"), 1),
        lambda d: torch.empty(3, dtype=torch.half, device=d).uniform_(-6e4, 6e4),
        lambda d: torch.empty(3, dtype=torch.long, device=d).uniform_(),
        lambda d: torch.empty(3, dtype=torch.bool, device=d).uniform_(),
        lambda d: torch.empty(3, device=d).normal_(0, -1),
        lambda d: torch.empty(3, dtype=torch.int32, device=d).normal_(),
        lambda d: torch.normal(torch.zeros(3, dtype=torch.long, device=d), 1.0),
        lambda d: torch.normal(torch.zeros(3, device=d), -1.0),
        lambda d: torch.empty(3, device=d).bernoulli_(1.5),
        lambda d: torch.empty(3, device=d).bernoulli_(-0.1),
        lambda d: torch.empty(3, device=d).bernoulli_(torch.ones(2, device=d)),
        lambda d: torch.bernoulli(torch.ones(3, dtype=torch.long, device=d)),
        lambda d: torch.empty(3, device=d).exponential_(0),
        lambda d: torch.empty(3, dtype=torch.long, device=d).exponential_(),
        lambda d: torch.empty(3, device=d).geometric_(0),
        lambda d: torch.empty(3, device=d).geometric_(1),
        lambda d: torch.empty(3, dtype=torch.bool, device=d).geometric_(0.5),
        lambda d: torch.empty(3, device=d).log_normal_(0, 0),
        lambda d: torch.empty(3, dtype=torch.long, device=d).log_normal_(),
        lambda d: torch.empty(3, device=d).cauchy_(0, 0),
        lambda d: torch.empty(3, dtype=torch.long, device=d).cauchy_(),
        lambda d: torch.empty(3, device=d).random_(3, 3),
        lambda d: torch.empty(3, dtype=torch.uint8, device=d).random_(-1, 3),
        lambda d: torch.empty(3, dtype=torch.bool, device=d).random_(0, 3),
        lambda d: torch.empty(3, dtype=torch.half, device=d).random_(60000, None),
        lambda d: torch.empty(3, dtype=torch.uint32, device=d).random_(),
        lambda d: torch.empty(3, dtype=torch.complex64, device=d).random_(),
        lambda d: torch.randint(3, 3, (2,), device=d),
        lambda d: torch.randperm(-1, device=d),
        lambda d: torch.randperm(3000, dtype=torch.half, device=d),
        lambda d: torch.randperm(300, dtype=torch.int8, device=d),
        lambda d: torch.randperm(3, dtype=torch.bool, device=d),
        lambda d: torch.multinomial(torch.tensor(1.0, device=d), 2, True),
        lambda d: torch.multinomial(torch.ones(2, 2, 2, device=d), 2, True),
        lambda d: torch.multinomial(torch.ones(3, dtype=torch.long, device=d), 2, True),
        lambda d: torch.multinomial(torch.ones(3, device=d), 0),
        lambda d: torch.multinomial(torch.ones(3, device=d), 4),
        lambda d: torch.multinomial(torch.ones(2, 0, device=d), 2, True),
        lambda d: torch.multinomial(torch.ones(3, device=d), 2, out=torch.empty(2, device=d)),
    ],
)
def test_errors_like_cpu(fn):
    same_error(fn)


# ---- normal ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_normal_statistics(dtype):
    x = torch.empty(N, dtype=dtype, device=TPU).normal_(3, 2, generator=gen(2)).cpu().double()
    assert abs(x.mean().item() - 3) < 0.04
    assert abs(x.std().item() - 2) < 0.04
    # tails: about 4.55% outside two standard deviations
    assert abs(((x - 3).abs() > 4).double().mean().item() - 0.0455) < 0.005
    z = torch.randn(N, dtype=dtype, device=TPU).cpu().double()
    assert abs(z.mean().item()) < 0.02 and abs(z.std().item() - 1) < 0.02


def test_normal_tensor_forms():
    mean = torch.arange(4.0).reshape(4, 1).expand(4, 20_000).contiguous()
    std = torch.tensor([0.5, 1.0, 2.0, 3.0]).reshape(4, 1)
    x = torch.normal(mean.to(TPU), std.to(TPU), generator=gen(3)).cpu()
    assert x.shape == (4, 20_000)
    torch.testing.assert_close(x.mean(1), torch.arange(4.0), atol=0.1, rtol=0)
    torch.testing.assert_close(x.std(1), std.flatten(), atol=0.1, rtol=0)

    x = torch.normal(torch.full((N,), 5.0, device=TPU), 0.5).cpu()
    assert abs(x.mean() - 5) < 0.02 and abs(x.std() - 0.5) < 0.02
    x = torch.normal(-1.0, torch.full((N,), 2.0, dtype=torch.float64, device=TPU)).cpu()
    assert x.dtype == torch.float64 and abs(x.mean() + 1) < 0.04 and abs(x.std() - 2) < 0.04
    x = torch.normal(2.0, 3.0, (300, 300), device=TPU, generator=gen(4)).cpu()
    assert x.shape == (300, 300) and abs(x.mean() - 2) < 0.05 and abs(x.std() - 3) < 0.05
    # dtypes and shapes as CPU gives them
    for args in [
        (torch.zeros(3), torch.ones(2, 1, dtype=torch.double)),
        (2.0, torch.ones(2, 1, dtype=torch.half)),
    ]:
        expected = torch.normal(*args)
        actual = torch.normal(*[a.to(TPU) if isinstance(a, torch.Tensor) else a for a in args]).cpu()
        assert actual.shape == expected.shape and actual.dtype == expected.dtype


def test_normal_out_forms():
    out = torch.empty(0, device=TPU)
    torch.normal(torch.zeros(5, device=TPU), torch.ones(5, device=TPU), out=out)
    assert out.shape == (5,)
    out = torch.empty(2, 3, device=TPU)
    torch.normal(torch.zeros(3, device=TPU), 1.0, out=out)
    assert out.cpu().shape == (2, 3)
    out = torch.empty(4, device=TPU)
    torch.normal(1.0, torch.ones(4, device=TPU), out=out)
    torch.normal(1.0, 2.0, (7,), out=out)
    assert out.cpu().shape == (7,)
    # a 0-dim CPU std (a wrapped number) is a scalar
    x = torch.normal(torch.zeros(3, device=TPU), torch.tensor(2.0)).cpu()
    assert x.shape == (3,)


def test_normal_negative_std_tensor_raises_at_sync():
    std = torch.tensor([1.0, -1.0, 2.0], device=TPU)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(torch.zeros(3, device=TPU), std).cpu()
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.normal(0.0, torch.tensor([float("nan")], device=TPU)).cpu()
    torch.normal(0.0, torch.zeros(3, device=TPU)).cpu()  # fine after the error


def test_randn_like_and_rand_like():
    base = torch.zeros(200, 300, dtype=torch.bfloat16, device=TPU)
    r = torch.rand_like(base).cpu()
    assert r.dtype == torch.bfloat16 and r.shape == (200, 300) and r.min() >= 0 and r.max() < 1
    n = torch.randn_like(base, dtype=torch.float64).cpu()
    assert n.dtype == torch.float64 and abs(n.mean()) < 0.02
    i = torch.randint_like(base, 3, 9).cpu()
    assert i.dtype == torch.bfloat16 and i.min() == 3 and i.max() == 8
    i = torch.randint_like(torch.zeros(1000, dtype=torch.int32, device=TPU), 4).cpu()
    assert set(i.tolist()) == {0, 1, 2, 3}


# ---- random_ / randint ---------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,low,high",
    [
        (torch.int64, -7, 5),
        (torch.int32, 0, 3),
        (torch.int16, -100, 100),
        (torch.int8, -128, 128),
        (torch.uint8, 0, 256),
        (torch.bool, 0, 2),
        (torch.float32, -50, 50),
        (torch.float64, 0, 1000),
        (torch.float16, -10, 10),
        (torch.bfloat16, 0, 200),
        (torch.uint32, 5, 9),
    ],
)
def test_randint_range_and_uniformity(dtype, low, high):
    x = torch.randint(low, high, (N,), dtype=dtype, device=TPU, generator=gen(7)).cpu()
    assert x.dtype == dtype
    v = x.to(torch.int64) if dtype != torch.bool else x.long()
    assert v.min() == low and v.max() == high - 1
    counts = torch.bincount(v - low, minlength=high - low).double()
    expected = N / (high - low)
    assert (counts - expected).abs().max() < 6 * math.sqrt(expected) + 1


@pytest.mark.parametrize(
    "dtype,top",
    [
        (torch.int64, 2**63 - 1),
        (torch.int32, 2**31 - 1),
        (torch.int16, 2**15 - 1),
        (torch.uint8, 255),
        (torch.int8, 127),
        (torch.bool, 1),
        (torch.float32, 2**24),
        (torch.float64, 2**53),
        (torch.float16, 2**11),
        (torch.bfloat16, 2**8),
    ],
)
def test_random_plain_range(dtype, top):
    x = torch.empty(20_000, dtype=dtype, device=TPU).random_().cpu()
    v = x.double()
    assert v.min() >= 0 and v.max() <= top
    assert v.max() > top * 0.9  # the whole range is used
    if dtype.is_floating_point:
        assert torch.equal(v, v.floor())


def test_random_from_to_forms():
    x = torch.empty(N, dtype=torch.int64, device=TPU).random_(-(2**63), None).cpu()
    assert (x < 0).any() and (x > 0).any() and x.min() < -(2**62) and x.max() > 2**62
    x = torch.empty(10_000, dtype=torch.int8, device=TPU).random_(-128, None).cpu()
    assert x.min() == -128 and x.max() == 127
    x = torch.empty(10_000, dtype=torch.int64, device=TPU).random_(2**40, None).cpu()
    assert x.min() >= 2**40
    x = torch.empty(10_000, device=TPU).random_(7).cpu()
    assert x.min() == 0 and x.max() == 6
    x = torch.empty(10_000, dtype=torch.float64, device=TPU).random_(-(2**40), 2**40).cpu()
    assert x.min() >= -(2**40) and x.max() < 2**40 and torch.equal(x, x.floor())
    with pytest.warns(UserWarning, match="out of bounds"):  # as CPU warns
        x = torch.empty(10_000, dtype=torch.float16, device=TPU).random_(0, 65504).cpu()
    assert x.max() < 65504 and x.min() >= 0
    x = torch.empty(1000, dtype=torch.uint64, device=TPU).random_(3, 10).cpu()
    assert set(x.tolist()) == set(range(3, 10))


def test_random_writes_through_views():
    base = torch.zeros(30, 40, dtype=torch.int32, device=TPU)
    base.t().random_(1, 5)
    b = base.cpu()
    assert b.min() == 1 and b.max() == 4
    z = torch.zeros(20, dtype=torch.int64, device=TPU)
    z[5:15].random_(10, 20)
    z = z.cpu()
    assert torch.all(z[:5] == 0) and torch.all(z[15:] == 0) and z[5:15].min() >= 10


# ---- bernoulli ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int64, torch.bfloat16, torch.float64])
def test_bernoulli_scalar_p(dtype):
    x = torch.empty(N, dtype=dtype, device=TPU).bernoulli_(0.3, generator=gen(8)).cpu()
    assert x.dtype == dtype
    v = x.double()
    assert set(v.unique().tolist()) <= {0.0, 1.0}
    assert abs(v.mean().item() - 0.3) < 0.01
    assert torch.all(torch.empty(100, dtype=dtype, device=TPU).bernoulli_(0.0).cpu() == 0)
    assert torch.all(torch.empty(100, dtype=dtype, device=TPU).bernoulli_(1.0).cpu() == 1)


def test_bernoulli_tensor_p():
    p = torch.tensor([0.0, 1.0, 0.25, 0.75]).repeat(25_000)
    x = torch.bernoulli(p.to(TPU), generator=gen(9)).cpu()
    assert x.dtype == torch.float32
    r = x.reshape(-1, 4).mean(0)
    assert r[0] == 0 and r[1] == 1 and abs(r[2] - 0.25) < 0.015 and abs(r[3] - 0.75) < 0.015
    # bernoulli.p and the Tensor in-place form with broadcasting
    y = torch.bernoulli(torch.zeros(N, device=TPU), 0.6).cpu()
    assert abs(y.mean() - 0.6) < 0.01
    t = torch.empty(3, 20_000, dtype=torch.bool, device=TPU)
    t.bernoulli_(torch.tensor([[0.0], [0.5], [1.0]], device=TPU))
    m = t.cpu().double().mean(1)
    assert m[0] == 0 and m[2] == 1 and abs(m[1] - 0.5) < 0.02
    out = torch.empty(0, dtype=torch.float64, device=TPU)
    torch.bernoulli(torch.full((10,), 1.0, device=TPU), out=out)
    assert out.cpu().dtype == torch.float64 and torch.all(out.cpu() == 1)
    # a transposed destination
    base = torch.zeros(20, 30, device=TPU)
    base.t().bernoulli_(torch.ones(30, 20, device=TPU))
    assert torch.all(base.cpu() == 1)
    # p as a 0-dim CPU tensor
    torch.empty(5, device=TPU).bernoulli_(torch.tensor(0.5)).cpu()


def test_bernoulli_p_out_of_range_raises_at_sync():
    p = torch.tensor([0.5, 2.0], device=TPU)
    with pytest.raises(RuntimeError):
        torch.bernoulli(p).cpu()
    with pytest.raises(RuntimeError):
        torch.bernoulli(torch.tensor([float("nan")], device=TPU)).cpu()


def test_dropout_and_bernoulli_share_no_counters():
    torch.tpu.manual_seed(0)
    x = torch.ones(1000, device=TPU)
    a = torch.nn.functional.dropout(x, 0.5).cpu()
    b = torch.nn.functional.dropout(x, 0.5).cpu()
    assert not torch.equal(a, b)


# ---- exponential, geometric, log_normal, cauchy ------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_exponential(dtype):
    x = torch.empty(N, dtype=dtype, device=TPU).exponential_(2.0, generator=gen(10)).cpu()
    assert x.dtype == dtype and x.min() > 0 and torch.isfinite(x).all()
    x = x.double()
    assert abs(x.mean().item() - 0.5) < 0.015
    assert abs(x.std().item() - 0.5) < 0.02


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32, torch.float64])
def test_geometric(dtype):
    x = torch.empty(N, dtype=dtype, device=TPU).geometric_(0.25, generator=gen(11)).cpu()
    assert x.dtype == dtype
    v = x.double()
    assert v.min() >= 1 and torch.equal(v, v.floor())
    assert abs(v.mean().item() - 4) < 0.06
    assert abs((v == 1).double().mean().item() - 0.25) < 0.01


def test_log_normal():
    x = torch.empty(N, device=TPU).log_normal_(0.5, 0.25, generator=gen(12)).cpu()
    assert x.min() > 0
    y = x.log().double()
    assert abs(y.mean().item() - 0.5) < 0.01 and abs(y.std().item() - 0.25) < 0.01


def test_cauchy():
    x = torch.empty(N, device=TPU).cauchy_(1.0, 2.0, generator=gen(13)).cpu().double()
    assert abs(x.median().item() - 1.0) < 0.05
    q = torch.quantile(x[:50_000], torch.tensor([0.25, 0.75], dtype=torch.float64))
    torch.testing.assert_close(q, torch.tensor([-1.0, 3.0], dtype=torch.float64), atol=0.1, rtol=0)


# ---- multinomial ---------------------------------------------------------------


def test_multinomial_with_replacement_frequencies():
    p = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0])
    s = torch.multinomial(p.to(TPU), N, replacement=True, generator=gen(14)).cpu()
    assert s.dtype == torch.int64 and s.shape == (N,)
    freq = torch.bincount(s, minlength=5).double() / N
    assert freq[1] == 0 and freq[4] == 0
    torch.testing.assert_close(freq, p.double(), atol=0.01, rtol=0)
    # 2-D, unnormalized weights, each row its own distribution
    w = torch.tensor([[0.0, 0.0, 5.0], [1.0, 1.0, 0.0], [2.0, 0.0, 6.0]], dtype=torch.float64)
    s = torch.multinomial(w.to(TPU), 20_000, True).cpu()
    assert s.shape == (3, 20_000)
    assert torch.all(s[0] == 2) and torch.all(s[1] != 2) and torch.all(s[2] != 1)
    assert abs((s[2] == 2).double().mean().item() - 0.75) < 0.015
    s = torch.multinomial(torch.tensor([0.0, 3.0], dtype=torch.bfloat16, device=TPU), 10, True).cpu()
    assert torch.all(s == 1)


def test_multinomial_with_replacement_never_draws_zero_weight_categories():
    # Weights spanning many orders of magnitude: summed in another order,
    # the cdf of a zero-weight category once came out an ulp above its
    # predecessor's, and 500,000 draws hit such categories about 15 times
    # (masked tokens drawn by top-k sampling, for instance).
    p = torch.exp(torch.randn(65536, generator=torch.Generator().manual_seed(0)) * 3)
    p[1::4] = 0
    s = torch.multinomial(p.to(TPU), 500_000, replacement=True, generator=gen(3)).cpu()
    assert (p[s] == 0).sum() == 0
    c = torch.distributions.Categorical(probs=p.to(TPU)).sample((200_000,)).cpu()
    assert (p[c] == 0).sum() == 0


def test_multinomial_without_replacement():
    p = torch.rand(8, 50) + 0.01
    p[:, :10] = 0
    s = torch.multinomial(p.to(TPU), 40, generator=gen(15)).cpu()
    assert s.shape == (8, 40)
    for row in s:
        assert len(set(row.tolist())) == 40 and row.min() >= 10
    # the first draw follows p: the heaviest category wins most often
    w = torch.tensor([1.0, 2.0, 7.0])
    first = torch.multinomial(w.expand(10_000, 3).to(TPU), 2).cpu()[:, 0]
    freq = torch.bincount(first, minlength=3).double() / 10_000
    torch.testing.assert_close(freq, torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64), atol=0.02, rtol=0)
    s = torch.multinomial(torch.ones(6, device=TPU), 6).cpu()
    assert sorted(s.tolist()) == list(range(6))
    out = torch.empty(0, dtype=torch.int64, device=TPU)
    torch.multinomial(torch.ones(2, 5, device=TPU), 3, out=out)
    assert out.cpu().shape == (2, 3)
    assert torch.multinomial(torch.ones(0, 3, device=TPU), 2, True).cpu().shape == (0, 2)


@pytest.mark.parametrize("n,replacement", [(2, True), (1, True), (2, False)])
def test_multinomial_invalid_probabilities_raise_at_sync(n, replacement):
    for bad in ([1.0, -1.0, 0.0], [1.0, float("inf"), 0.0], [1.0, float("nan"), 0.0], [0.0, 0.0, 0.0]):
        with pytest.raises(RuntimeError) as cpu:
            torch.multinomial(torch.tensor(bad), n, replacement)
        with pytest.raises(RuntimeError) as tpu:
            torch.multinomial(torch.tensor(bad, device=TPU), n, replacement).cpu()
        assert str(tpu.value).splitlines()[0] == str(cpu.value).splitlines()[0]
    # the pending error is gone once raised
    torch.multinomial(torch.ones(3, device=TPU), n, replacement).cpu()


# ---- randperm ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float16, torch.uint8])
def test_randperm_is_a_permutation(dtype):
    n = 256 if dtype == torch.uint8 else 1000
    p = torch.randperm(n, dtype=dtype, device=TPU, generator=gen(16)).cpu()
    assert p.dtype == dtype
    assert torch.equal(p.long().sort().values, torch.arange(n))
    assert not torch.equal(p.long(), torch.arange(n))


def test_randperm_reproducible_and_varied():
    a = torch.randperm(500, device=TPU, generator=gen(17)).cpu()
    b = torch.randperm(500, device=TPU, generator=gen(17)).cpu()
    assert torch.equal(a, b)
    c = torch.randperm(500, device=TPU).cpu()
    d = torch.randperm(500, device=TPU).cpu()
    assert not torch.equal(c, d)
    # every position is uniform over the values
    first = torch.stack([torch.randperm(4, device=TPU) for _ in range(200)]).cpu()[:, 0]
    counts = torch.bincount(first, minlength=4)
    assert counts.min() > 25
    out = torch.empty(0, dtype=torch.int64, device=TPU)
    torch.randperm(9, out=out)
    assert sorted(out.cpu().tolist()) == list(range(9))


# ---- rejection samplers: gamma, dirichlet, poisson, binomial --------------------------------
# Fixed seeds, so these either always pass or always fail; the bounds are 6
# standard errors of the mean (and a loose variance check), so a wrong
# sampler fails them.


def _mean_var(x):
    x = x.cpu().double()
    return x.mean().item(), x.var().item()


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 2.5, 30.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_standard_gamma_statistics(alpha, dtype):
    n = 100_000
    g = torch.Generator("tpu").manual_seed(11)
    x = torch._standard_gamma(torch.full((n,), alpha, dtype=dtype, device="tpu"), generator=g)
    assert x.dtype == dtype and (x.cpu() > 0).all()
    mean, var = _mean_var(x)
    assert abs(mean - alpha) < 6 * math.sqrt(alpha / n)
    assert abs(var / alpha - 1) < 0.1


@pytest.mark.parametrize("rate", [0.0, 0.7, 4.0, 9.9, 10.0, 37.5, 1000.0])
def test_poisson_statistics(rate):
    # Both algorithms: Knuth's below 10, PTRS from 10.
    n = 100_000
    g = torch.Generator("tpu").manual_seed(12)
    x = torch.poisson(torch.full((n,), rate, device="tpu"), generator=g).cpu()
    assert (x == x.round()).all() and (x >= 0).all()
    mean, var = _mean_var(x)
    assert abs(mean - rate) <= 6 * math.sqrt(max(rate, 1e-12) / n)
    assert abs(var - rate) <= 0.1 * rate


@pytest.mark.parametrize("trials, prob", [(5, 0.3), (20, 0.2), (100, 0.5), (1000, 0.9), (50, 0.99), (7, 0.7),
                                          (1e6, 0.01), (10, 0.0), (10, 1.0), (0, 0.5)])
def test_binomial_statistics(trials, prob):
    # Inversion (count * min(p, 1 - p) < 10) and BTRS, both sides of 1/2.
    n = 100_000
    g = torch.Generator("tpu").manual_seed(15)
    x = torch.binomial(torch.full((n,), float(trials), device="tpu"), torch.full((n,), prob, device="tpu"),
                       generator=g).cpu()
    assert (x == x.round()).all() and (x >= 0).all() and (x <= trials).all()
    mean, var = _mean_var(x)
    expected_var = trials * prob * (1 - prob)
    assert abs(mean - trials * prob) <= 6 * math.sqrt(expected_var / n) + 1e-12
    assert abs(var - expected_var) <= 0.1 * expected_var + 1e-12


def test_binomial_broadcasts_and_dirichlet_of_one_category():
    x = torch.binomial(torch.tensor([10.0], device="tpu"), torch.full((2, 3), 0.5, device="tpu"))
    assert x.shape == (2, 3) and ((x.cpu() >= 0) & (x.cpu() <= 10)).all()
    # One category: CPU's clamp below 1 applies there too.
    assert torch._sample_dirichlet(torch.tensor(2.0, device="tpu")).item() == torch._sample_dirichlet(
        torch.tensor(2.0)).item()


def test_distributions_sample_on_device():
    n = 50_000
    torch.tpu.manual_seed(13)
    alpha = torch.tensor([0.3, 1.0, 4.0], device="tpu")
    d = torch.distributions.Dirichlet(alpha).sample((n,))
    assert d.device.type == "tpu"
    torch.testing.assert_close(d.sum(-1).cpu(), torch.ones(n), rtol=0, atol=1e-6)
    torch.testing.assert_close(d.mean(0).cpu(), (alpha / alpha.sum()).cpu(), rtol=0, atol=0.01)
    beta = torch.distributions.Beta(torch.tensor(2.0, device="tpu"), torch.tensor(5.0, device="tpu")).sample((n,))
    assert abs(beta.mean().item() - 2 / 7) < 0.01
    gamma = torch.distributions.Gamma(torch.tensor(3.0, device="tpu"), torch.tensor(2.0, device="tpu")).sample((n,))
    assert abs(gamma.mean().item() - 1.5) < 0.03
    pois = torch.distributions.Poisson(torch.tensor(6.0, device="tpu")).sample((n,))
    assert abs(pois.mean().item() - 6.0) < 0.1
    binom = torch.distributions.Binomial(10, torch.tensor(0.3, device="tpu")).sample((n,))
    assert abs(binom.mean().item() - 3.0) < 0.05


def test_rejection_samplers_reproduce_and_advance():
    g = torch.Generator("tpu").manual_seed(14)
    a = torch._standard_gamma(torch.ones(6, device="tpu"), generator=g)
    b = torch._standard_gamma(torch.ones(6, device="tpu"), generator=g)
    g.manual_seed(14)
    c = torch._standard_gamma(torch.ones(6, device="tpu"), generator=g)
    assert torch.equal(a.cpu(), c.cpu()) and not torch.equal(a.cpu(), b.cpu())


def test_rejection_sampler_edges_and_errors():
    x = torch._standard_gamma(torch.tensor([0.0, float("nan"), -1.0, 2.0], device="tpu")).cpu()
    # CPU's std::max(smallest normal, sample) also takes a NaN / negative concentration's NaN sample there.
    assert (x[:3] == torch.finfo(torch.float32).tiny).all() and x[3] > 0
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        torch.poisson(torch.tensor([-1.0, 2.0], device="tpu")).cpu()
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch._standard_gamma(torch.ones(3, dtype=torch.long, device="tpu"))
    assert torch.poisson(torch.empty(0, device="tpu")).shape == (0,)


def test_random_full_int64_range_only_into_cpus_dtypes():
    for dtype in (torch.int32, torch.uint8, torch.float16, torch.bool):
        same_error(lambda d: torch.empty(3, dtype=dtype, device=d).random_(-2**63, None),
                   match="random_full_64_bits_range_kernel")
    x = torch.empty(4000, dtype=torch.int64, device=TPU).random_(-2**63, None).cpu()
    assert (x < 0).any() and (x > 0).any() and x.abs().float().max() > 2.0**62


def test_normal_of_a_complex_mean():
    # As CPU: a complex standard normal (each part of variance 1/2) times
    # std, plus the mean.
    mean = torch.tensor([1 + 1j, 2j] * 10000, device=TPU)
    z = torch.normal(mean, 2.0, generator=gen(3))
    assert z.dtype == torch.complex64
    noise = (z - mean).cpu()
    for part in (noise.real, noise.imag):
        assert abs(part.mean().item()) < 0.05 and abs(part.std().item() - 2 / math.sqrt(2)) < 0.05
    z = torch.normal(mean[:4], torch.full((4,), 0.0, device=TPU))
    assert torch.equal(z.cpu(), mean[:4].cpu())
    same_error(lambda d: torch.normal(torch.tensor([1.0], device=d), torch.tensor([1 + 0j], device=d)))


def test_binomial_of_integer_counts_is_a_value_error():
    same_error(lambda d: torch.binomial(torch.tensor([5], device=d), torch.tensor([0.5], device=d)),
               match="floating-point dtypes for count")


@pytest.mark.parametrize("sampler", ["dirichlet", "binomial"])
def test_compiled_samplers_draw_as_eager(sampler):
    # Tracing must not run the sampler on the device generator.
    args = ((torch.ones(4, device=TPU),) if sampler == "dirichlet"
            else (torch.full((4,), 10.0, device=TPU), torch.full((4,), 0.3, device=TPU)))
    op = torch._sample_dirichlet if sampler == "dirichlet" else torch.binomial
    compiled = torch.compile(lambda *a: op(*a), backend="tpu")
    torch.manual_seed(0)
    first = compiled(*args)
    after_compiled = torch.tpu.get_rng_state()
    torch.manual_seed(0)
    assert torch.equal(first.cpu(), op(*args).cpu())
    assert torch.equal(after_compiled, torch.tpu.get_rng_state())


def test_standard_gamma_of_a_concentration_that_is_not_positive_is_the_smallest_normal():
    # CPU's std::max(smallest normal, sample) turns the NaN sample into it.
    alpha = torch.tensor([-1.0, 0.0, float("nan")])
    torch.testing.assert_close(torch._standard_gamma(alpha.to("tpu")).cpu(), torch._standard_gamma(alpha))


def test_bernoulli_takes_a_cpu_probability_tensor_as_cuda_does():
    p = torch.tensor([0.0, 1.0, 0.0, 1.0])
    got = torch.empty(2, 4, device=TPU).bernoulli_(p).cpu()
    assert torch.equal(got, p.expand(2, 4))


@pytest.mark.parametrize("call", [
    lambda t: torch.normal(t, t, out=torch.empty(3)),
    lambda t: torch.bernoulli(t * 0.5, out=torch.empty(3)),
    lambda t: torch.binomial(torch.ones(3), t * 0.5),
], ids=["normal_out", "bernoulli_out", "binomial"])
def test_random_op_mixing_devices_names_the_devices(call):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        call(torch.ones(3, device=TPU))


def test_rng_state_offset_helpers_as_in_torch_cuda():
    torch.tpu.manual_seed(5)
    start = torch.tpu._get_rng_state_offset()
    first = torch.rand(8, device=TPU).cpu()
    assert torch.tpu._get_rng_state_offset() > start
    torch.tpu._set_rng_state_offset(start)
    assert torch.equal(torch.rand(8, device=TPU).cpu(), first)


def test_bernoulli_into_a_cpu_tensor_with_a_tpu_probability_draws_on_the_cpu():
    # As CUDA's kernel does: self's device draws, p moved there.
    got = torch.zeros(4).bernoulli_(torch.tensor([0.0, 1.0, 0.0, 1.0], device=TPU))
    assert got.device.type == "cpu" and torch.equal(got, torch.tensor([0.0, 1.0, 0.0, 1.0]))


def test_randint_of_a_complex_dtype_is_refused_as_on_cpu():
    with pytest.raises(RuntimeError, match="check_random_bounds handles only integral"):
        torch.randint(0, 5, (3,), dtype=torch.complex64, device=TPU)
