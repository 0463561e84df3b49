"""StableHLO builder validation: bad input raises hlo.HloError (a ValueError)
whose message starts with the op's name, before any text reaches the plugin,
and the builder stays usable afterwards. Nothing here may crash."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hlo_testing import call
from torch_tpu._C import hlo


def p(b, dtype, *shape):
    return b.parameter(dtype, list(shape))


def _add(B, args):
    return [B.add(args[0], args[1])]


# id: (bad call on a fresh Builder, regex the message must match from its start)
BAD_INPUT = {
    # elementwise
    "add_shapes": (lambda b: b.add(p(b, "f32", 2, 3), p(b, "f32", 3, 2)),
                   r"stablehlo\.add: operand shapes differ: tensor<2x3xf32> vs tensor<3x2xf32>"),
    "add_dtypes": (lambda b: b.add(p(b, "f32", 2), p(b, "s32", 2)),
                   r"stablehlo\.add: operand element types differ"),
    "subtract_bool": (lambda b: b.subtract(p(b, "pred", 2), p(b, "pred", 2)),
                      r"stablehlo\.subtract: operand element type i1 is not supported"),
    "atan2_int": (lambda b: b.atan2(p(b, "s32"), p(b, "s32")), r"stablehlo\.atan2: .*not supported"),
    "shift_float": (lambda b: b.shift_left(p(b, "f32"), p(b, "f32")), r"stablehlo\.shift_left: "),
    "floor_int": (lambda b: b.floor(p(b, "s32", 3)), r"stablehlo\.floor: .*not supported"),
    "popcnt_float": (lambda b: b.popcnt(p(b, "f32", 3)), r"stablehlo\.popcnt: "),
    "binary_generic_shapes": (lambda b: b.binary("stablehlo.atan2", p(b, "f32", 2), p(b, "f32", 3)),
                              r"stablehlo\.atan2: operand shapes differ"),
    "unary_bad_name": (lambda b: b.unary("erf", p(b, "f32")), r"invalid op name 'erf'"),
    "emit_bad_name": (lambda b: b.emit('stablehlo.add" %x', [p(b, "f32")], [("f32", [])]),
                      r"invalid op name"),
    "compare_direction": (lambda b: b.compare(p(b, "f32"), p(b, "f32"), "LESS"),
                          r"stablehlo\.compare: unknown comparison direction 'LESS'"),
    "compare_complex_order": (lambda b: b.compare(p(b, "c64"), p(b, "c64"), "LT"),
                              r"stablehlo\.compare: complex operands support only EQ and NE"),
    "select_pred_dtype": (lambda b: b.select(p(b, "s32", 2), p(b, "f32", 2), p(b, "f32", 2)),
                          r"stablehlo\.select: pred element type i32"),
    "select_pred_shape": (lambda b: b.select(p(b, "pred", 3), p(b, "f32", 2), p(b, "f32", 2)),
                          r"stablehlo\.select: pred must be 0-dim or of the operands' shape"),
    "clamp_bounds": (lambda b: b.clamp(p(b, "f32", 2), p(b, "f32", 3), p(b, "f32")),
                     r"stablehlo\.clamp: bounds must be"),
    "convert_complex": (lambda b: b.convert(p(b, "c64", 2), "f32"), r"stablehlo\.convert: complex to f32"),
    "bitcast_dims": (lambda b: b.bitcast_convert(p(b, "f32", 3), "u8", [3]),
                     r"stablehlo\.bitcast_convert: result type tensor<3xui8>"),
    "bitcast_widen": (lambda b: b.bitcast_convert(p(b, "u8", 3), "f32", []),
                      r"stablehlo\.bitcast_convert: bitcasting tensor<3xui8> to f32 needs"),
    "reduce_precision": (lambda b: b.reduce_precision(p(b, "f32"), 0, 3),
                         r"stablehlo\.reduce_precision: needs exponent_bits >= 1"),
    # constants and parameters
    "constant_u8_range": (lambda b: b.constant(300, "u8"), r"stablehlo\.constant: value 300 does not fit"),
    "constant_s8_range": (lambda b: b.constant(-129, "s8", [2]), r"stablehlo\.constant: value -129"),
    "constant_fraction": (lambda b: b.constant(1.5, "s32"), r"stablehlo\.constant: non-integral value"),
    "constant_nan_int": (lambda b: b.constant(float("nan"), "s64"), r"stablehlo\.constant: non-integral"),
    "constant_pred_range": (lambda b: b.constant(2, "pred"), r"stablehlo\.constant: value 2 does not fit"),
    "constant_complex_real": (lambda b: b.constant(1 + 1j, "f32"), r"stablehlo\.constant: complex value"),
    "constant_array_bytes": (lambda b: b.constant_array(np.zeros(3, np.float32), "f64"),
                             r"stablehlo\.constant: 12 bytes given for tensor<3xf64>, which needs 24"),
    "iota_dim": (lambda b: b.iota("s32", [2, 3], 2), r"stablehlo\.iota: iota_dimension 2 is out of range"),
    "iota_bool": (lambda b: b.iota("pred", [2], 0), r"stablehlo\.iota: result element type i1"),
    "parameter_negative": (lambda b: p(b, "f32", 2, -1), r"parameter: "),
    "parameter_too_big": (lambda b: p(b, "f64", 2**40, 2**20), r"parameter: tensor type .* is too large"),
    "num_replicas": (lambda b: b.set_num_replicas(0), r"num_replicas must be in"),
    # shape ops
    "transpose_repeat": (lambda b: b.transpose(p(b, "f32", 2, 3), [0, 0]),
                         r"stablehlo\.transpose: permutation \[0, 0\] repeats dimension 0"),
    "transpose_range": (lambda b: b.transpose(p(b, "f32", 2, 3), [0, 2]),
                        r"stablehlo\.transpose: permutation 2 is out of range for rank 2"),
    "transpose_length": (lambda b: b.transpose(p(b, "f32", 2, 3), [0]),
                         r"stablehlo\.transpose: permutation has 1 entries, expected 2"),
    "reshape_count": (lambda b: b.reshape(p(b, "f32", 2, 3), [4, 2]),
                      r"stablehlo\.reshape: cannot reshape tensor<2x3xf32> to tensor<4x2xf32>"),
    "reshape_negative": (lambda b: b.reshape(p(b, "f32", 6), [-1, 6]), r"stablehlo\.reshape: "),
    "broadcast_size": (lambda b: b.broadcast_in_dim(p(b, "f32", 3), [2, 4], [1]),
                       r"stablehlo\.broadcast_in_dim: cannot broadcast tensor<3xf32>"),
    "broadcast_dim_range": (lambda b: b.broadcast_in_dim(p(b, "f32", 3), [3], [1]),
                            r"stablehlo\.broadcast_in_dim: broadcast_dimensions 1 is out of range"),
    "broadcast_dim_count": (lambda b: b.broadcast_in_dim(p(b, "f32", 3), [3, 3], []),
                            r"stablehlo\.broadcast_in_dim: broadcast_dimensions has 0 entries"),
    "slice_bounds": (lambda b: b.slice(p(b, "f32", 4), [2], [5], [1]),
                     r"stablehlo\.slice: slice \[2, 5\) of dimension 0 is out of bounds"),
    "slice_stride": (lambda b: b.slice(p(b, "f32", 4), [0], [4], [0]),
                     r"stablehlo\.slice: strides \[0\] must all be >= 1"),
    "dynamic_slice_mixed": (lambda b: b.dynamic_slice(p(b, "f32", 4, 4), [p(b, "s32"), p(b, "s64")], [1, 1]),
                            r"stablehlo\.dynamic_slice: start indices mix element types i32 and i64"),
    "dynamic_slice_size": (lambda b: b.dynamic_slice(p(b, "f32", 4), [p(b, "s32")], [5]),
                           r"stablehlo\.dynamic_slice: slice_sizes \[5\] do not fit"),
    "dynamic_slice_count": (lambda b: b.dynamic_slice(p(b, "f32", 4, 4), [p(b, "s32")], [1, 1]),
                            r"stablehlo\.dynamic_slice: start indices has 1 entries, expected 2"),
    "dynamic_slice_float_index": (lambda b: b.dynamic_slice(p(b, "f32", 4), [p(b, "f32")], [1]),
                                  r"stablehlo\.dynamic_slice: start index element type f32"),
    "dynamic_update_slice_big": (lambda b: b.dynamic_update_slice(p(b, "f32", 2), p(b, "f32", 3),
                                                                  [p(b, "s32")]),
                                 r"stablehlo\.dynamic_update_slice: update tensor<3xf32> is larger"),
    "concatenate_empty": (lambda b: b.concatenate([], 0), r"stablehlo\.concatenate: needs at least one"),
    "concatenate_dim": (lambda b: b.concatenate([p(b, "f32", 2)], 1),
                        r"stablehlo\.concatenate: dimension 1 is out of range for rank 1"),
    "concatenate_shapes": (lambda b: b.concatenate([p(b, "f32", 2, 3), p(b, "f32", 3, 3)], 1),
                           r"stablehlo\.concatenate: operands .* differ outside dimension 1"),
    "pad_interior": (lambda b: b.pad(p(b, "f32", 3), p(b, "f32"), [0], [0], [-1]),
                     r"stablehlo\.pad: interior_padding \[-1\] must be non-negative"),
    "pad_value": (lambda b: b.pad(p(b, "f32", 3), p(b, "f64"), [0], [0], [0]),
                  r"stablehlo\.pad: padding value must be tensor<f32>"),
    "pad_negative_size": (lambda b: b.pad(p(b, "f32", 3), p(b, "f32"), [-2], [-2], [0]),
                          r"stablehlo\.pad: padding dimension 0 of tensor<3xf32> gives negative size"),
    # indexing
    "gather_slice_sizes": (lambda b: b.gather(p(b, "f32", 5, 3), p(b, "s32", 4), [1], [0], [0], 1, [1, 4]),
                           r"stablehlo\.gather: slice_sizes \[1, 4\] do not fit"),
    "gather_collapsed_size": (lambda b: b.gather(p(b, "f32", 5, 3), p(b, "s32", 4), [1], [0], [0], 1, [2, 3]),
                              r"stablehlo\.gather: slice size of collapsed or batching dimension 0"),
    "gather_index_map": (lambda b: b.gather(p(b, "f32", 5, 3), p(b, "s32", 4, 2), [1], [0], [0], 1, [1, 3]),
                         r"stablehlo\.gather: start_index_map has 1 entries but the index vector has 2"),
    "gather_float_indices": (lambda b: b.gather(p(b, "f32", 5, 3), p(b, "f32", 4), [1], [0], [0], 1, [1, 3]),
                             r"stablehlo\.gather: indices element type f32"),
    "scatter_update_count": (lambda b: b.scatter([p(b, "f32", 5)], p(b, "s32", 2, 1), [], [], [0], [0], 1,
                                                 _add),
                             r"stablehlo\.scatter: updates has 0 entries, expected 1"),
    "scatter_window": (lambda b: b.scatter([p(b, "f32", 5, 3)], p(b, "s32", 2, 1), [p(b, "f32", 2, 4)],
                                           [1], [0], [0], 1, _add),
                       r"stablehlo\.scatter: update window dimension 1 of tensor<2x4xf32> is larger"),
    "scatter_body": (lambda b: b.scatter([p(b, "f32", 5)], p(b, "s32", 2, 1), [p(b, "f32", 2)], [], [0], [0],
                                         1,
                                         lambda B, a: [B.convert(a[1], "f64")]),
                     r"stablehlo\.scatter: body must return \(tensor<f32>\), got \(tensor<f64>\)"),
    # reductions, sorting
    "reduce_dims": (lambda b: b.reduce([p(b, "f32", 2, 3)], [p(b, "f32")], [2], _add),
                    r"stablehlo\.reduce: dimensions 2 is out of range for rank 2"),
    "reduce_init": (lambda b: b.reduce([p(b, "f32", 2, 3)], [p(b, "f32", 1)], [0], _add),
                    r"stablehlo\.reduce: init value 0 must be tensor<f32>"),
    "reduce_body": (lambda b: b.reduce([p(b, "f32", 2, 3)], [p(b, "f32")], [0],
                                       lambda B, a: [a[0], a[1]]),
                    r"stablehlo\.reduce: body must return \(tensor<f32>\), got \(tensor<f32>, tensor<f32>\)"),
    "reduce_window_dims": (lambda b: b.reduce_window([p(b, "f32", 4)], [p(b, "f32")], [0], [], [], [], [],
                                                     _add),
                           r"stablehlo\.reduce_window: window_dimensions \[0\] must all be >= 1"),
    "sort_comparator": (lambda b: b.sort([p(b, "f32", 4)], 0, False, lambda B, a: [a[0]]),
                        r"stablehlo\.sort: comparator must return \(tensor<i1>\), got \(tensor<f32>\)"),
    "sort_dim": (lambda b: b.sort([p(b, "f32", 4)], 1, False, lambda B, a: [B.compare(a[0], a[1], "LT")]),
                 r"stablehlo\.sort: dimension 1 is out of range for rank 1"),
    "top_k_range": (lambda b: b.top_k(p(b, "f32", 2, 3), 4), r"chlo\.top_k: k = 4 is out of range"),
    "top_k_scalar": (lambda b: b.top_k(p(b, "f32"), 1), r"chlo\.top_k: operand must have rank >= 1"),
    # control flow
    "while_cond": (lambda b: b.while_loop([p(b, "s32")], lambda B, a: [a[0]], lambda B, a: [a[0]]),
                   r"stablehlo\.while: cond must return \(tensor<i1>\), got \(tensor<i32>\)"),
    "while_body": (lambda b: b.while_loop([p(b, "s32")], lambda B, a: [B.compare(a[0], a[0], "LT")],
                                          lambda B, a: [B.convert(a[0], "s64")]),
                   r"stablehlo\.while: body must return \(tensor<i32>\), got \(tensor<i64>\)"),
    "case_index": (lambda b: b.case(p(b, "s64"), [lambda B, _: []], []),
                   r"stablehlo\.case: index must be tensor<i32>, got tensor<i64>"),
    "case_branch_types": (lambda b: b.case(p(b, "s32"), [lambda B, _: [B.constant(1.0, "f32")]],
                                           [("f64", [])]),
                          r"stablehlo\.case: branch 0 must return \(tensor<f64>\), got \(tensor<f32>\)"),
    "case_no_branches": (lambda b: b.case(p(b, "s32"), [], []),
                         r"stablehlo\.case: needs at least one branch"),
    # linear algebra
    "dot_contracting": (lambda b: b.dot_general(p(b, "f32", 2, 3), p(b, "f32", 4, 5), lhs_contracting=[1],
                                                rhs_contracting=[0]),
                        r"stablehlo\.dot_general: contracting dimension sizes differ"),
    "dot_batch": (lambda b: b.dot_general(p(b, "f32", 2, 3, 4), p(b, "f32", 3, 4, 5), lhs_batch=[0],
                                          rhs_batch=[0], lhs_contracting=[2], rhs_contracting=[1]),
                  r"stablehlo\.dot_general: batching dimension sizes differ"),
    "dot_dim_range": (lambda b: b.dot_general(p(b, "f32", 2, 3), p(b, "f32", 3, 4), lhs_contracting=[2],
                                              rhs_contracting=[0]),
                      r"stablehlo\.dot_general: lhs batching \+ contracting dims 2 is out of range"),
    "dot_dtypes": (lambda b: b.dot_general(p(b, "f32", 2, 3), p(b, "f64", 3, 4), lhs_contracting=[1],
                                           rhs_contracting=[0]),
                   r"stablehlo\.dot_general: operand element types differ"),
    "dot_counts": (lambda b: b.dot_general(p(b, "f32", 2, 3), p(b, "f32", 3, 4), lhs_contracting=[1],
                                           rhs_contracting=[]),
                   r"stablehlo\.dot_general: rhs_contracting_dimensions has 0 entries, expected 1"),
    "conv_groups": (lambda b: b.convolution(p(b, "f32", 1, 4, 5, 5), p(b, "f32", 6, 3, 3, 3),
                                            feature_group_count=2),
                    r"stablehlo\.convolution: input features \(4\) / feature_group_count \(2\)"),
    "conv_rank": (lambda b: b.convolution(p(b, "f32", 1, 4, 5, 5), p(b, "f32", 6, 4, 3)),
                  r"stablehlo\.convolution: with 2 spatial dims the operands need rank 4"),
    "conv_strides": (lambda b: b.convolution(p(b, "f32", 1, 1, 5), p(b, "f32", 1, 1, 3), window_strides=[0]),
                     r"stablehlo\.convolution: window_strides \[0\] must all be >= 1"),
    "cholesky_square": (lambda b: b.cholesky(p(b, "f32", 3, 4), True),
                        r"stablehlo\.cholesky: operand must be a square matrix"),
    "cholesky_int": (lambda b: b.cholesky(p(b, "s32", 3, 3), True),
                     r"stablehlo\.cholesky: operand element type"),
    "triangular_solve_fit": (lambda b: b.triangular_solve(p(b, "f32", 3, 3), p(b, "f32", 4, 2), True, True,
                                                          False, "none"),
                             r"stablehlo\.triangular_solve: a tensor<3x3xf32> and b tensor<4x2xf32> "
                             r"do not fit"),
    "fft_dims": (lambda b: b.fft(p(b, "c64", 3, 8), "fft", [4]),
                 r"stablehlo\.fft: FFT with fft_length \[4\] needs trailing dims \[4\]"),
    "rfft_complex": (lambda b: b.fft(p(b, "c64", 8), "rfft", [8]), r"stablehlo\.fft: RFFT needs f32 or f64"),
    "fft_length": (lambda b: b.fft(p(b, "c64", 8), "fft", []),
                   r"stablehlo\.fft: fft_length \[\] must have 1 to 3"),
    # random
    "rng_state": (lambda b: b.rng_bit_generator(p(b, "u64", 3), "u32", [4], "three_fry"),
                  r"stablehlo\.rng_bit_generator: state for THREE_FRY must be tensor<2xui64>"),
    "rng_state_dtype": (lambda b: b.rng_bit_generator(p(b, "s64", 2), "u32", [4], "philox"),
                        r"stablehlo\.rng_bit_generator: state for PHILOX must be"),
    # collectives
    "groups_uneven": (lambda b: b.all_reduce(p(b, "f32", 2), [[0, 1], [2]], _add),
                      r"stablehlo\.all_reduce: replica groups must be non-empty and of one size"),
    "groups_repeat": (lambda b: b.all_gather(p(b, "f32", 2), 0, [[0, 1], [1, 2]]),
                      r"stablehlo\.all_gather: replica id 1 is negative or in two groups"),
    "all_gather_no_groups": (lambda b: b.all_gather(p(b, "f32", 2), 0, []),
                             r"stablehlo\.all_gather: needs explicit replica groups"),
    "reduce_scatter_divide": (lambda b: b.reduce_scatter(p(b, "f32", 3), 0, [[0, 1]], _add),
                              r"stablehlo\.reduce_scatter: dimension 0 of tensor<3xf32> does not divide"),
    "all_to_all_count": (lambda b: b.all_to_all(p(b, "f32", 4), 0, 0, 4, [[0, 1]]),
                         r"stablehlo\.all_to_all: split_count 4 must equal the group size 2"),
    "permute_duplicate": (lambda b: b.collective_permute(p(b, "f32", 2), [(0, 1), (0, 2)]),
                          r"stablehlo\.collective_permute: source_target_pairs need"),
    "channel_id": (lambda b: b.all_gather(p(b, "f32", 2), 0, [[0, 1]], channel_id=0),
                   r"stablehlo\.all_gather: channel id must be >= 1"),
    "global_ids_without_channel": (lambda b: b.all_reduce(p(b, "f32", 2), [[0, 1]], _add,
                                                          use_global_device_ids=True),
                                   r"stablehlo\.all_reduce: use_global_device_ids needs a channel id"),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_raises_hlo_error_naming_the_op(case):
    fn, pattern = BAD_INPUT[case]
    b = hlo.Builder("bad")
    with pytest.raises(hlo.HloError) as info:
        fn(b)
    assert isinstance(info.value, ValueError)
    assert re.match(pattern, str(info.value)), str(info.value)


@pytest.mark.parametrize("value,dtype", [(2**64, "u64"), (-1, "u64"), (-1, "u8"), (2**63, "s64")])
def test_constant_out_of_range_python_int(value, dtype):
    b = hlo.Builder("bad")
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.constant: value .* does not fit"):
        b.constant(value, dtype, [2])


def test_constant_of_a_non_number():
    b = hlo.Builder("bad")
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.constant: value must be a bool, int"):
        b.constant("x", "f32", [2])


def test_value_from_another_builder():
    b1, b2 = hlo.Builder("one"), hlo.Builder("two")
    x, y = b1.parameter("f32", [2]), b2.parameter("f32", [2])
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.add: operand comes from another Builder"):
        b1.add(x, y)
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.negate: operand comes from another Builder"):
        b2.negate(x)
    with pytest.raises(hlo.HloError, match=r"^func\.return: operand comes from another Builder"):
        b2.build([x])


def test_region_value_cannot_escape_its_region():
    b = hlo.Builder("escape")
    x = b.parameter("f32", [3])
    leaked = []

    def body(B, args):
        leaked.append(args[0])
        return _add(B, args)

    b.reduce([x], [b.constant(0.0, "f32")], [0], body)
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.negate: operand %\d+ is used outside the region"):
        b.negate(leaked[0])


def test_builder_is_single_use():
    b = hlo.Builder("once")
    x = b.parameter("f32", [2])
    b.build([b.negate(x)])
    with pytest.raises(hlo.HloError, match=r"^stablehlo\.negate: the module was already built"):
        b.negate(x)
    with pytest.raises(hlo.HloError, match=r"^build: the module was already built"):
        b.build([x])


def test_builder_stays_usable_after_errors(run):
    # Errors inside a region (Python ones and HloErrors) unwind the open block;
    # the module built afterwards is valid and runs.
    def program(B, x):
        zero = B.constant(0.0, "f32")
        with pytest.raises(ZeroDivisionError):
            B.reduce([x], [zero], [0], lambda B, a: [a[0] if 1 / 0 else a[1]])
        with pytest.raises(hlo.HloError, match=r"^stablehlo\.add: operand shapes differ"):
            B.reduce([x], [zero], [0], lambda B, a: [B.add(a[0], x)])
        with pytest.raises(hlo.HloError, match=r"^stablehlo\.reshape"):
            B.reshape(x, [4])
        return B.reduce([x], [zero], [0], _add)[0]

    x = np.array([1.0, 2.0, 4.5], np.float32)
    (out,) = call(run, program, x)
    assert out == np.float32(7.5)
