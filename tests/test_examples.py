"""The example models train on tpu like on CPU: the same losses step by
step, no op falls back to the CPU, and after the first steps no step
compiles a program."""

from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
common = importlib.import_module("common")

# name -> (steps, relative loss tolerance): the runs drift apart slowly as
# float32 rounding differs between XLA's and ATen's kernels.
EXAMPLES = {
    "mingpt": (6, 2e-3),
    "llama": (6, 2e-3),
    "resnet": (6, 5e-3),
    "dlrm": (8, 2e-3),
    "unet": (6, 2e-3),
    "qwen": (6, 2e-3),  # Hugging Face Transformers' Qwen3ForCausalLM
    "custom_kernel": (6, 2e-3),  # an op with StableHLO and JAX kernels
}
WARMUP_STEPS = 3  # the steps allowed to compile (the optimizer's first step differs)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_trains_like_cpu(name):
    steps, rtol = EXAMPLES[name]
    example = importlib.import_module(name)
    torch_tpu.reset_cpu_fallback_counts()
    tpu_step, _ = example.make_step("tpu")
    tpu = common.train(tpu_step, "tpu", steps)
    cpu_step, _ = example.make_step("cpu")
    cpu = common.train(cpu_step, "cpu", steps)

    assert torch_tpu.cpu_fallback_counts() == {}
    torch.testing.assert_close(torch.tensor(tpu.losses), torch.tensor(cpu.losses), rtol=rtol, atol=1e-4)
    assert tpu.losses[-1] < tpu.losses[0], "the loss does not fall"
    assert sum(tpu.compiles_per_step[WARMUP_STEPS:]) == 0, f"recompiles per step: {tpu.compiles_per_step}"


@pytest.mark.parametrize("name", ["mingpt", "resnet"])
def test_example_step_replayed_as_a_device_graph_trains_like_cpu(name):
    """make_step(graphed=True) (examples/graph_step.py): one eager step, a
    capture, then replays of the whole step, each compiling nothing."""
    steps, rtol = EXAMPLES[name]
    example = importlib.import_module(name)
    tpu = common.train(example.make_step("tpu", graphed=True)[0], "tpu", steps)
    cpu = common.train(example.make_step("cpu")[0], "cpu", steps)
    torch.testing.assert_close(torch.tensor(tpu.losses), torch.tensor(cpu.losses), rtol=rtol, atol=1e-4)
    assert sum(tpu.compiles_per_step[2:]) == 0, f"recompiles per step: {tpu.compiles_per_step}"


def test_qwen_generation_matches_cpu_without_recompiling():
    qwen = importlib.import_module("qwen")
    llama = importlib.import_module("llama")
    from transformers import Qwen3ForCausalLM

    prompt = llama.sequences(llama.LlamaConfig(vocab_size=64), 2, 5, seed=3)
    outputs = {}
    for device in ("cpu", "tpu"):
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(qwen.qwen3_config()).to(device).eval()
        outputs[device] = qwen.generate(model, prompt.to(device), 6).cpu()
    assert torch.equal(outputs["tpu"], outputs["cpu"])
    # The static cache keeps one shape: a second generation compiles nothing.
    before = torch_tpu.runtime.cache_stats()["compiles"]
    qwen.generate(model, prompt.to("tpu"), 6).cpu()
    assert torch_tpu.runtime.cache_stats()["compiles"] == before


def test_llama_generation_matches_cpu_without_recompiling():
    llama = importlib.import_module("llama")
    cfg = llama.LlamaConfig()
    prompt = llama.sequences(cfg, 2, 5, seed=3)
    outputs = {}
    for device in ("cpu", "tpu"):
        torch.manual_seed(0)
        model = llama.Llama(cfg).to(device)
        outputs[device] = model.generate(prompt.to(device), 6).cpu()
    assert torch.equal(outputs["tpu"], outputs["cpu"])
    # A second generation runs only cached programs: one decoding program
    # set serves every position.
    before = torch_tpu.runtime.cache_stats()["compiles"]
    model.generate(prompt.to("tpu"), 6).cpu()
    assert torch_tpu.runtime.cache_stats()["compiles"] == before
    # The decoding step captured once and replayed for each token
    # (docs/graphs.md): the same tokens, one launch per token.
    replays = torch_tpu.fused_stats()["graphs_replayed"]
    assert torch.equal(model.generate(prompt.to("tpu"), 6, graphed=True).cpu(), outputs["cpu"])
    assert torch_tpu.fused_stats()["graphs_replayed"] - replays == 5 + 6 - 1


@pytest.mark.parametrize("strategy", ["ddp", "fsdp2", "cp"])
def test_distributed_example_matches_one_cpu_process(strategy, tmp_path):
    """examples/distributed.py on two ranks: the losses equal those of one
    CPU process training on the whole batches, up to rounding (cp: each
    rank a block of every sequence, attention a ring over the ranks)."""
    import re
    import subprocess

    script = os.path.join(os.path.dirname(common.__file__), "distributed.py")
    out = subprocess.run(
        [sys.executable, script, "--nproc", "2", "--strategy", strategy, "--steps", "6",
         "--compare-cpu"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"{strategy} on 2 ranks, losses:" in out.stdout, out.stdout
    gap = float(re.search(r"max \|loss difference\| = (\S+)", out.stdout).group(1))
    assert gap < 1e-4, out.stdout
