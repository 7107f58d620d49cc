"""nn.SyncBatchNorm on backend "neuron": each rank normalizes its slice of a global batch with
the statistics of the whole batch. Compared with nn.BatchNorm2d on the CPU over the whole
batch (computed on every rank): outputs, input gradients, weight/bias gradients (summed over
ranks), running statistics after two steps, and an eval-mode forward. Prints "CHECKS <n>"."""
from __future__ import annotations

import copy

import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
PER_RANK = 3


def close(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-5, atol=1e-5, msg=name)


def main() -> None:
    checks = 0
    torch.manual_seed(0)
    ref = torch.nn.BatchNorm2d(4, momentum=0.3)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.uniform_(-0.5, 0.5)
    ref = torch.nn.Sequential(ref)
    # convert_sync_batchnorm shares the Parameter objects, which .to() then moves: convert a copy
    sync = torch.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(ref)).to(DEV)
    mine = slice(RANK * PER_RANK, (RANK + 1) * PER_RANK)
    for step in range(2):
        g = torch.Generator().manual_seed(10 + step)
        # rank-dependent scale and shift: each rank's own statistics differ from the global ones
        scale = torch.arange(1, WORLD * PER_RANK + 1).view(-1, 1, 1, 1)
        x = torch.randn(WORLD * PER_RANK, 4, 3, 5, generator=g) * scale
        w = torch.randn(x.shape, generator=g)
        xr = x.clone().requires_grad_()
        yr = ref(xr)
        (yr * w).sum().backward()
        xn = x[mine].to(DEV).requires_grad_()
        yn = sync(xn)
        (yn * w[mine].to(DEV)).sum().backward()
        close(f"step {step} output", yn, yr[mine])
        close(f"step {step} input grad", xn.grad, xr.grad[mine])
        for p, q in zip(sync.parameters(), ref.parameters(), strict=True):
            total = p.grad.clone()
            dist.all_reduce(total)
            close(f"step {step} parameter grad", total, q.grad)
            p.grad = None
            q.grad = None
        close(f"step {step} running_mean", sync[0].running_mean, ref[0].running_mean)
        close(f"step {step} running_var", sync[0].running_var, ref[0].running_var)
        checks += 6
    sync.eval()
    ref.eval()
    x = torch.randn(2, 4, 3, 5)
    close("eval output", sync(x.to(DEV)), ref(x))
    checks += 1
    say("CHECKS", checks)
    dist.destroy_process_group()


main()
