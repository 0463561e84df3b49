"""torch.distributed on the tpu backend: each test starts one process per
rank running a scenario of tests/distributed_worker.py, which checks its own
results (collectives against values every rank can compute; DDP, FSDP2 and
tensor parallelism against the same model trained on CPU)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("distributed_worker.py")
TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_scenario(name: str, tmp_path: Path, world_size: int = 2, worker: Path = WORKER,
                 **env_vars: str) -> None:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               PYTHONWARNINGS="ignore::FutureWarning", TORCH_TPU_TEST_DIR=str(tmp_path),
               **env_vars)
    # Each rank writes to its own file: a rank blocked on a full pipe would
    # stall the others in their next collective.
    logs = [tmp_path / f"rank{rank}.log" for rank in range(world_size)]
    procs = []
    for rank, log in enumerate(logs):
        with open(log, "w") as out:
            procs.append(subprocess.Popen(
                [sys.executable, str(worker), name, str(rank), str(world_size)],
                cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            ))
    deadline = time.monotonic() + TIMEOUT_S
    timed_out = False
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        timed_out = True
        for p in procs:
            p.kill()
            p.wait()
    tails = {rank: log.read_text()[-4000:] for rank, log in enumerate(logs)}
    if timed_out:
        pytest.fail(f"scenario {name} did not finish in {TIMEOUT_S} s:\n"
                    + "\n".join(f"--- rank {r}:\n{t}" for r, t in tails.items()))
    failed = [rank for rank, p in enumerate(procs) if p.returncode != 0]
    if failed:
        pytest.fail(f"scenario {name} failed:\n"
                    + "\n".join(f"--- rank {r}:\n{tails[r]}" for r in failed))


@pytest.mark.parametrize("scenario", [
    "collectives", "errors", "fused_mode", "ddp", "sync_batch_norm", "fsdp2", "tensor_parallel", "compiled",
    "bound_device", "transformers_sets_up", "accelerate", "accelerate_fsdp2", "trainer", "pipelining", "sparse_ddp",
])
def test_scenario(scenario, tmp_path):
    run_scenario(scenario, tmp_path)


def test_cross_rank_mismatch_is_detected_in_detail_mode(tmp_path):
    run_scenario("mismatch_detected", tmp_path, TORCH_DISTRIBUTED_DEBUG="DETAIL")


def test_four_ranks_subgroups_and_2d_mesh(tmp_path):
    run_scenario("mesh_2d", tmp_path, world_size=4)


def test_backend_is_registered():
    import torch.distributed as dist

    import torch_tpu  # noqa: F401

    assert "tpu" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["tpu"] == "tpu"
    assert "tpu_dist" in dist.Backend.backend_list  # the name Hugging Face Transformers asks for
    assert set(dist.Backend.backend_capability["tpu"]) == {"cpu", "tpu"}
