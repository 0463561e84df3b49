"""Shape churn in fused eager (csrc/aten/shape_churn.h): ops whose shapes
change at every step while the rest of their graph's stay run as programs
of their own, so the rest keeps one compiled program.

Each test runs in a process of its own: the positions marked are
process-wide, and would change how later tests' graphs are cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

# A decoding loop's shape: a model of fixed shapes reads the last token of
# a sequence that grows by one each step, and the step ends with a read of
# the host (a stopping test), as Transformers' generate does.
LOOP = textwrap.dedent("""
    import glob, json, os, sys, tempfile
    import torch, torch_tpu
    torch.manual_seed(0)
    w = torch.randn(8, 8)
    def step(seq, w):
        x = seq[:, -1:].float()              # the growing sequence's last token
        h = x * w[0]
        for _ in range(6):
            h = torch.tanh(h @ w + 1.0) * 0.5
        nxt = (h.sum(-1, keepdim=True) > 0).long()
        return torch.cat([seq, nxt], dim=1), h
    def run(device, steps):
        seq = torch.zeros(2, 4, dtype=torch.long, device=device)
        ww = w.to(device)
        hs = []
        for _ in range(steps):
            seq, h = step(seq, ww)
            hs.append(h.sum().item())
        return seq.cpu(), hs
    torch_tpu.set_eager_mode("fused")
    dump = tempfile.mkdtemp()
    torch_tpu.diagnostics.set_dump_dir(dump)
    graphs_per_step = []
    seq = torch.zeros(2, 4, dtype=torch.long, device="tpu")
    ww = w.to("tpu")
    hs = []
    for i in range(12):
        before = len(glob.glob(os.path.join(dump, "*fused_graph*")))
        seq, h = step(seq, ww)
        hs.append(h.sum().item())
        graphs_per_step.append(len(glob.glob(os.path.join(dump, "*fused_graph*"))) - before)
    cpu_seq, cpu_hs = run("cpu", 12)
    print(json.dumps({
        "graphs_compiled_per_step": graphs_per_step,
        "same": bool(torch.equal(seq.cpu(), cpu_seq)),
        "max_diff": max(abs(a - b) for a, b in zip(hs, cpu_hs)),
        "stats": torch_tpu.fused_stats(),
    }))
""")


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter outside the source tree, with an empty
    compile cache and the default churn setting unless `env` says."""
    full = dict(os.environ, TORCH_TPU_DISK_CACHE="0")
    full.pop("TORCH_TPU_FUSED_SHAPE_CHURN", None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full,
                          cwd=tempfile.gettempdir(), timeout=600)


def last_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_loop(env: dict[str, str] | None = None) -> dict:
    return last_json(run_python(LOOP, env))


def test_growing_sequence_stops_recompiling_the_model_graph():
    out = run_loop()
    assert out["same"] and out["max_diff"] < 1e-4
    compiled = out["graphs_compiled_per_step"]
    # Before the churn is seen, every step's graph is a new program; once
    # the ops reading the growing sequence run alone, none is.
    assert compiled[:3] == [1, 1, 1], compiled
    assert sum(compiled[6:]) == 0, compiled
    stats = out["stats"]
    assert stats["shape_churn_ops"] >= 2 * 6, stats  # the slice's copy and the cat, each step
    assert stats["materializations"]["shape_churn"] > 0, stats


def test_turned_off_every_step_compiles_its_graph():
    out = run_loop({"TORCH_TPU_FUSED_SHAPE_CHURN": "0"})
    assert out["same"]
    assert out["graphs_compiled_per_step"] == [1] * 12
    assert out["stats"]["shape_churn_ops"] == 0


def test_graphs_whose_shapes_all_change_stay_whole():
    # A model fed batches of a new length each step: every op's shape
    # changes, so running ops alone would only add launches.
    code = """
        import json, torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        w = torch.randn(8, 8, device="tpu")
        for n in range(2, 12):
            h = torch.randn(n, 8, device="tpu")
            for _ in range(6):
                h = torch.tanh(h @ w + 1.0)
            h.sum().item()
        print(json.dumps(torch_tpu.fused_stats()))
    """
    stats = last_json(run_python(code))
    assert stats["shape_churn_ops"] == 0, stats


def test_negative_setting_is_named():
    code = """
        import torch, torch_tpu
        torch_tpu.set_eager_mode("fused")
        x = torch.ones(8, device="tpu")
        for _ in range(10):
            x = x + 1
        x.sum().item()
    """
    proc = run_python(code, {"TORCH_TPU_FUSED_SHAPE_CHURN": "-1"})
    assert proc.returncode != 0
    assert "TORCH_TPU_FUSED_SHAPE_CHURN must be 0 or positive, got -1" in proc.stderr


def test_compiled_graphs_stay_whole():
    # torch.compile's graphs run in fused eager too, but a graph is one
    # program (and replays as one): their recompiles mark nothing.
    code = """
        import json, torch, torch_tpu
        w = torch.randn(8, 8, device="tpu")
        @torch.compile(backend="tpu", dynamic=False)
        def step(seq, w):
            h = seq[:, -1:].float() * w[0]
            for _ in range(6):
                h = torch.tanh(h @ w + 1.0) * 0.5
            return torch.cat([seq, (h.sum(-1, keepdim=True) > 0).long()], dim=1), h
        torch._dynamo.config.recompile_limit = 64
        seq = torch.zeros(2, 4, dtype=torch.long, device="tpu")
        for _ in range(8):
            seq, h = step(seq, w)
            h.sum().item()
        print(json.dumps(torch_tpu.fused_stats()))
    """
    stats = last_json(run_python(code))
    assert stats["shape_churn_ops"] == 0, stats
    assert stats["graphs_run"] >= 8, stats
