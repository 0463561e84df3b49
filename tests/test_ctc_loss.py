"""F.ctc_loss against CPU: padded and concatenated targets, every reduction,
per-sample input and target lengths (including impossible alignments,
zero_infinity, empty inputs and targets), repeated labels, another blank,
float32 / float64, gradients, lengths given as tensors, new lengths without
recompiling, and the errors CPU raises."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_tpu


def log_probs(t=12, n=3, c=6, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(t, n, c, generator=g, dtype=dtype).log_softmax(-1)


PADDED = torch.tensor([[1, 2, 3, 4], [2, 2, 5, 1], [4, 1, 3, 3]])
CONCATENATED = torch.tensor([1, 2, 2, 3, 4, 5, 5, 1])


def loss_and_grad(device, lp, targets, input_lengths, target_lengths, **kwargs):
    x = lp.clone().to(device).requires_grad_()
    move = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
    loss = F.ctc_loss(x, move(targets), move(input_lengths), move(target_lengths), **kwargs)
    loss.sum().backward()
    return loss.detach().cpu(), x.grad.cpu()


def assert_matches_cpu(lp, targets, input_lengths, target_lengths, tol=1e-10, **kwargs):
    want = loss_and_grad("cpu", lp, targets, input_lengths, target_lengths, **kwargs)
    got = loss_and_grad("tpu", lp, targets, input_lengths, target_lengths, **kwargs)
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets, target_lengths", [(PADDED, [4, 3, 2]), (CONCATENATED, [4, 3, 1])])
def test_ctc_loss_matches_cpu(targets, target_lengths, reduction):
    assert_matches_cpu(log_probs(), targets, [12, 10, 7], target_lengths, reduction=reduction)


def test_impossible_alignments_and_zero_infinity():
    # Input 2 cannot hold 3 labels: the loss is inf (gradient NaN), or 0 with
    # zero_infinity.
    assert_matches_cpu(log_probs(), PADDED, [12, 2, 7], [4, 3, 2], reduction="none")
    assert_matches_cpu(log_probs(), PADDED, [12, 2, 7], [4, 3, 2], reduction="none", zero_infinity=True)
    assert_matches_cpu(log_probs(), PADDED, [12, 2, 7], [4, 3, 2], zero_infinity=True)


def test_empty_inputs_repeats_and_other_blank():
    assert_matches_cpu(log_probs(), PADDED, [12, 0, 7], [4, 0, 2], reduction="none")
    repeats = torch.tensor([[1, 1, 1, 1], [2, 2, 3, 3], [1, 2, 1, 2]])
    assert_matches_cpu(log_probs(), repeats, [12, 10, 7], [4, 4, 4], reduction="none")
    assert_matches_cpu(log_probs(), PADDED.clamp_max(4) + 1, [12, 10, 7], [4, 3, 2], blank=0)
    targets = torch.tensor([[0, 1, 3, 4], [1, 1, 5, 0], [4, 0, 3, 3]])
    assert_matches_cpu(log_probs(), targets, [12, 10, 7], [4, 3, 2], blank=2)


def test_a_label_equal_to_blank_is_skipped_over_by_position():
    # PyTorch's docs forbid it, but CPU computes a loss: skips between label
    # slots are decided by position, so such a label does not stop them.
    # (As the last label, the gradient of its last frame differs: CPU's
    # kernel writes that slot's share over the final blank's, assuming the
    # two classes differ; tpu adds both.)
    targets = torch.tensor([[1, 0, 2, 3], [0, 0, 1, 2], [1, 1, 0, 2]])
    for blank in (0, 1):
        assert_matches_cpu(log_probs(), targets, [12, 10, 7], [4, 4, 4], reduction="none", blank=blank)


def test_float32_unbatched_and_tensor_lengths():
    assert_matches_cpu(log_probs(dtype=torch.float32), PADDED, [12, 10, 7], [4, 3, 2], tol=1e-5)
    assert_matches_cpu(log_probs(n=1)[:, 0], PADDED[0], [12], [4])
    assert_matches_cpu(log_probs(), PADDED, torch.tensor([12, 10, 7]), torch.tensor([4, 3, 2]))


def test_new_lengths_do_not_recompile():
    lp = log_probs()
    loss_and_grad("tpu", lp, PADDED, [12, 10, 7], [4, 3, 2])
    loss_and_grad("tpu", lp, PADDED, [11, 9, 8], [2, 3, 1])
    new_programs = lambda s: s["compiles"] + s["disk_hits"]  # noqa: E731
    before = new_programs(torch_tpu.runtime.cache_stats())
    for lengths in ([12, 12, 12], [5, 6, 7], [1, 12, 3]):
        loss_and_grad("tpu", lp, PADDED, lengths, [1, 3, 1])
    assert new_programs(torch_tpu.runtime.cache_stats()) == before


def test_ctc_loss_errors():
    lp = log_probs().to("tpu")
    targets = PADDED.to("tpu")
    with pytest.raises(RuntimeError, match="input_lengths to have value at most 12"):
        F.ctc_loss(lp, targets, [13, 10, 7], [4, 3, 2])
    with pytest.raises(RuntimeError, match="size at least 5 at dimension 1"):
        F.ctc_loss(lp, targets, [12, 10, 7], [5, 3, 2])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, targets, [12, 10, 7], [4, 3, 2], blank=6)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        torch._ctc_loss(lp, targets, [12, 10], [4, 3, 2])
    with pytest.raises(RuntimeError, match="scalar type Long or Int"):
        torch._ctc_loss(lp, targets.float(), [12, 10, 7], [4, 3, 2])
    with pytest.raises(NotImplementedError, match="float and double only"):
        F.ctc_loss(lp.bfloat16(), targets, [12, 10, 7], [4, 3, 2])
    with pytest.raises(RuntimeError, match="input_lengths to have value at least 0"):
        F.ctc_loss(lp, targets, [-1, 10, 7], [4, 3, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size 9 at dimension 0, but got size 8"):
        F.ctc_loss(lp, CONCATENATED.to("tpu"), [12, 10, 7], [4, 3, 2])  # concatenated: exactly the lengths' sum
    with pytest.raises(RuntimeError, match="log_probs tensor must not be empty"):
        F.ctc_loss(lp[:0], targets, [0, 0, 0], [4, 3, 2])
    # A label outside the classes (CPU reads out of bounds): raised at the next sync.
    bad = torch.tensor([[1, 7, 3, 4], [2, 2, 5, 1], [4, 1, 3, 3]], device="tpu")
    with pytest.raises(IndexError, match="target label is outside"):
        F.ctc_loss(lp, bad, [12, 10, 7], [4, 3, 2]).item()
