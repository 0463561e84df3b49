"""minGPT on several processes over the c10d backend "tpu": DDP or FSDP2,
each rank training on its share of every batch, or context parallelism,
each rank on its block of every sequence.

    torchrun --nproc-per-node 2 examples/distributed.py [--strategy ddp|fsdp2|cp]
    python examples/distributed.py --nproc 2 [--strategy fsdp2] [--steps 20] [--compare-cpu]

Without torchrun, `--nproc N` starts the N ranks itself. Rank 0 prints the
losses (averaged over ranks); `--compare-cpu` also trains the same model on
the CPU in one process on the whole batches and prints the largest
difference of the losses, which must be rounding only: the ranks' mean
gradient is the whole batch's.

`cp` shards each batch's sequences (inputs, targets and the tokens'
positions) with `context_parallel`, which also runs attention as a ring
over the ranks; DDP averages the gradients, the blocks being equal.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist

import torch_tpu  # noqa: F401  (registers the device and the "tpu" backend)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mingpt  # noqa: E402

BATCH = 16  # per rank


def train(device: str, strategy: str | None, steps: int, world: int, rank: int) -> list[float]:
    """Losses of `steps` AdamW steps; with a strategy, this rank's share of
    each batch of BATCH * world windows, and the loss averaged over ranks."""
    cfg = mingpt.GPTConfig(vocab_size=mingpt.corpus()[1])
    torch.manual_seed(0)
    model = mingpt.GPT(cfg).to(device)
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model)
    elif strategy == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("tpu", (world,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
    elif strategy == "cp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.nn.parallel import DistributedDataParallel as DDP

        mesh = init_device_mesh("tpu", (world,))
        model = DDP(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    next_windows = mingpt.windows(cfg, BATCH * world, seed=1)
    losses = []
    for _ in range(steps):
        chunk = next_windows()
        if strategy in ("ddp", "fsdp2"):
            chunk = chunk.chunk(world)[rank]
        chunk = chunk.to(device)
        inputs, targets = chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()
        optimizer.zero_grad(set_to_none=True)
        if strategy == "cp":
            loss = context_parallel_backward(model, mesh, inputs, targets)
        else:
            _, loss = model(inputs, targets)
            loss.backward()
        optimizer.step()
        loss = loss.detach()
        if strategy:
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(loss)
    return [loss.item() for loss in losses]


def context_parallel_backward(model, mesh, inputs, targets):
    """This rank's loss on its block of every sequence, and its backward:
    both inside the context, whose ring attention the backward runs too.
    The tensors are resized to the block in place; the positions are
    sharded alike, so each token keeps its place."""
    from torch.distributed.tensor.experimental import context_parallel

    positions = torch.arange(inputs.shape[1], device=inputs.device).expand_as(inputs).contiguous()
    buffers = [inputs, targets, positions]
    with context_parallel(mesh, buffers=buffers, buffer_seq_dims=[1, 1, 1], no_restore_buffers=set(buffers)):
        _, loss = model(inputs, targets, positions=positions)
        loss.backward()
    return loss


def rank_main(args) -> None:
    dist.init_process_group("tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.tpu.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.tpu.device_count())
    losses = train("tpu", args.strategy, args.steps, world, rank)
    if rank == 0:
        print(f"{args.strategy} on {world} ranks, losses: "
              + " ".join(f"{loss:.4f}" for loss in losses))
        if args.compare_cpu:
            reference = train("cpu", None, args.steps, world, rank)
            gap = max(abs(a - b) for a, b in zip(losses, reference))
            print(f"CPU, one process, whole batches: max |loss difference| = {gap:.2e}")
    dist.destroy_process_group()


def spawn(args) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, os.path.abspath(__file__), "--strategy", args.strategy,
               "--steps", str(args.steps)] + (["--compare-cpu"] if args.compare_cpu else [])
    procs = [subprocess.Popen(command, env=dict(
        os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
        LOCAL_RANK=str(rank), WORLD_SIZE=str(args.nproc)))
        for rank in range(args.nproc)]
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"ranks exited with {codes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", choices=["ddp", "fsdp2", "cp"], default="ddp")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--nproc", type=int, default=None,
                        help="start this many ranks (without torchrun)")
    parser.add_argument("--compare-cpu", action="store_true")
    args = parser.parse_args()
    if args.nproc is not None and "RANK" not in os.environ:
        spawn(args)
    else:
        rank_main(args)


if __name__ == "__main__":
    main()
