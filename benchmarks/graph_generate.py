"""Greedy KV-cache decoding of examples/llama.py token by token: strict and
fused eager, and the decoding step captured once into a device graph and
replayed per token (`generate(..., graphed=True)`, docs/graphs.md), beside
PyTorch's CPU eager, in one run. Prints milliseconds per token (median of
`--repeats` generations after one warm-up) and the ratio to strict eager.

    .venv/bin/python benchmarks/graph_generate.py [--batch 2] [--repeats 5]

BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

import torch_tpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import llama  # noqa: E402

PROMPT = 5


def ms_per_token(model, prompt, new_tokens: int, repeats: int, graphed: bool) -> float:
    model.generate(prompt, new_tokens, graphed=graphed).cpu()  # compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.generate(prompt, new_tokens, graphed=graphed).cpu()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / (PROMPT + new_tokens - 1) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cfg = llama.LlamaConfig()
    new_tokens = cfg.max_seq_len - PROMPT
    prompt = llama.sequences(cfg, args.batch, PROMPT, seed=3)
    torch.manual_seed(0)
    cpu_model = llama.Llama(cfg)
    tpu_model = llama.Llama(cfg)
    tpu_model.load_state_dict(cpu_model.state_dict())
    tpu_model = tpu_model.to("tpu")
    rows = {"cpu": ms_per_token(cpu_model, prompt, new_tokens, args.repeats, False)}
    for mode, graphed in (("strict", False), ("fused", False), ("graph", True)):
        with torch_tpu.eager_mode("strict" if graphed else mode):
            rows[mode] = ms_per_token(tpu_model, prompt.to("tpu"), new_tokens, args.repeats, graphed)
    print(f"batch {args.batch}, {PROMPT} prompt tokens, {new_tokens} new; ms per token, "
          f"median of {args.repeats}; CPU threads {torch.get_num_threads()}")
    for mode, ms in rows.items():
        print(f"{mode:8s} {ms:8.3f}  {rows['strict'] / ms:5.2f}x strict")


if __name__ == "__main__":
    main()
