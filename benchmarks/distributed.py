"""torch.distributed on the tpu backend beside gloo on CPU tensors, in one run.

    .venv/bin/python benchmarks/distributed.py [--world-size 2] [--iters 20] [--steps 10]

Starts one process per rank (as torchrun would) in one process group made
with ``init_process_group("tpu")``, which serves tpu tensors through the
tpu backend and CPU tensors through gloo. Prints, from rank 0:

- all_reduce (sum, float32) per message size: milliseconds per call with
  tpu tensors and with CPU tensors, their ratio, and the tpu bus bandwidth
  (2 (n - 1) / n times the bytes over the time, NCCL's convention);
- a minGPT training step (examples/mingpt.py's model, AdamW) under DDP and
  under FSDP2 (each block and the model sharded): milliseconds per step with
  the model on tpu and on CPU, and their ratio;
- causal attention over a long sequence (`--cp-seq` tokens, 8 heads of 64,
  forward and backward) on tpu, each rank attending over the whole sequence
  against context parallelism (each rank a block of it, ring attention):
  milliseconds per call and the device memory a call adds on each rank at
  its peak. (CPU has no row:
  PyTorch's context parallelism covers its CUDA attention kernels and tpu's,
  not CPU's.)

Each figure is the median over the timed calls, after warm-up calls.
BENCHMARKS.md records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [1 << 10, 64 << 10, 1 << 20, 16 << 20]  # bytes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args) -> None:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.world_size), PYTHONWARNINGS="ignore")
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(rank),
                               "--iters", str(args.iters), "--steps", str(args.steps),
                               "--cp-seq", str(args.cp_seq)],
                              env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                              stdout=subprocess.PIPE, text=True)
             for rank in range(args.world_size)]
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit("a rank failed")
    report(json.loads(outputs[0].strip().splitlines()[-1]), args.world_size)


def report(result: dict, world: int) -> None:
    print(f"world size {world}, one process per rank\n")
    print("| all_reduce size | tpu ms | CPU (gloo) ms | tpu / CPU time | tpu bus GB/s |")
    print("|---|---|---|---|---|")
    for size, tpu_ms, cpu_ms in result["all_reduce"]:
        bus = 2 * (world - 1) / world * size / (tpu_ms / 1e3) / 1e9
        print(f"| {size // 1024} KiB | {tpu_ms:.3f} | {cpu_ms:.3f} | {tpu_ms / cpu_ms:.2f}x | {bus:.3f} |")
    print("\n| minGPT step, AdamW, batch 16 per rank | tpu ms | CPU (gloo) ms | tpu / CPU time |")
    print("|---|---|---|---|")
    for strategy, (tpu_ms, cpu_ms) in result["steps"].items():
        print(f"| {strategy} | {tpu_ms:.2f} | {cpu_ms:.2f} | {tpu_ms / cpu_ms:.2f}x |")
    full_ms = result["attention"]["whole sequence"][0]
    print(f"\n| causal attention, {result['attention_seq']} tokens, forward + backward "
          "| tpu ms | vs whole | MiB a call adds per rank |")
    print("|---|---|---|---|")
    for name, (ms, mib) in result["attention"].items():
        print(f"| {name} | {ms:.2f} | {full_ms / ms:.2f}x | {mib:.1f} |")


def median_ms(fn, iters: int, warmup: int = 3) -> float:
    import torch.distributed as dist

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        dist.barrier()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def rank_main(args) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    import torch_tpu  # noqa: F401

    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import mingpt

    torch.set_num_threads(1)
    dist.init_process_group("tpu")
    rank = dist.get_rank()
    torch.tpu.set_device(rank % torch.tpu.device_count())

    all_reduce = []
    for size in SIZES:
        times = {}
        for device in ("tpu", "cpu"):
            t = torch.ones(size // 4, device=device)

            def call(t=t, device=device):
                dist.all_reduce(t)
                if device == "tpu":
                    torch.tpu.synchronize()

            times[device] = median_ms(call, args.iters)
        all_reduce.append((size, times["tpu"], times["cpu"]))

    steps = {}
    cfg = mingpt.GPTConfig(vocab_size=mingpt.corpus()[1])
    for strategy in ("DDP", "FSDP2"):
        times = {}
        for device in ("tpu", "cpu"):
            torch.manual_seed(0)
            model = mingpt.GPT(cfg).to(device)
            if strategy == "DDP":
                model = DDP(model)
            else:
                mesh = init_device_mesh(device, (dist.get_world_size(),))
                for block in model.blocks:
                    fully_shard(block, mesh=mesh)
                fully_shard(model, mesh=mesh)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
            next_windows = mingpt.windows(cfg, batch=16, seed=1 + rank)

            def train_step(model=model, optimizer=optimizer, next_windows=next_windows,
                           device=device):
                chunk = next_windows().to(device)
                _, loss = model(chunk[:, :-1], chunk[:, 1:])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss.item()

            times[device] = median_ms(train_step, args.steps)
        steps[strategy] = [times["tpu"], times["cpu"]]
    attention = attention_rows(args, torch, dist)
    if rank == 0:
        print(json.dumps({"all_reduce": all_reduce, "steps": steps, "attention": attention,
                          "attention_seq": args.cp_seq}))
    dist.destroy_process_group()


def attention_rows(args, torch, dist) -> dict:
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 8, args.cp_seq, 64, generator=g).to("tpu") for _ in range(3))
    scale = torch.ones(64, device="tpu", requires_grad=True)

    def attend():
        out = F.scaled_dot_product_attention(q * scale, k * scale, v * scale, is_causal=True)
        out.sum().backward()
        scale.grad = None
        torch.tpu.synchronize()

    def measure():
        # Memory: what a call adds to what is allocated before it (the
        # buffers' storages keep their whole-sequence size after
        # context_parallel resizes them, as resize_ never shrinks one).
        ms = median_ms(attend, args.iters)
        torch.tpu.reset_peak_memory_stats()
        before = torch.tpu.memory_allocated()
        attend()
        return [ms, (torch.tpu.max_memory_allocated() - before) / 2**20]

    rows = {"whole sequence": measure()}
    mesh = init_device_mesh("tpu", (dist.get_world_size(),))
    with context_parallel(mesh, buffers=[q, k, v], buffer_seq_dims=[2, 2, 2], no_restore_buffers={q, k, v}):
        rows["context parallel (ring)"] = measure()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--cp-seq", type=int, default=4096, help="tokens of the attention rows")
    parser.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is None:
        launch(args)
    else:
        rank_main(args)


if __name__ == "__main__":
    main()
