"""Compiled DDP (with and without buffers), FSDP2 and tensor parallelism on 2 ranks over backend
"neuron", each against the same step computed on the CPU in one process.

Modes (argv): ``ddp`` (``torch.compile(DDP(model))``, no backend: auto-selected), ``ddp_bn`` (a
BatchNorm model: DDP broadcasts its buffers at every forward through our process group's
``broadcast``, inside the compiled region; backend "neuron"), ``fsdp2`` (``fully_shard`` of each
block and the root, each block compiled), ``tp`` (Colwise/Rowwise ``parallelize_module`` on a
2-rank mesh, compiled). For each mode one forward/backward and one SGD step, then a second
forward: prints ``RESULT <mode> <max |loss - cpu|> <max |grad - cpu|> <max |loss2 - cpu|>``.
"""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()


def make(bn: bool = False) -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = [torch.nn.Linear(8, 16)]
    if bn:
        layers.append(torch.nn.BatchNorm1d(16))
    layers += [torch.nn.ReLU(), torch.nn.Linear(16, 4)]
    return torch.nn.Sequential(*layers)


def batch(rank: int, step: int) -> torch.Tensor:
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(100 * step + rank))


def cpu_reference(bn: bool, data_parallel: bool) -> tuple[list[float], list[torch.Tensor]]:
    """Loss of this rank's batch for two steps and the step-1 gradients, on the CPU: data parallel
    averages the per-rank gradients (as DDP / FSDP2 do); otherwise every rank sees rank 0's batch."""
    model = make(bn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ranks = range(WORLD) if data_parallel else [0]
    me = RANK if data_parallel else 0
    losses: list[float] = []
    grads: list[torch.Tensor] = []
    for step in (0, 1):
        opt.zero_grad()
        for r in ranks:
            loss = model(batch(r, step)).sum()
            if r == me:
                losses.append(loss.item())
            (loss / len(ranks)).backward()
        if step == 0:
            grads = [p.grad.clone() for p in model.parameters()]
        opt.step()
    return losses, grads


def full(t: torch.Tensor) -> torch.Tensor:
    return (t.full_tensor() if hasattr(t, "full_tensor") else t).cpu()


def run(mode: str) -> None:
    bn = mode == "ddp_bn"
    data_parallel = mode != "tp"
    model = make(bn).to(DEV)
    if mode in ("ddp", "ddp_bn"):
        from torch.nn.parallel import DistributedDataParallel as DDP

        ddp = DDP(model)
        compiled = torch.compile(ddp) if mode == "ddp" else torch.compile(ddp, backend="neuron")
    elif mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for i in (0, 2):
            fully_shard(model[i])
            model[i].compile(backend="neuron")
        fully_shard(model)
        compiled = model
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        mesh = init_device_mesh("neuron", (WORLD,))
        parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        compiled = torch.compile(model, backend="neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    want_losses, want_grads = cpu_reference(bn, data_parallel)
    me = RANK if data_parallel else 0
    losses = []
    for step in (0, 1):
        opt.zero_grad()
        out = compiled(batch(me, step).to(DEV))
        assert out.device == DEV, f"{mode}: output on {out.device}, expected {DEV}"
        loss = out.sum()
        loss.backward()
        losses.append(loss.item())
        if step == 0:
            grads = [full(p.grad) for p in model.parameters()]
        opt.step()
    grad_err = max((g - w).abs().max().item() for g, w in zip(grads, want_grads, strict=True))
    say("RESULT", mode, f"{abs(losses[0] - want_losses[0]):.3e}", f"{grad_err:.3e}",
        f"{abs(losses[1] - want_losses[1]):.3e}")


for name in sys.argv[1:]:
    run(name)
dist.destroy_process_group()
