"""embedding_bag on tpu against CPU: sum / mean / max pooling, offsets and
2-D inputs, padding_idx, per_sample_weights, include_last_offset, empty
bags, gradients, and out-of-range indices."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import to_tpu


def run_both(fn, weight, *args, **kwargs):
    w_cpu = weight.clone().requires_grad_()
    w_tpu = weight.to("tpu").requires_grad_()
    out_cpu = fn(w_cpu, *args, **kwargs)
    out_tpu = fn(w_tpu, *to_tpu(args), **{k: to_tpu(v) for k, v in kwargs.items()})
    g = torch.randn(out_cpu.shape, generator=torch.Generator().manual_seed(1))
    out_cpu.backward(g)
    out_tpu.backward(g.to("tpu"))
    torch.testing.assert_close(out_tpu.cpu(), out_cpu, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w_tpu.grad.cpu(), w_cpu.grad, rtol=1e-5, atol=1e-5)


WEIGHT = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
OFFSETS = torch.tensor([0, 3, 3, 7])  # bag 1 is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_offsets_with_an_empty_bag(mode):
    run_both(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), WEIGHT, INDICES, OFFSETS)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_two_dimensional_input_and_padding(mode):
    idx = torch.tensor([[1, 2, 0], [4, 0, 0], [3, 3, 9]])
    run_both(lambda w, i: F.embedding_bag(i, w, mode=mode, padding_idx=0), WEIGHT, idx)


def test_per_sample_weights_and_their_gradient():
    psw = torch.rand(len(INDICES), generator=torch.Generator().manual_seed(2))
    p_cpu, p_tpu = psw.clone().requires_grad_(), psw.to("tpu").requires_grad_()
    w_cpu, w_tpu = WEIGHT.clone().requires_grad_(), WEIGHT.to("tpu").requires_grad_()
    out_cpu = F.embedding_bag(INDICES, w_cpu, OFFSETS, mode="sum", per_sample_weights=p_cpu)
    out_tpu = F.embedding_bag(INDICES.to("tpu"), w_tpu, OFFSETS.to("tpu"), mode="sum", per_sample_weights=p_tpu)
    out_cpu.sum().backward()
    out_tpu.sum().backward()
    torch.testing.assert_close(out_tpu.cpu(), out_cpu)
    torch.testing.assert_close(w_tpu.grad.cpu(), w_cpu.grad)
    torch.testing.assert_close(p_tpu.grad.cpu(), p_cpu.grad)


def test_include_last_offset_and_int32_indices():
    offsets = torch.tensor([0, 2, 6, 10], dtype=torch.int32)
    run_both(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean", include_last_offset=True),
             WEIGHT, INDICES.int(), offsets)


def test_scale_grad_by_freq():
    # PyTorch's CPU kernel scales by the counts of the wrong rows here, so
    # the reference is the definition: F.embedding's scaled gradient,
    # pooled into the same bags.
    w_ref = WEIGHT.clone().requires_grad_()
    rows = F.embedding(INDICES, w_ref, scale_grad_by_freq=True)
    bags = torch.stack([rows[0:3].sum(0), rows[3:3].sum(0), rows[3:7].sum(0), rows[7:].sum(0)])
    bags.sum().backward()
    w_tpu = WEIGHT.to("tpu").requires_grad_()
    out = F.embedding_bag(INDICES.to("tpu"), w_tpu, OFFSETS.to("tpu"), mode="sum", scale_grad_by_freq=True)
    out.sum().backward()
    torch.testing.assert_close(out.detach().cpu(), bags.detach())
    torch.testing.assert_close(w_tpu.grad.cpu(), w_ref.grad)


def test_module_in_bfloat16():
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(10, 4, mode="mean").bfloat16()
    expected = bag(INDICES, OFFSETS)
    actual = bag.to("tpu")(INDICES.to("tpu"), OFFSETS.to("tpu"))
    torch.testing.assert_close(actual.cpu(), expected, rtol=1.6e-2, atol=1e-2)


def test_out_of_range_index_raises_at_the_next_sync():
    bad = torch.tensor([1, 10])
    out = F.embedding_bag(bad.to("tpu"), WEIGHT.to("tpu"), torch.tensor([0]).to("tpu"))
    with pytest.raises(IndexError, match="embedding_bag"):
        out.cpu()
    torch.tpu.synchronize()  # the failed check was consumed


def test_bad_arguments_raise_like_cpu():
    with pytest.raises(ValueError):
        F.embedding_bag(INDICES.to("tpu"), WEIGHT.to("tpu"), OFFSETS.to("tpu"), mode="median")
    with pytest.raises(NotImplementedError):
        F.embedding_bag(INDICES.to("tpu"), WEIGHT.to("tpu"), OFFSETS.to("tpu"), mode="max",
                        per_sample_weights=torch.ones(10, device="tpu"))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_many_bags_of_uneven_sizes(mode):
    # Each index finds its bag through a running count of the bag starts
    # (it compared every index with every start: 8.5 GB for 100k in 10k).
    g = torch.Generator().manual_seed(2)
    weight = torch.randn(3000, 8, generator=g)
    indices = torch.randint(0, 3000, (20000,), generator=g)
    cuts = torch.randint(0, 20000, (4999,), generator=g).sort().values
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), cuts])
    run_both(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), weight, indices, offsets)
