"""Result strides match what PyTorch's shape functions promise.

Graph capture (torch.export, AOTAutograd, make_fx) runs ops on fake tensors
whose strides come from PyTorch's meta kernels, and records a later reshape
as a view when those strides allow it. A tpu result laid out otherwise makes
the captured graph fail on real tensors. Factorizations store matrices by
columns, FFTs follow the MKL kernels' layout, attention returns its output
in the query's layout; each is checked against FakeTensor's strides, and
the graphs that failed before run against CPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._pytree import tree_flatten, tree_map

from tpu_testing import to_tpu


def assert_strides_match_fake(fn, *args):
    real = [t for t in tree_flatten(fn(*args))[0] if isinstance(t, torch.Tensor)]
    mode = FakeTensorMode()
    fake_args = tree_map(lambda t: mode.from_tensor(t) if isinstance(t, torch.Tensor) else t, args)
    with mode:
        fake = [t for t in tree_flatten(fn(*fake_args))[0] if isinstance(t, torch.Tensor)]
    assert len(real) == len(fake)
    for i, (r, f) in enumerate(zip(real, fake)):
        assert r.shape == f.shape, (i, r.shape, f.shape)
        if r.numel() > 1:
            assert r.stride() == f.stride(), (i, tuple(r.shape), r.stride(), f.stride())


def spd(n, batch=()):
    a = torch.randn(*batch, n, n, generator=torch.Generator().manual_seed(0))
    return a @ a.mT + n * torch.eye(n)


L = torch.linalg
LINALG = {
    "cholesky": lambda a, b: L.cholesky(a),
    "cholesky_ex": lambda a, b: L.cholesky_ex(a),
    "inv": lambda a, b: L.inv(a),
    "solve": lambda a, b: L.solve(a, b),
    "solve_vector": lambda a, b: L.solve(a, b[..., 0]),
    "solve_ex": lambda a, b: L.solve_ex(a, b),
    "solve_triangular": lambda a, b: L.solve_triangular(a.tril(), b, upper=False),
    "triangular_solve": lambda a, b: torch.triangular_solve(b, a.triu()),
    "lu_factor": lambda a, b: L.lu_factor(a),
    "lu_solve_left": lambda a, b: L.lu_solve(*L.lu_factor(a), b),
    "lu_solve_right": lambda a, b: L.lu_solve(*L.lu_factor(a), b.mT, left=False),
    "qr": lambda a, b: L.qr(b),
    "qr_complete": lambda a, b: L.qr(b, mode="complete"),
    "qr_r": lambda a, b: L.qr(b, mode="r"),
    "eigh": lambda a, b: L.eigh(a),
    "svd": lambda a, b: L.svd(b, full_matrices=False),
    "householder_product": lambda a, b: L.householder_product(b, b[..., 0, :] * 0.5),
    "ormqr": lambda a, b: torch.ormqr(b, b[..., 0, :] * 0.5, a),
}


@pytest.mark.parametrize("batch", [(), (2,)], ids=["matrix", "batched"])
@pytest.mark.parametrize("name", sorted(LINALG))
def test_factorization_results_are_stored_by_columns_like_the_shape_functions_say(name, batch):
    a = spd(4, batch)
    b = torch.randn(*batch, 4, 2, generator=torch.Generator().manual_seed(1))
    assert_strides_match_fake(LINALG[name], *to_tpu((a, b)))


FFTS = {
    "fft_dim1": lambda x: torch.fft.fft(x.to(torch.complex64), dim=1),
    "ifft2": lambda x: torch.fft.ifft2(x.to(torch.complex64), dim=(0, 2)),
    "rfft": lambda x: torch.fft.rfft(x, dim=1),
    "rfftn": lambda x: torch.fft.rfftn(x, dim=(2, 0)),
    "irfft": lambda x: torch.fft.irfft(x.to(torch.complex64), dim=1),
    "irfftn": lambda x: torch.fft.irfftn(x.to(torch.complex64), dim=(0, 1)),
    "hfft": lambda x: torch.fft.hfft(x.to(torch.complex64), dim=0),
    "ihfftn": lambda x: torch.fft.ihfftn(x, dim=(1, 2)),
    "transposed_input": lambda x: torch.fft.fft(x.transpose(0, 2).to(torch.complex64), dim=1),
}


@pytest.mark.parametrize("name", sorted(FFTS))
def test_fft_results_follow_the_shape_functions_layout(name):
    x = torch.randn(3, 6, 4, generator=torch.Generator().manual_seed(2))
    assert_strides_match_fake(FFTS[name], to_tpu(x))
    torch.testing.assert_close(FFTS[name](to_tpu(x)).cpu(), FFTS[name](x), rtol=1e-4, atol=1e-4)


def attention_with_grads(q, k, v):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return (out, *torch.autograd.grad(out.sum(), (q, k, v)))


def attention_layouts(g):
    """Query / key / value layouts of [2, 3, 5, 8] ([B, H, L, E]) that
    models make, and odd ones."""
    r = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
    return {
        "contiguous": lambda: r(2, 3, 5, 8),
        # [B, L, H, E] seen as [B, H, L, E], as Hugging Face models do
        "transposed": lambda: r(2, 5, 3, 8).transpose(1, 2),
        # one head: contiguous by PyTorch's rules, but empty_like keeps the
        # transposed strides of the size-1 dim
        "one_head": lambda: r(2, 5, 1, 8).transpose(1, 2),
        "sequence_major": lambda: r(5, 2, 3, 8).permute(1, 2, 0, 3),
        "expanded": lambda: r(1, 3, 5, 8).expand(2, 3, 5, 8),
        "strided": lambda: r(2, 3, 5, 16)[..., ::2],
    }


@pytest.mark.parametrize("layout", sorted(attention_layouts(None)))
def test_attention_output_and_gradients_take_their_inputs_layout(layout):
    make = attention_layouts(torch.Generator().manual_seed(3))[layout]
    q, k, v = make(), make(), make()
    assert_strides_match_fake(attention_with_grads, *to_tpu((q, k, v)))
    for got, want in zip(attention_with_grads(*to_tpu((q, k, v))), attention_with_grads(q, k, v)):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", sorted(attention_layouts(None)))
def test_flip_keeps_the_input_layout_as_on_cpu(layout):
    x = attention_layouts(torch.Generator().manual_seed(4))[layout]()
    assert_strides_match_fake(lambda t: t.flip(1), to_tpu(x))
    assert to_tpu(x).flip(1).stride() == x.flip(1).stride()


def transposed(*shape):
    return torch.randn(*shape).transpose(-1, -2).contiguous().transpose(-1, -2)


def channels_last(*shape):
    return torch.randn(*shape).contiguous(memory_format=torch.channels_last)


ELEMENTWISE = {
    "unary": (lambda x, y: x.exp(), lambda: (transposed(3, 5), None)),
    "binary": (lambda x, y: x * y, lambda: (transposed(3, 5), transposed(3, 5))),
    "binary_mixed": (lambda x, y: x + y, lambda: (transposed(3, 5), torch.randn(3, 5))),
    "broadcast_row": (lambda x, y: x - y, lambda: (transposed(4, 3, 5), torch.randn(5))),
    "scalar": (lambda x, y: x / 3, lambda: (channels_last(2, 3, 4, 5), None)),
    "compare": (lambda x, y: x > y, lambda: (transposed(3, 5), transposed(3, 5))),
    "where": (lambda x, y: torch.where(x > 0, x, y), lambda: (transposed(3, 5), transposed(3, 5))),
    "clamp": (lambda x, y: x.clamp(-0.5, 0.5), lambda: (channels_last(2, 3, 4, 5), None)),
    "activation": (lambda x, y: F.gelu(x), lambda: (channels_last(2, 3, 4, 5), None)),
    "activation_backward": (lambda x, y: torch.ops.aten.threshold_backward(y, x, 0.0),
                            lambda: (transposed(3, 5), transposed(3, 5))),
    "pointwise": (lambda x, y: torch.lerp(x, y, 0.3), lambda: (channels_last(2, 3, 4, 5), channels_last(2, 3, 4, 5))),
    "expanded": (lambda x, y: x + 1, lambda: (torch.randn(3, 1).expand(3, 4), None)),
}


CHANNELS_LAST = {
    "max_pool": lambda x: F.max_pool2d(x, 2, return_indices=True),
    "avg_pool": lambda x: F.avg_pool2d(x, 2),
    "adaptive_avg_pool": lambda x: F.adaptive_avg_pool2d(x, 3),
    "adaptive_max_pool": lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True),
    "upsample_nearest": lambda x: F.interpolate(x, scale_factor=2),
    "upsample_bilinear": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "batch_norm_train": lambda x: F.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda x: F.batch_norm(x, torch.zeros(3, device=x.device), torch.ones(3, device=x.device)),
    "sort": lambda x: x.sort(1),
    "flip": lambda x: x.flip(2),
}


@pytest.mark.parametrize("name", sorted(CHANNELS_LAST))
def test_channels_last_results_match_their_shape_functions(name):
    """Pooling, resampling, normalization, sort and flip keep an NHWC input's
    layout, as CPU and their shape functions do."""
    fn = CHANNELS_LAST[name]
    x = channels_last(2, 3, 6, 8)
    assert_strides_match_fake(fn, to_tpu(x))
    got, want = fn(to_tpu(x)), fn(x)
    for g, w in zip(*(t if isinstance(t, tuple) else (t,) for t in (got, want))):
        assert g.stride() == w.stride()
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)


def test_pooling_and_resampling_gradients_stay_channels_last():
    x = channels_last(2, 3, 6, 8)

    def grads(x):
        x = x.detach().requires_grad_()
        (F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 2).square().sum()
         + F.interpolate(x, scale_factor=2, mode="bilinear").square().sum()).backward()
        return x.grad

    got, want = grads(to_tpu(x)), grads(x)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)


def test_3d_pools_and_resampling_gradients_follow_cpu():
    """Of the 3-D pools only max pooling keeps channels_last_3d; bicubic and
    3-D nearest gradients are contiguous: as on CPU and in the shape
    functions."""
    x5 = torch.randn(2, 3, 4, 6, 6).contiguous(memory_format=torch.channels_last_3d)
    x4 = channels_last(2, 3, 6, 8)
    cases = [
        (x5, lambda x: F.max_pool3d(x, 2)), (x5, lambda x: F.avg_pool3d(x, 2)),
        (x5, lambda x: F.adaptive_avg_pool3d(x, 2)), (x5, lambda x: F.adaptive_max_pool3d(x, 2)),
        (x5, lambda x: F.interpolate(x, scale_factor=2)), (x5, lambda x: F.interpolate(x, scale_factor=2, mode="trilinear")),
        (x4, lambda x: F.interpolate(x, scale_factor=2, mode="bicubic")),
        (x4, lambda x: F.interpolate(x, scale_factor=2, mode="nearest-exact")),
    ]
    for x, fn in cases:
        def value_and_grad(x):
            x = x.detach().requires_grad_()
            y = fn(x)
            return y, torch.autograd.grad(y.square().sum(), x)[0]

        got, want = value_and_grad(to_tpu(x)), value_and_grad(x)
        for g, w in zip(got, want):
            assert g.stride() == w.stride()
            torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-4)


def test_dropout_result_and_mask_take_the_input_layout():
    x = transposed(6, 5)
    out, mask = torch.ops.aten.native_dropout(to_tpu(x), 0.4, True)
    assert out.stride() == mask.stride() == x.stride() == (1, 6)
    assert_strides_match_fake(lambda x: torch.ops.aten.native_dropout(x, 0.4, True), to_tpu(x))
    torch.testing.assert_close(out.cpu(), x * mask.cpu() / 0.6)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_results_take_their_inputs_layout(name):
    """As TensorIterator lays them out on CPU, CUDA and in the meta kernels."""
    fn, make = ELEMENTWISE[name]
    x, y = make()
    assert_strides_match_fake(fn, *to_tpu((x, y)))
    got, want = fn(*to_tpu((x, y))), fn(x, y)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want)


OUT_OPS = {
    "add": lambda x, out: torch.add(x, x.t().t(), alpha=2, out=out),
    "sin": lambda x, out: torch.sin(x, out=out),
    "lt": lambda x, out: torch.lt(x, 0, out=out.bool()),
    "addcmul": lambda x, out: torch.addcmul(x, x, x, out=out),
    "where": lambda x, out: torch.where(x > 0, x, torch.ones_like(x), out=out),
    "pow": lambda x, out: torch.pow(x, 2, out=out),
    "gelu": lambda x, out: torch._C._nn.gelu(x, out=out),
}


@pytest.mark.parametrize("name", sorted(OUT_OPS))
def test_an_out_resized_from_empty_takes_the_iterator_layout(name):
    """CPU's TensorIterator lays a resized out= as it lays the functional
    result: an empty out given transposed inputs comes back transposed."""
    x = transposed(4, 5)
    want = OUT_OPS[name](x, torch.empty(0))
    got = OUT_OPS[name](to_tpu(x), torch.empty(0, device="tpu"))
    assert got.stride() == want.stride() == x.stride()
    torch.testing.assert_close(got.cpu(), want)


LINALG_OUT_OPS = {
    "cholesky": lambda a, out: torch.linalg.cholesky(a, out=out),
    "inv": lambda a, out: torch.linalg.inv(a, out=out),
    "solve": lambda a, out: torch.linalg.solve(a, a + 1, out=out),
    "solve_triangular": lambda a, out: torch.linalg.solve_triangular(a, a, upper=True, out=out),
}


@pytest.mark.parametrize("name", sorted(LINALG_OUT_OPS))
@pytest.mark.parametrize("initial", [(0,), (3,)], ids=["empty", "wrong_shape"])
def test_a_resized_linalg_out_is_column_major_as_on_cpu(name, initial):
    # (torch.cholesky's legacy out= is row-major on CPU, and stays so.)
    a = torch.eye(4, dtype=torch.float64).expand(2, 4, 4) * 2 + 0.1
    want = torch.empty(initial, dtype=torch.float64)
    LINALG_OUT_OPS[name](a, want)
    got = torch.empty(initial, dtype=torch.float64, device="tpu")
    LINALG_OUT_OPS[name](to_tpu(a), got)
    assert got.stride() == want.stride() == (16, 1, 4)
    torch.testing.assert_close(got.cpu(), want)


def _conv_weight(x):
    return torch.ones(3, 4, 3, 3, device=x.device)


CHANNELS_LAST_OPS = {
    "conv2d": lambda x: F.conv2d(x, _conv_weight(x)),
    "conv_transpose2d": lambda x: F.conv_transpose2d(x, _conv_weight(x).transpose(0, 1).contiguous()),
    "group_norm": lambda x: F.group_norm(x, 2),
    "cat": lambda x: torch.cat([x, x], 1),
    "stack": lambda x: torch.stack([x, x]),
    "prelu": lambda x: F.prelu(x, torch.full((4,), 0.25, device=x.device)),
    "pad_constant": lambda x: F.pad(x, (1, 1, 1, 1)),
    "pad_reflect": lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
    "pad_replicate": lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate"),
    "roll": lambda x: torch.roll(x, 1, 2),
    "mse_none": lambda x: F.mse_loss(x, x * 0.5, reduction="none"),
    "smooth_l1_none": lambda x: F.smooth_l1_loss(x, x * 0.5, reduction="none"),
    "bce_none": lambda x: F.binary_cross_entropy(x.sigmoid(), x.sigmoid() * 0.5, reduction="none"),
    "bce_logits_none": lambda x: F.binary_cross_entropy_with_logits(x, x.sigmoid(), reduction="none"),
    "pixel_shuffle": lambda x: F.pixel_shuffle(x, 2),
    "pixel_unshuffle": lambda x: F.pixel_unshuffle(x[..., :4, :6], 2),
    "channel_shuffle": lambda x: F.channel_shuffle(x, 2),
    "native_channel_shuffle": lambda x: F.native_channel_shuffle(x, 2),
}


def test_max_unpool2d_of_a_channels_last_input_is_contiguous_as_its_shape_function_says():
    # CUDA's kernel too; CPU's keeps the channels_last format.
    x = channels_last(2, 4, 4, 4)
    assert_strides_match_fake(lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2), to_tpu(x))


@pytest.mark.parametrize("name", sorted(CHANNELS_LAST_OPS))
def test_channels_last_results_stay_channels_last(name):
    """CPU's kernels keep an NHWC input's format; a channels_last network
    that flattens with permute(0, 2, 3, 1).view(...) needs them to."""
    x = channels_last(2, 4, 5, 6)
    got, want = CHANNELS_LAST_OPS[name](to_tpu(x)), CHANNELS_LAST_OPS[name](x)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [lambda: torch.arange(12.0).reshape(3, 4).t(),
                                  lambda: torch.randn(2, 3, 4, 5).permute(0, 2, 1, 3)])
def test_roll_of_a_permuted_input_is_row_major(make):
    # CPU's and CUDA's roll keep only a channels_last format.
    x = make()
    got, want = to_tpu(x).roll(1, 0), x.roll(1, 0)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got.view(-1).cpu(), want.view(-1))


@pytest.mark.parametrize("weight_channels_last", [False, True])
def test_convolution_fake_layouts_match_the_kernels(weight_channels_last):
    """Graph capture predicts each convolution result's strides; they must
    be the ones the tpu kernels return (a traced view of a result predicted
    row-major failed on the channels_last one)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 3, 6, 5)
    w = torch.randn(4, 3, 2, 2)
    if weight_channels_last:
        w = channels_last(4, 3, 2, 2)
    else:
        x = channels_last(2, 3, 6, 5)
    xt, wt = to_tpu(x).requires_grad_(), to_tpu(w).requires_grad_()
    forward = lambda a, b: F.conv2d(a, b)
    transposed = lambda a, b: F.conv_transpose2d(a, b.transpose(0, 1))
    for f in (forward, transposed):
        real = f(xt, wt)
        grads = torch.autograd.grad(real.sum(), (xt, wt))
        mode = FakeTensorMode()
        fx, fw = mode.from_tensor(xt), mode.from_tensor(wt)
        with mode:
            fake = f(fx, fw)
            fake_grads = torch.autograd.grad(fake.sum(), (fx, fw))
        assert fake.stride() == real.stride()
        assert [g.stride() for g in fake_grads] == [g.stride() for g in grads]


def test_conv_gradients_take_the_channels_last_layout():
    x = channels_last(2, 4, 5, 6).requires_grad_()
    w = torch.randn(3, 4, 3, 3)
    xt = to_tpu(x).detach().requires_grad_()
    grads = [torch.ops.aten.convolution_backward(torch.ones(2, 3, 3, 4, device=a.device).contiguous(
        memory_format=torch.channels_last), a, b, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
        [True, True, False]) for a, b in ((x, w), (xt, to_tpu(w)))]
    for want, got in zip(grads[0][:2], grads[1][:2]):
        assert got.stride() == want.stride()
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


class AttentionInHfLayout(torch.nn.Module):
    def forward(self, x):  # x: [B, L, H, E]
        q = x.transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)


class CholeskyThenView(torch.nn.Module):
    def forward(self, a):
        return torch.linalg.cholesky(a).mT.contiguous().view(-1)


class FftThenView(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x, dim=1).transpose(1, 2).contiguous().view(-1)


class ScaleTransposedThenView(torch.nn.Module):
    def forward(self, x):  # x: [B, L, H, E]; an elementwise op keeps the transposed layout
        y = torch.sigmoid(x.transpose(1, 2) * 0.5 + 1)
        return y.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)


class ChannelsLastActivationThenView(torch.nn.Module):
    def forward(self, x):  # x: channels_last [B, C, H, W], as Diffusers' blocks flatten it
        y = F.silu(x) * x
        return y.permute(0, 2, 3, 1).view(x.shape[0], -1, x.shape[1])


class NormPoolThenFlatten(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm2d(3)

    def forward(self, x):  # x: channels_last
        y = F.avg_pool2d(F.relu(self.norm(x)), 2)
        return y.permute(0, 2, 3, 1).view(x.shape[0], -1, x.shape[1])


CAPTURED = {
    "norm_pool_channels_last": (NormPoolThenFlatten,
                                lambda: torch.randn(2, 3, 4, 6).contiguous(memory_format=torch.channels_last)),
    "attention": (AttentionInHfLayout, lambda: torch.randn(2, 5, 2, 8)),
    "elementwise_transposed": (ScaleTransposedThenView, lambda: torch.randn(2, 5, 3, 4)),
    "elementwise_channels_last": (ChannelsLastActivationThenView,
                                  lambda: torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)),
    "cholesky": (CholeskyThenView, lambda: spd(4)),
    "fft": (FftThenView, lambda: torch.randn(2, 6, 3)),
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_captured_graphs_run_on_the_device(name):
    """Views that graph capture recorded from the promised strides are valid
    on the real results: export (with decompositions) and aot_eager."""
    module, make = CAPTURED[name]
    x = make()
    want = module()(x)
    xt = to_tpu(x)
    exported = torch.export.export(module().to("tpu"), (xt,))
    torch.testing.assert_close(exported.module()(xt).cpu(), want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(exported.run_decompositions().module()(xt).cpu(), want, rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    compiled = torch.compile(module().to("tpu"), backend="aot_eager")
    torch.testing.assert_close(compiled(xt).cpu(), want, rtol=1e-4, atol=1e-4)


def test_export_with_a_dynamic_batch_through_attention():
    """The fused-kernel choice reads symbolic sizes without specializing them."""
    exported = torch.export.export(AttentionInHfLayout(), (to_tpu(torch.randn(2, 5, 2, 8)),),
                                   dynamic_shapes=({0: torch.export.Dim("batch")},))
    x = torch.randn(3, 5, 2, 8)
    torch.testing.assert_close(exported.module()(to_tpu(x)).cpu(), AttentionInHfLayout()(x), rtol=1e-4, atol=1e-5)


def test_nonzero_is_stored_by_columns_as_its_shape_function_says():
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    for make, strides in ((lambda t: torch.nonzero(t), (1, 3)), (lambda t: torch.nonzero_static(t, size=5), (1, 5))):
        expected, actual = make(x), make(x.to("tpu"))
        assert actual.stride() == strides  # CPU stores nonzero_static by rows, CUDA by columns
        assert actual.cpu().tolist() == expected.tolist()
    assert_strides_match_fake(lambda t: torch.nonzero_static(t, size=5), x.to("tpu"))
    out = torch.empty(0, dtype=torch.long, device="tpu")
    torch.nonzero(x.to("tpu"), out=out)
    assert out.stride() == torch.nonzero(x).stride()
