"""Launching torchrun jobs from the distributed tests: each test runs a worker module of
:mod:`tests.distributed.workers` under ``python -m torch.distributed.run -m ...`` in a fresh
process tree and asserts on its exit code and output."""
from __future__ import annotations

import subprocess
import sys

from ..processes import REPO, free_port, job_env, report

__all__ = ["REPO", "free_port", "job_env", "report", "torchrun", "torchrun_cmd"]

WORKERS_PACKAGE = "tests.distributed.workers"


def torchrun_cmd(worker: str, nproc: int, *args: str, nnodes: int = 1, node_rank: int = 0,
                 port: int | None = None, monitor_interval: float | None = None) -> list[str]:
    """The torchrun command line of worker module ``worker`` (e.g. ``"collectives"``, static
    rendezvous on 127.0.0.1); run it with :func:`job_env` and ``cwd=REPO``."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           f"--nnodes={nnodes}", f"--node-rank={node_rank}", "--master-addr=127.0.0.1",
           f"--master-port={port or free_port()}"]
    if monitor_interval is not None:
        cmd.append(f"--monitor-interval={monitor_interval}")
    return cmd + ["-m", f"{WORKERS_PACKAGE}.{worker}", *args]


def torchrun(worker: str, nproc: int, *args: str, env: dict | None = None, timeout: float = 240,
             **kw) -> subprocess.CompletedProcess:
    """Runs worker module ``worker`` on ``nproc`` local processes and waits for it."""
    return subprocess.run(torchrun_cmd(worker, nproc, *args, **kw), env=job_env(env), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
