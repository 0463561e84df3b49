"""The tpu device's registration: torch.device("tpu"), torch.tpu,
torch.accelerator, generators, streams/events, pinned memory, autoload.

Nothing here puts a tensor on the device (that is the tensor tests' job).
Checks that need several devices or a fresh process run in a subprocess.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch

import torch_tpu  # noqa: F401  (registers the device)
from torch_tpu import runtime


def run_python(code: str, env: dict | None = None, timeout: int = 120) -> str:
    """Runs `code` in a fresh interpreter outside the source tree; returns
    stdout, fails the test with stderr when it exits non-zero."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tempfile.gettempdir(),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- names and registration -------------------------------------------------


def test_device_strings():
    assert torch._C._get_privateuse1_backend_name() == "tpu"
    d = torch.device("tpu")
    assert d.type == "tpu" and d.index is None
    d1 = torch.device("tpu:1")
    assert d1.type == "tpu" and d1.index == 1
    assert torch.device("tpu", 0) == torch.device("tpu:0")
    assert str(torch.device("tpu:0")) == "tpu:0"


def test_device_module_registered():
    assert torch.tpu is torch_tpu.tpu
    assert torch.get_device_module("tpu") is torch_tpu.tpu
    assert sys.modules["torch.tpu"] is torch_tpu.tpu


def test_generated_methods():
    assert hasattr(torch.Tensor, "is_tpu")
    assert callable(torch.Tensor.tpu)
    assert callable(torch.nn.Module.tpu)
    assert callable(torch.UntypedStorage.tpu)
    assert torch.zeros(2).is_tpu is False


# ---- availability, count, current device ------------------------------------


def test_available_and_count():
    assert torch.tpu.is_available()
    n = torch.tpu.device_count()
    assert n >= 1
    assert torch.tpu.is_initialized()
    assert n == len(runtime.client().devices())


def test_platform_name_and_properties():
    assert torch.tpu.platform() in ("tpu", "cuda", "cpu")
    kind = runtime.client().devices()[0].kind
    assert torch.tpu.get_device_name() == kind
    assert torch.tpu.get_device_name(0) == kind
    props = torch.tpu.get_device_properties("tpu:0")
    assert props.name == kind
    assert props.platform == torch.tpu.platform()
    assert props.total_memory >= 0
    assert "tpu" in repr(props).lower() or kind in repr(props)


def test_amp_dtypes():
    assert torch.tpu.get_amp_supported_dtype() == [torch.bfloat16, torch.float16, torch.float32]
    assert torch.tpu.is_bf16_supported()


def test_set_device():
    torch.tpu.set_device(0)
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device("tpu:0")
    torch.tpu.set_device(torch.device("tpu", 0))
    torch.tpu.set_device(-1)  # no-op, as in torch.cuda
    assert torch.tpu.current_device() == 0


def test_bad_device_index_raises():
    n = torch.tpu.device_count()
    with pytest.raises(torch.AcceleratorError, match="invalid device ordinal"):
        torch.tpu.set_device(99)
    with pytest.raises(RuntimeError, match=f"tpu:{n}"):
        torch.tpu.set_device(n)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        with torch.tpu.device(99):
            pass
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.synchronize(99)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.Generator("tpu:99")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.accelerator.set_device_index(99)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.get_device_name(99)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.get_rng_state(99)
    for bad in (-2, n):
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.tpu.get_device_name(bad)
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.tpu.get_rng_state(bad)
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.tpu.memory_allocated(bad)
    for query in (torch.tpu.memory_allocated, torch.tpu.memory_stats, torch.tpu.mem_get_info,
                  torch.tpu.memory_summary, torch.tpu.max_memory_reserved, torch.tpu.reset_peak_memory_stats):
        with pytest.raises(torch.AcceleratorError, match="invalid device ordinal"):
            query(-1)
    nested = torch.tpu.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == torch.tpu.memory_allocated()
    assert torch.tpu.memory_cached() == torch.tpu.memory_reserved()
    for query in (torch.accelerator.memory_allocated, torch.accelerator.memory_stats,
                  torch.accelerator.reset_peak_memory_stats, torch.accelerator.get_memory_info,
                  torch.accelerator.current_stream, torch.tpu.memory_stats, torch.tpu.mem_get_info):
        with pytest.raises(torch.AcceleratorError, match="invalid device ordinal"):
            query(n)
    # The failed calls left the current device alone.
    assert torch.tpu.current_device() == 0


def test_wrong_device_type_raises():
    with pytest.raises(ValueError, match="expected a tpu device"):
        torch.tpu.set_device("cpu")
    with pytest.raises(ValueError, match="expected a tpu device"):
        torch.tpu.synchronize(torch.device("meta"))
    with pytest.raises(TypeError):
        torch.tpu.set_device(1.5)


def test_synchronize():
    torch.tpu.synchronize()
    torch.tpu.synchronize(0)
    torch.tpu.synchronize("tpu:0")


def test_device_context_single():
    with torch.tpu.device(0):
        assert torch.tpu.current_device() == 0
    with torch.tpu.device(None):
        assert torch.tpu.current_device() == 0
    with torch.tpu.device(-1):
        assert torch.tpu.current_device() == 0


# ---- torch.accelerator ---------------------------------------------------------


def test_accelerator_api():
    acc = torch.accelerator.current_accelerator()
    assert acc is not None and acc.type == "tpu"
    assert torch.accelerator.current_accelerator(check_available=True).type == "tpu"
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.tpu.device_count()
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0
    with torch.accelerator.device_index(0):
        assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()
    torch.accelerator.synchronize(0)


def test_accelerator_device_capability():
    cap = torch.accelerator.get_device_capability()
    dtypes = cap["supported_dtypes"]
    assert torch.float32 in dtypes and torch.bfloat16 in dtypes
    assert torch.float8_e4m3fn in dtypes and torch.uint64 in dtypes
    # Only dtypes a tpu tensor can have: the rest are refused by every op.
    for dtype in (torch.qint8, torch.complex32, torch.int4, torch.uint3, torch.float4_e2m1fn_x2,
                  torch.float8_e8m0fnu, torch.bits8):
        assert dtype not in dtypes
    for dtype in dtypes:
        assert torch.zeros(2, dtype=dtype, device="tpu").dtype == dtype


# ---- streams and events ------------------------------------------------------


def test_streams_name_the_device_queue():
    s = torch.Stream(device="tpu")
    assert s.device == torch.device("tpu", 0)
    assert s.device_type == torch._C._autograd.DeviceType.PrivateUse1 or s.device.type == "tpu"
    current = torch.accelerator.current_stream()
    assert current.device == torch.device("tpu", 0)
    assert current == torch.tpu.current_stream() == torch.tpu.default_stream()
    assert s != current  # a new stream, as on CUDA
    assert s.query()
    s.synchronize()
    with s:
        assert torch.accelerator.current_stream() == s
        x = torch.ones(3, device="tpu") * 2
    assert torch.accelerator.current_stream() == current
    s.wait_stream(current)
    assert torch.equal(x.cpu(), torch.full((3,), 2.0))  # one in-order queue per device
    ts = torch.tpu.Stream()
    assert isinstance(ts, torch.Stream) and ts.device == torch.device("tpu", 0)
    assert ts.stream_id != s.stream_id
    with torch.tpu.stream(ts):
        assert torch.accelerator.current_stream() == ts
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.current_stream(99)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.Stream(device="tpu:99")


def test_stream_context_and_set_stream_switch_devices_as_on_cuda():
    on_second = torch.tpu.Stream("tpu:1")
    with torch.tpu.stream(on_second) as entered:
        assert entered is on_second and torch.tpu.current_device() == 1
        assert torch.tpu.current_stream().device == torch.device("tpu", 1)
        assert torch.ones(2, device="tpu").device == torch.device("tpu", 1)
    assert torch.tpu.current_device() == 0
    with torch.Stream(device="tpu:2"):  # torch.Stream's own context manager
        assert torch.tpu.current_device() == 2
        assert torch.ones(2, device="tpu").device == torch.device("tpu", 2)
    assert torch.tpu.current_device() == 0
    with torch.tpu.StreamContext(None):
        assert torch.tpu.current_device() == 0
    try:
        torch.tpu.set_stream(on_second)
        assert torch.tpu.current_device() == 1
    finally:
        torch.tpu.set_device(0)
    x = torch.ones(3, device="tpu")
    x.record_stream(torch.tpu.current_stream())  # one queue per device: nothing to record
    assert torch.equal(x.cpu(), torch.ones(3))


def test_stream_context_restores_the_destination_device_s_stream():
    on_second = torch.tpu.Stream(device=1)
    before = torch.tpu.current_stream(1)
    with torch.tpu.stream(on_second):
        assert torch.tpu.current_stream(1) == on_second
    # torch.cuda.StreamContext restores both devices' streams.
    assert torch.tpu.current_stream(1) == before
    assert torch.tpu.current_device() == 0


def test_streams_are_torch_tpu_streams_as_cuda_s_are_torch_cuda_streams():
    current = torch.tpu.current_stream()
    assert isinstance(current, torch.tpu.Stream) and isinstance(torch.tpu.default_stream(1), torch.tpu.Stream)
    assert current == torch.accelerator.current_stream()
    assert current.priority == 0 and torch.tpu.Stream.priority_range() == (0, 0)
    with torch.tpu.stream(current):
        assert torch.accelerator.current_stream() == current


def test_query_sees_fused_work_not_yet_launched():
    with torch_tpu.eager_mode("fused"):
        a = torch.randn(300, 300, device="tpu")
        for _ in range(8):
            a = torch.tanh(a @ a)
        event = torch.tpu.Event()
        event.record()
        # The recorded work is pending in the open graph, not finished: the
        # query launches it (so polling ends) and only then looks.
        graphs_run = torch_tpu.fused_stats()["graphs_run"]
        while not event.query():
            pass
        assert torch_tpu.fused_stats()["graphs_run"] == graphs_run + 1
        assert torch.tpu.current_stream().query()
        assert torch.isfinite(a).all()


def test_event_record_synchronize():
    e = torch.Event(device="tpu")
    assert e.query()  # never recorded
    e.record()
    e.synchronize()
    assert e.query()
    s = torch.accelerator.current_stream()
    s.wait_event(e)
    e2 = s.record_event()
    e2.wait()
    e2.synchronize()
    e3 = torch.tpu.Event()
    assert isinstance(e3, torch.Event) and e3.device.type == "tpu"
    e3.record(s)
    e3.synchronize()


def test_event_timing():
    start = torch.Event(device="tpu", enable_timing=True)
    end = torch.Event(device="tpu", enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    plain = torch.Event(device="tpu")
    plain.record()
    with pytest.raises((ValueError, RuntimeError), match="enable_timing"):
        start.elapsed_time(plain)
    never = torch.Event(device="tpu", enable_timing=True)
    with pytest.raises((ValueError, RuntimeError), match="recorded"):
        start.elapsed_time(never)
    other = torch.Event(device="tpu:1", enable_timing=True)
    other.record(torch.tpu.current_stream(1))
    with pytest.raises(RuntimeError, match="different tpu devices"):
        start.elapsed_time(other)


def test_tpu_event_timing_the_cuda_way():
    # start = torch.cuda.Event(enable_timing=True) ... start.elapsed_time(end)
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    start.record()
    x = torch.randn(256, 256, device="tpu")
    (x @ x).sum()
    end.record()
    torch.tpu.synchronize()
    assert start.elapsed_time(end) > 0.0
    mixed = torch.Event(device="tpu", enable_timing=True)
    mixed.record()
    assert start.elapsed_time(mixed) >= start.elapsed_time(end)
    with pytest.raises((ValueError, RuntimeError), match="enable_timing"):
        start.elapsed_time(torch.tpu.Event())
    with pytest.raises(TypeError, match="expected torch.Event"):
        start.elapsed_time(3)


# ---- generators and seeds ------------------------------------------------------


def test_generator_seed_and_state_round_trip():
    g = torch.Generator("tpu")
    assert g.device == torch.device("tpu", 0)
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    g.manual_seed(123)
    assert g.initial_seed() == 123
    assert g.get_offset() == 0
    g.set_offset(40)
    assert g.get_offset() == 40
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu" and state.numel() == 16
    assert int.from_bytes(bytes(state.tolist()[:8]), "little") == 123
    assert int.from_bytes(bytes(state.tolist()[8:]), "little") == 40
    new_seed = g.seed()
    assert g.initial_seed() == new_seed
    assert g.get_offset() == 0  # a new seed restarts the counter
    g.set_state(state)
    assert g.initial_seed() == 123 and g.get_offset() == 40
    g.manual_seed(2**64 - 1)  # the full 64-bit range
    assert g.initial_seed() == 2**64 - 1


def test_generator_clone_state():
    g = torch.Generator("tpu:0")
    g.manual_seed(5)
    g.set_offset(8)
    copy = g.clone_state()
    assert copy.device == g.device
    assert copy.initial_seed() == 5 and copy.get_offset() == 8
    g.manual_seed(6)
    assert copy.initial_seed() == 5  # independent
    g.graphsafe_set_state(copy)
    assert g.initial_seed() == 5 and g.get_offset() == 8
    with pytest.raises(RuntimeError, match="tpu generator"):
        g.graphsafe_set_state(torch.Generator())


def test_generator_bad_state():
    g = torch.Generator("tpu")
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(torch.zeros(16, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="16 bytes"):
        g.set_state(torch.zeros(8, dtype=torch.uint8))


def test_manual_seed_reproducible_state():
    torch.tpu.manual_seed(7)
    s1 = torch.tpu.get_rng_state()
    assert torch.tpu.initial_seed() == 7
    torch.tpu.seed()
    assert not torch.equal(torch.tpu.get_rng_state(), s1)
    torch.tpu.manual_seed(7)
    assert torch.equal(torch.tpu.get_rng_state(), s1)
    torch.tpu.set_rng_state(s1)
    assert torch.equal(torch.tpu.get_rng_state("tpu:0"), s1)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count()
    torch.tpu.set_rng_state_all(states)


def test_torch_manual_seed_seeds_tpu():
    torch.manual_seed(11)
    assert torch.tpu.initial_seed() == 11
    assert all(g.initial_seed() == 11 for g in torch.tpu.default_generators)
    torch.tpu.manual_seed_all(12)
    assert torch.tpu.initial_seed() == 12
    torch.tpu.seed_all()
    seeds = {g.initial_seed() for g in torch.tpu.default_generators}
    assert len(seeds) == 1


def test_default_generator_through_torch():
    # fork_rng saves and restores the device's state through torch.tpu.
    torch.tpu.manual_seed(3)
    before = torch.tpu.get_rng_state()
    with torch.random.fork_rng(devices=[0], device_type="tpu"):
        torch.tpu.manual_seed(4)
        assert torch.tpu.initial_seed() == 4
    assert torch.equal(torch.tpu.get_rng_state(), before)


# ---- memory ----------------------------------------------------------------------


def test_memory_stats():
    allocated = torch.tpu.memory_allocated()
    assert isinstance(allocated, int) and allocated >= 0
    assert torch.tpu.max_memory_allocated() >= allocated
    stats = torch.tpu.memory_stats()
    for key in (
        "allocated_bytes.all.current",
        "allocated_bytes.all.peak",
        "reserved_bytes.all.current",
        "num_alloc_retries",
        "num_ooms",
    ):
        assert key in stats
    assert stats["num_alloc_retries"] == 0
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    assert torch.tpu.memory_reserved() >= 0
    free, total = torch.tpu.mem_get_info()
    assert 0 <= free <= total
    if torch.tpu.platform() == "cpu":  # the host's memory is the device's
        assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert torch.accelerator.get_memory_info()[1] == total == torch.tpu.get_device_properties(0).total_memory
    x = torch.ones(1 << 20, device="tpu")
    assert torch.tpu.max_memory_allocated() >= 4 << 20
    del x
    torch.tpu.reset_max_memory_allocated()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    torch.tpu.reset_accumulated_memory_stats()
    stats = torch.tpu.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 0
    y = torch.ones(3, device="tpu") + 1
    del y
    stats = torch.tpu.memory_stats()
    assert stats["allocation.all.allocated"] >= 2 and stats["allocation.all.freed"] >= 2
    assert torch.tpu.OutOfMemoryError is torch.OutOfMemoryError
    torch.tpu.empty_cache()


def test_memory_stats_have_cuda_keys_and_agree_with_torch_accelerator():
    torch.tpu.reset_peak_memory_stats()
    torch.tpu.reset_accumulated_memory_stats()
    a = torch.ones(1 << 18, device="tpu")
    b = torch.ones(1 << 18, device="tpu")
    del b
    stats, generic = torch.tpu.memory_stats(), torch.accelerator.memory_stats()
    assert set(stats) == set(generic)  # every torch.cuda.memory_stats() key
    for key in ("allocation.all.peak", "active.all.peak", "num_device_alloc", "num_device_free",
                "allocated_bytes.all.peak", "requested_bytes.all.current", "segment.all.current"):
        assert stats[key] == generic[key], key
    assert stats["allocation.all.peak"] >= 2  # both buffers were live at once
    assert stats["num_device_alloc"] >= 2 and stats["num_device_free"] >= 1
    del a


def test_out_of_memory_errors_are_counted():
    before = torch.tpu.memory_stats()["num_ooms"]
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(10**13, device="tpu")
    assert torch.tpu.memory_stats()["num_ooms"] == torch.accelerator.memory_stats()["num_ooms"] == before + 1


@pytest.mark.parametrize("sync", ["accelerator", "stream", "event"])
def test_every_synchronize_raises_a_pending_device_error(sync):
    # As a device assert surfaces at any CUDA synchronize.
    bad = torch.arange(5, device="tpu")[torch.tensor([7], device="tpu")]
    with pytest.raises(IndexError, match="out of bounds"):
        if sync == "accelerator":
            torch.accelerator.synchronize()
        elif sync == "stream":
            torch.tpu.current_stream().synchronize()
        else:
            event = torch.tpu.Event()
            event.record()
            event.synchronize()
    del bad


def test_out_of_memory_is_torch_out_of_memory_error():
    # A storage larger than the device is refused when it is made, as on CUDA.
    for make in (lambda: torch.empty(10**13, device="tpu"), lambda: torch.randn(10**6, 10**6, device="tpu"),
                 lambda: torch.empty(2**62, dtype=torch.uint8, device="tpu")):
        with pytest.raises(torch.OutOfMemoryError, match="Tried to allocate .* total capacity"):
            make()
    assert torch.ones(3, device="tpu").add(1).sum().item() == 6  # the device still works


def test_out_of_memory_found_when_a_program_runs_reads_as_cuda_s_and_counts_once(tmp_path):
    """Memory a program's results need may run out only when it runs (the
    CPU plugin allocates them then; a cap on the address space stands in for
    a full device here). The error is torch.OutOfMemoryError beginning
    "tpu out of memory." as CUDA's begins (accelerate's batch-size finder
    matches that), each failure counts once in num_ooms however often its
    result is read, and the device keeps working."""
    if torch.tpu.platform() != "cpu":
        pytest.skip("caps host memory, which is the CPU plugin's device memory")
    script = tmp_path / "late_oom.py"
    script.write_text(textwrap.dedent("""
        import resource
        import torch, torch_tpu
        resource.setrlimit(resource.RLIMIT_AS, (9 << 30, 9 << 30))
        lin = torch.nn.Linear(64, 64).to("tpu")
        before = torch.tpu.memory_stats()["num_ooms"]
        x = torch.ones(1, 64, device="tpu").expand(40_000_000, 64)  # a 10 GB result
        for attempt in range(2):
            y = lin(x).sum()
            for read in range(2):
                try:
                    y.item()
                except torch.OutOfMemoryError as e:
                    assert str(e).startswith("tpu out of memory. "), e
                else:
                    raise AssertionError("no out-of-memory error")
        assert torch.tpu.memory_stats()["num_ooms"] - before == 2, torch.tpu.memory_stats()["num_ooms"] - before
        small = torch.ones(2, 64)
        torch.testing.assert_close(lin(small.to("tpu")).cpu(), lin.cpu()(small))
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def host_available_bytes():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def test_cpu_plugin_memory_is_bounded_by_what_the_host_has_available():
    """A tensor larger than the host's available memory (but not its total)
    raises OutOfMemoryError when made, rather than getting the process
    killed when written; mem_get_info's free part says the same."""
    if torch.tpu.platform() != "cpu":
        pytest.skip("the CPU plugin's memory is the host's")
    available = host_available_bytes()
    free, total = torch.tpu.mem_get_info()
    assert free <= available * 1.05 + (64 << 20)
    if available + (1 << 30) < total:
        with pytest.raises(torch.OutOfMemoryError, match="Tried to allocate .* available"):
            torch.empty(available + (1 << 30), dtype=torch.uint8, device="tpu")


@pytest.mark.skipif(not hasattr(torch.accelerator, "empty_host_cache"), reason="torch.accelerator.empty_host_cache is newer than this PyTorch")
def test_empty_host_cache():
    torch.ones(1, device="tpu").cpu()
    pinned = torch.ones(1 << 16).pin_memory()
    torch.accelerator.empty_host_cache()  # dereferenced a null host allocator before
    assert pinned.is_pinned() and pinned.sum().item() == 1 << 16


def test_memory_summary():
    before = torch.tpu.memory_allocated()
    x = torch.ones(1 << 20, device="tpu")  # 4 MiB
    x.sum().item()
    text = torch.tpu.memory_summary()
    assert text.startswith("tpu:0 memory summary")
    row = next(line for line in text.splitlines() if line.startswith("Allocated memory"))
    value, unit = row.split()[2:4]  # "Allocated memory  <current> <unit>  <peak> <unit>"
    current = float(value) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]
    assert abs(current - (before + 4 * 2**20)) <= 0.01 * current
    assert "Out-of-memory errors" in text
    del x


# ---- pinned memory -----------------------------------------------------------


def test_pin_memory():
    t = torch.arange(10, dtype=torch.float32)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned()
    assert p.device.type == "cpu"
    assert torch.equal(p, t)
    assert p[3:].is_pinned()  # a view into the pinned block
    e = torch.empty(5, pin_memory=True)
    assert e.is_pinned()
    assert torch.empty(0).pin_memory().is_pinned()
    del p, e


# ---- several devices, fresh processes -------------------------------------------


def test_several_devices_guard_and_generators():
    out = run_python(
        """
        import threading
        import torch, torch_tpu
        assert torch.tpu.device_count() == 4, torch.tpu.device_count()
        assert torch.tpu.current_device() == 0
        with torch.tpu.device(1):
            assert torch.tpu.current_device() == 1
            with torch.tpu.device("tpu:3"):
                assert torch.tpu.current_device() == 3
                assert torch.accelerator.current_device_index() == 3
            assert torch.tpu.current_device() == 1
        assert torch.tpu.current_device() == 0
        with torch.accelerator.device_index(2):
            assert torch.tpu.current_device() == 2
        assert torch.tpu.current_device() == 0
        try:
            with torch.tpu.device(2):
                raise KeyError("inside")
        except KeyError:
            pass
        assert torch.tpu.current_device() == 0

        # The current device is per thread.
        torch.tpu.set_device(2)
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.tpu.current_device()))
        t.start(); t.join()
        assert seen == [0], seen
        assert torch.tpu.current_device() == 2
        torch.tpu.set_device(0)

        g = torch.Generator("tpu:2")
        assert g.device == torch.device("tpu", 2)
        with torch.tpu.device(3):
            assert torch.Generator("tpu").device == torch.device("tpu", 3)
            assert torch.tpu.current_stream().device == torch.device("tpu", 3)
            e = torch.Event(device="tpu"); e.record(); e.synchronize()

        torch.tpu.manual_seed_all(5)
        assert [g.initial_seed() for g in torch.tpu.default_generators] == [5] * 4
        with torch.tpu.device(1):
            torch.tpu.manual_seed(6)
        assert [g.initial_seed() for g in torch.tpu.default_generators] == [5, 6, 5, 5]
        states = torch.tpu.get_rng_state_all()
        assert len(states) == 4
        torch.tpu.synchronize(3)
        torch.accelerator.synchronize(2)
        assert torch.tpu.get_device_properties(3).index == 3
        for i in range(4):
            assert torch.tpu.memory_allocated(i) >= 0
        try:
            torch.tpu.set_device(4)
        except torch.AcceleratorError as e:
            assert "tpu:4" in str(e) and "4 tpu devices" in str(e), str(e)
        else:
            raise AssertionError("set_device(4) did not raise")
        print("ok")
        """,
        env={"TORCH_TPU_CPU_DEVICE_COUNT": "4", "TORCH_TPU_PLATFORM": "cpu"},
    )
    assert out.strip().endswith("ok")


def test_runtime_is_lazy_and_seeds_are_queued():
    out = run_python(
        """
        import torch, torch_tpu
        from torch_tpu import runtime
        assert not runtime.is_initialized()
        assert torch.device("tpu:0").type == "tpu"
        torch.tpu.manual_seed(1234)       # queued: no runtime yet
        torch.manual_seed(99)             # reaches torch.tpu.manual_seed_all, queued
        torch.tpu.manual_seed(1234)       # the latest call wins on the current device
        assert not runtime.is_initialized()
        assert torch.tpu.is_available()   # does not load the plugin
        assert not runtime.is_initialized()
        assert torch.tpu.initial_seed() == 1234
        assert runtime.is_initialized()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_generator_initializes_runtime():
    # torch.Generator("tpu") reaches the C++ hooks, which initialize the
    # runtime through torch.tpu._lazy_init.
    out = run_python(
        """
        import torch, torch_tpu
        from torch_tpu import runtime
        assert not runtime.is_initialized()
        g = torch.Generator("tpu")
        assert runtime.is_initialized()
        assert g.device == torch.device("tpu", 0)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_first_backward_sees_the_devices():
    # The autograd engine sizes its per-device queues once, from the guard's
    # device count, at the first backward of the process; a CPU backward
    # before any tpu use must already see the tpu devices.
    out = run_python(
        """
        import torch, torch_tpu
        from torch_tpu import runtime
        assert not runtime.is_initialized()
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        assert runtime.is_initialized()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_pin_memory_initializes_runtime():
    out = run_python(
        """
        import torch, torch_tpu
        p = torch.ones(4).pin_memory()
        assert p.is_pinned()
        from torch_tpu import runtime
        assert runtime.is_initialized()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_no_plugin_is_unavailable():
    out = run_python(
        """
        import torch, torch_tpu
        assert not torch.tpu.is_available()
        assert torch.tpu.device_count() == 0
        assert not torch.accelerator.is_available()
        assert torch.accelerator.current_accelerator(check_available=True) is None
        try:
            torch.Generator("tpu")
        except RuntimeError as e:
            assert "/nonexistent/plugin.so" in str(e), str(e)
        else:
            raise AssertionError("no error")
        # Pinned host memory needs no plugin.
        assert torch.ones(3).pin_memory().is_pinned()
        print("ok")
        """,
        env={"TORCH_TPU_PJRT_PLUGIN": "/nonexistent/plugin.so"},
    )
    assert out.strip() == "ok"


def test_forked_child_is_in_bad_fork():
    out = run_python(
        """
        import os, torch, torch_tpu
        torch.tpu.init()
        assert not torch.tpu._is_in_bad_fork()
        pid = os.fork()
        if pid == 0:
            ok = torch.tpu._is_in_bad_fork() and not torch.tpu.is_initialized()
            try:
                torch.tpu.current_device()
                ok = False
            except RuntimeError as e:
                ok = ok and "forked subprocess" in str(e)
            torch.manual_seed(1)  # skips tpu in a bad fork, as torch.cuda does
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_sending_a_tpu_tensor_to_another_process_says_what_to_do():
    from multiprocessing.reduction import ForkingPickler

    x = torch.ones(3, device="tpu")
    for obj in (x, torch.nn.Parameter(x.clone()), x.untyped_storage()):
        with pytest.raises(RuntimeError, match=r"cannot be shared with another process.*tensor.cpu\(\)"):
            ForkingPickler.dumps(obj)
    assert ForkingPickler.loads(ForkingPickler.dumps(torch.arange(3))).tolist() == [0, 1, 2]  # CPU as before


def test_forked_child_reading_a_parent_tensor_raises_instead_of_hanging():
    out = run_python(
        """
        import os, torch, torch_tpu
        x = torch.ones(3, device="tpu") + 1
        pid = os.fork()
        if pid == 0:
            failures = 0
            for read in (lambda: x.cpu(), lambda: x.tolist(), lambda: x[0].item(), lambda: print(x)):
                try:
                    read()
                except RuntimeError as e:
                    failures += "forked subprocess" in str(e)
            os._exit(0 if failures == 4 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_data_loader_worker_making_tpu_tensors_raises_in_the_main_process():
    # The batch could not travel back (see the test above); without the
    # check in the worker the main process waited forever for it.
    out = run_python(
        """
        import torch, torch_tpu

        class OnTpu(torch.utils.data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.full((2,), float(i), device="tpu")

        try:
            next(iter(torch.utils.data.DataLoader(OnTpu(), batch_size=2, num_workers=1)))
        except RuntimeError as e:
            assert "tpu cannot be used in DataLoader worker process 0" in str(e), e
        else:
            raise AssertionError("the worker's tpu tensor was not refused")
        batch = next(iter(torch.utils.data.DataLoader(OnTpu(), batch_size=2)))  # in-process loading works
        assert batch.device.type == "tpu" and batch.cpu().tolist() == [[0.0, 0.0], [1.0, 1.0]]
        print("ok")
        """
    )
    assert out.strip().endswith("ok")


# ---- autoload ------------------------------------------------------------------


def _has_entry_point() -> bool:
    eps = importlib.metadata.entry_points(group="torch.backends")
    return any(ep.value.startswith("torch_tpu") for ep in eps)


@pytest.mark.skipif(
    not _has_entry_point(),
    reason="torch_tpu is not installed as a distribution (no torch.backends entry point)",
)
def test_autoload_with_plain_import_torch():
    out = run_python(
        """
        import torch
        print(torch.tpu.is_available(), torch.device("tpu:0"))
        """
    )
    assert out.split() == ["True", "tpu:0"]
    # Importing torch_tpu first (torch's autoload then runs mid-import) works too.
    out = run_python("import torch_tpu, torch; print(torch.tpu.device_count() >= 1)")
    assert out.strip() == "True"


@pytest.mark.skipif(
    not _has_entry_point(),
    reason="torch_tpu is not installed as a distribution (no torch.backends entry point)",
)
def test_autoload_disabled():
    out = run_python(
        """
        import sys, torch
        print(hasattr(torch, "tpu"), "torch_tpu" in sys.modules)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert out.split() == ["False", "False"]
