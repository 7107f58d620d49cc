"""Worker of tests/distributed/test_estimate.py: collectives of the "neuron" process group recorded by
torch_neuronx.estimate, once each (functional collectives included), with their bytes and group size."""
import json
import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import torch_neuronx


def main() -> None:
    dist.init_process_group("neuron")
    rank = dist.get_rank()
    x = torch.ones(1024, device="neuron")
    out = torch.empty(2048, device="neuron")
    with torch_neuronx.estimate(platform="trn2", instance="trn2.48xlarge") as est:
        dist.all_reduce(x)
        dist.all_gather_into_tensor(out, x)
        y = funcol.all_reduce(x, "sum", dist.group.WORLD)
        y = funcol.wait_tensor(y) if hasattr(funcol, "wait_tensor") else y
        if rank == 0:
            dist.send(x, 1)
        else:
            dist.recv(x, 0)
    calls = [(c.kind, c.group_size, c.calls, c.bytes_per_call) for c in est.report.collectives]
    line = f"[rank {rank}] ESTIMATE " + json.dumps({"calls": calls, "values": [float(x[0]), float(y[0])]}) + "\n"
    os.write(1, line.encode())  # one write below PIPE_BUF: the two ranks' lines never interleave
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
