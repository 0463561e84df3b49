"""Convolutions (plain and transposed, 1d/2d/3d), pooling (max, average,
adaptive) and upsampling (nearest, nearest-exact, linear, bilinear,
trilinear, bicubic) against CPU, forward and backward. Shapes repeat across
tests to keep the number of distinct compiles small."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tpu_testing import assert_grads, assert_same, to_tpu

BF16_TOL = dict(rtol=2e-2, atol=2e-2)


def make(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        return torch.randint(0, 20, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


# ---- convolution ---------------------------------------------------------------------

CONV2D = [  # stride, padding, dilation, groups, bias
    (1, 0, 1, 1, True),
    (2, 1, 1, 1, False),
    ((2, 1), (1, 2), (1, 2), 2, True),
    (1, 1, 2, 4, True),  # depthwise
    (3, 2, 1, 2, False),
]


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", CONV2D)
def test_conv2d(stride, padding, dilation, groups, bias):
    x = make((2, 4, 9, 8))
    w = make((6 if groups != 4 else 4, 4 // groups, 3, 3), seed=1)
    b = make((w.shape[0],), seed=2) if bias else None
    assert_grads(lambda x, w, *b: F.conv2d(x, w, b[0] if b else None, stride, padding, dilation, groups),
                 x, w, *([b] if bias else []), rtol=1e-4, atol=1e-4)


def test_conv1d_conv3d_and_same_padding():
    x1, w1, b1 = make((2, 4, 11)), make((6, 2, 3), seed=1), make((6,), seed=2)
    assert_grads(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2), x1, w1, b1, rtol=1e-4, atol=1e-4)
    assert_grads(lambda x, w: F.conv1d(x, w, padding="same", dilation=2, groups=2), x1, w1, rtol=1e-4, atol=1e-4)
    assert_same(lambda x, w: F.conv1d(x, w, padding="valid"), x1, make((5, 4, 4), seed=3), rtol=1e-4, atol=1e-4)
    x3, w3 = make((1, 2, 5, 6, 7)), make((4, 2, 2, 3, 2), seed=1)
    assert_grads(lambda x, w: F.conv3d(x, w, stride=(1, 2, 2), padding=(1, 0, 1)), x3, w3, rtol=1e-4, atol=1e-4)


TRANSPOSED = [  # stride, padding, output_padding, dilation, groups
    (2, 1, 1, 1, 1),
    ((2, 3), (0, 1), (1, 2), 1, 2),
    (1, 2, 0, 2, 2),  # padding beyond the dilated kernel: negative inner padding
    (3, 0, 0, (1, 2), 1),
]


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", TRANSPOSED)
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups):
    x = make((2, 4, 5, 6))
    w = make((4, 6 // groups, 3, 3), seed=1)
    b = make((6,), seed=2)
    assert_grads(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
                 x, w, b, rtol=1e-4, atol=1e-4)


def test_conv_transpose1d_3d():
    assert_grads(lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2, groups=2),
                 make((2, 4, 7)), make((4, 3, 4), seed=1), rtol=1e-4, atol=1e-4)
    assert_grads(lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=(0, 1, 0), output_padding=(1, 0, 0)),
                 make((1, 2, 3, 4, 3)), make((2, 3, 2, 3, 2), seed=1), rtol=1e-4, atol=1e-4)


# Depthwise convolutions (one input channel per group) are sums of strided
# slices over the kernel's taps, forward and input gradient.
DEPTHWISE = [  # spatial dims, channel multiplier, kernel, stride, padding, dilation
    (1, 1, 3, 1, 1, 1), (1, 2, 5, 2, 0, 2), (2, 1, 3, 1, 1, 1), (2, 1, 7, 1, 3, 1), (2, 2, 3, 2, 2, 2),
    (2, 1, 1, 1, 0, 1), (3, 1, 3, 2, 1, 1), (2, 1, (3, 1), (1, 2), (1, 0), 1),
]


@pytest.mark.parametrize("dims,mult,k,stride,padding,dilation", DEPTHWISE, ids=str)
def test_depthwise_conv(dims, mult, k, stride, padding, dilation):
    conv = [F.conv1d, F.conv2d, F.conv3d][dims - 1]
    sizes = {1: (13,), 2: (9, 8), 3: (5, 6, 7)}[dims]
    ks = k if isinstance(k, tuple) else (k,) * dims
    x, w, b = make((2, 3) + sizes, torch.float64), make((3 * mult, 1) + ks, torch.float64, 1), make((3 * mult,), torch.float64, 2)
    assert_grads(lambda x, w, b: conv(x, w, b, stride, padding, dilation, 3), x, w, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("stride,padding,output_padding,dilation", [(1, 0, 0, 1), (2, 1, 1, 1), (3, 3, 2, 2), (2, 0, 0, 2)])
def test_depthwise_conv_transpose(stride, padding, output_padding, dilation):
    x, w = make((2, 4, 5, 6), torch.float64), make((4, 1, 3, 3), torch.float64, 1)
    assert_grads(lambda x, w: F.conv_transpose2d(x, w, None, stride, padding, output_padding, 4, dilation), x, w,
                 rtol=1e-10, atol=1e-10)


def test_depthwise_conv_dtypes_and_layouts():
    for dtype, tol in [(torch.float32, 1e-4), (torch.bfloat16, 3e-2), (torch.float16, 3e-3)]:
        x, w = make((2, 8, 10, 10), dtype), make((8, 1, 3, 3), dtype, 1)
        assert_grads(lambda x, w: F.conv2d(x, w, padding=1, groups=8), x, w, rtol=tol, atol=tol)
    x = make((2, 8, 10, 10)).to(memory_format=torch.channels_last)
    assert_grads(lambda x, w: F.conv2d(x, w, padding=1, groups=8), x, make((16, 1, 3, 3), seed=1), rtol=1e-4, atol=1e-4)
    assert_same(lambda x, w: F.conv2d(x, w, groups=4), make((0, 4, 6, 6)), make((4, 1, 3, 3), seed=1))
    x = make((1, 4, 6, 6))
    x[0, 1, 2, 2] = float("inf")  # stays in its channel's windows
    assert_same(lambda x, w: F.conv2d(x, w, groups=4), x, torch.ones(4, 1, 3, 3))


def test_conv_bf16_layouts_and_modules():
    x, w, b = make((2, 4, 9, 8), torch.bfloat16), make((6, 4, 3, 3), torch.bfloat16, 1), make((6,), torch.bfloat16, 2)
    assert_grads(lambda x, w, b: F.conv2d(x, w, b, 2, 1), x, w, b, rtol=3e-2, atol=6e-2)
    assert_grads(lambda x, w: F.conv_transpose2d(x, w, stride=2), x, make((4, 3, 3, 3), torch.bfloat16, 1),
                 rtol=3e-2, atol=6e-2)
    # channels_last input and weight; a sliced (strided) input
    xf = make((2, 4, 9, 8))
    wf = make((6, 4, 3, 3), seed=1)
    assert_same(lambda x, w: F.conv2d(x, w, None, 2, 1), xf.to(memory_format=torch.channels_last),
                wf.to(memory_format=torch.channels_last), rtol=1e-4, atol=1e-4)
    assert_same(lambda x, w: F.conv2d(x, w, None, 2, 1), make((2, 4, 18, 8))[:, :, ::2], wf, rtol=1e-4, atol=1e-4)
    # unbatched input, empty batch
    assert_same(lambda x, w: F.conv2d(x, w, None, 2, 1), xf[0], wf, rtol=1e-4, atol=1e-4)
    assert_same(lambda x, w: F.conv2d(x, w, None, 2, 1), xf[:0], wf)
    # integers convolve exactly
    assert_same(lambda x, w: F.conv2d(x, w, None, 2, 1), make((2, 4, 9, 8), torch.int64), make((6, 4, 3, 3), torch.int64))
    # an nn.Conv2d step: parameters' gradients match
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)
    conv_t = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1).to("tpu")
    conv_t.load_state_dict(conv.state_dict())
    conv(xf).square().sum().backward()
    conv_t(xf.to("tpu")).square().sum().backward()
    torch.testing.assert_close(conv_t.weight.grad.cpu(), conv.weight.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(conv_t.bias.grad.cpu(), conv.bias.grad, rtol=1e-4, atol=1e-3)


def test_conv_errors():
    x, w = make((2, 4, 9, 8)), make((6, 4, 3, 3), seed=1)
    assert_same(F.conv2d, x, make((6, 3, 3, 3)))  # channel mismatch
    assert_same(F.conv2d, x, make((6, 4, 3)))  # weight rank
    assert_same(lambda x, w: F.conv2d(x, w, groups=3), x, w)
    assert_same(F.conv2d, make((2, 4, 2, 2)), w)  # kernel larger than the input
    assert_same(F.conv2d, x, w.to(torch.bfloat16))  # dtype mismatch
    assert_same(lambda x, w: F.conv2d(x, w, torch.zeros(5)), x, w)  # bias size
    # output_padding must stay below stride or dilation, as on CPU
    xt, wt = make((1, 2, 3, 3)), make((2, 2, 3, 3), seed=2)
    assert_same(lambda x, w: F.conv_transpose2d(x, w, stride=1, output_padding=1), xt, wt)
    assert_same(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=3), xt, wt)
    assert_same(lambda x, w: F.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1), xt, wt)


def test_a_cpu_input_to_a_tpu_module_is_a_device_error():
    """PyTorch picks a CPU kernel by the input's device; the tpu weight sends
    it to the device, which names the mixed devices (not a missing op)."""
    for module, shape in ((torch.nn.Conv2d(3, 4, 3), (1, 3, 8, 8)), (torch.nn.Conv1d(3, 4, 3), (1, 3, 8)),
                          (torch.nn.ConvTranspose2d(3, 4, 3), (1, 3, 8, 8))):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            module.to("tpu")(torch.randn(shape))


# ---- max pooling ---------------------------------------------------------------------

MAXPOOL2D = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    ((2, 3), (1, 2), (1, 0), (2, 1), True),
]


@pytest.mark.parametrize("k,s,p,d,ceil", MAXPOOL2D)
def test_max_pool2d(k, s, p, d, ceil):
    def fn(x):
        return F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)

    x = make((2, 3, 9, 7))
    assert_same(fn, x)
    assert_same(fn, make((2, 3, 9, 7), torch.int64))  # many ties: first index wins
    assert_grads(lambda x: fn(x)[0], x)


def test_max_pool_variants():
    x = make((2, 3, 9, 7))
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2, 2] = float("nan")
    x[1, 1] = float("-inf")
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), make((3, 9, 7)))  # unbatched
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
                make((2, 3, 9, 7)).to(memory_format=torch.channels_last))
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), make((0, 3, 9, 7)))
    assert_grads(lambda x: F.max_pool2d(x, 3, 2, 1), make((2, 3, 9, 7), torch.bfloat16), **BF16_TOL)
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), make((2, 3, 9, 7), torch.bfloat16))
    assert_same(lambda x: F.max_pool2d(x, 2, return_indices=True), make((2, 3, 9, 7), torch.uint8))
    # 1d goes through max_pool2d; 3d has its own op
    assert_grads(lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), make((2, 3, 10)))
    assert_same(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), make((2, 3, 10)))
    assert_same(lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), return_indices=True), make((2, 2, 5, 6, 5)))
    assert_grads(lambda x: F.max_pool3d(x, 2, ceil_mode=True), make((2, 2, 5, 6, 5)))
    # max_unpool of an empty batch is empty, and so is its gradient
    for n, pool, unpool in ((1, F.max_pool1d, F.max_unpool1d), (2, F.max_pool2d, F.max_unpool2d),
                            (3, F.max_pool3d, F.max_unpool3d)):
        assert_grads(lambda x: unpool(*pool(x, 2, return_indices=True), 2), make((0, 3) + (6,) * n))


def test_max_pool_errors():
    x = make((2, 3, 9, 7))
    assert_same(lambda x: F.max_pool2d(x, 3, 1, 2), x)  # pad > kernel / 2
    assert_same(lambda x: F.max_pool2d(x, 10), x)  # output too small
    assert_same(lambda x: F.max_pool2d(x, (1, 2, 3)), x)
    assert_same(lambda x: F.max_pool2d(x, 2), make((9,)))
    assert_same(lambda x: F.max_pool2d(x, 2, return_indices=True), make((2, 3, 9, 7)).bool())
    assert_same(lambda x: F.max_pool2d(x, 0), x)


# ---- average pooling ----------------------------------------------------------------

AVGPOOL2D = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None),
    (3, 2, 1, False, True, None),
    (3, 2, 1, True, False, None),
    ((3, 2), (2, 1), (1, 1), True, True, None),
    (3, 2, 1, False, True, 5),
]


@pytest.mark.parametrize("k,s,p,ceil,cip,div", AVGPOOL2D)
def test_avg_pool2d(k, s, p, ceil, cip, div):
    assert_grads(lambda x: F.avg_pool2d(x, k, s, p, ceil, cip, div), make((2, 3, 9, 7)))


def test_avg_pool_variants():
    fn = lambda x: F.avg_pool2d(x, 3, 2, 1, True, False)  # noqa: E731
    assert_grads(fn, make((2, 3, 9, 7), torch.bfloat16), **BF16_TOL)
    assert_same(fn, make((2, 3, 9, 7)).to(memory_format=torch.channels_last))
    assert_same(fn, make((3, 9, 7)))
    assert_same(lambda x: F.avg_pool2d(x, 3, 2, 1), make((2, 3, 9, 7), torch.int64))
    assert_same(lambda x: F.avg_pool2d(x, 2), make((2, 3, 9, 7), torch.int32))  # not implemented on CPU either
    assert_grads(lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), make((2, 3, 10)))
    assert_grads(lambda x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), True, False), make((2, 2, 5, 6, 5)))
    assert_grads(lambda x: F.avg_pool3d(x, 2, divisor_override=3), make((2, 2, 5, 6, 5)))
    assert_same(lambda x: F.avg_pool2d(x, 3, 1, 2), make((2, 3, 9, 7)))  # pad > kernel / 2
    assert_same(lambda x: F.avg_pool2d(x, 2, divisor_override=0), make((2, 3, 9, 7)))


# ---- adaptive pooling ---------------------------------------------------------------


@pytest.mark.parametrize("out", [(3, 7), (4, 5), (1, 1), (12, 9)])
def test_adaptive_avg_pool2d(out):
    assert_grads(lambda x: F.adaptive_avg_pool2d(x, out), make((2, 3, 9, 7)))


@pytest.mark.parametrize("out", [(3, 7), (4, 5), (12, 9)])
def test_adaptive_max_pool2d(out):
    x = make((2, 3, 9, 7))
    assert_same(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), x)
    assert_grads(lambda x: F.adaptive_max_pool2d(x, out), x)


def test_adaptive_avg_pool_of_long_axes_sums_window_taps():
    # Beyond 2^22 entries an axis's [out, in] window matrix gives way to
    # summing the (at most 64) taps of each window, forward and backward.
    assert_grads(lambda x: F.adaptive_avg_pool1d(x, 2001), make((2, 3, 6000)), rtol=1e-5, atol=1e-5)
    assert_grads(lambda x: F.adaptive_avg_pool2d(x, (1001, 5)), make((1, 2, 3000, 7)), rtol=1e-5, atol=1e-5)


def test_adaptive_variants():
    assert_grads(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), make((2, 3, 9, 7), torch.bfloat16), **BF16_TOL)
    assert_same(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), make((2, 3, 9, 7)).to(memory_format=torch.channels_last))
    assert_same(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), make((3, 9, 7)))
    assert_grads(lambda x: F.adaptive_avg_pool1d(x, 4), make((2, 3, 10)))
    assert_grads(lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), make((2, 2, 5, 6, 5)))
    assert_grads(lambda x: F.adaptive_max_pool1d(x, 4), make((2, 3, 10)))
    assert_same(lambda x: F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True), make((2, 2, 5, 6, 5)))
    assert_grads(lambda x: F.adaptive_max_pool3d(x, (2, 4, 3)), make((2, 2, 5, 6, 5)))
    assert_same(lambda x: F.adaptive_max_pool2d(x, (4, 5), return_indices=True), make((2, 3, 9, 7), torch.bfloat16))
    x = make((2, 3, 9, 7), torch.int64)
    assert_same(lambda x: F.adaptive_max_pool2d(x, (4, 5)), x)
    assert_same(lambda x: torch.ops.aten._adaptive_avg_pool2d(x, (4, 5)), x)
    assert_same(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), make((2, 3, 0, 7)))
    assert_same(lambda x: F.adaptive_avg_pool2d(x, (4, 5)), make((9, 7)))


# ---- upsampling ----------------------------------------------------------------------

UPSAMPLE2D = [  # mode, size, scale_factor, align_corners
    ("nearest", (18, 14), None, None),
    ("nearest", None, 1.7, None),
    ("nearest", (5, 4), None, None),  # downsampling
    ("nearest-exact", None, (1.7, 2.3), None),
    ("bilinear", (18, 11), None, False),
    ("bilinear", (18, 11), None, True),
    ("bilinear", None, 1.7, False),
    ("bilinear", (5, 4), None, True),
    ("bicubic", (13, 11), None, False),
    ("bicubic", (13, 11), None, True),
]


@pytest.mark.parametrize("mode,size,scale,align", UPSAMPLE2D)
def test_upsample2d(mode, size, scale, align):
    def fn(x):
        return F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align)

    assert_grads(fn, make((2, 3, 9, 7)), rtol=1e-5, atol=1e-5)


def test_upsample_variants():
    near = lambda x: F.interpolate(x, size=(18, 11))  # noqa: E731
    bil = lambda x: F.interpolate(x, size=(18, 11), mode="bilinear")  # noqa: E731
    assert_grads(bil, make((2, 3, 9, 7), torch.bfloat16), **BF16_TOL)
    assert_grads(near, make((2, 3, 9, 7), torch.bfloat16), **BF16_TOL)
    assert_same(near, make((2, 3, 9, 7), torch.uint8))
    assert_same(bil, make((2, 3, 9, 7)).to(memory_format=torch.channels_last))
    assert_same(bil, make((2, 3, 18, 14))[:, :, ::2, ::2])
    assert_same(bil, make((0, 3, 9, 7)))
    assert_same(near, make((2, 3, 9, 7), torch.int64))  # not implemented on CPU either
    # 1d and 3d
    assert_grads(lambda x: F.interpolate(x, scale_factor=2.5, mode="linear"), make((2, 3, 10)))
    assert_grads(lambda x: F.interpolate(x, size=7, mode="linear", align_corners=True), make((2, 3, 10)))
    assert_grads(lambda x: F.interpolate(x, size=23), make((2, 3, 10)))
    assert_grads(lambda x: F.interpolate(x, size=23, mode="nearest-exact"), make((2, 3, 10)))
    assert_grads(lambda x: F.interpolate(x, scale_factor=(2, 1.5, 1), mode="trilinear"), make((1, 2, 3, 4, 5)))
    assert_grads(lambda x: F.interpolate(x, scale_factor=2), make((1, 2, 3, 4, 5)))
    assert_grads(lambda x: F.interpolate(x, size=(4, 5, 6), mode="nearest-exact"), make((1, 2, 3, 4, 5)))
    # A scale whose output size is the input's (or twice it): CPU's 2-D
    # forward kernel copies (or doubles) rows, its 1-D and 3-D ones compute
    # floor(o / scale); every backward copies.
    for scale in (1.05, 2.1):
        assert_grads(lambda x: F.interpolate(x, scale_factor=scale), make((2, 3, 12)))
        assert_grads(lambda x: F.interpolate(x, scale_factor=(scale, scale)), make((2, 3, 12, 7)))
        assert_grads(lambda x: F.interpolate(x, scale_factor=(1, 1, scale)), make((1, 2, 3, 4, 7)))
    # bad sizes
    assert_same(lambda x: F.interpolate(x, size=(0, 4)), make((2, 3, 9, 7)))
    assert_same(lambda x: torch.ops.aten.upsample_bilinear2d(x, [4, 4], False), make((3, 9, 7)))


@pytest.mark.parametrize("mode", ["linear", "nearest", "nearest-exact"])
def test_upsample_gradient_of_long_signals_scatters(mode):
    # Beyond 2^22 entries the [out, in] weight matrix of an axis's backward
    # gives way to scattering the taps back (80 GB for 100k samples doubled).
    align = {"align_corners": True} if mode == "linear" else {}
    assert_grads(lambda x: F.interpolate(x, scale_factor=2.5, mode=mode, **align), make((1, 2, 1500)),
                 rtol=1e-5, atol=1e-5)


def test_upsample2d_gradient_beyond_the_matrix_limit():
    assert_grads(lambda x: F.interpolate(x, size=(2100, 9), mode="bicubic"), make((1, 1, 2000, 7)),
                 rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(5, 7), (12, 9), (31, 40), (20, 2)])
@pytest.mark.parametrize("align", [False, True])
def test_antialiased_interpolate_and_its_gradient(mode, size, align):
    # Down (wider filters, more taps per output) and up (plain taps).
    x = make((2, 3, 17, 23))
    assert_grads(lambda t: F.interpolate(t, size=size, mode=mode, antialias=True, align_corners=align), x,
                 rtol=1e-5, atol=1e-5)


def test_antialiased_interpolate_scale_factors_and_bf16():
    for factor in (0.3, 0.5, 1.7):
        assert_grads(lambda t: F.interpolate(t, scale_factor=factor, mode="bilinear", antialias=True),
                     make((1, 2, 10, 13)), rtol=1e-5, atol=1e-5)
    assert_same(lambda t: F.interpolate(t, size=(6, 5), mode="bicubic", antialias=True), make((1, 2, 19, 11)).double())
    # CPU has no bfloat16 kernel (CUDA has): against CPU's float32 result.
    x = make((1, 2, 19, 11), torch.bfloat16)
    got = F.interpolate(to_tpu(x), size=(6, 5), mode="bilinear", antialias=True).cpu()
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), F.interpolate(x.float(), size=(6, 5), mode="bilinear", antialias=True),
                               **BF16_TOL)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_and_its_gradients(mode, padding, align):
    # Gradients of the input and of the grid (zero for nearest, as CPU).
    x = make((2, 3, 9, 7))
    grid = make((2, 5, 4, 2), seed=3) * 0.8  # some points outside [-1, 1]
    assert_grads(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align), x, grid,
                 rtol=1e-4, atol=1e-4)
    # Only one of the two needing a gradient.
    assert_grads(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align), x, grid,
                 constant=(1,), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_3d_and_its_gradients(mode, padding, align):
    x = make((2, 3, 4, 5, 7))
    grid = make((2, 3, 2, 4, 3), seed=4) * 0.8
    assert_grads(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align), x, grid,
                 rtol=1e-4, atol=1e-4)


def test_grid_sample_3d_errors():
    x, grid = make((2, 3, 4, 5, 7)), make((2, 3, 2, 4, 3), seed=4)
    assert_same(lambda x, g: F.grid_sample(x, g, mode="bicubic", align_corners=False), x, grid)
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), x, make((2, 3, 2, 4, 2)))
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), x, make((2, 3, 4, 2)))


def test_grid_sample_nan_and_huge_grid_values_as_cpu():
    # NaN: read as -1 where the 2-d kernel clips (border, reflection), NaN
    # (0 for nearest) with zeros padding; the 3-d kernel clips it to the far
    # edge and gives 0 with zeros padding. Huge bicubic coordinates stay exact.
    nan = float("nan")
    x2, g2 = make((1, 2, 5, 6)), torch.tensor([[[[nan, 0.3], [0.2, nan], [nan, nan]]]])
    x3, g3 = make((1, 2, 3, 5, 6)), torch.tensor([[[[[0.3, nan, 0.2], [nan, nan, nan]]]]])
    for padding in ("zeros", "border", "reflection"):
        for align in (False, True):
            for mode in ("bilinear", "nearest", "bicubic"):
                assert_same(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align),
                            x2, g2)
            for mode in ("bilinear", "nearest"):
                assert_same(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align),
                            x3, g3)
    for v in (3e9, 1e12, -1e12):
        for padding in ("zeros", "border"):
            assert_same(lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode=padding, align_corners=True),
                        x2, torch.tensor([[[[v, 0.5]]]]))


def test_grid_sample_gradient_in_float64_and_on_borders():
    # Grid points exactly on pixel centres and borders, where clipping and
    # reflection switch their derivatives.
    x = make((1, 2, 4, 5)).double()
    ys, xs = torch.meshgrid(torch.linspace(-1.5, 1.5, 7), torch.linspace(-1.25, 1.25, 6), indexing="ij")
    grid = torch.stack([xs, ys], -1).unsqueeze(0).double()
    for mode in ("bilinear", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                assert_grads(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align),
                             x, grid, rtol=1e-10, atol=1e-10)


def test_grid_sample_bf16_and_errors():
    x, grid = make((2, 3, 9, 7), torch.bfloat16), (make((2, 5, 4, 2), seed=3) * 0.8).to(torch.bfloat16)
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), x, grid, **BF16_TOL)
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), make((2, 3, 9, 7)), make((3, 5, 4, 2)))
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), make((2, 3, 9, 7)), make((2, 5, 4, 3)))
    assert_same(lambda x, g: F.grid_sample(x, g, align_corners=False), make((2, 3, 9, 7)), grid)  # dtypes differ


def test_adaptive_average_pooling_and_antialiasing_keep_infinities_in_their_windows():
    # Window sums by a 0/1 matrix multiplied an inf by every other output's 0.
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[[inf, 1.0, 2.0, 3.0, 4.0]]])
    mixed = torch.tensor([[[1.0, nan, 2.0, -inf, 4.0, inf, 5.0] * 3]])
    image = torch.randn(2, 3, 10, 11)
    image[0, 0, 3, 4], image[1, 2, 7, 7] = inf, -inf
    cases = [(lambda t: F.adaptive_avg_pool1d(t, 3), x), (lambda t: F.interpolate(t, size=3, mode="area"), x),
             (lambda t: F.adaptive_avg_pool1d(t, 7), mixed), (lambda t: F.adaptive_avg_pool2d(t, (4, 3)), image),
             (lambda t: F.interpolate(t[:, :, :1], size=(1, 3), mode="bilinear", antialias=True), image),
             (lambda t: F.interpolate(t[:, :, :1], size=(1, 4), mode="bicubic", antialias=True), image)]
    for fn, t in cases:
        torch.testing.assert_close(fn(t.to("tpu")).cpu(), fn(t), equal_nan=True)
    grad = torch.randn(1, 1, 3)
    grad[0, 0, 1] = inf
    for device in ("cpu", "tpu"):
        t = torch.randn(1, 1, 5, generator=torch.Generator().manual_seed(0)).to(device).requires_grad_()
        F.adaptive_avg_pool1d(t, 3).backward(grad.to(device))
        if device == "cpu":
            expected = t.grad
    torch.testing.assert_close(t.grad.cpu(), expected, equal_nan=True)
