"""dropout on the device generator: statistics, reproducibility from the
seed, a fresh mask per call, the backward, and no recompiles per step."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torch_tpu import runtime


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_drop_rate_and_scale(p):
    x = torch.ones(200, 500).to("tpu")
    y = F.dropout(x, p).cpu()
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - p) < 0.01
    kept = y[y != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 1 / (1 - p)))


def test_same_seed_same_mask_and_new_mask_per_call():
    x = torch.ones(64, 64).to("tpu")
    torch.tpu.manual_seed(123)
    a = F.dropout(x, 0.5).cpu()
    b = F.dropout(x, 0.5).cpu()
    torch.tpu.manual_seed(123)
    a2 = F.dropout(x, 0.5).cpu()
    assert torch.equal(a, a2)
    assert not torch.equal(a, b)


def test_eval_and_edge_probabilities():
    x = torch.randn(10).to("tpu")
    assert torch.equal(F.dropout(x, 0.5, training=False).cpu(), x.cpu())
    assert torch.equal(F.dropout(x, 0.0).cpu(), x.cpu())
    assert torch.equal(F.dropout(x, 1.0).cpu(), torch.zeros(10))
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)


def test_backward_uses_the_mask():
    x = torch.randn(50, 40).to("tpu").requires_grad_()
    y = F.dropout(x, 0.4)
    y.backward(torch.ones_like(y))
    grad = x.grad.cpu()
    kept = y.detach().cpu() != 0
    torch.testing.assert_close(grad[kept], torch.full_like(grad[kept], 1 / 0.6))
    assert torch.all(grad[~kept] == 0)


def test_no_recompile_per_call():
    x = torch.ones(32).to("tpu")
    F.dropout(x, 0.2).cpu()
    before = runtime.cache_stats()["compiles"]
    for _ in range(5):
        F.dropout(x, 0.2)
    x.cpu()
    assert runtime.cache_stats()["compiles"] == before


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.bfloat16, torch.float64], ids=str)
def test_dropout_backward_result_dtype_matches_cpu(dtype):
    grad, mask = torch.ones(4, dtype=dtype), torch.tensor([True, False, True, True])
    want = torch.ops.aten.native_dropout_backward(grad, mask, 2.0)
    got = torch.ops.aten.native_dropout_backward(grad.to("tpu"), mask.to("tpu"), 2.0)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want)


def test_double_dropout_scales_in_double():
    scale = 1 / 0.9
    grad = torch.ops.aten.native_dropout_backward(torch.ones(4, dtype=torch.float64, device="tpu"),
                                                  torch.ones(4, dtype=torch.bool, device="tpu"), scale)
    assert grad.cpu().tolist() == [scale] * 4
    out, mask = torch.ops.aten.native_dropout(torch.ones(1000, dtype=torch.float64, device="tpu"), 0.1, True)
    assert set(out.cpu().tolist()) == {0.0, scale}
