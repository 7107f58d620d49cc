"""``init_process_group("cpu:gloo,neuron:neuron")``: the group serves both devices, as c10d's
``"cpu:gloo,cuda:nccl"`` does, and ``torch.distributed.checkpoint.async_save`` (which requires a
CPU backend) works.

Checks, on every rank: the default group's ``_device_types`` are ``cpu`` and ``neuron`` and object
collectives use ``cpu``; ``all_reduce`` sums a CPU tensor and a ``neuron`` tensor holding
rank-dependent values; ``PREMUL_SUM`` is refused before any transfer with the fix named, and the
next collective works; ``all_gather_object`` gathers every rank's object; a ``neuron`` model's
state dict saved with ``async_save`` into argv[1] loads back (``dcp.load``) into a model with other
weights bit for bit. Prints "CHECKS <n>"."""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.distributed_c10d import _get_object_coll_device

from .common import init, say

DEV = init(backend="cpu:gloo,neuron:neuron")
RANK, WORLD = dist.get_rank(), dist.get_world_size()


def main() -> None:
    checks = 0
    group = dist.group.WORLD
    assert sorted(d.type for d in group._device_types) == ["cpu", "neuron"], group._device_types
    assert _get_object_coll_device(group) == "cpu"
    checks += 2

    want = sum(float(r + 1) for r in range(WORLD))
    for device in ("cpu", DEV):
        t = torch.full((5,), float(RANK + 1), device=device)
        dist.all_reduce(t)
        assert t.device.type == torch.device(device).type
        assert torch.equal(t.cpu(), torch.full((5,), want)), (device, t)
        checks += 1

    # PREMUL_SUM is refused on every rank before any transfer (so the group stays in step), naming the fix.
    t = torch.ones(3, device=DEV)
    try:
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    except RuntimeError as e:
        assert "PREMUL_SUM" in str(e) and "ReduceOp.SUM" in str(e) and "alive" not in str(e), e
    else:
        raise AssertionError("PREMUL_SUM was not refused")
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((3,), float(WORLD))), t
    checks += 1

    gathered: list = [None] * WORLD
    dist.all_gather_object(gathered, {"rank": RANK})
    assert gathered == [{"rank": r} for r in range(WORLD)], gathered
    checks += 1

    torch.manual_seed(0)
    saved = torch.nn.Linear(4, 3).to(DEV)
    future = dcp.async_save(saved.state_dict(), checkpoint_id=sys.argv[1])
    future.result()
    torch.manual_seed(1)
    loaded = torch.nn.Linear(4, 3).to(DEV)
    sd = loaded.state_dict()
    dcp.load(sd, checkpoint_id=sys.argv[1])
    for key, value in sd.items():
        assert value.device.type == "neuron", key
        assert torch.equal(value.cpu(), saved.state_dict()[key].cpu()), key
        checks += 1
    say("CHECKS", checks)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
