"""out= forms of pooling, upsampling, batch norm, nonzero_static,
searchsorted and narrow_copy (csrc/aten/register_out_forms.cc) against CPU: values written into the
out tensors, which are returned; resizing of empty outs; dtype errors."""

from __future__ import annotations

import inspect

import pytest
import torch

from tpu_testing import to_cpu, to_tpu

aten = torch.ops.aten


def r(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


X4, X5, X3 = r(2, 3, 8, 8), r(1, 2, 4, 6, 6, seed=1), r(2, 3, 10, seed=2)
G4 = r(2, 3, 4, 4, seed=3)

# name -> (call taking the inputs then the out tensors by keyword, inputs, out dtypes)
CASES = {
    "adaptive_avg_pool2d": (lambda x, out: aten.adaptive_avg_pool2d.out(x, [3, 3], out=out), [X4]),
    "adaptive_avg_pool3d": (lambda x, out: aten.adaptive_avg_pool3d.out(x, [2, 3, 3], out=out), [X5]),
    "adaptive_max_pool2d": (lambda x, out, indices: aten.adaptive_max_pool2d.out(x, [3, 3], out=out, indices=indices),
                            [X4]),
    "adaptive_max_pool3d": (lambda x, out, indices: aten.adaptive_max_pool3d.out(x, [2, 3, 3], out=out,
                                                                                 indices=indices), [X5]),
    "avg_pool2d": (lambda x, out: aten.avg_pool2d.out(x, [2, 2], [2, 2], out=out), [X4]),
    "avg_pool2d_backward": (
        lambda g, x, grad_input: aten.avg_pool2d_backward.grad_input(g, x, [2, 2], [2, 2], [0, 0], False, True, None,
                                                                     grad_input=grad_input), [G4, X4]),
    "avg_pool3d": (lambda x, out: aten.avg_pool3d.out(x, [2, 2, 2], [2, 2, 2], out=out), [X5]),
    "max_pool2d_with_indices": (
        lambda x, out, indices: aten.max_pool2d_with_indices.out(x, [2, 2], [2, 2], out=out, indices=indices), [X4]),
    "max_pool3d_with_indices": (
        lambda x, out, indices: aten.max_pool3d_with_indices.out(x, [2, 2, 2], [2, 2, 2], out=out, indices=indices),
        [X5]),
    "upsample_nearest1d": (lambda x, out: aten.upsample_nearest1d.out(x, [15], out=out), [X3]),
    "upsample_nearest2d": (lambda x, out: aten.upsample_nearest2d.out(x, [12, 16], out=out), [X4]),
    "upsample_nearest2d_backward": (
        lambda g, grad_input: aten.upsample_nearest2d_backward.grad_input(g, [4, 4], [2, 3, 2, 2],
                                                                          grad_input=grad_input), [G4]),
    "upsample_nearest3d": (lambda x, out: aten.upsample_nearest3d.out(x, [5, 7, 7], out=out), [X5]),
    "_upsample_nearest_exact2d": (lambda x, out: aten._upsample_nearest_exact2d.out(x, [12, 5], out=out), [X4]),
    "upsample_linear1d": (lambda x, out: aten.upsample_linear1d.out(x, [17], False, out=out), [X3]),
    "upsample_bilinear2d": (lambda x, out: aten.upsample_bilinear2d.out(x, [11, 13], True, out=out), [X4]),
    "upsample_bilinear2d_backward": (
        lambda g, grad_input: aten.upsample_bilinear2d_backward.grad_input(g, [4, 4], [2, 3, 3, 3], False,
                                                                           grad_input=grad_input), [G4]),
    "upsample_bicubic2d": (lambda x, out: aten.upsample_bicubic2d.out(x, [11, 13], False, out=out), [X4]),
    "upsample_trilinear3d": (lambda x, out: aten.upsample_trilinear3d.out(x, [5, 7, 9], False, out=out), [X5]),
    "_upsample_bilinear2d_aa": (lambda x, out: aten._upsample_bilinear2d_aa.out(x, [5, 3], False, out=out), [X4]),
    "_upsample_bicubic2d_aa": (lambda x, out: aten._upsample_bicubic2d_aa.out(x, [5, 3], False, out=out), [X4]),
    "native_batch_norm": (
        lambda x, w, b, out, save_mean, save_invstd: aten.native_batch_norm.out(
            x, w, b, None, None, True, 0.1, 1e-5, out=out, save_mean=save_mean, save_invstd=save_invstd),
        [X4, r(3, seed=5), r(3, seed=6)]),
    "_native_batch_norm_legit": (
        lambda x, rm, rv, out, save_mean, save_invstd: aten._native_batch_norm_legit.out(
            x, None, None, rm, rv, True, 0.1, 1e-5, out=out, save_mean=save_mean, save_invstd=save_invstd),
        [X4, torch.zeros(3), torch.ones(3)]),
    "_native_batch_norm_legit.no_stats": (
        lambda x, out, save_mean, save_invstd: aten._native_batch_norm_legit.no_stats_out(
            x, None, None, True, 0.1, 1e-5, out=out, save_mean=save_mean, save_invstd=save_invstd), [X4]),
    "nonzero_static": (lambda x, out: aten.nonzero_static.out(x > 0, size=300, fill_value=-7, out=out), [X4]),
    "searchsorted.Scalar": (lambda s, out: aten.searchsorted.Scalar_out(s, 0.3, right=True, out=out),
                            [torch.sort(r(12, seed=7)).values]),
    "narrow_copy": (lambda x, out: aten.narrow_copy.out(x, 3, 2, 5, out=out), [X4]),
}


def run(name, device, outs):
    """The op's result and its inputs after the call (batch norm updates
    its running statistics in place)."""
    fn, inputs = CASES[name]
    inputs = [t.clone() if device == "cpu" else to_tpu(t) for t in inputs]
    return fn(*inputs, *outs), inputs


@pytest.mark.parametrize("name", list(CASES))
def test_out_form_matches_cpu(name):
    fn, inputs = CASES[name]
    n_outs = len(inspect.signature(fn).parameters) - len(inputs)
    # First on CPU with empty outs of the right dtypes, found by trying.
    cpu_outs = None
    for dtypes in ([torch.float32] * n_outs, [torch.float32, torch.int64][:n_outs], [torch.int64] * n_outs):
        try:
            cpu_outs = [torch.empty(0, dtype=d) for d in dtypes]
            run(name, "cpu", cpu_outs)
            break
        except RuntimeError:
            cpu_outs = None
    assert cpu_outs is not None, name
    for empty in (True, False):  # resized from empty, and written in place
        outs = [torch.empty(0 if empty else o.shape, dtype=o.dtype, device="tpu") for o in cpu_outs]
        result, after = run(name, "tpu", outs)
        results = result if isinstance(result, tuple) else (result,)
        assert all(o is x for o, x in zip(outs, results)), name  # the out tensors themselves come back
        cpu_result, cpu_after = run(name, "cpu", [torch.empty(0, dtype=o.dtype) for o in cpu_outs])
        expected = cpu_result if isinstance(cpu_result, tuple) else (cpu_result,)
        for got, want in zip(results + tuple(after), expected + tuple(cpu_after)):
            torch.testing.assert_close(to_cpu(got), want, rtol=1e-5, atol=1e-5, msg=name)


def test_out_dtype_and_device_errors():
    x = to_tpu(X4)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
        aten.avg_pool2d.out(x, [2, 2], out=torch.empty(0, dtype=torch.float64, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have device"):
        aten.upsample_nearest2d.out(x, [4, 4], out=torch.empty(0))
