"""C10D-API collectives of a process group under ``CommDebugMode`` (``torch.distributed.tensor.debug``):
each call is counted once, as the c10d op gloo's C++ group dispatches for it, and gives the values the
ranks' inputs imply. Run with backend "neuron" (``neuron`` tensors) or "gloo" (CPU tensors): the same
counts and values are asserted for both.

Also checked under the mode: an async ``all_reduce``'s handle, a non-contiguous ``all_gather`` output
(copied back when the work completes), ``send``/``recv`` seen by a recording dispatch mode (CommDebugMode
does not count point-to-point ops), the PREMUL_SUM refusal, an ``all_reduce`` on a group of PyTorch's fake
backend (its own kernel still runs), and the same ``all_reduce`` outside any mode.

Prints "CHECKS <n>" and exits 0 when all passed.
"""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.testing._internal.distributed.fake_pg  # (registers backend "fake")
from torch.distributed.tensor.debug import CommDebugMode
from torch.utils._python_dispatch import TorchDispatchMode

from .common import init, say

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "neuron"
NEURON = init(backend=BACKEND)
DEV = NEURON if BACKEND == "neuron" else torch.device("cpu")
RANK, WORLD = dist.get_rank(), dist.get_world_size()


def x(r: int, n: int = 4, shift: float = 0.0) -> torch.Tensor:
    """Rank ``r``'s input, on the CPU: distinct values per rank."""
    return torch.arange(n, dtype=torch.float32) + 10 * r + shift


def on(t: torch.Tensor) -> torch.Tensor:
    return t.to(DEV)


class Seen(TorchDispatchMode):
    """Records the names of the c10d ops it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "c10d":
            self.ops.append(func._overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def counted(fn) -> dict[str, int]:
    mode = CommDebugMode()
    with mode:
        fn()
    return {str(k): v for k, v in mode.get_comm_counts().items()}


def main() -> None:
    checks = 0
    total = sum(x(r) for r in range(WORLD))
    c10d = "c10d."

    def expect(fn, op: str, got, want) -> None:
        nonlocal checks
        counts = counted(fn)
        assert counts == {c10d + op: 1}, (op, counts)
        got_v = got() if callable(got) else got
        assert torch.equal(got_v.cpu(), want), (op, got_v.cpu(), want)
        checks += 1

    t = on(x(RANK))
    expect(lambda: dist.all_reduce(t), "allreduce_", t, total)
    t = on(x(RANK))
    expect(lambda: dist.all_reduce(t, op=dist.ReduceOp.MAX), "allreduce_", t, x(WORLD - 1))

    out = on(torch.empty(4 * WORLD))
    expect(lambda: dist.all_gather_into_tensor(out, on(x(RANK))), "_allgather_base_", out,
           torch.cat([x(r) for r in range(WORLD)]))

    red = on(torch.empty(4))
    expect(lambda: dist.reduce_scatter_tensor(red, on(x(RANK, 4 * WORLD))), "_reduce_scatter_base_", red,
           sum(x(r, 4 * WORLD) for r in range(WORLD))[4 * RANK:4 * RANK + 4])

    t = on(x(RANK))
    expect(lambda: dist.broadcast(t, 0), "broadcast_", t, x(0))

    gathered = [on(torch.empty(4)) for _ in range(WORLD)] if RANK == 0 else None
    expect(lambda: dist.gather(on(x(RANK)), gathered, 0), "gather_",
           lambda: torch.cat(gathered) if gathered else torch.zeros(0),
           torch.cat([x(r) for r in range(WORLD)]) if RANK == 0 else torch.zeros(0))

    t = on(x(RANK))
    expect(lambda: dist.reduce(t, 0), "reduce_", lambda: t if RANK == 0 else torch.zeros(0),
           total if RANK == 0 else torch.zeros(0))  # (the other ranks' tensors are scratch)

    t = on(torch.empty(4))
    expect(lambda: dist.scatter(t, [on(x(0, shift=1000.0 * (r + 1))) for r in range(WORLD)] if RANK == 0 else None,
                                0), "scatter_", t, x(0, shift=1000.0 * (RANK + 1)))

    outs = [on(torch.empty(4)) for _ in range(WORLD)]
    expect(lambda: dist.all_gather(outs, on(x(RANK))), "allgather_", lambda: torch.cat(outs),
           torch.cat([x(r) for r in range(WORLD)]))

    lists = [[on(torch.empty(4))] for _ in range(WORLD)]
    expect(lambda: dist.all_gather_coalesced(lists, [on(x(RANK))]), "allgather_coalesced_",
           lambda: torch.cat([lst[0] for lst in lists]), torch.cat([x(r) for r in range(WORLD)]))

    out = on(torch.empty(4 * WORLD))

    def coalesced_gather() -> None:
        with dist._coalescing_manager():
            dist.all_gather_into_tensor(out, on(x(RANK)))

    expect(coalesced_gather, "allgather_into_tensor_coalesced_", out, torch.cat([x(r) for r in range(WORLD)]))

    t = on(x(RANK))
    expect(lambda: dist.all_reduce_coalesced([t]), "allreduce_coalesced_", t, total)

    red = on(torch.empty(4))
    expect(lambda: dist.reduce_scatter(red, [on(x(RANK, shift=100.0 * j)) for j in range(WORLD)]), "reduce_scatter_",
           red, total + 100.0 * RANK * WORLD)

    red = on(torch.empty(4))

    def coalesced_reduce_scatter() -> None:
        with dist._coalescing_manager():
            dist.reduce_scatter_tensor(red, on(x(RANK, 4 * WORLD)))

    expect(coalesced_reduce_scatter, "reduce_scatter_tensor_coalesced_", red,
           sum(x(r, 4 * WORLD) for r in range(WORLD))[4 * RANK:4 * RANK + 4])

    outs = [on(torch.empty(4)) for _ in range(WORLD)]
    expect(lambda: dist.all_to_all(outs, [on(x(RANK, shift=100.0 * j)) for j in range(WORLD)]), "alltoall_",
           lambda: torch.cat(outs), torch.cat([x(j, shift=100.0 * RANK) for j in range(WORLD)]))

    out = on(torch.empty(4 * WORLD))
    expect(lambda: dist.all_to_all_single(out, on(torch.cat([x(RANK, shift=100.0 * j) for j in range(WORLD)]))),
           "alltoall_base_", out, torch.cat([x(j, shift=100.0 * RANK) for j in range(WORLD)]))

    # an async all_reduce: the handle the mode passes back is the group's own, and wait() completes it
    t = on(x(RANK))
    handles = []
    counts = counted(lambda: handles.append(dist.all_reduce(t, async_op=True)))
    assert counts == {"c10d.allreduce_": 1}, counts
    handles[0].wait()
    assert torch.equal(t.cpu(), total), t.cpu()
    checks += 1

    # a non-contiguous all_gather output: staged, copied back when the work completes
    wide = on(torch.full((4, WORLD), -1.0))
    cols = [wide[:, r] for r in range(WORLD)]
    expect(lambda: dist.all_gather(cols, on(x(RANK))), "allgather_", lambda: wide.t().reshape(-1),
           torch.cat([x(r) for r in range(WORLD)]))

    # point to point: not counted by CommDebugMode, but dispatched (as on gloo)
    seen = Seen()
    t = on(x(RANK))
    with seen:
        if RANK == 0:
            dist.send(t, 1)
        elif RANK == 1:
            dist.recv(t, 0)
    assert seen.ops == (["send"] if RANK == 0 else ["recv_"] if RANK == 1 else []), seen.ops
    assert torch.equal(t.cpu(), x(0) if RANK == 1 else x(RANK)), t.cpu()
    checks += 1

    # PREMUL_SUM: the group's refusal (neuron) or gloo's, under the mode as without it
    try:
        with CommDebugMode():
            dist.all_reduce(on(x(RANK)), op=dist._make_nccl_premul_sum(2.0))
    except (RuntimeError, ValueError) as err:
        assert "PREMUL_SUM" in str(err) or "premul" in str(err).lower(), err
        checks += 1

    # a group of PyTorch's fake backend: its collectives still reach its own kernel (counted, nothing moved)
    fake = dist.new_group(backend="cpu:fake,neuron:fake")
    t = on(x(RANK))
    counts = counted(lambda: dist.all_reduce(t, group=fake))
    assert counts == {"c10d.allreduce_": 1}, counts
    assert torch.equal(t.cpu(), x(RANK)), t.cpu()
    checks += 1

    # outside any mode: the same values
    t = on(x(RANK))
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), total), t.cpu()
    checks += 1

    say("CHECKS", checks)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
