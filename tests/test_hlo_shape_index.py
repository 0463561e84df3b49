"""StableHLO builder, shape and indexing families: broadcast_in_dim, reshape,
transpose, slice, dynamic_slice / dynamic_update_slice, concatenate, pad,
gather and scatter, each run on the plugin and checked against NumPy."""

from __future__ import annotations

import numpy as np

from hlo_testing import build, call


def test_broadcast_in_dim(run):
    v = np.array([1, 2, 3], np.float32)
    col = np.array([[1], [2], [3]], np.int32)
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = call(run, lambda B, a, c, s, x, e: [
        B.broadcast_in_dim(a, [2, 3], [1]),
        B.broadcast_in_dim(c, [3, 4], [0, 1]),        # size-1 dim expands
        B.broadcast_in_dim(s, [2, 2], []),            # 0-dim
        B.broadcast_in_dim(x, [3, 2, 4], [1, 0]),     # unsorted dims transpose
        B.broadcast_in_dim(e, [2, 0], [1]),           # zero-size
        B.broadcast_in_dim(c, [3, 0], [0, 1]),        # size 1 -> 0
    ], v, col, np.float32(7), m, np.zeros((0,), np.float32))
    np.testing.assert_array_equal(outs[0], np.broadcast_to(v, (2, 3)))
    np.testing.assert_array_equal(outs[1], np.broadcast_to(col, (3, 4)))
    np.testing.assert_array_equal(outs[2], np.full((2, 2), 7, np.float32))
    np.testing.assert_array_equal(outs[3], np.broadcast_to(m.T[:, :, None], (3, 2, 4)))
    assert outs[4].shape == (2, 0) and outs[5].shape == (3, 0)


def test_reshape(run):
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    outs = call(run, lambda B, a, one, s, e: [
        B.reshape(a, [6, 4]), B.reshape(a, [24]), B.reshape(a, [4, 1, 3, 2]),
        B.reshape(one, []), B.reshape(s, [1, 1]), B.reshape(e, [3, 0, 5]),
    ], x, np.array([5.0], np.float32), np.float32(2), np.zeros((0, 3), np.int8))
    for out, shape in zip(outs[:3], [(6, 4), (24,), (4, 1, 3, 2)]):
        np.testing.assert_array_equal(out, x.reshape(shape))
    assert outs[3].shape == () and outs[3] == 5
    np.testing.assert_array_equal(outs[4], [[2]])
    assert outs[5].shape == (3, 0, 5) and outs[5].dtype == np.int8


def test_transpose(run, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = np.arange(6, dtype=np.int64).reshape(2, 3)
    outs = call(run, lambda B, a, b, s, e: [
        B.transpose(a, [2, 0, 1]), B.transpose(a, [0, 1, 2]), B.transpose(b, [1, 0]),
        B.transpose(s, []), B.transpose(e, [1, 0]),
    ], x, m, np.float32(3), np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(outs[0], x.transpose(2, 0, 1))
    np.testing.assert_array_equal(outs[1], x)
    np.testing.assert_array_equal(outs[2], m.T)
    assert outs[3] == 3 and outs[4].shape == (3, 0)


def test_slice_with_strides(run):
    x = np.arange(42, dtype=np.float32).reshape(6, 7)
    outs = call(run, lambda B, a, s: [
        B.slice(a, [1, 0], [5, 7], [2, 3]),
        B.slice(a, [0, 2], [6, 3], [1, 1]),
        B.slice(a, [2, 0], [2, 7], [1, 1]),   # empty
        B.slice(a, [5, 6], [6, 7], [4, 4]),   # the last element
        B.slice(s, [], [], []),               # 0-dim
    ], x, np.float32(9))
    np.testing.assert_array_equal(outs[0], x[1:5:2, 0:7:3])
    np.testing.assert_array_equal(outs[1], x[:, 2:3])
    assert outs[2].shape == (0, 7)
    np.testing.assert_array_equal(outs[3], x[5:6, 6:7])
    assert outs[4] == 9


def _clamp_start(start, dim, size):
    return min(max(start, 0), dim - size)


def test_dynamic_slice_clamps_starts(run):
    # Out-of-range starts are clamped so the slice fits: [0, dim - size].
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    text = build(lambda B, a, i, j: [B.dynamic_slice(a, [i, j], [2, 3]),
                                     B.dynamic_slice(a, [i, j], [0, 6])],
                 ("f32", (5, 6)), ("s32", ()), ("s32", ()))
    for i, j in [(1, 2), (0, 0), (3, 3), (4, 5), (10, 1), (-2, -7), (2**31 - 1, -2**31)]:
        out, empty = run(text, x, np.int32(i), np.int32(j))
        ci, cj = _clamp_start(i, 5, 2), _clamp_start(j, 6, 3)
        np.testing.assert_array_equal(out, x[ci:ci + 2, cj:cj + 3], err_msg=f"starts {i}, {j}")
        assert empty.shape == (0, 6)


def test_dynamic_slice_index_types_and_zero_dim(run):
    x = np.arange(8, dtype=np.int32)
    outs = call(run, lambda B, a, i, u, s: [
        B.dynamic_slice(a, [i], [3]),
        B.dynamic_slice(a, [u], [3]),
        B.dynamic_slice(s, [], []),
    ], x, np.int64(6), np.uint32(2**32 - 1), np.float32(4))
    np.testing.assert_array_equal(outs[0], x[5:8])
    np.testing.assert_array_equal(outs[1], x[5:8])  # unsigned: huge, clamped to the end
    assert outs[2] == 4


def test_dynamic_update_slice_clamps_starts(run):
    x = np.zeros((5, 6), np.float32)
    u = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    text = build(lambda B, a, up, i, j: B.dynamic_update_slice(a, up, [i, j]),
                 ("f32", (5, 6)), ("f32", (2, 3)), ("s64", ()), ("s64", ()))
    for i, j in [(0, 0), (2, 1), (3, 3), (4, 5), (100, -3), (-1, 4)]:
        (out,) = run(text, x, u, np.int64(i), np.int64(j))
        ci, cj = _clamp_start(i, 5, 2), _clamp_start(j, 6, 3)
        want = x.copy()
        want[ci:ci + 2, cj:cj + 3] = u
        np.testing.assert_array_equal(out, want, err_msg=f"starts {i}, {j}")


def test_dynamic_update_slice_empty_and_zero_dim(run):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    outs = call(run, lambda B, a, e, i, s, t: [
        B.dynamic_update_slice(a, e, [i, i]),
        B.dynamic_update_slice(s, t, []),
    ], x, np.zeros((0, 2), np.int32), np.int32(1), np.float32(1), np.float32(5))
    np.testing.assert_array_equal(outs[0], x)
    assert outs[1] == 5


def test_concatenate(run, rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = np.zeros((2, 0), np.float32)
    c = rng.standard_normal((2, 1)).astype(np.float32)
    i, j = np.arange(4, dtype=np.int32).reshape(2, 2), np.arange(6, dtype=np.int32).reshape(3, 2)
    outs = call(run, lambda B, x, y, z, p, q: [
        B.concatenate([x, y, z], 1), B.concatenate([p, q, p], 0), B.concatenate([x], 0),
        B.concatenate([y, y], 0),
    ], a, b, c, i, j)
    np.testing.assert_array_equal(outs[0], np.concatenate([a, b, c], 1))
    np.testing.assert_array_equal(outs[1], np.concatenate([i, j, i], 0))
    np.testing.assert_array_equal(outs[2], a)
    assert outs[3].shape == (4, 0)


def _pad_reference(x, value, lows, highs, interiors):
    shape = [d + max(d - 1, 0) * k for d, k in zip(x.shape, interiors)]
    out = np.full(shape, value, x.dtype)
    out[tuple(slice(None, None, k + 1) for k in interiors)] = x
    for axis, (lo, hi) in enumerate(zip(lows, highs)):
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths, constant_values=value)
        index = [slice(None)] * out.ndim
        index[axis] = slice(max(-lo, 0), out.shape[axis] - max(-hi, 0))
        out = out[tuple(index)]
    return out


PAD_CASES = [
    ((1, 0), (0, 2), (0, 0)),      # edges
    ((1, 2), (2, 1), (1, 2)),      # edges + interior
    ((-1, 1), (1, -2), (0, 1)),    # negative edges crop
    ((-2, -1), (-1, -3), (2, 1)),  # crop into the interior padding
    ((0, 0), (0, 0), (0, 0)),
]


def test_pad(run, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    outs = call(run, lambda B, a, v, e, s: [B.pad(a, v, list(lo), list(hi), list(it))
                                          for lo, hi, it in PAD_CASES]
                + [B.pad(e, v, [1, 0], [1, 2], [3, 1]), B.pad(s, v, [], [], [])],
                x, np.float32(-9), np.zeros((0, 2), np.float32), np.float32(4))
    for (lo, hi, it), out in zip(PAD_CASES, outs):
        np.testing.assert_array_equal(out, _pad_reference(x, np.float32(-9), lo, hi, it),
                                      err_msg=f"pad {lo} {hi} {it}")
    want_empty = _pad_reference(np.zeros((0, 2), np.float32), np.float32(-9), [1, 0], [1, 2], [3, 1])
    assert want_empty.shape == (2, 5)
    np.testing.assert_array_equal(outs[-2], want_empty)
    assert outs[-1] == 4


def test_pad_integer(run):
    x = np.arange(1, 5, dtype=np.int64)
    (out,) = call(run, lambda B, a: B.pad(a, B.constant(0, "s64"), [2], [-1], [1]), x)
    np.testing.assert_array_equal(out, _pad_reference(x, 0, [2], [-1], [1]))


# ---- gather ----------------------------------------------------------------------------

def test_gather_embedding_rows(run, rng):
    table = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([4, 0, 2, 2], np.int32)
    ids2 = np.array([[1, 3], [0, 0]], np.int64)
    bad = np.array([7, -1, 100], np.int32)  # start indices clamp into range

    def rows(B, t, i):
        vector_dim = len(i.shape)  # == rank: each index is a scalar
        out_rank = len(i.shape) + 1
        return B.gather(t, i, offset_dims=[out_rank - 1], collapsed_slice_dims=[0],
                        start_index_map=[0], index_vector_dim=vector_dim, slice_sizes=[1, 3])

    outs = call(run, lambda B, t, a, b, c, e: [rows(B, t, a), rows(B, t, b), rows(B, t, c), rows(B, t, e)],
                table, ids, ids2, bad, np.zeros((0,), np.int32))
    np.testing.assert_array_equal(outs[0], table[ids])
    np.testing.assert_array_equal(outs[1], table[ids2])
    np.testing.assert_array_equal(outs[2], table[np.clip(bad, 0, 4)])
    assert outs[3].shape == (0, 3)


def test_gather_like_torch_gather(run, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    idx1 = rng.integers(0, 4, (3, 5)).astype(np.int32)   # torch.gather(x, 1, idx1)
    idx0 = rng.integers(0, 3, (2, 4)).astype(np.int32)   # torch.gather(x, 0, idx0)
    pairs = np.stack([np.broadcast_to(np.arange(3)[:, None], (3, 5)), idx1], -1).astype(np.int32)
    outs = call(run, lambda B, a, i1, i0, p: [
        # with batching dims: the batch dim rides along
        B.gather(a, i1, offset_dims=[], collapsed_slice_dims=[1], start_index_map=[1],
                 index_vector_dim=2, slice_sizes=[1, 1], operand_batching_dims=[0],
                 start_indices_batching_dims=[0]),
        B.gather(a, i0, offset_dims=[], collapsed_slice_dims=[0], start_index_map=[0],
                 index_vector_dim=2, slice_sizes=[1, 1], operand_batching_dims=[1],
                 start_indices_batching_dims=[1]),
        # the classic form: full (row, col) index vectors
        B.gather(a, p, offset_dims=[], collapsed_slice_dims=[0, 1], start_index_map=[0, 1],
                 index_vector_dim=2, slice_sizes=[1, 1]),
    ], x, idx1, idx0, pairs)
    np.testing.assert_array_equal(outs[0], np.take_along_axis(x, idx1, 1))
    np.testing.assert_array_equal(outs[1], np.take_along_axis(x, idx0, 0))
    np.testing.assert_array_equal(outs[2], np.take_along_axis(x, idx1, 1))


def test_gather_windows(run):
    # Batched dynamic_slice: a [2, 3] window at each (row, col) start, clamped.
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    starts = np.array([[0, 0], [1, 2], [3, 5], [-1, 4]], np.int32)
    (out,) = call(run, lambda B, a, s: B.gather(
        a, s, offset_dims=[1, 2], collapsed_slice_dims=[], start_index_map=[0, 1],
        index_vector_dim=1, slice_sizes=[2, 3]), x, starts)
    assert out.shape == (4, 2, 3)
    for k, (i, j) in enumerate(starts):
        ci, cj = _clamp_start(i, 4, 2), _clamp_start(j, 6, 3)
        np.testing.assert_array_equal(out[k], x[ci:ci + 2, cj:cj + 3])


# ---- scatter ---------------------------------------------------------------------------

def _add(B, args):
    return [B.add(args[0], args[1])]


def _overwrite(B, args):
    return [args[1]]


def test_scatter_add_accumulates_duplicates(run, rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([[1], [3], [1], [0], [1], [3]], np.int32)
    upd = rng.standard_normal((6, 3)).astype(np.float32)
    v = np.arange(6, dtype=np.int32)
    vidx = np.array([[5], [0], [5], [5]], np.int64)
    vupd = np.array([1, 2, 3, 4], np.int32)
    outs = call(run, lambda B, a, i, u, b, j, w, ei, eu: [
        B.scatter([a], i, [u], update_window_dims=[1], inserted_window_dims=[0],
                  scatter_dims_to_operand_dims=[0], index_vector_dim=1, body=_add)[0],
        B.scatter([b], j, [w], update_window_dims=[], inserted_window_dims=[0],
                  scatter_dims_to_operand_dims=[0], index_vector_dim=1, body=_add)[0],
        B.scatter([a], ei, [eu], update_window_dims=[1], inserted_window_dims=[0],
                  scatter_dims_to_operand_dims=[0], index_vector_dim=1, body=_add)[0],
    ], x, idx, upd, v, vidx, vupd, np.zeros((0, 1), np.int32), np.zeros((0, 3), np.float32))
    want = x.copy()
    np.add.at(want, idx[:, 0], upd)
    np.testing.assert_allclose(outs[0], want, rtol=1e-6)
    want_v = v.copy()
    np.add.at(want_v, vidx[:, 0], vupd)
    np.testing.assert_array_equal(outs[1], want_v)
    np.testing.assert_array_equal(outs[2], x)  # no updates


def test_scatter_overwrite_skips_out_of_bounds(run, rng):
    # An update whose window is out of bounds is skipped (XLA semantics).
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([4, 9, 0, -1], np.int32)
    upd = rng.standard_normal((4, 3)).astype(np.float32)
    (out,) = call(run, lambda B, a, i, u: B.scatter(
        [a], i, [u], update_window_dims=[1], inserted_window_dims=[0],
        scatter_dims_to_operand_dims=[0], index_vector_dim=1, body=_overwrite,
        unique_indices=True), x, idx, upd)
    want = x.copy()
    want[4], want[0] = upd[0], upd[2]
    np.testing.assert_array_equal(out, want)


def test_scatter_like_torch_scatter_add_with_batching_dims(run, rng):
    # torch.scatter_add(x, 1, idx, src) with idx duplicates within a row.
    x = np.zeros((3, 4), np.float32)
    idx = np.array([[0, 0], [3, 1], [2, 2]], np.int32)
    src = rng.standard_normal((3, 2)).astype(np.float32)
    out, values, keys = call(run, lambda B, a, i, u, k: [
        B.scatter([a], i, [u], update_window_dims=[], inserted_window_dims=[1],
                  scatter_dims_to_operand_dims=[1], index_vector_dim=2, body=_add,
                  input_batching_dims=[0], scatter_indices_batching_dims=[0])[0],
        # two operands updated together: each gets its own update
        *B.scatter([a, k], i, [u, B.convert(u, "s32")], update_window_dims=[],
                   inserted_window_dims=[1], scatter_dims_to_operand_dims=[1],
                   index_vector_dim=2, body=lambda B, args: [args[2], args[3]],
                   input_batching_dims=[0], scatter_indices_batching_dims=[0]),
    ], x, idx, src, np.full((3, 4), -1, np.int32))
    want = x.copy()
    for r in range(3):
        np.add.at(want[r], idx[r], src[r])
    np.testing.assert_allclose(out, want, rtol=1e-6)
    # rows without duplicates overwrite deterministically
    np.testing.assert_array_equal(values[1], [0, src[1, 1], 0, src[1, 0]])
    np.testing.assert_array_equal(keys[1], [-1, int(src[1, 1]), -1, int(src[1, 0])])
