"""Attention over DTensors on the tpu backend: tensor-parallel (heads),
batch-sharded and context-parallel (ring) scaled_dot_product_attention, a
sequence-parallel transformer block with loss_parallel,
each rank a process running a scenario of
tests/distributed_attention_worker.py, checked against CPU there."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_distributed import run_scenario

WORKER = Path(__file__).with_name("distributed_attention_worker.py")


@pytest.mark.parametrize("scenario", ["dtensor_attention", "sequence_parallel", "context_parallel",
                                      "flex_context_parallel"])
def test_scenario(scenario, tmp_path):
    run_scenario(scenario, tmp_path, worker=WORKER)


def test_context_parallel_in_fused_mode(tmp_path):
    run_scenario("context_parallel", tmp_path, worker=WORKER, TORCH_TPU_EAGER_MODE="fused")
