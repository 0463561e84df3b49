"""Nested tensors on tpu, against the same on CPU: the jagged layout (a
Python subclass over plain tensors, whose padding conversions are tpu
kernels) and the strided layout (PyTorch's device-generic nested kernels)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_tpu  # noqa: F401


def components(seed=0, rows=(2, 3, 1), width=4):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(r, width, generator=g) for r in rows]


def strided(ts, device, **kw):
    return torch.nested.nested_tensor([t.to(device) for t in ts], **kw)


def jagged(ts, device, **kw):
    return torch.nested.nested_tensor([t.to(device) for t in ts], layout=torch.jagged, **kw)


def assert_nested_close(got, want, **tol):
    assert got.is_nested and want.is_nested
    got_parts, want_parts = got.unbind(), want.unbind()
    assert len(got_parts) == len(want_parts)
    for g, w in zip(got_parts, want_parts):
        torch.testing.assert_close(g.cpu(), w, **tol)


STRIDED_CASES = {
    "add": lambda nt: nt + nt,
    "add_scalar": lambda nt: nt + 1,
    "sub_mul_div": lambda nt: (nt - nt * 2) / 3,
    "unary": lambda nt: nt.abs().sqrt().neg().sin().cos().tanh(),
    "activations": lambda nt: F.gelu(nt) + F.relu(nt) + F.silu(nt),
    "softmax": lambda nt: F.softmax(nt, -1),
    "linear": lambda nt: F.linear(nt, torch.arange(12.0).view(3, 4).to(nt.device) / 10, torch.ones(3, device=nt.device)),
    "matmul": lambda nt: torch.matmul(nt, nt.transpose(1, 2)),
    "bmm": lambda nt: nt.bmm(nt.transpose(1, 2)),
    "transpose": lambda nt: nt.transpose(1, 2).contiguous(),
    "unsqueeze": lambda nt: nt.unsqueeze(-1).squeeze(-1),
    "masked_fill": lambda nt: nt.masked_fill(nt.gt(0), -1.0),
    "clone_zero_fill": lambda nt: nt.clone().zero_() + nt.clone().fill_(2.0),
    "isnan": lambda nt: (nt / 0.0).isnan(),
    "chunk": lambda nt: nt.chunk(2, -1)[1],
    "dropout_eval": lambda nt: F.dropout(nt, 0.5, training=False),
}


@pytest.mark.parametrize("case", list(STRIDED_CASES))
def test_strided_nested_ops_as_cpu(case):
    fn = STRIDED_CASES[case]
    want = fn(strided(components(), "cpu"))
    got = fn(strided(components(), "tpu"))
    assert got.device.type == "tpu"
    assert_nested_close(got, want, rtol=1e-5, atol=1e-5)


def test_strided_nested_tensor_prints_moves_and_pads():
    nt = strided(components(), "tpu")
    assert "device='tpu:0'" in repr(nt)
    assert_nested_close(nt.cpu(), strided(components(), "cpu"))
    assert_nested_close(strided(components(), "cpu").to("tpu"), strided(components(), "cpu"))
    want = strided(components(), "cpu").to_padded_tensor(-1.0, (3, 5, 4))
    torch.testing.assert_close(nt.to_padded_tensor(-1.0, (3, 5, 4)).cpu(), want)
    torch.testing.assert_close(nt.to_padded_tensor(0.0).cpu(), strided(components(), "cpu").to_padded_tensor(0.0))


def test_strided_nested_backward_as_cpu():
    grads = {}
    for device in ("cpu", "tpu"):
        nt = strided(components(), device, requires_grad=True)
        out = F.linear(F.gelu(nt * 2), torch.ones(2, 4, device=device)).softmax(-1)
        torch.cat([t.reshape(-1) for t in out.unbind()]).pow(2).sum().backward()
        grads[device] = nt.grad
    assert_nested_close(grads["tpu"], grads["cpu"], rtol=1e-5, atol=1e-6)


def test_strided_nested_to_padded_tensor_backward_as_cpu():
    # The backward is _nested_from_padded, whose sizes are a host tensor.
    grads = {}
    for device in ("cpu", "tpu"):
        nt = strided(components(), device, requires_grad=True)
        (nt.to_padded_tensor(0.0) * torch.arange(4.0, device=device)).pow(2).sum().backward()
        grads[device] = nt.grad
    assert_nested_close(grads["tpu"], grads["cpu"])


def test_strided_nested_ops_without_a_tpu_kernel_are_refused_by_name():
    nt = strided(components(), "tpu")
    with pytest.raises(NotImplementedError, match=r"aten::sum\.dim_IntList is not supported on tpu for nested "
                                                  r"tensors with the strided layout.*layout=torch\.jagged"):
        nt.sum(-1, keepdim=True)
    with pytest.raises(NotImplementedError, match=r"aten::native_layer_norm is not supported on tpu for nested"):
        F.layer_norm(nt, (4,), torch.ones(4, device="tpu"), torch.ones(4, device="tpu"))
    with pytest.raises(NotImplementedError, match=r"_nested_tensor_from_mask.*mask_check=True"):
        torch._nested_tensor_from_mask(torch.ones(2, 3, 4, device="tpu"), torch.ones(2, 3, dtype=torch.bool,
                                                                                        device="tpu"))


def test_transformer_encoder_without_mask_check_names_the_way_out():
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 1,
                                    enable_nested_tensor=True, mask_check=False).eval()
    padding = torch.tensor([[False, False, True, True], [False] * 4])
    x = torch.randn(2, 4, 8)
    with torch.no_grad(), pytest.raises(NotImplementedError, match="mask_check=True"):
        copy.deepcopy(encoder).to("tpu")(x.to("tpu"), src_key_padding_mask=padding.to("tpu"))
    encoder.layers[0].self_attn.batch_first = True
    checked = copy.deepcopy(encoder)
    checked.mask_check = True
    with torch.no_grad():
        got = copy.deepcopy(checked).to("tpu")(x.to("tpu"), src_key_padding_mask=padding.to("tpu")).cpu()
        want = encoder(x, src_key_padding_mask=padding)
    torch.testing.assert_close(got[~padding], want[~padding], rtol=1e-5, atol=1e-5)


def test_jagged_padding_reductions_and_gradients_as_cpu():
    results = {}
    for device in ("cpu", "tpu"):
        nt = jagged(components(), device, requires_grad=True)
        out = {
            "sum": nt.sum(dim=1),
            "mean": nt.mean(dim=1),
            "padded": nt.to_padded_tensor(0.5),
            "softmax": nt.softmax(dim=1).values(),
            "layer_norm": F.layer_norm(nt, (4,)).values(),
        }
        (out["padded"].sin().sum() + out["softmax"].pow(2).sum() + out["layer_norm"].pow(3).sum()).backward()
        out["grad"] = nt.grad.values()
        results[device] = {k: v.detach().cpu() for k, v in out.items()}
    for name, want in results["cpu"].items():
        torch.testing.assert_close(results["tpu"][name], want, rtol=1e-5, atol=1e-6, msg=name)


def test_jagged_conversions_with_empty_rows_and_wide_values():
    for device in ("cpu", "tpu"):
        parts = [torch.ones(0, 2, 3), torch.arange(12.0).view(2, 2, 3), torch.ones(1, 2, 3)]
        nt = jagged(parts, device)
        padded = nt.to_padded_tensor(-1.0)
        if device == "cpu":
            want = padded
        else:
            torch.testing.assert_close(padded.cpu(), want)
    offsets = torch.tensor([0, 0, 2, 3])
    dense = torch.randn(3, 4, 5)
    want = torch.ops.aten._padded_dense_to_jagged_forward(dense, [offsets], 3)
    got = torch.ops.aten._padded_dense_to_jagged_forward(dense.to("tpu"), [offsets.to("tpu")])
    torch.testing.assert_close(got.cpu(), want)
    values = torch.randn(6, 5)
    offsets = torch.tensor([0, 4, 4, 6])  # a row longer than max_length is cut
    want = torch.ops.aten._jagged_to_padded_dense_forward(values, [offsets], [3], 2.0)
    got = torch.ops.aten._jagged_to_padded_dense_forward(values.to("tpu"), [offsets.to("tpu")], [3], 2.0)
    torch.testing.assert_close(got.cpu(), want)


def test_jagged_attention_as_cpu():
    g = torch.Generator().manual_seed(3)
    parts = [torch.randn(5, 2, 8, generator=g), torch.randn(3, 2, 8, generator=g)]
    results = {}
    for device in ("cpu", "tpu"):
        q = jagged(parts, device, requires_grad=True)
        out = F.scaled_dot_product_attention(*(q.transpose(1, 2),) * 3).transpose(1, 2)
        out.values().pow(2).sum().backward()
        results[device] = (out.values().detach().cpu(), q.grad.values().cpu())
    for got, want in zip(results["tpu"], results["cpu"]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
