"""tpu results against PyTorch's shape functions (tests/fake_tensor_conformance.py):
every op of op_db in float32 on its first sample, and in bfloat16 the ops
whose promised dtypes depend on the input's (statistics kept in the
accumulation type)."""

from __future__ import annotations

import pytest
import torch

import fake_tensor_conformance as conformance
from opinfo_conformance import full_name, select_ops

SAMPLES = {torch.float32: 1, torch.bfloat16: 2}  # the runner's --all sweeps take every sample

# Ops whose outputs' dtypes differ from the input's in 16-bit types.
BFLOAT16_OPS = [
    "native_layer_norm", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
    "nn.functional.layer_norm", "nn.functional.batch_norm", "nn.functional.group_norm", "nn.functional.rms_norm",
    "nn.functional.scaled_dot_product_attention", "mean", "var_mean", "sum", "cumsum", "softmax",
    "nn.functional.cross_entropy", "matmul", "addmm", "nn.functional.conv2d",
]


def check(op, dtype):
    result = conformance.run_op(op, dtype, SAMPLES[dtype])
    assert result.status in ("pass", "no-samples"), f"{result.name}: {result.passed}/{result.samples} samples " \
        f"agree with the shape function; first differences: {result.errors}"


@pytest.mark.parametrize("op", select_ops(), ids=full_name)
def test_float32(op):
    check(op, torch.float32)


@pytest.mark.parametrize("op", select_ops(BFLOAT16_OPS, torch.bfloat16), ids=full_name)
def test_bfloat16(op):
    check(op, torch.bfloat16)


def test_the_bfloat16_ops_exist():
    known = {full_name(op) for op in select_ops(dtype=torch.bfloat16)} | {
        op.name for op in select_ops(dtype=torch.bfloat16)}
    assert not [n for n in BFLOAT16_OPS if n not in known]
