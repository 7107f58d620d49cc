"""``torch.ops._c10d_functional.all_gather_into_tensor_out`` on ``neuron`` tensors of a "neuron" group
(the out-variant that C++ sends to ``_allgather_base``): float32 and bfloat16, a flat and a
``(world, n)`` output, the work it registers (``wait_tensor`` finds it), and the refusals of a
non-contiguous input and of a ``group_size`` that is not the group's.

Expected values are the CPU concatenation of the ranks' inputs. Prints "CHECKS <n>" and exits 0 when
all passed.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
NAME = dist.group.WORLD.group_name
OUT_OP = torch.ops._c10d_functional.all_gather_into_tensor_out
REGISTRY_SIZE = torch._C._distributed_c10d._get_work_registry_size


def rank_input(rank: int, dtype: torch.dtype) -> torch.Tensor:
    """Rank ``rank``'s (2, 3) input, on the CPU: distinct values per rank and element."""
    return (torch.arange(6, dtype=torch.float32).view(2, 3) + 10 * rank).to(dtype)


def main() -> None:
    checks = 0
    for dtype in (torch.float32, torch.bfloat16):
        expect = torch.cat([rank_input(r, dtype) for r in range(WORLD)])
        inp = rank_input(RANK, dtype).to(DEV)
        for shape in ((2 * WORLD, 3), (WORLD, 6)):
            out = torch.full(shape, -1.0, dtype=dtype, device=DEV)
            before = REGISTRY_SIZE()
            res = OUT_OP(inp, WORLD, NAME, out=out)
            assert res is out, "the op returns its out tensor"
            assert REGISTRY_SIZE() == before + 1, (before, REGISTRY_SIZE())
            torch.ops._c10d_functional.wait_tensor(out)
            assert REGISTRY_SIZE() == before, (before, REGISTRY_SIZE())
            assert out.device == DEV and out.dtype == dtype, (out.device, out.dtype)
            assert torch.equal(out.cpu().view(-1), expect.view(-1)), (out.cpu(), expect)
            checks += 1
    try:
        OUT_OP(torch.ones(3, 2, device=DEV).t(), WORLD, NAME, out=torch.empty(2 * WORLD, 3, device=DEV))
    except ValueError as err:
        assert "contiguous" in str(err), err
        checks += 1
    try:
        OUT_OP(torch.ones(2, 3, device=DEV), WORLD + 1, NAME, out=torch.empty(2 * WORLD + 2, 3, device=DEV))
    except ValueError as err:
        assert f"group_size={WORLD + 1}" in str(err), err
        checks += 1
    say("CHECKS", checks)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
