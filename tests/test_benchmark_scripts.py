"""The benchmark scripts run: figures are never asserted (they are
measured and recorded in BENCHMARKS.md), but a script that no longer runs,
or prints a table without its rows, is caught here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = os.path.join(ROOT, "benchmarks", "modes.py")


def run(args, **kwargs):
    out = subprocess.run([sys.executable, MODES, *args], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"), **kwargs)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_modes_in_alternating_rounds_prints_a_row_per_mode():
    """modes.py --rounds: every mode set up, then timed in turns; each row
    has its time and its ratio to strict eager (strict's own is 1.00x)."""
    out = run(["--models", "mingpt", "--modes", "cpu", "strict", "fused", "--steps", "2", "--warmup", "1",
               "--rounds", "2", "--cpu-threads", "1"])
    assert "in 2 alternating rounds" in out, out
    rows = {m.group(1): m for m in re.finditer(r"^mingpt\s+(\S+)\s+([\d.]+)\s+([\d.]+)x", out, re.M)}
    assert set(rows) == {"cpu", "strict", "fused"}, out
    assert rows["strict"].group(3) == "1.00", out
    assert all(float(m.group(2)) > 0 for m in rows.values()), out


def test_a_child_serves_blocks_of_steps_on_request():
    """The protocol of the cuda rows' child process (a process without
    torch_tpu): READY after the warm-up, then one block per request."""
    out = run(["--child", "--models", "mingpt", "--modes", "cpu", "--warmup", "1"], input="2 1\n3 0\n")
    lines = out.splitlines()
    assert lines[0] == "READY", out
    blocks = [json.loads(line[len("BLOCK "):]) for line in lines if line.startswith("BLOCK ")]
    assert [len(b["times"]) for b in blocks] == [2, 3], out
    assert all(t > 0 for b in blocks for t in b["times"]), out


def long_chains_rows(case: str, *args: str) -> list[tuple[str, str, str]]:
    """long_chains.py's rows for `case`: (limit, barriers, cuts)."""
    script = os.path.join(ROOT, "benchmarks", "long_chains.py")
    out = subprocess.run([sys.executable, script, "--cases", case, "--repeats", "1", *args],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return re.findall(rf"^{case}\s+(\d+)\s+[\d.]+\s+[\d.]+x\s+[\d.]+\s+[\d.]+x\s+(\d+)\s+(\d+)$", out.stdout, re.M)


def test_long_chains_prints_a_row_per_case_and_limit():
    """long_chains.py: each case in a process per limit; the capped run of
    a kept recurrence has barriers, the uncapped one none; the bounded
    noise loop has kernel cuts, the unbounded one none."""
    rows = long_chains_rows("recurrence:40")
    assert [(limit, cuts) for limit, _, cuts in rows] == [("0", "0"), ("32", "0")], rows
    assert rows[0][1] == "0" and int(rows[1][1]) > 0, rows
    rows = long_chains_rows("noise:30", "--limit", "kernel", "--limits", "0", "256")
    assert [limit for limit, _, _ in rows] == ["0", "256"], rows
    assert rows[0][2] == "0" and int(rows[1][2]) > 0, rows


def test_transfers_prints_every_copy_per_size():
    script = os.path.join(ROOT, "benchmarks", "transfers.py")
    out = subprocess.run([sys.executable, script, "--sizes-mb", "0.01", "1", "--repeats", "1"],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = re.findall(r"^\s*([\d.]+) (.+?)\s+([\d.]+)\s+([\d.]+)$", out.stdout, re.M)
    assert len(rows) == 10, out.stdout
    assert all(float(ms) > 0 for _, _, ms, _ in rows), out.stdout


def test_sparse_embedding_prints_a_row_per_mode():
    script = os.path.join(ROOT, "benchmarks", "sparse_embedding.py")
    out = subprocess.run([sys.executable, script, "--rows", "500", "--bags", "8", "--steps", "1", "--warmup", "1",
                          "--rounds", "1", "--modes", "cpu-sparse", "strict-dense", "strict-sparse"],
                         capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = dict(re.findall(r"^(\S+-\S+)\s+[\d.]+\s+[\d.]+-[\d.]+\s+([\d.]+)x$", out.stdout, re.M))
    assert set(rows) == {"cpu-sparse", "strict-dense", "strict-sparse"}, out.stdout
    assert rows["strict-dense"] == "1.00", out.stdout


def test_graph_generate_prints_a_row_per_mode():
    script = os.path.join(ROOT, "benchmarks", "graph_generate.py")
    out = subprocess.run([sys.executable, script, "--repeats", "1"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = dict(re.findall(r"^(\w+)\s+([\d.]+)\s+[\d.]+x strict$", out.stdout, re.M))
    assert set(rows) == {"cpu", "strict", "fused", "graph"}, out.stdout
    assert all(float(ms) > 0 for ms in rows.values()), out.stdout
