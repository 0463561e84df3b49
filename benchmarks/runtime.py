"""Runtime foundation benchmark: cached launch host time, compile time (cold
and from the disk tier), and host<->device transfer throughput.

    .venv/bin/python benchmarks/runtime.py

Prints a table; BENCHMARKS.md records the figures with machine and date.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid

# A private cache directory so "cold" really is cold.
os.environ["TORCH_TPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch_tpu_bench_")

import numpy as np

from torch_tpu import runtime
from torch_tpu._C import hlo
from torch_tpu._C import runtime as native


def elementwise_program(salt: float, n: int = 1024) -> str:
    b = hlo.Builder("bench_" + uuid.uuid4().hex[:8])
    x = b.parameter("f32", [n])
    y = b.parameter("f32", [n])
    out = b.add(b.multiply(x, y), b.constant(salt, "f32", [n]))
    return b.build([b.tanh(out)])


def tiny_program() -> str:
    b = hlo.Builder("tiny")
    x = b.parameter("f32", [4])
    return b.build([b.add(x, x)])


def median_us(samples_ns) -> float:
    return statistics.median(samples_ns) / 1e3


def bench_cached_launch(client) -> dict:
    arg = client.to_device(np.ones(4, np.float32))
    program = tiny_program()
    ns = native.time_cached_launch("bench-tiny", program, [arg], 0, 20000)
    # Through Python too, for reference: what a pure-Python caller pays.
    exe = runtime.compile(program, key="bench-tiny")
    py_ns = []
    for _ in range(5000):
        t = time.perf_counter_ns()
        exe.execute([arg])
        py_ns.append(time.perf_counter_ns() - t)
    return {"launch_us_cpp": median_us(ns), "launch_us_python": median_us(py_ns)}


def bench_compile() -> dict:
    cold, disk = [], []
    for i in range(5):
        program = elementwise_program(float(i) + 0.5)
        t = time.perf_counter()
        runtime.compile(program)
        cold.append(time.perf_counter() - t)
        native.clear_cache_memory()
        before = runtime.cache_stats()
        t = time.perf_counter()
        runtime.compile(program)
        disk.append(time.perf_counter() - t)
        assert runtime.cache_stats()["disk_hits"] == before["disk_hits"] + 1
    return {"compile_cold_ms": statistics.median(cold) * 1e3,
            "compile_from_disk_ms": statistics.median(disk) * 1e3}


def bench_transfers(client) -> dict:
    out = {}
    for label, nbytes in (("1MB", 1 << 20), ("64MB", 64 << 20)):
        host = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
        reps = 20 if nbytes < (8 << 20) else 5
        h2d, d2h = [], []
        for _ in range(reps):
            t = time.perf_counter()
            buf = client.to_device(host)
            buf.block_until_ready()
            h2d.append(time.perf_counter() - t)
            t = time.perf_counter()
            buf.to_numpy()
            d2h.append(time.perf_counter() - t)
        out[f"h2d_{label}_GBps"] = nbytes / statistics.median(h2d) / 1e9
        out[f"d2h_{label}_GBps"] = nbytes / statistics.median(d2h) / 1e9
    return out


def main() -> None:
    info = runtime.info()
    client = runtime.client()
    print(f"platform: {info['platform']} ({info['device_kind']}, {info['device_count']} devices), "
          f"plugin PJRT API {info['pjrt_api_version']}")
    results = {}
    results.update(bench_cached_launch(client))
    results.update(bench_compile())
    results.update(bench_transfers(client))
    print(f"{'metric':<28} {'value':>10}")
    for key, value in results.items():
        print(f"{key:<28} {value:>10.2f}")
    aim = 10.0
    print(f"cached launch vs aim ({aim:.0f} us host time): {results['launch_us_cpp'] / aim:.2f}x of budget")


if __name__ == "__main__":
    main()
