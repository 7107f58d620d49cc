"""Collectives of a ``"gloo"`` process group given tensors of device ``sys.argv[2]`` (``neuron``, or
``cpu`` for the reference run): each call's values are asserted against what the ranks' inputs imply,
the same assertions for both devices, and outputs stay on the caller's device.

Covered: ``all_reduce`` (SUM, MAX, async: the handle's future resolves to the caller's tensor),
``broadcast``, ``reduce`` (root), ``all_gather``, ``all_gather_into_tensor``, ``reduce_scatter_tensor``,
``gather``, ``scatter``, ``all_to_all_single``, ``send``/``recv``, ``barrier(device_ids=[i])``, a
functional ``all_reduce`` (``torch.distributed._functional_collectives``), DDP (two SGD steps whose
weights equal the single-process step on the ranks' mean gradient) and, on ``neuron``, a group of
PyTorch's fake backend, whose ``neuron`` collectives are refused by name.

``sys.argv[1]`` is the backend string (``"gloo"`` or ``"cpu:gloo,neuron:gloo"``). Prints
"CHECKS <n>" and exits 0 when all passed.
"""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.testing._internal.distributed.fake_pg  # (registers backend "fake")

from .common import init, say

BACKEND = sys.argv[1]
NEURON = init(backend=BACKEND)
DEV = NEURON if sys.argv[2] == "neuron" else torch.device("cpu")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
checks = 0


def x(r: int, n: int = 4) -> torch.Tensor:
    """Rank ``r``'s input, on the CPU: distinct values per rank."""
    return torch.arange(n, dtype=torch.float32) + 10 * r


def check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    global checks
    assert got.device == DEV, f"{name}: result on {got.device}, expected {DEV}"
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, msg=lambda m: f"{name}: {m}")
    checks += 1


def main() -> None:
    global checks
    everyone = [x(r) for r in range(WORLD)]

    t = x(RANK).to(DEV)
    dist.all_reduce(t)
    check("all_reduce SUM", t, sum(everyone))

    t = x(RANK).to(DEV)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("all_reduce MAX", t, torch.stack(everyone).amax(0))

    t = x(RANK).to(DEV)
    work = dist.all_reduce(t, async_op=True)
    value = work.get_future().wait()[0]
    work.wait()
    check("async all_reduce", t, sum(everyone))
    assert value.device == DEV and value.data_ptr() == t.data_ptr(), (value.device, "future is not the tensor")
    checks += 1

    t = x(RANK).to(DEV)
    dist.broadcast(t, src=1)
    check("broadcast", t, x(1))

    t = x(RANK).to(DEV)
    dist.reduce(t, dst=0)
    if RANK == 0:
        check("reduce", t, sum(everyone))

    outs = [torch.empty(4, device=DEV) for _ in range(WORLD)]
    dist.all_gather(outs, x(RANK).to(DEV))
    for r in range(WORLD):
        check(f"all_gather[{r}]", outs[r], x(r))

    out = torch.empty(4 * WORLD, device=DEV)
    dist.all_gather_into_tensor(out, x(RANK).to(DEV))
    check("all_gather_into_tensor", out, torch.cat(everyone))

    out = torch.empty(2, device=DEV)
    dist.reduce_scatter_tensor(out, (torch.arange(2.0 * WORLD) + 100 * RANK).to(DEV))
    want = sum(torch.arange(2.0 * WORLD) + 100 * r for r in range(WORLD))[2 * RANK:2 * RANK + 2]
    check("reduce_scatter_tensor", out, want)

    gathered = [torch.empty(4, device=DEV) for _ in range(WORLD)] if RANK == 0 else None
    dist.gather(x(RANK).to(DEV), gathered, dst=0)
    if RANK == 0:
        for r in range(WORLD):
            check(f"gather[{r}]", gathered[r], x(r))

    out = torch.empty(4, device=DEV)
    dist.scatter(out, [x(r).to(DEV) for r in range(WORLD)] if RANK == 0 else None, src=0)
    check("scatter", out, x(RANK))

    out = torch.empty(2 * WORLD, device=DEV)
    dist.all_to_all_single(out, (torch.arange(2.0 * WORLD) + 10 * RANK).to(DEV))
    want = torch.cat([(torch.arange(2.0 * WORLD) + 10 * r)[2 * RANK:2 * RANK + 2] for r in range(WORLD)])
    check("all_to_all_single", out, want)

    if RANK == 0:
        dist.send(x(7).to(DEV), dst=1)
    elif RANK == 1:
        t = torch.empty(4, device=DEV)
        dist.recv(t, src=0)
        check("send/recv", t, x(7))

    dist.barrier(device_ids=[torch.neuron.current_device()])
    checks += 1

    t = funcol.all_reduce(x(RANK).to(DEV), "sum", dist.group.WORLD)
    check("functional all_reduce", funcol.wait_tensor(t), sum(everyone))

    # DDP: two SGD steps on rank-dependent batches; the weights equal one process stepping on the mean
    # gradient of the ranks' batches (the same model, bias-free so the grads are exact in float32).
    torch.manual_seed(0)
    reference = torch.nn.Linear(4, 2, bias=False)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2, bias=False).to(DEV))
    model.module.weight.data.copy_(reference.weight.data.to(DEV))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    for step in range(2):
        batches = [torch.full((2, 4), float(r + step + 1)) for r in range(WORLD)]
        opt.zero_grad()
        model(batches[RANK].to(DEV)).sum().backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(reference(b).sum() for b in batches) / WORLD).backward()
        ref_opt.step()
        check(f"DDP weight after step {step}", model.module.weight.detach(), reference.weight.detach())

    if DEV.type == "neuron":
        fake = dist.new_group(backend="fake")
        try:
            dist.all_reduce(torch.ones(2, device=DEV), group=fake)
        except RuntimeError as err:
            assert "backend='neuron'" in str(err) and "'fake'" in str(err), str(err)
            checks += 1
        else:
            raise AssertionError("a fake group without a neuron backend took a neuron tensor")

    say("CHECKS", checks)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
