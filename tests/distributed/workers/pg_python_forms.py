"""The Python forms of the C++ process group's methods, called on the "neuron" group object itself:
``allreduce(tensor)``, ``allreduce(tensor, op)``, ``allreduce([tensor], op)``, ``broadcast(tensor, root)``,
``reduce(tensor, root, op)``; and the PyTorch code that calls one of them, DDP's unused-parameter sync
when ``Join`` lets a rank run out of inputs first (``_match_unused_params_allreduce``).

Expected values are computed from the ranks' inputs. Prints "CHECKS <n>" and exits 0 when all passed.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
PG = dist.distributed_c10d._get_default_group()


def full(v: float) -> torch.Tensor:
    return torch.full((3,), float(v), device=DEV)


def main() -> None:
    checks = 0
    x = full(RANK + 1)
    PG.allreduce(x).wait()
    assert x.cpu().tolist() == [sum(range(1, WORLD + 1))] * 3, x
    x = full(RANK + 1)
    PG.allreduce(x, dist.ReduceOp.MAX).wait()
    assert x.cpu().tolist() == [float(WORLD)] * 3, x
    x = full(RANK + 1)
    PG.allreduce([x], dist.ReduceOp.MIN).wait()
    assert x.cpu().tolist() == [1.0] * 3, x
    x = full(RANK + 1)
    PG.broadcast(x, WORLD - 1).wait()
    assert x.cpu().tolist() == [float(WORLD)] * 3, x
    x = full(RANK + 1)
    PG.reduce(x, 0, dist.ReduceOp.MAX).wait()
    if RANK == 0:
        assert x.cpu().tolist() == [float(WORLD)] * 3, x
    checks += 5

    # DDP under Join with uneven inputs and an unused parameter: the rank that finishes first shadows
    # the others' all-reduces, including the unused-parameter map (a single-tensor allreduce).
    torch.manual_seed(0)
    model = nn.ModuleDict({"a": nn.Linear(4, 4), "unused": nn.Linear(4, 4), "b": nn.Linear(4, 2)})

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.m["b"](torch.relu(self.m["a"](x)))

    ddp = DDP(Net().to(DEV), find_unused_parameters=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(RANK)
    with Join([ddp]):
        for _ in range(2 + RANK):
            ddp(torch.randn(2, 4, generator=g).to(DEV)).pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
    flat = torch.cat([p.detach().flatten() for p in ddp.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(WORLD)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(gathered[0].cpu(), t.cpu()) for t in gathered), "replicas diverged"
    checks += 1
    dist.barrier()
    say("CHECKS", checks)
    dist.destroy_process_group()


main()
