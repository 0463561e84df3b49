"""Views, aliasing and copies of tpu tensors, against CPU."""

from __future__ import annotations

import copy
import io
import re

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from torch_tpu import runtime
from tpu_testing import assert_same, to_tpu

VIEWS = {
    "t": lambda x: x.t(),
    "transpose": lambda x: x.transpose(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "view": lambda x: x.view(3, 4),
    "reshape": lambda x: x.reshape(-1),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 4), 1),
    "expand": lambda x: x[:1].expand(5, 6),
    "select": lambda x: x.select(1, 2),
    "slice": lambda x: x[1:3, ::2],
    "narrow": lambda x: x.narrow(1, 2, 3),
    "squeeze": lambda x: x[:1].squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "diagonal": lambda x: x.diagonal(),
    "unfold": lambda x: x.unfold(1, 2, 2),
    "split": lambda x: x.split(1)[1],
    "chunk": lambda x: x.chunk(3, dim=1)[2],
    "unbind": lambda x: x.unbind(1)[4],
    "strided": lambda x: x[1::2, 1::2],
}


@pytest.mark.parametrize("name", VIEWS)
def test_read_view(name):
    base = torch.arange(12.0).reshape(2, 6)
    assert_same(lambda x: VIEWS[name](x) + 0, base)


def test_view_of_view_of_non_contiguous():
    base = torch.arange(60.0).reshape(3, 4, 5)
    assert_same(lambda x: x.permute(2, 0, 1)[1:, ::2].transpose(0, 2) * 2, base)


@pytest.mark.parametrize("write", ["slice_copy", "add_on_row", "mul_on_column", "fill_diagonal", "setitem"])
def test_write_through_view_is_seen_by_aliases(write):
    def fn(x):
        x = x * 1  # a fresh tensor on either device
        alias = x.view(4, 3)
        if write == "slice_copy":
            x[1:3, 1:4].copy_(torch.full((2, 3), 7.0))
        elif write == "add_on_row":
            x[0].add_(100)
        elif write == "mul_on_column":
            x[:, 2].mul_(-1)
        elif write == "fill_diagonal":
            x[:, :3].diagonal().fill_(9)
        else:
            x[2, 3] = 42
        return x, alias + 0

    assert_same(fn, torch.arange(12.0).reshape(3, 4))


def test_alias_of_base_sees_write_into_transposed_view():
    x = torch.zeros(3, 4, device="tpu")
    y = x.t()
    y[1].fill_(5)
    expected = torch.zeros(3, 4)
    expected[:, 1] = 5
    assert torch.equal(x.cpu(), expected)


def test_overlapping_destination_is_an_error():
    x = torch.zeros(3, device="tpu").expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.add_(1)


@pytest.mark.parametrize("value", [0, 7.5, "tensor"])
def test_fill_of_an_expanded_tensor_writes_its_memory_once(value):
    # CPU lets a fill write overlapping memory: every element gets one value.
    def fill(x):
        x = x.clone()
        view = x.expand(2, 3, 4).transpose(0, 1)
        if value == "tensor":
            view.fill_(torch.tensor(-2.0, device=x.device))
        elif value == 0:
            view.zero_()
        else:
            view.fill_(value)
        return x
    assert_same(fill, torch.arange(4.0))


def test_fill_of_an_expanded_tensor_with_a_host_value():
    # ATen fills with a value on another device as with a scalar, so an
    # overlapping destination is fine (as on CUDA); a same-device value is a
    # copy_, which refuses it.
    x = torch.arange(4.0, device="tpu")
    x.expand(2, 4).fill_(torch.tensor(3.0))
    assert x.tolist() == [3.0] * 4
    with pytest.raises(RuntimeError, match="more than one element"):
        x.expand(2, 4).fill_(torch.tensor(1.0, device="tpu"))


def test_is_set_to_compares_storage_and_geometry():
    a = torch.arange(6.0, device="tpu")
    b = torch.empty(0, device="tpu").set_(a.untyped_storage())
    assert b.is_set_to(a) and a.is_set_to(b)
    assert not a[1:].is_set_to(a) and not a.view(2, 3).is_set_to(a)
    assert not torch.arange(6.0, device="tpu").is_set_to(a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                                   torch.complex64], ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 4)], ids=str)
def test_round_trip(dtype, shape):
    x = (torch.randn(shape) * 10).to(dtype) if dtype != torch.complex64 else torch.randn(shape, dtype=dtype)
    y = x.to("tpu")
    assert y.device.type == "tpu" and y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y.cpu(), x)


def test_copy_with_strides_and_dtype_conversion():
    src = torch.arange(24, dtype=torch.int64).reshape(4, 6)[::2, 1::2]
    dst = torch.empty(2, 3, dtype=torch.float32, device="tpu")
    dst.copy_(src)
    assert torch.equal(dst.cpu(), src.float())
    back = torch.empty(3, 2, dtype=torch.float64).t()
    back.copy_(dst)
    assert torch.equal(back, src.double())


def test_download_into_existing_host_tensors():
    # A dense destination of the source's dtype and shape takes the download
    # directly; the others go through a staging tensor.
    src = torch.arange(24.0).reshape(4, 6)
    dev = src.to("tpu")
    whole = torch.full((4, 6), -1.0)
    assert whole.copy_(dev) is whole and torch.equal(whole, src)
    base = torch.full((40,), -1.0)
    base[8:32].view(4, 6).copy_(dev)  # contiguous, at an offset
    assert torch.equal(base[8:32], src.reshape(-1)) and (base[:8] == -1).all() and (base[32:] == -1).all()
    strided = torch.full((6, 4), -1.0).t()
    strided.copy_(dev)
    assert torch.equal(strided, src)
    converted = torch.empty(4, 6, dtype=torch.float64)
    converted.copy_(dev.t().t())
    assert torch.equal(converted, src.double())
    rows = torch.empty(2, 4, 6)
    rows.copy_(dev)  # broadcast
    assert torch.equal(rows, src.expand(2, 4, 6))
    z = torch.randn(3, dtype=torch.complex64)
    for lazy in (lambda t: t.conj(), lambda t: t._neg_view()):
        out = torch.empty(3, dtype=torch.complex64)
        out.copy_(lazy(z.to("tpu")))
        assert torch.equal(out, lazy(z).resolve_conj().resolve_neg())
        into_lazy = lazy(torch.empty(3, dtype=torch.complex64))
        into_lazy.copy_(z.to("tpu"))
        assert torch.equal(into_lazy.resolve_conj().resolve_neg(), z)


def test_copy_broadcasts():
    dst = torch.empty(3, 4, device="tpu")
    dst.copy_(torch.arange(4.0))
    assert torch.equal(dst.cpu(), torch.arange(4.0).expand(3, 4))


def test_to_dtype_on_device():
    x = torch.randn(5).to("tpu")
    assert torch.equal(x.to(torch.bfloat16).cpu(), x.cpu().to(torch.bfloat16))
    assert torch.equal(x.to(torch.int32).cpu(), x.cpu().to(torch.int32))


def test_upload_of_a_bool_with_nonzero_bytes_other_than_one():
    # A uint8 storage viewed as bool: CPU reads every nonzero byte as true.
    b = torch.tensor([0, 1, 2, 255, 4], dtype=torch.uint8).view(torch.bool)
    for f in (lambda t: t.sum(), lambda t: t.nonzero(), lambda t: t.float(), lambda t: t == True,  # noqa: E712
              lambda t: t ^ torch.ones_like(t), lambda t: t.to(torch.uint8), lambda t: t.all()):
        assert_same(f, b)
    t = torch.zeros(5, dtype=torch.bool, device="tpu")
    t.copy_(b)
    assert t.to(torch.uint8).tolist() == [0, 1, 1, 1, 1]


def test_tpu_to_tpu_and_across_devices():
    x = torch.arange(6.0, device="tpu").reshape(2, 3)
    y = x.clone()
    y.add_(1)
    assert torch.equal(x.cpu(), torch.arange(6.0).reshape(2, 3))
    if len(runtime.client().devices()) > 1:
        z = x.t().to("tpu:1")
        assert z.device == torch.device("tpu:1")
        assert torch.equal(z.cpu(), torch.arange(6.0).reshape(2, 3).t())
        assert torch.equal((z + z).cpu(), 2 * torch.arange(6.0).reshape(2, 3).t())


def test_item_tolist_print():
    x = torch.tensor([[1.5, 2.0], [3.0, 4.0]], device="tpu")
    assert x[1, 0].item() == 3.0
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    text = repr(x)
    assert "device='tpu:0'" in text and "1.5000" in text


def _values_text(t):
    return re.sub(r"\s+", " ", re.sub(r",\s*device='tpu:0'", "", str(t))).replace(" )", ")")


@pytest.mark.parametrize("make", [
    lambda: torch.randn(2000), lambda: torch.randn(40, 50), lambda: torch.randn(7, 300, 3),
    lambda: torch.arange(5000).reshape(10, 500), lambda: torch.randn(1001).bfloat16(), lambda: torch.randn(30, 40) > 0,
    lambda: torch.randn(100, 20, dtype=torch.complex64), lambda: torch.randn(2003)[::2], lambda: torch.randn(11, 11, 11),
], ids=["1d", "2d", "3d", "int", "bf16", "bool", "complex", "strided", "edges"])
def test_summarized_printing_copies_only_what_it_shows(make):
    t = make()
    assert _values_text(t.to("tpu")) == _values_text(t)
    torch.set_printoptions(edgeitems=1, threshold=10)
    try:
        assert _values_text(t.to("tpu")) == _values_text(t)
    finally:
        torch.set_printoptions(profile="default")


def test_summarized_printing_leaves_the_print_options_alone():
    # Another thread printing meanwhile must not see a changed threshold.
    import threading

    big, small = torch.randn(300, 300, device="tpu"), torch.arange(10.0)
    seen, stop = [], threading.Event()

    def print_small():
        while not stop.is_set():
            seen.append("..." in repr(small))

    thread = threading.Thread(target=print_small)
    thread.start()
    try:
        for _ in range(200):
            repr(big)
    finally:
        stop.set()
        thread.join()
    assert seen and not any(seen)
    assert torch._tensor_str.PRINT_OPTS.threshold == 1000


def test_scalar_overflow_into_float32_raises_as_cpu():
    for fn in (lambda d: torch.scalar_tensor(1e39, dtype=torch.float32, device=d),
               lambda d: torch.where(torch.tensor([True], device=d), 1e39, torch.zeros(1, device=d)),
               lambda d: torch.zeros(2, device=d).__setitem__(0, -1e300)):
        for device in ("cpu", "tpu"):
            with pytest.raises(RuntimeError, match="overflow"):
                fn(device)
    assert_same(lambda d: torch.scalar_tensor(1e6, dtype=torch.float16, device=d.device), torch.zeros(1))


def test_printing_a_huge_expanded_view():
    # Copied whole, it needed 256 GiB of host memory; CPU prints at once.
    text = str(torch.zeros(1, device="tpu").expand(2**36))
    assert text == "tensor([0., 0., 0.,  ..., 0., 0., 0.], device='tpu:0')"


def test_non_blocking_and_pin_memory_round_trip():
    x = torch.randn(16)
    y = x.to("tpu", non_blocking=True)
    assert torch.equal(y.to("cpu", non_blocking=True), x)


def test_save_and_load(tmp_path):
    x = torch.randn(3, 4).to("tpu")
    buf = io.BytesIO()
    torch.save({"w": x, "v": x[1]}, buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location="cpu")
    assert torch.equal(loaded["w"], x.cpu())
    buf.seek(0)
    on_tpu = torch.load(buf, map_location="tpu")
    assert on_tpu["w"].device.type == "tpu"
    assert torch.equal(on_tpu["v"].cpu(), x.cpu()[1])


def test_pickle_and_the_legacy_save_format():
    """pickle (and so multiprocessing, object collectives) and the pre-1.6
    torch.save format write storages through a tensor PyTorch wraps around
    the device pointer (at::from_blob): it must resolve to the storage."""
    import pickle

    x = torch.randn(2, 3)
    t = x.to("tpu")
    for got in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert got.device.type == "tpu" and torch.equal(got.cpu(), x)
    view = pickle.loads(pickle.dumps(t[1, 1:]))
    assert torch.equal(view.cpu(), x[1, 1:])
    model = pickle.loads(pickle.dumps(torch.nn.Linear(3, 2).to("tpu")))
    assert model.weight.device.type == "tpu" and model(t).shape == (2, 2)
    grad = pickle.loads(pickle.dumps(t.bfloat16().requires_grad_()))
    assert grad.requires_grad and grad.dtype == torch.bfloat16
    assert pickle.loads(pickle.dumps(torch.empty(0, device="tpu"))).numel() == 0
    buf = io.BytesIO()
    torch.save({"w": t, "half": t.half()}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["w"].device.type == "tpu" and torch.equal(loaded["w"].cpu(), x)
    assert torch.equal(loaded["half"].cpu(), x.half())
    storage = t.untyped_storage()
    assert torch.equal(torch.tensor(storage[0:storage.nbytes()].cpu().tolist(), dtype=torch.uint8),
                       torch.tensor(x.untyped_storage().tolist(), dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="must cover a whole live tpu storage"):
        storage[0:8].cpu()  # a part of a storage: refused, never read as another storage's value


def test_set_with_no_arguments_empties_on_the_tensors_device():
    for device in ("tpu:0", "tpu:1"):
        t = torch.ones(3, device=device)
        t.set_()
        assert t.device == torch.device(device) and t.shape == (0,)


def test_resize_keeps_contents():
    x = torch.arange(4.0, device="tpu")
    x.resize_(6)
    assert torch.equal(x.cpu()[:4], torch.arange(4.0))
    x.resize_(2, 2)
    assert torch.equal(x.cpu(), torch.arange(4.0).reshape(2, 2))


def test_resize_to_the_same_shape_keeps_the_layout():
    # As on CPU: a no-op, so a transposed, strided or expanded out= tensor
    # is written through its own strides.
    x = torch.arange(6.0, device="tpu").view(2, 3).t()
    x.resize_(3, 2)
    assert x.stride() == (1, 3) and x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    base = torch.zeros(3, 8, device="tpu")
    torch.full((3, 4), 1.0, out=base[:, ::2])
    want = torch.zeros(3, 8)
    want[:, ::2] = 1
    assert torch.equal(base.cpu(), want)
    y = torch.zeros(2, 3, 4, 5, device="tpu")
    y.resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    assert y.is_contiguous(memory_format=torch.channels_last)


def test_bad_device_index():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.empty(2, device="tpu:99")


def test_lazy_conjugate_and_negative_views_copy_like_cpu():
    x = torch.randn(5, dtype=torch.complex64)
    t = x.to("tpu")
    torch.testing.assert_close(t.conj().cpu(), x.conj())
    torch.testing.assert_close(t.conj().clone().cpu(), x.conj().clone())
    torch.testing.assert_close(torch.conj(t)._neg_view().cpu(), x.conj()._neg_view().resolve_neg())
    torch.testing.assert_close(x.conj().to("tpu").cpu(), x.conj())
    out = torch.empty(5, dtype=torch.complex64, device="tpu")
    out.copy_(t.conj())
    torch.testing.assert_close(out.cpu(), x.conj())


@pytest.mark.parametrize("write", ["add_", "setitem", "copy_", "imag_fill", "mul_conj", "neg_view", "neg_cast"])
def test_writes_into_lazily_conjugated_and_negated_views(write):
    # The storage under a conj / neg view takes conj(v) / -v.
    def run(x):
        x = x.clone()
        if write == "add_":
            x.conj().add_(1)
        elif write == "setitem":
            x.conj()[1] = 9 + 9j
        elif write == "copy_":
            x.conj().copy_(torch.tensor([3 + 3j, 4 + 4j, 5 - 1j]))
        elif write == "imag_fill":
            x.conj().imag.fill_(5)
        elif write == "mul_conj":
            x.conj().mul_(torch.full((3,), 1j, device=x.device).conj())
        elif write == "neg_view":
            x.conj()._neg_view().sub_(2j)
        else:  # converted before negated, as on CPU: uint8 3 stores -3
            x.conj().imag.copy_(torch.tensor([3, 0, 255], dtype=torch.uint8))
        return x
    assert_same(run, torch.tensor([1 + 1j, 2 - 1j, -3 + 0.5j]))


# ---- views at other offsets share one program ------------------------------------

def new_compiles(fn) -> int:
    before = runtime.cache_stats()["compiles"]
    fn()
    return runtime.cache_stats()["compiles"] - before


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_views_at_every_offset_share_one_program(mode):
    import torch_tpu

    x = torch.randn(12, 8, 6)
    xt = to_tpu(x)
    reads = {
        "batch slice (contiguous)": lambda t, i: t[i:i + 3] * 2,
        "select then transpose (nested view)": lambda t, i: t[i].t() + 1,
        "column (stepped)": lambda t, i: t[:, i, 1:5].sum(0),
        "unfold (overlapping: a gather)": lambda t, i: t[i].reshape(-1).unfold(0, 4, 2).sum(1),
        "bytes of a float (another dtype)": lambda t, i: t.view(torch.uint8)[i, 1, 4:12].to(torch.int32),
    }
    with torch_tpu.eager_mode(mode):
        for name, read in reads.items():
            for i in (1, 2):  # offset 0 has its own program; the first nonzero one compiles
                torch.testing.assert_close(read(xt, i).cpu(), read(x, i), msg=name)
            for i in (3, 5, 7):
                count = new_compiles(lambda: torch.testing.assert_close(read(xt, i).cpu(), read(x, i), msg=name))
                assert count == 0, f"{name}: offset {i} compiled {count} programs"


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_writes_at_every_offset_share_one_program(mode):
    import torch_tpu

    with torch_tpu.eager_mode(mode):
        cache, want = torch.zeros(2, 3, 10, 4, device="tpu"), torch.zeros(2, 3, 10, 4)
        rows, want_rows = torch.zeros(10, 5, device="tpu"), torch.zeros(10, 5)
        counts = []
        for t in range(10):
            k, r = torch.randn(2, 3, 4), torch.randn(5)
            count = new_compiles(lambda: (cache[:, :, t].copy_(k.to("tpu")), rows[t].add_(r.to("tpu")),
                                          torch_tpu.materialize()))
            want[:, :, t] = k
            want_rows[t] += r
            counts.append(count)
        assert sum(counts[2:]) == 0, counts
        assert torch.equal(cache.cpu(), want) and torch.equal(rows.cpu(), want_rows)



def test_scalar_cache_evicts_the_least_recently_used_value():
    """Runtime scalars (view offsets, alpha, learning rates) keep device
    copies in a bounded cache: past its capacity one old value goes per new
    one, never the whole cache, so the values a loop keeps using stay."""
    from torch_tpu import _C

    x, want = torch.zeros(3, device="tpu"), torch.zeros(3)
    for i in range(4200):  # every alpha a new runtime scalar
        x.add_(1.0, alpha=i + 0.5)
        want.add_(1.0, alpha=i + 0.5)
    torch.testing.assert_close(x.cpu(), want)
    assert _C.aten.cached_scalar_count() == 4096


# ---- partial writes through a view of another dtype -------------------------------------------------
# The storage keeps its bytes: a bool storage written in part through a
# wider view holds bytes that need not be 0 / 1; in one fused graph, XLA
# must not fold the write's widening bitcast into the read's narrowing one.

PARTIAL_WRITES = {
    # bool storage, bytes written through a wider / other-typed view
    "u8 fill and add": (torch.bool, 8, torch.uint8, lambda u: (u[:4].fill_(2), u[6:].add_(5))),
    "i8 setitem": (torch.bool, 8, torch.int8, lambda h: h[1:3].fill_(-1)),
    "f32 element": (torch.bool, 8, torch.float32, lambda f: f[1].fill_(1)),
    "i8 stepped 2-d": (torch.bool, 8, torch.int8, lambda h: h.view(2, 4)[1, ::2].fill_(-3)),
    # bool view into a storage of another type keeps the other bytes
    "bool into u8": (torch.uint8, 8, torch.bool, lambda b: b[2:4].fill_(True)),
    # narrower view, then read through a third dtype (one fused graph)
    "f32 into f64": (torch.float64, 4, torch.float32, lambda v: v[2:4].fill_(1.0)),
    "u8 into f32": (torch.float32, 8, torch.uint8, lambda v: v[4:8].fill_(1)),
}


@pytest.mark.parametrize("mode", ["strict", "fused", "debug"])
@pytest.mark.parametrize("case", PARTIAL_WRITES)
@pytest.mark.parametrize("read", [torch.uint8, torch.int16, torch.float64])
def test_partial_write_through_dtype_view_keeps_bytes(mode, case, read):
    dtype, n, view, write = PARTIAL_WRITES[case]
    with torch_tpu.eager_mode(mode):
        results = []
        for device in ("cpu", "tpu"):
            x = torch.zeros(n, dtype=dtype, device=device)
            x.fill_(7 if dtype == torch.uint8 else 0)  # a pending value of x's own dtype in fused mode
            write(x.view(view))
            results.append(x.view(read).clone().view(torch.uint8).cpu())
        torch.testing.assert_close(results[1], results[0], rtol=0, atol=0)


def test_fused_partial_write_then_read_through_a_third_dtype():
    with torch_tpu.eager_mode("fused"):
        w = torch.ones(3, device="tpu")
        w.mul_(5)
        x = torch.zeros(4, dtype=torch.float64, device="tpu")
        x.view(torch.float32)[2:4].fill_(1.0)
        expected = torch.zeros(4, dtype=torch.float64)
        expected.view(torch.float32)[2:4].fill_(1.0)
        assert torch.equal(x.view(torch.uint8).clone().cpu(), expected.view(torch.uint8))
        f = torch.arange(8.0, device="tpu")
        assert torch.equal(f.view(torch.float64).clone().view(torch.uint8).clone().cpu(),
                           torch.arange(8.0).view(torch.float64).view(torch.uint8))
        assert torch.equal(w.cpu(), torch.full((3,), 5.0))


def test_bool_write_into_byte_valued_bool_storage():
    for device in ("cpu", "tpu"):
        b = torch.zeros(8, dtype=torch.bool, device=device)
        b.view(torch.uint8)[2:5].fill_(7)
        b[0] = True
        b[6:8].logical_not_()
        assert b.view(torch.uint8).tolist() == [1, 0, 7, 7, 7, 0, 1, 1], device


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int16])
def test_storage_byteswap(dtype):
    # PyTorch swaps through the data pointer, which is not host memory on
    # tpu: the process died with a segmentation fault.
    x = torch.arange(6).to(dtype)
    want, got = x.clone().untyped_storage(), x.to("tpu").untyped_storage()
    want.byteswap(dtype)
    got.byteswap(dtype)
    assert got.device.type == "tpu" and got.tolist() == want.tolist()


# Strided destinations whose dims nest in memory: permutes, stepped slices,
# selects, a view reaching the storage's last element, and an output
# allocated in another dim order (attention's).
NESTED_WRITES = {
    "transposed_block": (lambda s: s[:24].view(2, 3, 4).transpose(0, 2), (4, 3, 2)),
    "permuted_at_offset": (lambda s: s[5:29].view(2, 3, 4).permute(1, 2, 0), (3, 4, 2)),
    "stepped_then_transposed": (lambda s: s[::2][:30].view(5, 6).t(), (6, 5)),
    "column_major_window": (lambda s: s[3:].as_strided((3, 4), (1, 10)), (3, 4)),
    "reaching_the_last_element": (lambda s: s[190:].as_strided((2, 3), (1, 3)), (2, 3)),
    "cut_stepped_permuted": (lambda s: s[:120].view(4, 5, 6)[:, 1:4, ::2].transpose(0, 1), (3, 4, 3)),
    "selected_row_transposed": (lambda s: s[:120].view(4, 5, 6)[1].t(), (6, 5)),
    "unit_dims": (lambda s: s.view(200, 1)[3:7].t().unsqueeze(0), (1, 1, 4)),
}


@pytest.mark.parametrize("mode", ["strict", "fused"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("name", NESTED_WRITES)
def test_write_into_nested_strided_view(mode, dtype, name):
    view, shape = NESTED_WRITES[name]
    storage = torch.randn(200, dtype=torch.float64).mul(50).to(dtype)
    value = torch.randn(shape, dtype=torch.float64).mul(50).to(dtype)
    with torch_tpu.eager_mode(mode):
        on_tpu = storage.to("tpu")
        view(on_tpu).copy_(value.to("tpu"))
        view(storage).copy_(value)
        assert torch.equal(on_tpu.cpu(), storage)


def test_permuted_output_is_written_without_a_scatter():
    with torch_tpu.eager_mode("fused"):
        q = torch.randn(2, 8, 12, device="tpu").view(2, 8, 3, 4).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, q, q)  # allocated in q's dim order
        assert out.stride() == (96, 4, 12, 1)
        torch_tpu.materialize()
        graph = torch_tpu.diagnostics.last_graph()
    assert "scatter" not in graph
    want = F.scaled_dot_product_attention(*(q.cpu(),) * 3)
    torch.testing.assert_close(out.cpu(), want)
