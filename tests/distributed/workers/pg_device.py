"""The "neuron" group names its device to PyTorch, and the state-dict paths that ask for it work.

Checks, on every rank: ``_device_types`` of the default group and of a ``new_group`` is
``[neuron]``, ``_get_pg_default_device`` / ``_get_object_coll_device`` answer ``neuron``;
FSDP (``FullyShardedDataParallel``) ``SHARDED_STATE_DICT`` gives each rank its rows of every
parameter (compared with the same model built on the CPU from the same seed), and loading it back
into a second FSDP model reproduces the CPU model's forward; ``set_model_state_dict(...,
full_state_dict=True, broadcast_from_rank0=True)`` copies rank 0's values into every rank's model.
Prints "CHECKS <n>"."""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.distributed_c10d import _get_object_coll_device, _get_pg_default_device
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()


def model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def main() -> None:
    checks = 0
    sub = dist.new_group(list(range(WORLD)))
    for name, group in (("WORLD", dist.group.WORLD), ("new_group", sub)):
        assert group._device_types == [torch.device("neuron")], (name, group._device_types)
        assert _get_pg_default_device(group) == torch.device("neuron"), name
        assert _get_object_coll_device(group) == "neuron", name
        checks += 3

    ref = model(0)  # CPU reference
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    want = ref(x)

    sharded = FSDP(model(0).to(DEV), device_id=DEV, use_orig_params=True)
    with FSDP.state_dict_type(sharded, StateDictType.SHARDED_STATE_DICT):
        sd = sharded.state_dict()
    assert set(sd) == set(ref.state_dict()), sorted(sd)
    for key, value in sd.items():
        full = ref.state_dict()[key]
        for shard in value.local_shards():
            rows = slice(shard.metadata.shard_offsets[0],
                         shard.metadata.shard_offsets[0] + shard.metadata.shard_sizes[0])
            assert shard.tensor.device.type == "neuron", (key, shard.tensor.device)
            torch.testing.assert_close(shard.tensor.cpu(), full.view(-1)[rows] if full.dim() == 1
                                       else full[rows], rtol=0, atol=0, msg=key)
        checks += 1

    other = FSDP(model(7).to(DEV), device_id=DEV, use_orig_params=True)
    with FSDP.state_dict_type(other, StateDictType.SHARDED_STATE_DICT):
        other.load_state_dict(sd)
    torch.testing.assert_close(other(x.to(DEV)).detach().cpu(), want.detach(), rtol=1e-5, atol=1e-5)
    checks += 1

    plain = model(RANK + 11).to(DEV)  # every rank starts from different weights
    full = {k: v.to(DEV) for k, v in ref.state_dict().items()} if RANK == 0 else {}
    set_model_state_dict(plain, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    for key, value in plain.state_dict().items():
        assert value.device.type == "neuron", key
        torch.testing.assert_close(value.cpu(), ref.state_dict()[key], rtol=0, atol=0, msg=key)
        checks += 1
    say("CHECKS", checks)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
