"""The shared compile cache: memory hits, one compile per key under
concurrency, and the disk tier across processes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import uuid

import pytest

from torch_tpu import runtime
from torch_tpu._C import hlo


def unique_program(tag: str | None = None) -> str:
    """A program no other test (or earlier run) has compiled."""
    b = hlo.Builder("p_" + (tag or uuid.uuid4().hex[:12]))
    x = b.parameter("f32", [3])
    salt = float(int(uuid.uuid4().hex[:6], 16))
    return b.build([b.add(x, b.constant(salt, "f32", [3]))])


def stats_delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in before}


def test_second_compile_is_a_memory_hit():
    program = unique_program()
    before = runtime.cache_stats()
    first = runtime.compile(program)
    second = runtime.compile(program)
    d = stats_delta(before, runtime.cache_stats())
    assert d["requests"] == 2
    assert d["compiles"] == 1
    assert d["memory_hits"] == 1
    assert d["compile_seconds"] > 0
    assert first.fingerprint() == second.fingerprint() or first is second


def test_keys_with_the_same_program_share_one_compile():
    program = unique_program()
    before = runtime.cache_stats()
    runtime.compile(program, key="key-a-" + uuid.uuid4().hex)
    runtime.compile(program, key="key-b-" + uuid.uuid4().hex)
    d = stats_delta(before, runtime.cache_stats())
    assert d["compiles"] == 1


def test_concurrent_requests_for_one_key_compile_once():
    program = unique_program()
    key = "concurrent-" + uuid.uuid4().hex
    before = runtime.cache_stats()
    results, errors = [], []
    start = threading.Barrier(8)

    def worker():
        try:
            start.wait()
            results.append(runtime.compile(program, key=key))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 8
    d = stats_delta(before, runtime.cache_stats())
    assert d["requests"] == 8
    assert d["compiles"] == 1


def test_compile_error_does_not_poison_the_key():
    key = "bad-" + uuid.uuid4().hex
    with pytest.raises(RuntimeError, match="PJRT_Client_Compile"):
        runtime.compile("not a module", key=key)
    with pytest.raises(RuntimeError, match="PJRT_Client_Compile"):
        runtime.compile("not a module", key=key)


CHILD = r"""
import json, sys
import numpy as np
from torch_tpu import runtime
from torch_tpu._C import hlo
b = hlo.Builder("disk_tier_probe")
x = b.parameter("f32", [4])
program = b.build([b.multiply(x, b.constant(float(sys.argv[1]), "f32", [4]))])
exe = runtime.compile(program)
c = runtime.client()
(out,) = exe.execute([c.to_device(np.arange(4, dtype=np.float32))], wait=True)
print(json.dumps({"stats": runtime.cache_stats(), "out": out.to_numpy().tolist()}))
"""


def run_child(cache_dir, factor: float, extra_env=None):
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    # cwd elsewhere: the source folder must not shadow the installed package.
    result = subprocess.run([sys.executable, "-c", CHILD, str(factor)], env=env,
                            capture_output=True, text=True, timeout=300, cwd=cache_dir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_disk_tier_survives_a_process_restart(tmp_path):
    first, _ = run_child(tmp_path, 3.0)
    assert first["stats"]["compiles"] == 1
    assert first["stats"]["disk_writes"] == 1
    second, _ = run_child(tmp_path, 3.0)
    assert second["stats"]["compiles"] == 0
    assert second["stats"]["disk_hits"] == 1
    assert second["out"] == [0.0, 3.0, 6.0, 9.0]


def test_other_xla_flags_do_not_reuse_an_executable(tmp_path):
    # A flag that changes nothing but the process's XLA options.
    run_child(tmp_path, 4.0)
    flagged, _ = run_child(tmp_path, 4.0, {"XLA_FLAGS": "--xla_cpu_enable_fast_min_max=false"})
    assert flagged["stats"]["compiles"] == 1 and flagged["stats"]["disk_hits"] == 0
    again, _ = run_child(tmp_path, 4.0, {"XLA_FLAGS": "--xla_cpu_enable_fast_min_max=false"})
    assert again["stats"]["disk_hits"] == 1


def test_disk_entries_are_owner_only(tmp_path):
    run_child(tmp_path, 5.0)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert entries
    for path in entries:
        assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0, path
    for d, _, _ in os.walk(tmp_path):
        if d != str(tmp_path):
            assert stat.S_IMODE(os.stat(d).st_mode) & 0o077 == 0, d


def test_corrupt_entry_is_ignored_with_a_warning(tmp_path):
    run_child(tmp_path, 7.0)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    for path in entries:
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            f.write(b"\xff\x00garbage\x00\xff")
    again, stderr = run_child(tmp_path, 7.0)
    assert again["stats"]["compiles"] == 1
    assert again["out"] == [0.0, 7.0, 14.0, 21.0]
    assert "torch_tpu" in stderr or again["stats"]["disk_errors"] >= 1


def test_a_cache_directory_that_is_a_file_warns_once(tmp_path):
    not_a_directory = tmp_path / "cache"
    not_a_directory.write_text("")
    code = ("import torch\nx = torch.arange(6.0, device='tpu')\n"
            "print((x.sin() + x.cos() * x.exp() - x.tanh()).sum().item())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env=dict(os.environ, TORCH_TPU_CACHE_DIR=str(not_a_directory)))
    assert result.returncode == 0, result.stderr
    # One warning for the unwritable tier, not one per program looked up.
    assert result.stderr.count("Warning") == 1 and "cannot write the compile cache" in result.stderr, result.stderr


def test_disk_tier_can_be_disabled(tmp_path):
    first, _ = run_child(tmp_path, 9.0, {"TORCH_TPU_DISK_CACHE": "0"})
    assert first["stats"]["disk_writes"] == 0
    assert not any(fs for _, _, fs in os.walk(tmp_path))


def test_loaded_executables_stay_bounded(tmp_path):
    # Each loaded executable takes memory mappings of its own (a process has
    # about 65,000): past TORCH_TPU_MAX_LOADED_EXECUTABLES the memory tier is
    # emptied when the device is idle, and later calls reload from disk.
    code = (
        "import torch, torch_tpu\n"
        "from torch_tpu import _C\n"
        "most = 0\n"
        "for n in range(1, 80):\n"
        "    x = torch.arange(n, dtype=torch.float32, device='tpu')\n"
        "    assert (x * 2 + 1).sum().item() == n * n\n"
        "    most = max(most, _C.runtime.cache_memory_entries())\n"
        "again = torch.arange(5, dtype=torch.float32, device='tpu')\n"
        "assert (again * 2 + 1).sum().item() == 25\n"
        "print('most', most)\n"
    )
    env = dict(os.environ, TORCH_TPU_MAX_LOADED_EXECUTABLES="40", TORCH_TPU_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    most = int(result.stdout.split("most")[1])
    assert 40 <= most <= 45, result.stdout
