"""One rank of a torch.distributed scenario on the tpu backend.

``python distributed_worker.py SCENARIO RANK WORLD_SIZE`` with MASTER_ADDR
and MASTER_PORT set; tests/test_distributed.py starts one process per rank.
Every scenario checks its results itself (against values each rank can
compute, or against the same model trained on CPU in this process) and
raises on a mismatch, so a non-zero exit is a failure.
"""

from __future__ import annotations

import copy
import functools
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

RANK = int(sys.argv[2])
WORLD = int(sys.argv[3])
# What torchrun sets (MASTER_ADDR / MASTER_PORT come from the test).
os.environ.update(RANK=str(RANK), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(RANK))


def init(backend: str | None = "tpu") -> None:
    dist.init_process_group(backend)
    torch.tpu.set_device(RANK % torch.tpu.device_count())


def check(actual: torch.Tensor, expected: torch.Tensor, what: str, atol=0.0) -> None:
    actual = actual.cpu()
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise AssertionError(
            f"{what}: got {actual.dtype} {tuple(actual.shape)}, "
            f"expected {expected.dtype} {tuple(expected.shape)}"
        )
    if atol:
        ok = torch.allclose(actual.double(), expected.double(), atol=atol, rtol=0)
    else:
        ok = torch.equal(actual, expected)
    if not ok:
        raise AssertionError(f"{what} on rank {RANK}:\n{actual}\nexpected\n{expected}")


def rank_tensor(rank: int, shape, dtype) -> torch.Tensor:
    """Rank `rank`'s input: distinct small values every rank can compute."""
    n = 1
    for s in shape:
        n *= s
    values = torch.arange(n, dtype=torch.float64).reshape(shape) % 7 + 1 + rank
    return values.to(dtype)


def reduce_all(op, shape, dtype) -> torch.Tensor:
    parts = [rank_tensor(r, shape, dtype) for r in range(WORLD)]
    if op == dist.ReduceOp.SUM:
        out = parts[0].clone()
        for p in parts[1:]:
            out = out + p
        return out
    if op == dist.ReduceOp.PRODUCT:
        out = parts[0].clone()
        for p in parts[1:]:
            out = out * p
        return out
    if op == dist.ReduceOp.MIN:
        return torch.stack(parts).amin(0)
    if op == dist.ReduceOp.MAX:
        return torch.stack(parts).amax(0)
    if op == dist.ReduceOp.AVG:
        return (torch.stack(parts).double().sum(0) / WORLD).to(dtype)
    raise ValueError(op)


# ---------------------------------------------------------------- scenarios


def scenario_collectives() -> None:
    init()
    dev = "tpu"
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
           dist.ReduceOp.MAX, dist.ReduceOp.AVG]
    for dtype in (torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int32):
        for op in ops:
            if op == dist.ReduceOp.AVG and not dtype.is_floating_point:
                continue
            t = rank_tensor(RANK, (3, 5), dtype).to(dev)
            dist.all_reduce(t, op=op)
            check(t, reduce_all(op, (3, 5), dtype), f"all_reduce {op} {dtype}",
                  atol=1e-2 if dtype == torch.bfloat16 else 0.0)

    # Integer AVG truncates, as NCCL's does.
    t = torch.tensor([RANK * 3 + 1], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    check(t, torch.tensor([sum(r * 3 + 1 for r in range(WORLD)) // WORLD]), "AVG int64")

    # Bitwise ops on integers, MAX on bool.
    t = torch.tensor([0b1100 | RANK, 0b1010], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.BOR)
    ranks_or = 0
    for r in range(WORLD):
        ranks_or |= r
    check(t, torch.tensor([0b1100 | ranks_or, 0b1010]), "BOR")
    t = torch.tensor([0b1100 | RANK, 0b1010], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.BAND)
    check(t, torch.tensor([0b1100, 0b1010]), "BAND")
    t = torch.tensor([RANK == 0, False, True], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check(t, torch.tensor([True, False, True]), "MAX bool")

    # Integer types gloo cannot reduce travel as int64; uint64 keeps its
    # order (values above 2**63) and wraps its sums modulo 2**64.
    for dtype in (torch.int16, torch.uint16, torch.uint32):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.BXOR):
            t = (rank_tensor(RANK, (3,), torch.int64) * 1000).to(dtype).to(dev)
            dist.all_reduce(t, op=op)
            parts = [(rank_tensor(r, (3,), torch.int64) * 1000).to(dtype).to(torch.int64) for r in range(WORLD)]
            want = {dist.ReduceOp.SUM: lambda: sum(parts),
                    dist.ReduceOp.MIN: lambda: torch.stack(parts).amin(0),
                    dist.ReduceOp.MAX: lambda: torch.stack(parts).amax(0),
                    dist.ReduceOp.BXOR: lambda: functools.reduce(torch.bitwise_xor, parts)}[op]()
            check(t, want.to(dtype), f"all_reduce {op} {dtype}")
    # AVG divides in the widened type: an int16 sum that overflows int16
    # still averages right.
    for dtype in (torch.int16, torch.uint16, torch.uint32):
        t = torch.tensor([30000 if dtype == torch.int16 else 60000, 7 + RANK], dtype=dtype, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        want = torch.tensor([30000 if dtype == torch.int16 else 60000,
                             sum(7 + r for r in range(WORLD)) // WORLD], dtype=dtype)
        check(t, want, f"AVG {dtype}")
    big = 2**63 + 5
    t = torch.tensor([big if RANK == 0 else 7, 2**64 - 1], dtype=torch.uint64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check(t, torch.tensor([big, 2**64 - 1], dtype=torch.uint64), "MAX uint64")
    t = torch.tensor([big if RANK == 0 else 7, 2**64 - 1], dtype=torch.uint64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    check(t, torch.tensor([7 if WORLD > 1 else big, 2**64 - 1], dtype=torch.uint64), "MIN uint64")

    # all_gather of different sizes per rank (NCCL allows it; gloo not).
    outs = [torch.empty(2 + r, 3, device=dev) for r in range(WORLD)]
    dist.all_gather(outs, torch.full((2 + RANK, 3), float(RANK), device=dev))
    for r, o in enumerate(outs):
        check(o, torch.full((2 + r, 3), float(r)), f"uneven all_gather from rank {r}")

    # Object collectives pickle tpu tensors (through the legacy storage
    # writer, which wraps the device pointer).
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, {"rank": RANK, "t": torch.full((2,), float(RANK), device=dev)})
    for r, obj in enumerate(gathered):
        assert obj["rank"] == r and obj["t"].device.type == "tpu", obj
        check(obj["t"], torch.full((2,), float(r)), "all_gather_object of a tpu tensor")

    # Collectives write below autograd, as NCCL's kernels do: a parameter
    # can be broadcast or reduced in place, and a tensor another op saved
    # for backward keeps its grad_fn and version.
    p = torch.ones(2, device=dev, requires_grad=True)
    dist.broadcast(p, src=0)
    dist.all_reduce(p)
    check(p.detach(), torch.full((2,), float(WORLD)), "all_reduce of a leaf that requires grad")
    x = torch.arange(3.0, device=dev, requires_grad=True)
    y = x * 2
    z = y.sin()
    dist.all_reduce(y)
    assert type(y.grad_fn).__name__ == "MulBackward0", y.grad_fn
    z.sum().backward()  # sin's backward reads y as reduced, as on CPU / gloo
    check(x.grad, (torch.arange(3.0) * 2 * WORLD).cos() * 2, "backward through a tensor reduced in place",
          atol=1e-5)

    # PREMUL_SUM: scaled by the factor, then summed.
    t = rank_tensor(RANK, (4,), torch.float32).to(dev)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    check(t, reduce_all(dist.ReduceOp.SUM, (4,), torch.float32) * 0.5, "PREMUL_SUM")

    # Views write through to their base; 0-dim and empty tensors; complex.
    base = torch.zeros(4, 6, device=dev)
    view = base[1:3, ::2]
    view.copy_(rank_tensor(RANK, (2, 3), torch.float32).to(dev))
    dist.all_reduce(view)
    expected = torch.zeros(4, 6)
    expected[1:3, ::2] = reduce_all(dist.ReduceOp.SUM, (2, 3), torch.float32)
    check(base, expected, "all_reduce of a strided view")
    t = torch.tensor(float(RANK + 1), device=dev)
    dist.all_reduce(t)
    check(t, torch.tensor(float(sum(range(1, WORLD + 1)))), "all_reduce 0-dim")
    t = torch.empty(0, 3, device=dev)
    dist.all_reduce(t)
    check(t, torch.empty(0, 3), "all_reduce empty")
    t = torch.tensor([1 + 2j * RANK, 3j], device=dev)
    dist.all_reduce(t)
    check(t, torch.tensor([WORLD + 2j * sum(range(WORLD)), 3j * WORLD]), "all_reduce complex")

    # Asynchronous form: the Work and its future.
    t = rank_tensor(RANK, (2, 2), torch.float32).to(dev)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    check(work.get_future().wait()[0], reduce_all(dist.ReduceOp.SUM, (2, 2), torch.float32),
          "all_reduce future")
    assert work.is_completed()

    # broadcast / reduce.
    t = rank_tensor(RANK, (3,), torch.float32).to(dev)
    dist.broadcast(t, src=WORLD - 1)
    check(t, rank_tensor(WORLD - 1, (3,), torch.float32), "broadcast")
    t = rank_tensor(RANK, (3,), torch.int64).to(dev)
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    expected = reduce_all(dist.ReduceOp.MAX, (3,), torch.int64) if RANK == 0 else \
        rank_tensor(RANK, (3,), torch.int64)
    check(t, expected, "reduce (non-roots keep their input)")

    # all_gather (list and tensor), gather, scatter.
    outs = [torch.empty(2, 3, device=dev) for _ in range(WORLD)]
    dist.all_gather(outs, rank_tensor(RANK, (2, 3), torch.float32).to(dev))
    for r in range(WORLD):
        check(outs[r], rank_tensor(r, (2, 3), torch.float32), f"all_gather [{r}]")
    out = torch.empty(WORLD * 2, 3, dtype=torch.bfloat16, device=dev)
    dist.all_gather_into_tensor(out, rank_tensor(RANK, (2, 3), torch.bfloat16).to(dev))
    check(out, torch.cat([rank_tensor(r, (2, 3), torch.bfloat16) for r in range(WORLD)]),
          "all_gather_into_tensor")
    out = torch.empty(WORLD, 2, 3, device=dev)
    dist.all_gather_into_tensor(out, rank_tensor(RANK, (2, 3), torch.float32).to(dev))
    check(out, torch.stack([rank_tensor(r, (2, 3), torch.float32) for r in range(WORLD)]),
          "all_gather_into_tensor, stacked output")
    gathered = [torch.empty(3, device=dev) for _ in range(WORLD)] if RANK == 0 else None
    dist.gather(rank_tensor(RANK, (3,), torch.float32).to(dev), gathered, dst=0)
    if RANK == 0:
        for r in range(WORLD):
            check(gathered[r], rank_tensor(r, (3,), torch.float32), f"gather [{r}]")
    received = torch.empty(3, device=dev)
    pieces = [rank_tensor(r + 10, (3,), torch.float32).to(dev) for r in range(WORLD)]
    dist.scatter(received, pieces if RANK == 0 else None, src=0)
    check(received, rank_tensor(RANK + 10, (3,), torch.float32), "scatter")

    # reduce_scatter (tensor and list forms).
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX):
        full = rank_tensor(RANK, (WORLD * 2, 3), torch.float32).to(dev)
        out = torch.empty(2, 3, device=dev)
        dist.reduce_scatter_tensor(out, full, op=op)
        check(out, reduce_all(op, (WORLD * 2, 3), torch.float32)[RANK * 2:(RANK + 1) * 2],
              f"reduce_scatter_tensor {op}")
        check(full, rank_tensor(RANK, (WORLD * 2, 3), torch.float32),
              "reduce_scatter_tensor leaves its input")
    out = torch.empty(4, device=dev)
    dist.reduce_scatter(out, list(rank_tensor(RANK, (WORLD, 4), torch.float32).to(dev).unbind(0)))
    check(out, reduce_all(dist.ReduceOp.SUM, (WORLD, 4), torch.float32)[RANK], "reduce_scatter")

    # all_to_all: equal and uneven splits, and the list form.
    inp = (torch.arange(WORLD * 2, dtype=torch.float32) + 100 * RANK).to(dev)
    out = torch.empty(WORLD * 2, device=dev)
    dist.all_to_all_single(out, inp)
    check(out, torch.cat([torch.arange(RANK * 2, RANK * 2 + 2, dtype=torch.float32) + 100 * r
                          for r in range(WORLD)]), "all_to_all_single")
    # Rank r sends r + 1 rows to every rank.
    in_splits = [RANK + 1] * WORLD
    out_splits = [r + 1 for r in range(WORLD)]
    inp = torch.full((sum(in_splits), 2), float(RANK), device=dev)
    out = torch.empty(sum(out_splits), 2, device=dev)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    check(out, torch.cat([torch.full((r + 1, 2), float(r)) for r in range(WORLD)]),
          "all_to_all_single, uneven splits")
    ins = [torch.full((r + 1,), float(RANK * 10 + r), device=dev) for r in range(WORLD)]
    outs = [torch.empty(RANK + 1, device=dev) for _ in range(WORLD)]
    dist.all_to_all(outs, ins)
    for r in range(WORLD):
        check(outs[r], torch.full((RANK + 1,), float(r * 10 + RANK)), f"all_to_all [{r}]")

    # Point to point: blocking, non-blocking and batched.
    peer = (RANK + 1) % WORLD
    source = (RANK - 1) % WORLD
    if RANK % 2 == 0:
        dist.send(rank_tensor(RANK, (4,), torch.float32).to(dev), dst=peer)
        got = torch.empty(4, device=dev)
        dist.recv(got, src=source)
    else:
        got = torch.empty(4, device=dev)
        dist.recv(got, src=source)
        dist.send(rank_tensor(RANK, (4,), torch.float32).to(dev), dst=peer)
    check(got, rank_tensor(source, (4,), torch.float32), "send / recv")
    got = torch.empty(2, 2, dtype=torch.int64, device=dev)
    requests = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, rank_tensor(RANK, (2, 2), torch.int64).to(dev), peer),
        dist.P2POp(dist.irecv, got, source),
    ])
    for request in requests:
        request.wait()
    check(got, rank_tensor(source, (2, 2), torch.int64), "batch_isend_irecv")

    # Objects travel through the group's default device.
    objects = [None] * WORLD
    dist.all_gather_object(objects, {"rank": RANK, "name": f"r{RANK}"})
    assert objects == [{"rank": r, "name": f"r{r}"} for r in range(WORLD)], objects
    items = [f"from {RANK}", RANK]
    dist.broadcast_object_list(items, src=0)
    assert items == ["from 0", 0], items

    # CPU tensors use the same group.
    t = rank_tensor(RANK, (3,), torch.float32)
    dist.all_reduce(t)
    check(t, reduce_all(dist.ReduceOp.SUM, (3,), torch.float32), "all_reduce of a CPU tensor")

    # 8-bit floats move as their bits (FSDP2's float8 all-gather); they
    # are not reduced, as with NCCL.
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        mine = (rank_tensor(RANK, (2, 4), torch.float32) / 3).to(dtype)
        gathered = torch.empty(WORLD * 2, 4, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(gathered, mine.to(dev))
        want = torch.cat([(rank_tensor(r, (2, 4), torch.float32) / 3).to(dtype) for r in range(WORLD)])
        check(gathered.cpu().view(torch.uint8), want.view(torch.uint8), f"all_gather_into_tensor {dtype}")
        parts = [torch.empty(2, 4, dtype=dtype, device=dev) for _ in range(WORLD)]
        dist.all_gather(parts, mine.to(dev))
        check(torch.cat(parts).cpu().view(torch.uint8), want.view(torch.uint8), f"all_gather {dtype}")
        t = mine.to(dev)
        dist.broadcast(t, src=1)
        check(t.cpu().view(torch.uint8), want[2:4].view(torch.uint8), f"broadcast {dtype}")
        out = torch.empty(WORLD * 2, 4, dtype=dtype, device=dev)
        dist.all_to_all_single(out, torch.cat([mine] * WORLD).to(dev))
        check(out.cpu().view(torch.uint8), want.view(torch.uint8), f"all_to_all_single {dtype}")
        try:
            dist.all_reduce(mine.to(dev))
        except TypeError as e:
            assert "cannot be reduced" in str(e), e
        else:
            raise AssertionError(f"all_reduce of {dtype} did not raise")

    # Moves of dtypes gloo has no type for travel as their bytes, as NCCL
    # moves them: int16, the wide unsigned types, complex (gather too).
    for dtype in (torch.int16, torch.uint16, torch.uint32, torch.uint64, torch.complex64, torch.complex128):
        def value(r, shape=(2, 3)):
            base = rank_tensor(r, shape, torch.int64) * 7 + 2**40 * (dtype == torch.uint64)
            return base.to(dtype) if not dtype.is_complex else torch.complex(base.double(), -base.double()).to(dtype)
        want = torch.cat([value(r) for r in range(WORLD)])
        t = value(RANK).to(dev)
        dist.broadcast(t, src=1)
        check(t, value(1), f"broadcast {dtype}")
        gathered = torch.empty(WORLD * 2, 3, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(gathered, value(RANK).to(dev))
        check(gathered, want, f"all_gather_into_tensor {dtype}")
        parts = [torch.empty(2, 3, dtype=dtype, device=dev) for _ in range(WORLD)]
        dist.all_gather(parts, value(RANK).to(dev))
        check(torch.cat(parts), want, f"all_gather {dtype}")
        outs = [torch.empty(2, 3, dtype=dtype, device=dev) for _ in range(WORLD)] if RANK == 0 else None
        dist.gather(value(RANK).to(dev), outs, dst=0)
        if RANK == 0:
            check(torch.cat(outs), want, f"gather {dtype}")
        mine = torch.empty(2, 3, dtype=dtype, device=dev)
        dist.scatter(mine, [value(r).to(dev) for r in range(WORLD)] if RANK == 0 else None, src=0)
        check(mine, value(RANK), f"scatter {dtype}")
        # uneven splits along dim 0 of a 1-D tensor
        source = value(RANK, (WORLD + 1,)).to(dev)
        in_splits = [2] + [1] * (WORLD - 1)
        out_splits = [2 if RANK == 0 else 1] * WORLD
        out = torch.empty(sum(out_splits), dtype=dtype, device=dev)
        dist.all_to_all_single(out, source, out_splits, in_splits)
        expected = torch.cat([value(r, (WORLD + 1,))[sum(([2] + [1] * (WORLD - 1))[:RANK]):][:out_splits[r]]
                              for r in range(WORLD)])
        check(out, expected, f"all_to_all_single {dtype}")

    # Coalesced forms, of tpu and of CPU tensors (the CPU ones run on gloo
    # asynchronously: the call must still return their results).
    for dev_ in ("tpu", "cpu"):
        ts = [rank_tensor(RANK, (2, 3), torch.float32).to(dev_),
              rank_tensor(RANK, (5,), torch.float32).to(dev_)]
        dist.all_reduce_coalesced(ts)
        check(ts[0], reduce_all(dist.ReduceOp.SUM, (2, 3), torch.float32),
              f"all_reduce_coalesced [0] on {dev_}")
        check(ts[1], reduce_all(dist.ReduceOp.SUM, (5,), torch.float32),
              f"all_reduce_coalesced [1] on {dev_}")
        outs = [[torch.empty(4, device=dev_) for _ in range(WORLD)]]
        dist.all_gather_coalesced(outs, [rank_tensor(RANK, (4,), torch.float32).to(dev_)])
        for r in range(WORLD):
            check(outs[0][r], rank_tensor(r, (4,), torch.float32),
                  f"all_gather_coalesced [{r}] on {dev_}")
    dist.barrier()
    dist.destroy_process_group()


def scenario_errors() -> None:
    init()
    out = torch.empty(5, device="tpu")
    try:
        dist.all_gather_into_tensor(out, torch.ones(2, device="tpu"))
    except ValueError as e:
        assert "all_gather_into_tensor" in str(e) and "4 elements" in str(e), e
    else:
        raise AssertionError("a wrongly sized all_gather output was accepted")
    try:
        dist.reduce_scatter_tensor(torch.empty(2, device="tpu"),
                                   torch.ones(4, dtype=torch.float64, device="tpu"))
    except TypeError as e:
        assert "reduce_scatter_tensor" in str(e) and "dtype" in str(e), e
    else:
        raise AssertionError("mixed dtypes in reduce_scatter_tensor were accepted")
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.bool, device="tpu"), op=dist.ReduceOp.AVG)
    except TypeError as e:
        assert "AVG" in str(e) and "bool" in str(e).lower(), e
    else:
        raise AssertionError("AVG of bool tensors was accepted")
    try:
        dist.all_reduce(torch.tensor([3, 4], device="tpu"), op=dist._make_nccl_premul_sum(2.0))
    except TypeError as e:
        assert "PREMUL_SUM" in str(e) and "Long" in str(e), e
    else:
        raise AssertionError("PREMUL_SUM of integers was accepted")
    # reduce reaches the backend with complex tensors (all_reduce refuses
    # them in Python): an unordered type has no MAX; SUM works.
    z = torch.ones(2, dtype=torch.complex64, device="tpu")
    try:
        dist.reduce(z, dst=0, op=dist.ReduceOp.MAX)
    except ValueError as e:
        assert "tpu backend: reduce" in str(e) and "ReduceOp.MAX" in str(e) and "complex" in str(e), e
    else:
        raise AssertionError("MAX of complex tensors was accepted")
    dist.reduce(z, dst=0)
    if RANK == 0:
        check(z, torch.full((2,), complex(WORLD)), "reduce of complex tensors")
    # Splits on one side only: each side is checked on its own.
    out = torch.empty(2 + 2 * RANK, device="tpu")
    dist.all_to_all_single(out, torch.arange(3.0, device="tpu") + 10 * RANK, input_split_sizes=[1, 2])
    want = torch.cat([torch.arange(3.0)[:1] + 10 * r if RANK == 0 else torch.arange(3.0)[1:] + 10 * r
                      for r in range(WORLD)])
    check(out, want, "all_to_all_single with input splits only")
    for out, inp in ((torch.empty(5, device="tpu"), torch.ones(5, device="tpu")),
                     (torch.empty(3, device="tpu"), torch.ones(4, device="tpu"))):
        try:
            dist.all_to_all_single(out, inp)
        except ValueError as e:
            assert "all_to_all_single" in str(e), e
        else:
            raise AssertionError(f"all_to_all_single of {inp.numel()} into {out.numel()} elements was accepted")
    # Argument errors name the tpu backend, never the host transport under it.
    x = torch.ones(4, device="tpu")
    for what, call in (
        ("allgather", lambda: dist.all_gather([torch.empty(3, device="tpu") for _ in range(WORLD)], x)),
        ("broadcast", lambda: dist.broadcast(x, src=WORLD + 1)),
        ("all_to_all", lambda: dist.all_to_all([torch.empty(5, device="tpu")] * WORLD, [x] * WORLD)),
        ("all_to_all_single", lambda: dist.all_to_all_single(
            torch.empty(8, device="tpu"), torch.ones(8, device="tpu"), input_split_sizes=[8] + [0] * WORLD)),
    ):
        try:
            call()
        except (RuntimeError, ValueError) as e:
            assert f"tpu backend: {what}" in str(e) and "Gloo" not in str(e), e
        else:
            raise AssertionError(f"a bad {what} was accepted")
    # The group still works after refused calls.
    t = torch.ones(2, device="tpu")
    dist.all_reduce(t)
    check(t, torch.full((2,), float(WORLD)), "all_reduce after errors")
    dist.destroy_process_group()


def scenario_mismatch_detected() -> None:
    """Run with TORCH_DISTRIBUTED_DEBUG=DETAIL: c10d's wrapper compares the
    collectives' shapes across ranks before the tpu backend runs them. The
    group is made without a backend name: the wrapped tpu backend must also
    serve CPU tensors and the group's default (barrier)."""
    init(backend=None)
    dist.barrier()
    t = torch.ones(2)
    dist.all_reduce(t)
    check(t, torch.full((2,), float(WORLD)), "CPU all_reduce under DETAIL")
    try:
        dist.all_reduce(torch.ones(3 + RANK, device="tpu"))
    except RuntimeError as e:
        assert "mismatch between collectives" in str(e), e
    else:
        raise AssertionError("all_reduce of differently sized tensors was accepted")
    dist.destroy_process_group()


def scenario_fused_mode() -> None:
    import torch_tpu

    init()
    with torch_tpu.eager_mode("fused"):
        x = torch.arange(6, dtype=torch.float32, device="tpu") * (RANK + 1)
        y = x.sin() + 1  # pending in the fused graph until the collective
        dist.all_reduce(y)
        z = y * 2  # recorded after the collective's result
        expected = sum((torch.arange(6, dtype=torch.float32) * (r + 1)).sin() + 1
                       for r in range(WORLD))
        check(z, expected * 2, "all_reduce in fused eager", atol=1e-5)
    dist.destroy_process_group()


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4))


def batches(steps: int):
    for step in range(steps):
        g = torch.Generator().manual_seed(step)
        yield torch.randn(4 * WORLD, 8, generator=g), torch.randn(4 * WORLD, 4, generator=g)


def cpu_reference(model: nn.Module, optimizer_type, steps: int, **opt_args) -> nn.Module:
    """The same model trained on CPU on the whole batch: each rank's loss is
    a mean over its quarter, so the mean over ranks equals the full mean."""
    reference = copy.deepcopy(model)
    optimizer = optimizer_type(reference.parameters(), **opt_args)
    for x, y in batches(steps):
        nn.functional.mse_loss(reference(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return reference


def train_on_shards(model, optimizer, steps: int) -> None:
    """`steps` steps, each on this rank's share of the batch."""
    for x, y in batches(steps):
        x, y = x.chunk(WORLD)[RANK].to("tpu"), y.chunk(WORLD)[RANK].to("tpu")
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()


def scenario_ddp() -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    init(backend=None)  # the no-argument form, as torchrun scripts use it
    model = mlp()
    reference = cpu_reference(model, torch.optim.SGD, 3, lr=0.1, momentum=0.9)
    # Tiny buckets: several all-reduces per backward.
    ddp = DDP(copy.deepcopy(model).to("tpu"), bucket_cap_mb=0.0005)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    train_on_shards(ddp, optimizer, 3)
    for (name, p), q in zip(ddp.module.named_parameters(), reference.parameters()):
        check(p, q.detach(), f"DDP parameter {name}", atol=2e-5)

    # no_sync accumulates locally; the next synced backward averages the
    # ranks' sums: mean over r of (grad on A_r + grad on B_r).
    ddp.zero_grad()
    x, y = next(batches(1))
    quarters = list(zip(x.chunk(2 * WORLD), y.chunk(2 * WORLD)))
    (xa, ya), (xb, yb) = quarters[2 * RANK], quarters[2 * RANK + 1]
    with ddp.no_sync():
        nn.functional.mse_loss(ddp(xa.to("tpu")), ya.to("tpu")).backward()
    nn.functional.mse_loss(ddp(xb.to("tpu")), yb.to("tpu")).backward()
    expected = [torch.zeros_like(p, device="cpu") for p in ddp.parameters()]
    for r in range(WORLD):
        plain = copy.deepcopy(ddp.module).cpu()
        plain.zero_grad(set_to_none=True)
        for xq, yq in quarters[2 * r:2 * r + 2]:
            nn.functional.mse_loss(plain(xq), yq).backward()
        for e, p in zip(expected, plain.parameters()):
            e += p.grad / WORLD
    for p, e in zip(ddp.parameters(), expected):
        check(p.grad, e, "DDP gradient after no_sync", atol=2e-5)

    # A communication hook: gradients all-reduced in float16.
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    hooked = DDP(copy.deepcopy(model).to("tpu"))
    hooked.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x, y = next(batches(1))
    nn.functional.mse_loss(hooked(x.chunk(WORLD)[RANK].to("tpu")),
                           y.chunk(WORLD)[RANK].to("tpu")).backward()
    plain = copy.deepcopy(model)
    nn.functional.mse_loss(plain(x), y).backward()
    for p, q in zip(hooked.parameters(), plain.parameters()):
        check(p.grad, q.grad, "DDP gradient through fp16_compress_hook", atol=2e-3)

    # Module buffers are broadcast from rank 0 before each forward: after a
    # forward on different data and one on equal data, all ranks agree.
    bn = DDP(nn.BatchNorm1d(3).to("tpu"))
    bn(torch.randn(4, 3, generator=torch.Generator().manual_seed(RANK)).to("tpu"))
    bn(torch.randn(4, 3, generator=torch.Generator().manual_seed(99)).to("tpu"))
    means = [torch.empty(3, device="tpu") for _ in range(WORLD)]
    dist.all_gather(means, bn.module.running_mean)
    for r in range(1, WORLD):
        check(means[r], means[0].cpu(), "DDP broadcast buffers")
    dist.destroy_process_group()


class SparseTables(nn.Module):
    """A DLRM-style model: an embedding bag with sparse gradients and a head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.table = nn.EmbeddingBag(30, 8, mode="sum", sparse=True)
        self.head = nn.Linear(8, 1)

    def forward(self, ids, offsets):
        return self.head(self.table(ids, offsets)).squeeze(1)


def sparse_batches(steps: int):
    """Per step, 4 bags of 3 ids per rank, and their targets."""
    for step in range(steps):
        g = torch.Generator().manual_seed(step)
        yield torch.randint(0, 30, (4 * WORLD, 3), generator=g), torch.randn(4 * WORLD, generator=g)


def scenario_sparse_ddp() -> None:
    """Sparse COO tensors across ranks: all_reduce (SUM, AVG) of sparse tpu
    tensors, and DDP over a model whose embedding gradients are sparse,
    against the same model trained on CPU on the whole batch."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    init()
    # Rank r holds entries at rows r and 2 of a [4, 3] matrix.
    def sparse_of(rank):
        indices = torch.tensor([[rank, 2], [0, 1]])
        return torch.sparse_coo_tensor(indices, torch.tensor([1.0 + rank, 10.0 * (rank + 1)]), (4, 3))

    expected = sum(sparse_of(r).to_dense() for r in range(WORLD))
    for op, scale in ((dist.ReduceOp.SUM, 1), (dist.ReduceOp.AVG, WORLD)):
        t = sparse_of(RANK).to("tpu")
        dist.all_reduce(t, op=op)
        if not t.is_sparse or t.device.type != "tpu":
            raise AssertionError(f"all_reduce of a sparse tensor gave {t.layout} on {t.device}")
        check(t.to_dense(), expected / scale, f"sparse all_reduce {op}", atol=1e-6)

    model = SparseTables()
    reference = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    ddp = DDP(copy.deepcopy(model).to("tpu"))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for ids, y in sparse_batches(3):
        offsets = torch.arange(4 * WORLD) * 3
        nn.functional.mse_loss(reference(ids.flatten(), offsets), y).backward()
        ref_opt.step()
        ref_opt.zero_grad()
        mine = ids.chunk(WORLD)[RANK]
        out = ddp(mine.flatten().to("tpu"), (torch.arange(4) * 3).to("tpu"))
        nn.functional.mse_loss(out, y.chunk(WORLD)[RANK].to("tpu")).backward()
        if not ddp.module.table.weight.grad.is_sparse:
            raise AssertionError("DDP's embedding gradient is not sparse")
        optimizer.step()
        optimizer.zero_grad()
    for (name, p), q in zip(ddp.module.named_parameters(), reference.parameters()):
        check(p, q.detach(), f"DDP (sparse gradients) parameter {name}", atol=2e-6)
    dist.destroy_process_group()


def scenario_sync_batch_norm() -> None:
    """nn.SyncBatchNorm under DDP, each rank holding a share of the batch,
    against BatchNorm on CPU over the whole batch: outputs, input and
    parameter gradients, running statistics (two training steps), and the
    f16 / bf16 statistics kept in f32."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    init()
    torch.manual_seed(0)
    cpu = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4, affine=False))
    sync = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(cpu)).to("tpu"))
    n = 3 * WORLD + 1  # rank shares of different sizes: 4 and 3 on two ranks
    shares = [n // WORLD + (1 if r < n % WORLD else 0) for r in range(WORLD)]
    for step in range(2):
        x = torch.randn(n, 3, 6, 5, generator=torch.Generator().manual_seed(step))
        w = torch.randn(n, 4, 4, 3, generator=torch.Generator().manual_seed(10 + step))
        xc = x.clone().requires_grad_()
        cpu.zero_grad()
        want_out = cpu(xc)
        (want_out * w).sum().backward()
        mine = x.split(shares)[RANK].to("tpu").requires_grad_()
        sync.zero_grad()
        out = sync(mine)
        (out * w.split(shares)[RANK].to("tpu")).sum().backward()
        check(out.detach(), want_out.detach().split(shares)[RANK], f"SyncBatchNorm output, step {step}", atol=1e-4)
        check(mine.grad, xc.grad.split(shares)[RANK], f"SyncBatchNorm input gradient, step {step}", atol=1e-4)
        # DDP averages the ranks' gradients; their sum is the whole batch's.
        for (name, p), q in zip(sync.module.named_parameters(), cpu.parameters()):
            check(p.grad, q.grad / WORLD, f"SyncBatchNorm {name} gradient, step {step}", atol=1e-3)
    for (name, b), c in zip(sync.module.named_buffers(), cpu.buffers()):
        check(b, c, f"SyncBatchNorm buffer {name}", atol=1e-5)
    # Half-precision inputs: statistics in f32, the output in the input's type.
    bn = nn.SyncBatchNorm(4).to("tpu").to(torch.bfloat16)
    x = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(RANK))
    got = bn(x.to("tpu", torch.bfloat16))
    assert got.dtype == torch.bfloat16
    full = torch.cat([torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(r)) for r in range(WORLD)])
    want = nn.functional.batch_norm(full, None, None, training=True).split(2)[RANK]
    check(got.float(), want, "SyncBatchNorm bf16 output", atol=5e-2)
    dist.destroy_process_group()


def scenario_fsdp2() -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    mesh = init_device_mesh("tpu", (WORLD,))  # initializes the default group
    torch.tpu.set_device(RANK % torch.tpu.device_count())
    model = mlp()
    reference = cpu_reference(model, torch.optim.AdamW, 3, lr=0.01)
    sharded = copy.deepcopy(model).to("tpu")
    for layer in sharded:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    for p in sharded.parameters():
        assert isinstance(p, DTensor) and p.device.type == "tpu", type(p)
        assert p.to_local().shape[0] == -(-p.shape[0] // WORLD), p.to_local().shape
    optimizer = torch.optim.AdamW(sharded.parameters(), lr=0.01)
    train_on_shards(sharded, optimizer, 3)
    for (name, p), q in zip(sharded.named_parameters(), reference.parameters()):
        check(p.full_tensor(), q.detach(), f"FSDP2 parameter {name}", atol=2e-5)

    # Distributed checkpoint: save the sharded model and optimizer, load them
    # into a differently initialized copy, which then equals the original.
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    checkpoint = os.environ["TORCH_TPU_TEST_DIR"] + "/checkpoint"
    model_state, optimizer_state = get_state_dict(sharded, optimizer)
    dcp.save({"model": model_state, "optim": optimizer_state}, checkpoint_id=checkpoint)
    restored = mlp(seed=1).to("tpu")
    fully_shard(restored, mesh=mesh)
    restored_optimizer = torch.optim.AdamW(restored.parameters(), lr=0.01)
    model_state, optimizer_state = get_state_dict(restored, restored_optimizer)
    state = {"model": model_state, "optim": optimizer_state}
    dcp.load(state, checkpoint_id=checkpoint)
    set_state_dict(restored, restored_optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    for p, q in zip(restored.parameters(), sharded.parameters()):
        check(p.full_tensor(), q.full_tensor().cpu(), "parameter after a checkpoint round trip")
    first = next(iter(restored_optimizer.state.values()))["exp_avg"]
    check(first.full_tensor(), next(iter(optimizer.state.values()))["exp_avg"].full_tensor().cpu(),
          "optimizer state after a checkpoint round trip")
    dist.destroy_process_group()


def scenario_tensor_parallel() -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    init()
    mesh = init_device_mesh("tpu", (WORLD,))
    model = mlp()
    reference = copy.deepcopy(model)
    parallel = parallelize_module(copy.deepcopy(model).to("tpu"), mesh, {
        "0": ColwiseParallel(), "2": RowwiseParallel(),
    })
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    out = parallel(x.to("tpu"))
    out.square().sum().backward()
    expected = reference(x)
    expected.square().sum().backward()
    check(out, expected.detach(), "tensor-parallel output", atol=1e-5)
    for (name, p), q in zip(parallel.named_parameters(), reference.parameters()):
        grad = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        check(grad, q.grad, f"tensor-parallel gradient {name}", atol=1e-4)

    # DTensor: sharding, redistribution and an op on sharded operands.
    a = torch.randn(6, 4, generator=torch.Generator().manual_seed(2))
    b = torch.randn(4, 3, generator=torch.Generator().manual_seed(3))
    da = distribute_tensor(a.to("tpu"), mesh, [Shard(0)])
    db = distribute_tensor(b.to("tpu"), mesh, [Replicate()])
    product = (da @ db).redistribute(mesh, [Replicate()])
    check(product.to_local(), a @ b, "DTensor matmul, Shard(0) @ Replicate", atol=1e-5)
    check(da.redistribute(mesh, [Shard(1)]).full_tensor(), a, "Shard(0) -> Shard(1)")
    dist.destroy_process_group()


def scenario_compiled() -> None:
    """Collectives inside torch.compile(backend="tpu") graphs: functional
    collectives in a traced function, a compiled DDP model (Dynamo's
    DDPOptimizer splits the graph at bucket boundaries), and a compiled
    tensor-parallel model, each called more than the graph runner's capture
    count so the replayed programs are checked too."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )
    from torch.nn.parallel import DistributedDataParallel as DDP

    init()

    @torch.compile(backend="tpu")
    def scaled_sum(x):
        return funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1

    for call in range(4):
        x = rank_tensor(RANK + call, (3, 2), torch.float32)
        expected = sum(rank_tensor(r + call, (3, 2), torch.float32) * 2
                       for r in range(WORLD)) + 1
        check(scaled_sum(x.to("tpu")), expected, f"compiled all_reduce, call {call}")

    model = mlp()
    reference = cpu_reference(model, torch.optim.SGD, 4, lr=0.1)
    ddp = torch.compile(DDP(copy.deepcopy(model).to("tpu")), backend="tpu")
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    train_on_shards(ddp, optimizer, 4)
    for p, q in zip(ddp.parameters(), reference.parameters()):
        check(p, q.detach(), "compiled DDP parameter", atol=2e-5)

    mesh = init_device_mesh("tpu", (WORLD,))
    model = mlp()
    parallel = torch.compile(parallelize_module(copy.deepcopy(model).to("tpu"), mesh, {
        "0": ColwiseParallel(), "2": RowwiseParallel(),
    }), backend="tpu")
    for call in range(4):
        x = torch.randn(5, 8, generator=torch.Generator().manual_seed(call))
        check(parallel(x.to("tpu")), model(x).detach(), f"compiled tensor parallel, call {call}",
              atol=1e-5)
    dist.destroy_process_group()


def scenario_mesh_2d() -> None:
    """Four ranks: subgroups, and a 2-D mesh with FSDP2 over "dp" and
    tensor parallelism over "tp" (HSDP-style composition)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    assert WORLD == 4, WORLD
    init()
    evens = dist.new_group([0, 2])
    odds = dist.new_group([1, 3])
    t = torch.tensor([float(RANK)], device="tpu")
    dist.all_reduce(t, group=evens if RANK % 2 == 0 else odds)
    check(t, torch.tensor([2.0 if RANK % 2 == 0 else 4.0]), "all_reduce in a subgroup")

    mesh = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
    model = mlp()
    parallel = parallelize_module(copy.deepcopy(model).to("tpu"), mesh["tp"], {
        "0": ColwiseParallel(), "2": RowwiseParallel(),
    })
    fully_shard(parallel, mesh=mesh["dp"])
    optimizer = torch.optim.AdamW(parallel.parameters(), lr=0.01)
    reference = copy.deepcopy(model)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=0.01)
    dp_rank = mesh["dp"].get_local_rank()
    for step in range(3):
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(8, 8, generator=g), torch.randn(8, 4, generator=g)
        # Ranks of one tp group see the same half of the batch.
        out = parallel(x.chunk(2)[dp_rank].to("tpu"))
        nn.functional.mse_loss(out, y.chunk(2)[dp_rank].to("tpu")).backward()
        optimizer.step()
        optimizer.zero_grad()
        nn.functional.mse_loss(reference(x), y).backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    for (name, p), q in zip(parallel.named_parameters(), reference.parameters()):
        check(p.full_tensor(), q.detach(), f"2-D mesh parameter {name}", atol=2e-5)
    dist.destroy_process_group()


def scenario_bound_device() -> None:
    """init_process_group(device_id=...): DeviceMesh then makes its groups
    by splitting the default one, and other backends' groups stay unbound;
    reduce checks its root; reduce_scatter takes pieces of uneven sizes."""
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("tpu", device_id=torch.device("tpu", RANK % torch.tpu.device_count()))
    mesh = init_device_mesh("tpu", (1, WORLD), mesh_dim_names=("dp", "tp"))
    t = torch.ones(2, device="tpu") * (RANK + 1)
    dist.all_reduce(t, group=mesh.get_group("tp"))
    check(t, torch.full((2,), float(sum(range(1, WORLD + 1)))), "all_reduce over a split mesh dim")
    t = torch.ones(2, device="tpu") * (RANK + 1)
    dist.all_reduce(t, group=mesh.get_group("dp"))
    check(t, torch.full((2,), float(RANK + 1)), "all_reduce over a mesh dim of one rank")
    halves = dist.split_group(split_ranks=[[r] for r in range(WORLD)])
    t = torch.ones(1, device="tpu")
    dist.all_reduce(t, group=halves)
    check(t, torch.ones(1), "all_reduce in a one-rank split")
    # A subgroup that leaves ranks out: those ranks are asked to take part
    # in a split (NCCL's protocol) and carry on in step with the members.
    first = dist.new_group([0])
    if RANK == 0:
        t = torch.ones(1, device="tpu") * 7
        dist.all_reduce(t, group=first)
        check(t, torch.full((1,), 7.0), "all_reduce in a subgroup of a bound default group")
    dist.barrier()
    host = dist.new_group(list(range(WORLD)), backend="gloo")  # as torchtitan makes for checkpoints
    c = torch.ones(2)
    dist.all_reduce(c, group=host)
    check(c, torch.full((2,), float(WORLD)), "all_reduce in a gloo group beside a bound tpu group")
    for bad in (WORLD, -1):
        try:
            dist.reduce(torch.ones(2, device="tpu"), dst=bad)
        except (RuntimeError, ValueError) as e:
            assert "invalid root rank" in str(e) or "not part of group" in str(e), e
        else:
            raise AssertionError(f"reduce to rank {bad} was accepted")
    out = torch.empty(1 + RANK, device="tpu")
    dist.reduce_scatter(out, [torch.ones(1 + r, device="tpu") * (RANK + r) for r in range(WORLD)])
    check(out, torch.full((1 + RANK,), float(sum(q + RANK for q in range(WORLD)))), "uneven reduce_scatter")
    dist.destroy_process_group()


def scenario_transformers_sets_up() -> None:
    """Hugging Face Transformers starts torch.distributed itself for a
    tensor-parallel load, asking for the backend "tpu_dist"."""
    import tempfile

    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.distributed import DistributedConfig

    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    reference = LlamaForCausalLM(config)
    with tempfile.TemporaryDirectory() as saved:
        reference.save_pretrained(saved)
        model = LlamaForCausalLM.from_pretrained(saved, distributed_config=DistributedConfig(tp_size=WORLD))
    assert dist.is_initialized() and dist.get_backend() in ("tpu", "tpu_dist"), dist.get_backend()
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    loss = model(input_ids=ids.to(model.device), labels=ids.to(model.device)).loss
    expected = reference(input_ids=ids, labels=ids).loss
    check(loss.detach().float(), expected.detach().float(), "tensor-parallel Llama loss", atol=1e-5)
    dist.destroy_process_group()


def scenario_pipelining() -> None:
    """torch.distributed.pipelining over the backend's send / receive: a
    model split in two stages, GPipe and 1F1B over four microbatches, the
    loss and each stage's gradients against the whole model on CPU."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    init()
    assert WORLD == 2
    device = torch.device("tpu", RANK)
    torch.manual_seed(0)
    whole = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = torch.randn(8, 8), torch.randn(8, 4)
    loss_fn = nn.MSELoss(reduction="sum")
    expected_loss = loss_fn(whole(x), y)
    expected_loss.backward()
    part = copy.deepcopy(whole[:4] if RANK == 0 else whole[4:]).to(device)
    stage = PipelineStage(part, RANK, WORLD, device)
    microbatches = 4
    for schedule in (ScheduleGPipe, Schedule1F1B):
        part.zero_grad()
        run = schedule(stage, n_microbatches=microbatches, loss_fn=loss_fn)
        if RANK == 0:
            run.step(x.to(device))
        else:
            losses = []
            run.step(target=y.to(device), losses=losses)
            check(sum(loss.detach().cpu() for loss in losses), expected_loss.detach(), f"{schedule.__name__} loss",
                  atol=1e-4)
        # The schedules divide gradients by the number of microbatches.
        reference = whole[0] if RANK == 0 else whole[4]
        check(part[0].weight.grad, reference.weight.grad / microbatches, f"{schedule.__name__} gradients", atol=1e-5)
    dist.destroy_process_group()


def scenario_accelerate() -> None:
    """An accelerate script under torchrun (accelerate starts torch.distributed
    itself): DDP over tpu:<rank>, each rank a shard of the data loader, the
    same weights as one process training on the whole batches."""
    from accelerate import Accelerator
    from accelerate.state import DistributedType

    accelerator = Accelerator()
    assert accelerator.distributed_type == DistributedType.MULTI_GPU, accelerator.distributed_type
    model = train_with_accelerate(accelerator, nn.parallel.DistributedDataParallel)
    ranks = accelerator.gather(torch.tensor([RANK], device=accelerator.device))
    check(ranks, torch.arange(WORLD), "accelerator.gather")
    dist.destroy_process_group()


def scenario_accelerate_fsdp2() -> None:
    """The same loop with accelerate's FSDP2 plugin: the model sharded with
    fully_shard over the tpu devices."""
    from accelerate import Accelerator, FullyShardedDataParallelPlugin
    from accelerate.state import DistributedType
    from torch.distributed.fsdp import FSDPModule

    accelerator = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2))
    assert accelerator.distributed_type == DistributedType.FSDP, accelerator.distributed_type
    train_with_accelerate(accelerator, FSDPModule)
    dist.destroy_process_group()


def train_with_accelerate(accelerator, wrapper_type) -> nn.Module:
    assert accelerator.device == torch.device("tpu", RANK) and accelerator.num_processes == WORLD
    assert dist.get_backend() == "tpu", dist.get_backend()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    reference = copy.deepcopy(model)
    data = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randn(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    wrapped, optimizer, loader = accelerator.prepare(model, optimizer, torch.utils.data.DataLoader(data, batch_size=4))
    assert isinstance(wrapped, wrapper_type) and len(loader) == 16 // (4 * WORLD), type(wrapped)
    for x, y in loader:
        assert x.device == accelerator.device
        accelerator.backward(nn.functional.mse_loss(wrapped(x), y))
        optimizer.step()
        optimizer.zero_grad()
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in torch.utils.data.DataLoader(data, batch_size=4 * WORLD):
        nn.functional.mse_loss(reference(x), y).backward()
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    state = {name: value.full_tensor() if hasattr(value, "full_tensor") else value
             for name, value in accelerator.unwrap_model(wrapped).state_dict().items()}
    for name, want in reference.state_dict().items():
        check(state[name].detach(), want, f"accelerate weights {name}", atol=1e-6)
    return wrapped


def scenario_trainer() -> None:
    """Hugging Face's Trainer under torchrun: distributed over the tpu
    devices (DDP, a sharded data loader), the ranks' weights equal after
    training."""
    import tempfile

    import transformers

    config = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            x = torch.randint(0, 100, (12,), generator=torch.Generator().manual_seed(i))
            return dict(input_ids=x, labels=x)

    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, per_device_train_batch_size=4, max_steps=2,
                                              report_to=[], save_strategy="no", seed=0)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Batches())
        assert args.device == torch.device("tpu", RANK) and args.world_size == WORLD, (args.device, args.world_size)
        assert len(trainer.get_train_dataloader()) == 16 // (4 * WORLD)
        trainer.train()
    assert isinstance(trainer.model_wrapped, nn.parallel.DistributedDataParallel), type(trainer.model_wrapped)
    weight = model.lm_head.weight.detach()
    assert weight.device == torch.device("tpu", RANK)
    gathered = [torch.empty_like(weight) for _ in range(WORLD)]
    dist.all_gather(gathered, weight)
    for other in gathered:
        check(other, weight.cpu(), "Trainer weights across ranks")
    dist.destroy_process_group()


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items()
             if name.startswith("scenario_")}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
