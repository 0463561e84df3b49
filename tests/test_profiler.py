"""PyTorch's profiler on the tpu: torch.autograd.profiler.profile(
use_device="tpu") reports each op's device time through the PrivateUse1
profiler stubs (csrc/aten/profiler_stubs.cc), and torch.profiler with
ProfilerActivity.PrivateUse1 gets device rows from the Kineto activity
profiler (csrc/aten/trace_profiler.cc)."""

from __future__ import annotations

import json
import time

import pytest
import torch
from torch.profiler import ProfilerActivity

import torch_tpu


# The trace's device rows need PyTorch's PrivateUse1 profiler registration,
# which 2.11 lacks; the use_device="tpu" times work on 2.11 too.
needs_device_trace = pytest.mark.skipif(not torch_tpu._C.device.has_device_trace(),
                                        reason="built against a PyTorch without PrivateUse1 activity profilers")


def device_times(prof) -> dict[str, float]:
    """Self device microseconds per op name, summed over calls."""
    totals: dict[str, float] = {}
    for event in prof.key_averages():
        totals[event.key] = totals.get(event.key, 0.0) + event.self_device_time_total
    return totals


def profile(fn):
    start = time.perf_counter()
    with torch.autograd.profiler.profile(use_device="tpu") as prof:
        fn()
    return prof, (time.perf_counter() - start) * 1e6


def test_ops_on_a_device_other_than_the_current_one_get_device_time():
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two tpu devices")
    x = torch.randn(256, 256, device="tpu:1")
    (x @ x).sum().item()
    prof, wall_us = profile(lambda: (x @ x).sum().item())
    assert 0 < device_times(prof)["aten::mm"] <= wall_us


def test_ops_that_launch_programs_get_device_time_and_views_none():
    x = torch.randn(256, 256, device="tpu")
    w = torch.randn(256, 256, device="tpu")
    (x @ w).relu().sum().item()  # compiled before profiling

    def run():
        for _ in range(3):
            y = (x @ w).relu().view(-1)
        y.sum().item()

    prof, wall_us = profile(run)
    times = device_times(prof)
    # (How the small relu's time splits from the matmul's depends on when
    # the plugin's completion callbacks run; the matmul's own is never 0.)
    assert times["aten::mm"] > 0, times
    assert times.get("aten::view", 0.0) == 0.0, times
    # Markers lie inside the profiled region: device time cannot exceed it.
    assert 0 < sum(times.values()) <= wall_us, (times, wall_us)
    table = prof.key_averages().table(sort_by="self_device_time_total")
    assert "Self TPU" in table and "aten::mm" in table


def test_fused_mode_attributes_device_time_to_the_sync_point():
    x = torch.randn(128, 128, device="tpu")
    with torch_tpu.eager_mode("fused"):
        (x.exp() * 2).sum().item()

        def run():
            (x.exp() * 2).sum().item()

        prof, _ = profile(run)
    times = device_times(prof)
    # Recording launches nothing; the graph runs when item() materializes it.
    assert times.get("aten::exp", 0.0) == 0.0, times
    assert times.get("aten::item", 0.0) + times.get("aten::_local_scalar_dense", 0.0) > 0, times


def test_a_fused_graph_run_outside_any_op_gets_its_own_range():
    """The graph a backward pass recorded runs at its end, where no op is
    open: its device time goes to a "tpu::fused_graph" range, not to nothing."""
    model = torch.nn.Linear(128, 128).to("tpu")
    x = torch.randn(32, 128, device="tpu")
    with torch_tpu.eager_mode("fused"):
        model(x).tanh().sum().backward()
        torch.tpu.synchronize()

        def run():
            model(x).tanh().sum().backward()
            torch.tpu.synchronize()

        prof, _ = profile(run)
    times = device_times(prof)
    assert times.get("tpu::fused_graph", 0.0) > 0, times
    assert torch_tpu.fused_stats()["materializations"]["end_of_backward"] >= 1


def test_profile_memory_reports_device_memory_per_op():
    x = torch.ones(256, 1024, device="tpu")
    torch.tpu.synchronize()
    with torch.autograd.profiler.profile(use_device="tpu", profile_memory=True) as prof:
        y = x * 2
        del y
        torch.tpu.synchronize()
    usage = {e.key: e.device_memory_usage for e in prof.key_averages()}
    assert usage.get("aten::mul", 0) == 256 * 1024 * 4, usage


def test_cpu_only_profiles_are_unchanged():
    x = torch.randn(64, 64, device="tpu")
    with torch.autograd.profiler.profile() as prof:
        (x + 1).sum().item()
    names = {e.key for e in prof.key_averages()}
    assert "aten::add" in names
    assert all(e.self_device_time_total == 0 for e in prof.key_averages())


# ---- torch.profiler (Kineto) ------------------------------------------------------------

def trace(fn, activities, tmp_path):
    with torch.profiler.profile(activities=activities) as prof:
        fn()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return prof, json.loads(path.read_text())["traceEvents"]


@needs_device_trace
def test_trace_has_a_device_row_with_each_launch_linked_to_its_op(tmp_path):
    x = torch.randn(256, 256, device="tpu")
    w = torch.randn(256, 256, device="tpu")
    (x @ w).relu().sum().item()

    def run():
        for _ in range(3):
            y = (x @ w).relu().view(-1)
        y.sum().item()

    prof, events = trace(run, [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], tmp_path)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
    assert sorted(k["name"] for k in kernels).count("tpu program: aten::mm") == 3
    for k in kernels:
        op = ops[k["args"]["External id"]]  # linked to the op that launched it
        assert k["name"] == "tpu program: " + op["name"]
        assert k["ts"] >= op["ts"] and k["dur"] > 0  # runs after its launch began
    assert not any(k["name"].endswith("aten::view") for k in kernels)
    flows = [e for e in events if e.get("cat") == "ac2g"]
    assert len(flows) >= len(kernels)
    # Device time per op in the table, as with CUDA kernels.
    mm = [e for e in prof.key_averages() if e.key == "aten::mm" and e.self_device_time_total > 0]
    assert mm and all(e.device_type == torch.autograd.DeviceType.CPU or e.count == 3 for e in mm)
    assert "Self TPU" in prof.key_averages().table(sort_by="self_device_time_total")
    # The program has a row of its own, as a CUDA kernel has: no op is listed twice.
    rows = [e.key for e in prof.key_averages()]
    assert len(rows) == len(set(rows)) and "tpu program: aten::mm" in rows


@needs_device_trace
def test_trace_names_the_row_of_every_device_it_shows(tmp_path):
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two tpu devices")
    a, b = torch.randn(64, 64, device="tpu:1"), torch.randn(64, 64, device="tpu:0")
    (a @ a).cpu(), (b @ b).cpu()
    _, events = trace(lambda: ((a @ a).cpu(), (b @ b).cpu()), [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                      tmp_path)
    rows = {e["pid"] for e in events if e.get("cat") == "kernel"}
    labels = {e["pid"]: e["args"]["labels"] for e in events if e.get("name") == "process_labels"}
    assert rows == {0, 1} and labels[0] == "tpu 0" and labels[1] == "tpu 1"


@needs_device_trace
def test_trace_of_fused_eager_shows_the_graph_at_its_sync_point(tmp_path):
    x = torch.randn(64, 64, device="tpu")
    with torch_tpu.eager_mode("fused"):
        (torch.relu(x @ x) * 2).sum().item()

        def run():
            (torch.relu(x @ x) * 2).sum().item()

        _, events = trace(run, [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], tmp_path)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    assert len(kernels) == 1
    assert kernels[0]["name"].startswith("tpu fused graph of 4 ops (aten::mm, aten::relu")
    assert ops[kernels[0]["args"]["External id"]] == "aten::_local_scalar_dense"


@needs_device_trace
def test_trace_links_a_graph_run_outside_any_op_to_its_range(tmp_path):
    x = torch.randn(64, 64, device="tpu")
    with torch_tpu.eager_mode("fused"):
        def run():
            y = (x @ x).sin()
            torch.tpu.synchronize()  # the graph runs here, under tpu::fused_graph
            return y

        run()
        prof, events = trace(run, [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], tmp_path)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ranges = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "user_annotation"}
    assert len(kernels) == 1 and ranges.get(kernels[0]["args"].get("External id")) == "tpu::fused_graph", events
    graph = [e for e in prof.key_averages() if e.key == "tpu::fused_graph"]
    assert graph and graph[0].self_device_time_total > 0


@needs_device_trace
def test_trace_shows_copies_between_host_and_device(tmp_path):
    a = torch.randn(256, 256)

    def run():
        (a.to("tpu") * 2).cpu()

    run()
    prof, events = trace(run, [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], tmp_path)
    ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    assert sorted(c["name"] for c in copies) == ["Memcpy DtoH (tpu -> host)", "Memcpy HtoD (host -> tpu)"]
    assert all(ops[c["args"]["External id"]] == "aten::_copy_from" and c["dur"] > 0 for c in copies)
    up, down = sorted(copies, key=lambda c: c["ts"])
    kernel = next(e for e in events if e.get("cat") == "kernel")
    assert up["name"].startswith("Memcpy HtoD") and up["ts"] <= kernel["ts"] <= down["ts"]
    torch.testing.assert_close((a.to("tpu") * 2).cpu(), a * 2)


def test_cpu_only_trace_has_no_device_rows(tmp_path):
    x = torch.randn(64, 64, device="tpu")
    (x @ x).sum().item()
    _, events = trace(lambda: (x @ x).sum().item(), [ProfilerActivity.CPU], tmp_path)
    assert [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")] == []
    assert any(e.get("name") == "aten::mm" for e in events)
