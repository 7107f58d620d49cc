"""Collective calls NCCL accepts and gloo on CPU tensors does not, on backend "neuron":
``all_gather`` of tensors whose size differs per rank (float32, bfloat16, float8 as bytes,
non-contiguous outputs), ``gather`` and ``scatter`` of per-rank sizes, ``recv`` without ``src``
(the source rank is returned), and ``ReduceOp.AVG`` of an integer tensor, which must be refused
with a TypeError naming the fix before any rank waits (the transport cannot write the quotient
back).

The expected values are computed from the inputs each rank draws (no reference backend runs
these calls). Prints "CHECKS <n>" and exits 0 when all passed.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
checks = 0


def rows(rank: int) -> int:
    return rank + 1


def data(rank: int, dtype) -> torch.Tensor:
    """Rank ``rank``'s all_gather input: ``rows(rank)`` x 3 values, on the CPU."""
    g = torch.Generator().manual_seed(500 + rank)
    return (torch.rand(rows(rank), 3, generator=g) + 0.5).to(dtype)


def uneven_all_gather(dtype, strided: bool) -> None:
    global checks
    outs = []
    for r in range(WORLD):
        if strided:  # every other column of a NaN buffer: nothing may be written in between
            buf = torch.full((rows(r), 6), float("nan"), device=DEV).to(dtype)
            outs.append(buf[:, ::2])
        else:
            outs.append(torch.full((rows(r), 3), float("nan"), device=DEV).to(dtype))
    dist.all_gather(outs, data(RANK, dtype).to(DEV))
    for r, out in enumerate(outs):
        got, want = out.cpu(), data(r, dtype)
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8)), (dtype, strided, r, got, want)
        if strided:
            assert torch.isnan(out._base[:, 1::2].cpu().float()).all(), "wrote outside the view"
    checks += 1


def main() -> None:
    global checks
    for dtype in (torch.float32, torch.bfloat16, torch.float8_e4m3fn):
        for strided in (False, True):
            uneven_all_gather(dtype, strided)
    # gather / scatter of per-rank sizes (root 1; gloo's own would fail on the root and leave the
    # other ranks waiting until the timeout)
    for dtype in (torch.float32, torch.float8_e4m3fn):
        root = 1 % WORLD
        outs = [torch.full((rows(r), 3), float("nan"), device=DEV).to(dtype) for r in range(WORLD)]
        dist.gather(data(RANK, dtype).to(DEV), outs if RANK == root else None, dst=root)
        if RANK == root:
            for r, out in enumerate(outs):
                assert torch.equal(out.cpu().view(torch.uint8), data(r, dtype).view(torch.uint8)), (dtype, r)
        out = torch.full((rows(RANK), 3), float("nan"), device=DEV).to(dtype)
        dist.scatter(out, [data(r, dtype).to(DEV) for r in range(WORLD)] if RANK == root else None, src=root)
        assert torch.equal(out.cpu().view(torch.uint8), data(RANK, dtype).view(torch.uint8)), (dtype, RANK)
        checks += 1
    # a wrong input size for this rank's own entry is a ValueError on the calling rank
    try:
        dist.all_gather([torch.empty(rows(r), 3, device=DEV) for r in range(WORLD)],
                        torch.empty(rows(RANK) + 1, 3, device=DEV))
    except ValueError as e:
        assert f"output_list[{RANK}]" in str(e), e
        checks += 1
    else:
        raise AssertionError("an all_gather input of the wrong size was not refused")

    # recv without a source: every rank but 0 sends its rank to 0, which learns who sent what
    if RANK == 0:
        seen = {}
        for _ in range(WORLD - 1):
            t = torch.empty(2, device=DEV)
            src = dist.recv(t)
            seen[src] = t.cpu().tolist()
        assert seen == {r: [float(r), 10.0 * r] for r in range(1, WORLD)}, seen
    else:
        dist.send(torch.tensor([float(RANK), 10.0 * RANK], device=DEV), dst=0)
    checks += 1

    # AVG of an integer tensor is refused on every rank with the fix in the message
    for op_name, call in [
        ("all_reduce", lambda: dist.all_reduce(torch.tensor([RANK, 3], device=DEV), op=dist.ReduceOp.AVG)),
        ("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(
            torch.empty(1, dtype=torch.int32, device=DEV), torch.ones(WORLD, dtype=torch.int32, device=DEV),
            op=dist.ReduceOp.AVG)),
    ]:
        try:
            call()
        except TypeError as e:
            assert "ReduceOp.AVG" in str(e) and "t.float()" in str(e), e
            checks += 1
        else:
            raise AssertionError(f"{op_name} AVG of an integer tensor was not refused")
    # the group still works afterwards (no rank is left inside a half-started collective)
    x = torch.full((2,), float(RANK + 1), device=DEV)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    assert x.cpu().tolist() == [(WORLD + 1) / 2] * 2, x
    checks += 1
    dist.barrier()
    say("CHECKS", checks)
    dist.destroy_process_group()


main()
