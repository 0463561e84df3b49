"""FlexAttention (torch.nn.attention.flex_attention) on tpu tensors: score
modifiers, block masks, grouped-query attention, gradients and
torch.compile(backend="tpu"), against CPU (whose FlexAttention computes
forward only, so gradients are checked against the same attention written
with scaled_dot_product_attention and an explicit mask)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

B, H, L, D = 2, 4, 16, 8


def qkv(heads=(H, H, H), seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, h, L, D, generator=g) for h in heads]


def relative_bias(score, b, h, q, k):
    return score + (q - k).float() * 0.1 + h * 0.01


def causal_window(b, h, q, k):
    return (q >= k) & (q - k < 6)


def dense_mask():
    q, k = torch.arange(L)[:, None], torch.arange(L)[None, :]
    return causal_window(None, None, q, k)


def test_score_mod_matches_cpu():
    q, k, v = qkv()
    want = flex_attention(q, k, v, score_mod=relative_bias)
    got = flex_attention(*(t.to("tpu") for t in (q, k, v)), score_mod=relative_bias)
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("kv_heads", [H, 2], ids=["mha", "gqa"])
def test_block_mask_forward_and_gradients(compiled, kv_heads):
    q, k, v = qkv((H, kv_heads, kv_heads))
    mask = create_block_mask(causal_window, B, None, L, L, device="tpu")
    leaves = [t.to("tpu").requires_grad_() for t in (q, k, v)]
    attend = torch.compile(flex_attention, backend="tpu") if compiled else flex_attention
    got = attend(*leaves, block_mask=mask, enable_gqa=kv_heads != H)
    grad_out = torch.randn(got.shape, generator=torch.Generator().manual_seed(1))
    got.backward(grad_out.to("tpu"))

    cpu_leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    want = F.scaled_dot_product_attention(*cpu_leaves, attn_mask=dense_mask(), enable_gqa=kv_heads != H)
    want.backward(grad_out)
    torch.testing.assert_close(got.detach().cpu(), want.detach())
    for leaf, cpu_leaf in zip(leaves, cpu_leaves):
        torch.testing.assert_close(leaf.grad.cpu(), cpu_leaf.grad, rtol=1e-4, atol=1e-5)


def test_log_sum_exp_matches_cpu():
    q, k, v = qkv()
    mask = create_block_mask(causal_window, B, None, L, L, device="cpu")
    want, want_aux = flex_attention(q, k, v, block_mask=mask, return_aux=AuxRequest(lse=True))
    tpu_mask = create_block_mask(causal_window, B, None, L, L, device="tpu")
    got, got_aux = flex_attention(*(t.to("tpu") for t in (q, k, v)), block_mask=tpu_mask,
                                  return_aux=AuxRequest(lse=True))
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(got_aux.lse.cpu(), want_aux.lse)


def test_other_devices_keep_their_checks():
    q, k, v = (t.requires_grad_() for t in qkv())
    with pytest.raises(NotImplementedError, match="backward on CPU"):
        flex_attention(q, k, v)


def test_block_mask_asked_to_compile_is_made_eagerly_on_tpu():
    # _compile=True compiles with inductor, which has no tpu code generation
    # (transformers asks for it); on tpu the same mask is made eagerly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = create_block_mask(causal_window, 1, 1, 256, 256, device="tpu", _compile=True)
    eager = create_block_mask(causal_window, 1, 1, 256, 256, device="tpu")
    assert compiled.kv_num_blocks.device.type == "tpu"
    for a, b in zip(compiled.as_tuple()[2:], eager.as_tuple()[2:]):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a.cpu(), b.cpu())
