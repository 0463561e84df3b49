"""StableHLO builder: reductions, sorting, control flow, linear algebra, FFT,
random bits and collectives, each run on the plugin and checked against
NumPy or torch on CPU. Collectives are only compiled (the Python execute API
runs on one device)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hlo_testing import bf16_bits, build, call, from_bf16_bits
from torch_tpu._C import hlo


def _add(B, args):
    return [B.add(args[0], args[1])]


def _max(B, args):
    return [B.maximum(args[0], args[1])]


# ---- reduce ------------------------------------------------------------------------------

def test_reduce_sum_and_max(run, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xi = rng.integers(-100, 100, (4, 6)).astype(np.int32)
    empty = np.zeros((0, 3), np.float32)

    def program(B, a, ai, e, s):
        zero, ninf = B.constant(0.0, "f32"), B.constant(float("-inf"), "f32")
        return [
            B.reduce([a], [zero], [0], _add)[0],
            B.reduce([a], [zero], [0, 2], _add)[0],
            B.reduce([a], [zero], [0, 1, 2], _add)[0],
            B.reduce([a], [ninf], [1], _max)[0],
            B.reduce([a], [zero], [], _add)[0],                  # no dims: identity
            B.reduce([ai], [B.constant(0, "s32")], [1], _add)[0],
            B.reduce([e], [zero], [0], _add)[0],                  # empty: the init value
            B.reduce([e], [ninf], [0], _max)[0],
            B.reduce([s], [zero], [], _add)[0],                   # 0-dim input
        ]

    outs = call(run, program, x, xi, empty, np.float32(2.5))
    expected = [x.sum(0), x.sum((0, 2)), np.float32(x.sum()), x.max(1), x, xi.sum(1, dtype=np.int32),
                np.zeros(3, np.float32), np.full(3, -np.inf, np.float32), np.float32(2.5)]
    for k, (out, want) in enumerate(zip(outs, expected)):
        assert out.dtype == np.asarray(want).dtype and out.shape == np.shape(want), k
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5, err_msg=str(k))


def test_reduce_two_inputs_argmax(run):
    # (value, index) pairs reduced together: the largest value, the first index on ties.
    x = np.array([[1, 5, 5, 2, 0, 5], [-1, -3, -1, -2, -7, -4], [0, 0, 0, 0, 0, 0]], np.float32)

    def argmax_body(B, args):
        av, ai, bv, bi = args
        a_wins = B.or_(B.compare(av, bv, "GT"),
                       B.and_(B.compare(av, bv, "EQ"), B.compare(ai, bi, "LT")))
        return [B.select(a_wins, av, bv), B.select(a_wins, ai, bi)]

    values, indices = call(run, lambda B, a: B.reduce(
        [a, B.iota("s32", [3, 6], 1)],
        [B.constant(float("-inf"), "f32"), B.constant(2**31 - 1, "s32")], [1], argmax_body), x)
    np.testing.assert_array_equal(values, x.max(1))
    np.testing.assert_array_equal(indices, x.argmax(1))
    assert indices.dtype == np.int32


# ---- reduce_window -----------------------------------------------------------------------

def test_reduce_window_max_pool(run, rng):
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    (out,) = call(run, lambda B, a: B.reduce_window(
        [a], [B.constant(float("-inf"), "f32")], [1, 1, 2, 2], [1, 1, 2, 2], [], [], [], _max), x)
    np.testing.assert_array_equal(out, F.max_pool2d(torch.from_numpy(x), 2, 2).numpy())


def test_reduce_window_sum_with_padding_and_dilation(run, rng):
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    v = np.arange(8, dtype=np.int32)
    pooled, dilated, base_dilated = call(run, lambda B, a, b: [
        B.reduce_window([a], [B.constant(0.0, "f32")], [1, 1, 3, 3], [1, 1, 1, 1], [], [],
                        [(0, 0), (0, 0), (1, 1), (1, 1)], _add)[0],
        # window dilation 2: sums v[i] + v[i + 2] with stride 3
        B.reduce_window([b], [B.constant(0, "s32")], [2], [3], [], [2], [], _add)[0],
        # base dilation 2: windows of 3 over v with a hole (the init value) between elements
        B.reduce_window([b], [B.constant(0, "s32")], [3], [1], [2], [], [], _add)[0],
    ], x, v)
    want = F.avg_pool2d(torch.from_numpy(x), 3, 1, padding=1, count_include_pad=True).numpy() * 9
    np.testing.assert_allclose(pooled, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dilated, [v[i] + v[i + 2] for i in range(0, 6, 3)])
    holes = np.zeros(15, np.int32)
    holes[::2] = v
    np.testing.assert_array_equal(base_dilated, [holes[i:i + 3].sum() for i in range(13)])


# ---- sort and top_k ----------------------------------------------------------------------

def test_sort_one_input(run, rng):
    x = rng.standard_normal((3, 6)).astype(np.float32)
    xi = rng.integers(-5, 5, (4,)).astype(np.int64)
    outs = call(run, lambda B, a, b, e: [
        B.sort([a], 1, False, lambda B, c: [B.compare(c[0], c[1], "LT")])[0],
        B.sort([a], 0, False, lambda B, c: [B.compare(c[0], c[1], "GT")])[0],  # descending
        B.sort([b], 0, True, lambda B, c: [B.compare(c[0], c[1], "LT")])[0],
        B.sort([e], 1, True, lambda B, c: [B.compare(c[0], c[1], "LT")])[0],
    ], x, xi, np.zeros((0, 4), np.float32))
    np.testing.assert_array_equal(outs[0], np.sort(x, 1))
    np.testing.assert_array_equal(outs[1], -np.sort(-x, 0))
    np.testing.assert_array_equal(outs[2], np.sort(xi))
    assert outs[3].shape == (0, 4)


def test_sort_keys_and_values_stable(run, rng):
    keys = rng.integers(0, 4, (2, 12)).astype(np.int32)  # many duplicates
    sorted_keys, values = call(run, lambda B, k: B.sort(
        [k, B.iota("s32", [2, 12], 1)], 1, True, lambda B, c: [B.compare(c[0], c[1], "LT")]), keys)
    order = np.argsort(keys, axis=1, kind="stable")
    np.testing.assert_array_equal(values, order)
    np.testing.assert_array_equal(sorted_keys, np.take_along_axis(keys, order, 1))


def test_top_k(run, rng):
    x = rng.permutation(16).reshape(2, 8).astype(np.float32) - 4.5
    xi = np.array([3, 9, -2, 7, 0], np.int32)
    v, i, vi, ii, v0, i0 = call(run, lambda B, a, b: [*B.top_k(a, 3), *B.top_k(b, 5), *B.top_k(a, 0)],
                                x, xi)
    want = torch.topk(torch.from_numpy(x), 3)
    np.testing.assert_array_equal(v, want.values.numpy())
    np.testing.assert_array_equal(i, want.indices.numpy())
    assert i.dtype == np.int32
    np.testing.assert_array_equal(vi, np.sort(xi)[::-1])
    np.testing.assert_array_equal(ii, np.argsort(-xi, kind="stable"))
    assert v0.shape == (2, 0) and i0.shape == (2, 0)


# ---- control flow ------------------------------------------------------------------------

def test_while_loop_factorial(run):
    def cond(B, args):
        return [B.compare(args[0], args[3], "LT")]

    def body(B, args):
        i, acc, vec, n = args
        i1 = B.add(i, B.constant(1, "s32"))
        return [i1, B.multiply(acc, B.convert(i1, "s64")),
                B.multiply(vec, B.constant(2.0, "f32", [3])), n]

    text = build(lambda B, n, v: B.while_loop([B.constant(0, "s32"), B.constant(1, "s64"), v, n],
                                              cond, body)[:3],
                 ("s32", ()), ("f32", (3,)))
    v = np.array([1.0, -0.5, 3.0], np.float32)
    for n in [0, 1, 5, 20]:
        count, fact, vec = run(text, np.int32(n), v)
        assert int(count) == n
        assert int(fact) == math.factorial(n)
        np.testing.assert_array_equal(vec, v * 2.0**n)


def test_case_runs_the_indexed_branch(run):
    x = np.array([1.0, 2.0, -3.0], np.float32)
    text = build(lambda B, i, a: B.case(i, [
        # branches take no block arguments (an empty list) but see @main's values
        lambda B, _: [B.add(a, B.constant(1.0, "f32", [3])), B.constant(10, "s32")],
        lambda B, _: [B.multiply(a, a), B.constant(11, "s32")],
        lambda B, _: [B.negate(a), B.constant(12, "s32")],
    ], [("f32", [3]), ("s32", [])]), ("s32", ()), ("f32", (3,)))
    # Out-of-range indices run the last branch.
    for index, branch in [(0, 0), (1, 1), (2, 2), (-1, 2), (7, 2)]:
        out, tag = run(text, np.int32(index), x)
        assert int(tag) == 10 + branch, index
        np.testing.assert_array_equal(out, [x + 1, x * x, -x][branch])


def test_nested_regions(run):
    # A while body holding a reduce (a region in a region), a multi-result op
    # and a case: checks nested printing and value scoping.
    def cond(B, args):
        return [B.compare(args[0], B.constant(3, "s32"), "LT")]

    def body(B, args):
        i, acc, x = args
        total = B.reduce([x], [B.constant(0.0, "f32")], [0], _add)[0]
        top, _ = B.top_k(x, 1)
        picked = B.case(i, [lambda B, _: [total], lambda B, _: [B.reshape(top, [])]], [("f32", [])])[0]
        return [B.add(i, B.constant(1, "s32")), B.add(acc, picked), x]

    x = np.array([1.0, 5.0, -2.0], np.float32)
    count, acc = call(run, lambda B, v: B.while_loop(
        [B.constant(0, "s32"), B.constant(0.0, "f32"), v], cond, body)[:2], x)
    assert count == 3
    # i = 0: sum (4); i = 1 and 2: the max (5; out-of-range runs the last branch)
    assert acc == np.float32(4 + 5 + 5)


def test_optimization_barrier(run):
    x = np.array([1.5, -2.0], np.float32)
    outs = call(run, lambda B, a, b, e: [*B.optimization_barrier([B.add(a, a), b, e])],
                x, np.int64(7), np.zeros((0,), np.int8))
    np.testing.assert_array_equal(outs[0], 2 * x)
    assert outs[1] == 7 and outs[1].dtype == np.int64
    assert outs[2].shape == (0,)


# ---- dot_general ---------------------------------------------------------------------------

def test_dot_general_f32(run, rng):
    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    a, b = f32(3, 4), f32(4, 5)
    ba, bb = f32(2, 3, 4), f32(2, 4, 5)
    ta, tb = f32(4, 3), f32(5, 4)
    u, w = f32(4), f32(4)
    outs = call(run, lambda B, a, b, ba, bb, ta, tb, u, w, k0, k1: [
        B.dot_general(a, b, lhs_contracting=[1], rhs_contracting=[0], precision="highest"),
        B.dot_general(ba, bb, lhs_batch=[0], rhs_batch=[0], lhs_contracting=[2],
                      rhs_contracting=[1], precision="highest"),
        B.dot_general(ta, tb, lhs_contracting=[0], rhs_contracting=[1], precision="high"),
        B.dot_general(u, w, lhs_contracting=[0], rhs_contracting=[0]),
        B.dot_general(u, w),                                              # outer product
        B.dot_general(k0, k1, lhs_contracting=[1], rhs_contracting=[0]),  # K = 0
    ], a, b, ba, bb, ta, tb, u, w, np.zeros((3, 0), np.float32), np.zeros((0, 2), np.float32))
    f64 = np.float64
    expected = [a.astype(f64) @ b, ba.astype(f64) @ bb, ta.T.astype(f64) @ tb.T,
                np.dot(u.astype(f64), w), np.outer(u.astype(f64), w), np.zeros((3, 2))]
    for k, (out, want) in enumerate(zip(outs, expected)):
        assert out.dtype == np.float32 and out.shape == want.shape, k
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5, err_msg=str(k))


def test_dot_general_bf16_to_f32_and_int(run, rng):
    a, b = rng.standard_normal((3, 8)), rng.standard_normal((8, 2))
    abits, bbits = bf16_bits(a), bf16_bits(b)
    ia, ib = rng.integers(-50, 50, (2, 3)).astype(np.int32), rng.integers(-50, 50, (3, 4)).astype(np.int32)
    f32_out, bf16_out, int_out = call(run, lambda B, x, y, p, q: [
        B.dot_general(x, y, lhs_contracting=[1], rhs_contracting=[0], precision="highest",
                      result_dtype="f32"),
        B.dot_general(x, y, lhs_contracting=[1], rhs_contracting=[0]),
        B.dot_general(p, q, lhs_contracting=[1], rhs_contracting=[0]),
    ], abits, bbits, ia, ib, dtypes=["bf16", "bf16", None, None])
    want = from_bf16_bits(abits).astype(np.float64) @ from_bf16_bits(bbits)
    assert f32_out.dtype == np.float32
    np.testing.assert_allclose(f32_out, want, rtol=1e-5, atol=1e-5)
    assert bf16_out.dtype == np.uint16  # bf16 bits
    np.testing.assert_allclose(from_bf16_bits(bf16_out), want, rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(int_out, ia @ ib)


# ---- convolution ---------------------------------------------------------------------------

CONV2D_CASES = {
    # id: (input shape, kernel shape, stride, padding per dim, dilation, groups)
    "basic": ((2, 3, 7, 8), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    "stride_padding": ((1, 3, 7, 8), (4, 3, 3, 2), (2, 1), (1, 2), (1, 1), 1),
    "dilation": ((1, 2, 9, 9), (3, 2, 3, 3), (1, 1), (2, 2), (2, 2), 1),
    "groups": ((2, 4, 5, 5), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    "depthwise": ((1, 3, 6, 6), (3, 1, 3, 3), (2, 2), (1, 1), (1, 1), 3),
    "empty_batch": ((0, 3, 5, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
}


@pytest.mark.parametrize("case", CONV2D_CASES)
def test_convolution_2d(run, rng, case):
    xs, ws, stride, pad, dilation, groups = CONV2D_CASES[case]
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    (out,) = call(run, lambda B, a, k: B.convolution(
        a, k, window_strides=list(stride), padding=[(p, p) for p in pad],
        rhs_dilation=list(dilation), feature_group_count=groups), x, w)
    want = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), stride=stride,
                    padding=pad, dilation=dilation, groups=groups).numpy()
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_convolution_asymmetric_padding_1d_transposed_and_batch_groups(run, rng):
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 3)).astype(np.float32)
    x1 = rng.standard_normal((2, 3, 10)).astype(np.float32)
    w1 = rng.standard_normal((5, 3, 4)).astype(np.float32)
    # conv_transpose1d(stride 2, padding 1) as a convolution with lhs_dilation
    xt = rng.standard_normal((1, 2, 4)).astype(np.float32)
    wt = rng.standard_normal((2, 3, 3)).astype(np.float32)  # [in, out, k] as torch keeps it
    wt_as_conv = np.ascontiguousarray(wt.transpose(1, 0, 2)[:, :, ::-1])
    # batch_group_count 2 (a weight gradient's form): batch half g meets kernel half g
    xb = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    wb = rng.standard_normal((6, 3, 3, 3)).astype(np.float32)
    asym, one_d, transposed, grouped = call(run, lambda B, a, k, a1, k1, at, kt, ab, kb: [
        B.convolution(a, k, padding=[(0, 1), (2, 0)]),
        B.convolution(a1, k1, window_strides=[2], padding=[(1, 1)]),
        B.convolution(at, kt, padding=[(1, 1)], lhs_dilation=[2]),
        B.convolution(ab, kb, batch_group_count=2),
    ], x, w, x1, w1, xt, wt_as_conv, xb, wb)
    xd = torch.from_numpy(x).double()
    want = F.conv2d(F.pad(xd, (2, 0, 0, 1)), torch.from_numpy(w).double()).numpy()
    np.testing.assert_allclose(asym, want, rtol=1e-4, atol=1e-4)
    want1 = F.conv1d(torch.from_numpy(x1).double(), torch.from_numpy(w1).double(), stride=2,
                     padding=1).numpy()
    np.testing.assert_allclose(one_d, want1, rtol=1e-4, atol=1e-4)
    want_t = F.conv_transpose1d(torch.from_numpy(xt).double(), torch.from_numpy(wt).double(),
                                stride=2, padding=1).numpy()
    assert transposed.shape == want_t.shape
    np.testing.assert_allclose(transposed, want_t, rtol=1e-4, atol=1e-4)
    xbd, wbd = torch.from_numpy(xb).double(), torch.from_numpy(wb).double()
    want_g = torch.cat([F.conv2d(xbd[2 * g:2 * g + 2], wbd[3 * g:3 * g + 3]) for g in range(2)], 1)
    assert grouped.shape == (2, 6, 3, 3)
    np.testing.assert_allclose(grouped, want_g.numpy(), rtol=1e-4, atol=1e-4)


# ---- cholesky, triangular_solve --------------------------------------------------------------

def _spd(rng, batch, n, dtype):
    m = rng.standard_normal((*batch, n, n))
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def test_cholesky(run, rng):
    a = _spd(rng, (), 4, np.float32)
    b = _spd(rng, (2,), 3, np.float64)
    lower, upper, batched = call(run, lambda B, x, y: [
        B.cholesky(x, True), B.cholesky(x, False), B.cholesky(y, True)], a, b)
    want = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_allclose(np.tril(lower), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.triu(upper), want.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.tril(batched), np.linalg.cholesky(b), rtol=1e-12)


def test_triangular_solve(run, rng):
    # The solve reads only the named triangle: the other one holds junk.
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b_left = rng.standard_normal((4, 3))
    b_right = rng.standard_normal((2, 4))
    ab = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    bb = rng.standard_normal((2, 3, 2))
    outs = call(run, lambda B, a, bl, br, ab, bb: [
        B.triangular_solve(a, bl, True, True, False, "none"),
        B.triangular_solve(a, bl, True, True, False, "transpose"),
        B.triangular_solve(a, bl, True, False, True, "none"),    # upper, unit diagonal
        B.triangular_solve(a, br, False, True, False, "none"),   # x @ L = b
        B.triangular_solve(a, br, False, False, False, "adjoint"),
        B.triangular_solve(ab, bb, True, True, False, "none"),
    ], a, b_left, b_right, ab, bb)
    lo, up = np.tril(a), np.triu(a)
    unit_up = up - np.diag(np.diag(a)) + np.eye(4)
    expected = [np.linalg.solve(lo, b_left), np.linalg.solve(lo.T, b_left),
                np.linalg.solve(unit_up, b_left), np.linalg.solve(lo.T, b_right.T).T,
                np.linalg.solve(up, b_right.T).T, np.linalg.solve(np.tril(ab), bb)]
    for k, (out, want) in enumerate(zip(outs, expected)):
        np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12, err_msg=str(k))


# ---- fft -------------------------------------------------------------------------------------

def test_fft(run, rng):
    c = (rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))).astype(np.complex64)
    r = rng.standard_normal((3, 8)).astype(np.float32)
    half = np.fft.rfft(rng.standard_normal((3, 8))).astype(np.complex64)
    c2 = rng.standard_normal((2, 4, 6)) + 1j * rng.standard_normal((2, 4, 6))
    outs = call(run, lambda B, c, r, h, c2: [
        B.fft(c, "fft", [8]), B.fft(c, "ifft", [8]), B.fft(r, "rfft", [8]),
        B.fft(h, "irfft", [8]), B.fft(c2, "fft", [4, 6]), B.fft(B.real(c2), "rfft", [4, 6]),
    ], c, r, half, c2)
    expected = [np.fft.fft(c), np.fft.ifft(c), np.fft.rfft(r), np.fft.irfft(half, 8),
                np.fft.fft2(c2), np.fft.rfft2(c2.real)]
    dtypes = [np.complex64, np.complex64, np.complex64, np.float32, np.complex128, np.complex128]
    for k, (out, want, dtype) in enumerate(zip(outs, expected, dtypes)):
        assert out.dtype == dtype and out.shape == want.shape, k
        tol = 1e-5 if dtype in (np.complex64, np.float32) else 1e-12
        np.testing.assert_allclose(out, want, rtol=tol, atol=10 * tol, err_msg=str(k))


# ---- rng_bit_generator -----------------------------------------------------------------------

def test_rng_bit_generator_three_fry(run):
    def program(B, state):
        s1, bits = B.rng_bit_generator(state, "u32", [4096], "three_fry")
        s2, more = B.rng_bit_generator(s1, "u64", [4, 4], "three_fry")
        return [s1, bits, s2, more]

    text = build(program, ("u64", (2,)))
    s1, bits, s2, more = run(text, np.array([42, 0], np.uint64))
    assert bits.dtype == np.uint32 and bits.shape == (4096,)
    assert more.dtype == np.uint64 and more.shape == (4, 4)
    assert s1.dtype == np.uint64 and s1.shape == (2,)
    assert not np.array_equal(s1, [42, 0]) and not np.array_equal(s1, s2)
    # Same state, same bits; another state, other bits.
    again = run(text, np.array([42, 0], np.uint64))
    for x, y in zip(again, [s1, bits, s2, more]):
        np.testing.assert_array_equal(x, y)
    other = run(text, np.array([43, 0], np.uint64))[1]
    assert np.mean(other == bits) < 0.01
    # Roughly uniform: every bit is set about half of the time.
    set_fraction = ((bits[:, None] >> np.arange(32, dtype=np.uint32)) & 1).mean(0)
    assert np.all(np.abs(set_fraction - 0.5) < 0.05), set_fraction
    assert abs(bits.astype(np.float64).mean() / 2**32 - 0.5) < 0.02
    assert len(np.unique(bits)) > 4000


def test_rng_bit_generator_philox_and_default(run):
    def program(B, s2, s3):
        return [*B.rng_bit_generator(s3, "u64", [512], "philox"),
                B.rng_bit_generator(s2, "u8", [2048], "default")[1],
                B.rng_bit_generator(s2, "u32", [], "philox")[1],
                B.rng_bit_generator(s2, "u16", [0, 3], "philox")[1]]

    state3, wide, narrow, scalar, empty = call(run, program, np.array([1, 2], np.uint64),
                                               np.array([7, 8, 9], np.uint64))
    assert state3.shape == (3,) and wide.dtype == np.uint64 and wide.shape == (512,)
    assert len(np.unique(wide)) == 512
    assert narrow.dtype == np.uint8 and abs(narrow.mean() - 127.5) < 8
    assert scalar.dtype == np.uint32 and scalar.shape == ()
    assert empty.dtype == np.uint16 and empty.shape == (0, 3)


@pytest.mark.parametrize("dtype", ["s32", "f32", "pred"])
def test_rng_bit_generator_produces_unsigned_bits_only(dtype):
    # XLA returns raw bits as unsigned integers whatever is declared, so the
    # builder refuses other result types rather than mis-declare them.
    b = hlo.Builder("rng")
    state = b.parameter("u64", [2])
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.rng_bit_generator: result"):
        b.rng_bit_generator(state, dtype, [4], "three_fry")


# ---- collectives (compile only) --------------------------------------------------------------

COLLECTIVES = {
    # id: (op, input type, program, result type)
    "all_reduce": ("all_reduce", ("f32", (4,)), lambda B, x: B.all_reduce(x, [[0, 1]], _add),
                   ("f32", (4,))),
    "all_reduce_all_replicas": ("all_reduce", ("s32", (2, 2)),
                                lambda B, x: B.all_reduce(x, [], _max), ("s32", (2, 2))),
    "all_reduce_global_ids": ("all_reduce", ("f32", (3,)), lambda B, x: B.all_reduce(
        x, [[0, 1]], _add, channel_id=1, use_global_device_ids=True), ("f32", (3,))),
    "all_gather": ("all_gather", ("f32", (2, 3)), lambda B, x: B.all_gather(x, 0, [[0, 1]]),
                   ("f32", (4, 3))),
    "all_gather_channel": ("all_gather", ("f32", (2, 3)), lambda B, x: B.all_gather(
        x, 1, [[0, 1]], channel_id=2, use_global_device_ids=True), ("f32", (2, 6))),
    "reduce_scatter": ("reduce_scatter", ("f32", (4, 3)),
                       lambda B, x: B.reduce_scatter(x, 0, [[0, 1]], _add), ("f32", (2, 3))),
    "all_to_all": ("all_to_all", ("f32", (4, 2)), lambda B, x: B.all_to_all(x, 0, 1, 2, [[0, 1]]),
                   ("f32", (2, 4))),
    "collective_permute": ("collective_permute", ("f32", (3,)), lambda B, x: B.collective_permute(
        x, [(0, 1), (1, 0)], channel_id=4), ("f32", (3,))),
}


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collective_compiles_for_two_replicas(client, name):
    # The Python execute API runs on one device, so these are only compiled.
    if len(client.devices()) < 2:
        pytest.skip("needs two devices")
    op, spec, fn, result = COLLECTIVES[name]
    text = build(fn, spec, name=name, num_replicas=2)
    assert "mhlo.num_replicas = 2" in text and f'"stablehlo.{op}"' in text
    exe = client.compile(text, num_replicas=2)
    assert exe.num_outputs == 1
    assert exe.output_shapes == [result]
