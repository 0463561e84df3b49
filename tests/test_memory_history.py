"""torch.tpu.memory._record_memory_history / _snapshot: live buffers with
the stacks that made them, a bounded trace of allocations, frees and
out-of-memory errors, in torch.cuda's snapshot format (read by
torch.cuda._memory_viz)."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch.cuda import _memory_viz

import torch_tpu

memory = torch.tpu.memory


@pytest.fixture(autouse=True)
def stop_recording():
    yield
    memory._record_memory_history(None)
    torch_tpu.set_eager_mode("strict")


def make_ones(n):
    return torch.ones(n, device="tpu")


def frames_here(frames):
    """(function name, line) of the frames in this file."""
    return [(f["name"], f["line"]) for f in frames if f["filename"] == __file__]


def segment_of(snapshot, n_bytes):
    found = [s for s in snapshot["segments"] if s["total_size"] == n_bytes]
    assert len(found) == 1, found
    return found[0]


def test_segments_are_the_live_buffers():
    a = torch.ones(1237, device="tpu")
    b = torch.zeros(3, 5, device="tpu", dtype=torch.float64)
    torch.tpu.synchronize()
    snapshot = memory._snapshot()
    for d in range(torch.tpu.device_count()):
        on_d = [s["total_size"] for s in snapshot["segments"] if s["device"] == d]
        assert sum(on_d) == torch.tpu.memory_allocated(d)
    for seg in snapshot["segments"]:
        (block,) = seg["blocks"]
        assert block["state"] == "active_allocated"
        assert block["size"] == seg["total_size"] == seg["allocated_size"]
    segment_of(snapshot, 1237 * 4)
    segment_of(snapshot, 15 * 8)
    assert torch.tpu.memory_snapshot() == snapshot["segments"]
    del a, b


def test_live_buffer_has_the_python_stack_of_its_allocation():
    memory._record_memory_history(stacks="python")
    t = make_ones(1111)
    segment = segment_of(memory._snapshot(), 1111 * 4)
    here = frames_here(segment["blocks"][0]["frames"])
    assert here[0][0] == "make_ones"
    assert here[1][0] == "test_live_buffer_has_the_python_stack_of_its_allocation"
    del t


def test_cpp_stacks_keep_the_python_frames():
    memory._record_memory_history(stacks="all")
    t = make_ones(1112)
    frames = segment_of(memory._snapshot(), 1112 * 4)["frames"]
    assert [name for name, _ in frames_here(frames)][:1] == ["make_ones"]
    assert len(frames) > len(frames_here(frames))  # C++ frames too
    del t


def test_trace_of_allocations_and_frees():
    memory._record_memory_history(stacks="python", clear_history=True)
    a = make_ones(2001)
    b = a * 2
    del b
    trace = memory._snapshot()["device_traces"][0]
    actions = [(e["action"], e["size"]) for e in trace]
    assert actions == [("alloc", 8004), ("alloc", 8004), ("free_requested", 8004), ("free_completed", 8004)]
    assert trace[1]["addr"] == trace[2]["addr"] == trace[3]["addr"] != trace[0]["addr"]
    assert frames_here(trace[0]["frames"])[0][0] == "make_ones"
    assert frames_here(trace[3]["frames"])  # context="all": frees have stacks
    assert all(e["time_us"] > 0 for e in trace)
    # What PyTorch's viewer computes from it.
    text = _memory_viz.trace(memory._snapshot())
    assert "del b" in text and "free completed" in text
    assert "html" in _memory_viz.trace_plot(memory._snapshot())
    assert "total_allocated" in _memory_viz.segsum(memory._snapshot())
    del a


def test_max_entries_keeps_the_newest():
    memory._record_memory_history(stacks="python", max_entries=3)
    for n in (11, 12, 13, 14):
        make_ones(n)  # each: alloc, free_requested, free_completed
    trace = memory._snapshot()["device_traces"][0]
    assert [(e["action"], e["size"]) for e in trace] == [
        ("alloc", 56), ("free_requested", 56), ("free_completed", 56)]


def test_max_entries_is_per_device_as_on_cuda():
    memory._record_memory_history(stacks="python", max_entries=3)
    kept = [torch.ones(n, device="tpu:0") for n in (21, 22, 23, 24)]
    kept += [torch.ones(n, device="tpu:1") for n in (31, 32, 33, 34)]
    traces = memory._snapshot()["device_traces"]
    # Device 1's allocations did not push device 0's out of its history.
    assert [e["size"] for e in traces[0]] == [22 * 4, 23 * 4, 24 * 4]
    assert [e["size"] for e in traces[1]] == [32 * 4, 33 * 4, 34 * 4]
    del kept


def test_context_and_enabled_levels():
    memory._record_memory_history(context="state", stacks="python")
    t = make_ones(1113)
    snapshot = memory._snapshot()
    assert frames_here(segment_of(snapshot, 1113 * 4)["frames"])
    assert all(e["frames"] == [] for e in snapshot["device_traces"][0])

    memory._record_memory_history(context="alloc", stacks="python", clear_history=True)
    u = make_ones(1114)
    del u
    trace = memory._snapshot()["device_traces"][0]
    assert frames_here(trace[0]["frames"]) and trace[-1]["frames"] == []

    memory._record_memory_history("state", stacks="python")  # stacks, no trace
    v = make_ones(1115)
    snapshot = memory._snapshot()
    assert snapshot["device_traces"][0] == []
    assert frames_here(segment_of(snapshot, 1115 * 4)["frames"])

    memory._record_memory_history(None)
    w = make_ones(1116)
    assert segment_of(memory._snapshot(), 1116 * 4)["frames"] == []
    del t, v, w


def test_skip_actions():
    memory._record_memory_history(stacks="python", skip_actions=["free_requested", "alloc"])
    make_ones(7)
    assert [e["action"] for e in memory._snapshot()["device_traces"][0]] == ["free_completed"]


def test_fused_results_have_the_stack_of_their_op():
    torch_tpu.set_eager_mode("fused")
    memory._record_memory_history(stacks="python", clear_history=True)
    a = make_ones(1117)
    b = torch.cat([a, a]).exp()
    line_of_b = test_fused_results_have_the_stack_of_their_op.__code__.co_firstlineno + 4
    torch.tpu.synchronize()  # runs the graph: a and b are made here
    snapshot = memory._snapshot()
    assert frames_here(segment_of(snapshot, 1117 * 4)["frames"])[0][0] == "make_ones"
    here = frames_here(segment_of(snapshot, 2 * 1117 * 4)["frames"])
    assert here[0] == ("test_fused_results_have_the_stack_of_their_op", line_of_b)
    del a, b


def test_out_of_memory_is_recorded():
    memory._record_memory_history(stacks="python", clear_history=True)
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(10**13, device="tpu")
    (oom,) = [e for e in memory._snapshot()["device_traces"][0] if e["action"] == "oom"]
    assert oom["size"] == 4 * 10**13 and oom["device_free"] >= 0
    assert frames_here(oom["frames"])
    assert "raise OutOfMemoryError" in _memory_viz.trace(memory._snapshot())


def test_dump_snapshot(tmp_path):
    memory._record_memory_history(stacks="python")
    t = make_ones(1118)
    path = tmp_path / "snapshot.pickle"
    memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        loaded = pickle.load(f)
    assert frames_here(segment_of(loaded, 1118 * 4)["frames"])
    del t


def test_bad_arguments():
    with pytest.raises(ValueError, match="enabled"):
        memory._record_memory_history("everything")
    with pytest.raises(ValueError, match="context"):
        memory._record_memory_history(context="some")
    with pytest.raises(ValueError, match="stacks"):
        memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError, match="max_entries"):
        memory._record_memory_history(max_entries=-1)
    with pytest.raises(ValueError, match="unknown action 'allocate'"):
        memory._record_memory_history(skip_actions=["allocate"])
    memory._record_memory_history(skip_actions=["segment_alloc", "segment_free", "snapshot"])  # CUDA's, never recorded
    with pytest.raises(NotImplementedError, match="compile_context"):
        memory._record_memory_history(compile_context=True)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        memory._record_memory_history(device=99)


def test_recording_while_another_thread_runs_ops_does_not_deadlock(tmp_path):
    # An op's buffers are made under the runtime's values lock with the GIL
    # released; a thread holding the GIL (PyTorch runs `z[0] = 1.5` so)
    # may wait for that lock, so the stack is taken after the lock is released.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import threading, torch, torch_tpu
        torch.tpu.memory._record_memory_history(stacks="python")
        x = torch.randn(16, 16, device="tpu"); z = torch.zeros(16, 16, device="tpu")
        def ops():
            for _ in range(300):
                (x + 1).sum().item()
        t = threading.Thread(target=ops)
        t.start()
        for _ in range(3000):
            z[0] = 1.5
        t.join()
        frames = [f["name"] for s in torch.tpu.memory._snapshot()["segments"] for f in s["frames"]]
        print("ok", "<module>" in frames)
    """)
    # From another directory: the source tree would shadow the installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "True"]
