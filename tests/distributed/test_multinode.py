"""Two "nodes" on loopback: two torchrun launchers (--nnodes 2, 2 processes each)
rendezvous on 127.0.0.1 and the collective checks pass across them, as they would
across machines (gloo's TCP transport between nodes)."""
from __future__ import annotations

import re
import subprocess

from .launch import REPO, free_port, job_env, report, torchrun_cmd


def test_collectives_across_two_loopback_nodes():
    port = free_port()
    nodes = [
        subprocess.Popen(torchrun_cmd("collectives", 2, nnodes=2, node_rank=i, port=port),
                         env=job_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    procs = []
    for node in nodes:
        out, err = node.communicate(timeout=300)
        procs.append(subprocess.CompletedProcess(node.args, node.returncode, out, err))
    for proc in procs:
        assert proc.returncode == 0, report(proc)
    out = "".join(p.stdout for p in procs)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", out)}
    assert set(counts) == {0, 1, 2, 3}, out
    # rank 1 is outside the sub-group; rank 3 is every group's root
    assert counts[1] >= 70 and counts[0] >= 140 and counts[3] > counts[0], counts
    # each node's processes drive local cores 0 and 1; the node rank keeps them apart
    assert re.findall(r"\[rank (\d)\]", procs[0].stdout) and all(
        int(r) in (0, 1) for r in re.findall(r"\[rank (\d)\]", procs[0].stdout))
