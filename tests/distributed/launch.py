"""Launching torchrun jobs from the distributed tests: each test runs a worker script under
``python -m torch.distributed.run`` in a fresh process tree and asserts on its
exit code and output."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

WORKERS = Path(__file__).parent / "workers"


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(extra: dict | None = None) -> dict:
    """The environment of a launched job: ours minus per-process device variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    for k in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    env.update(
        OMP_NUM_THREADS="1",
        CI="true",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TORCH_NEURONX_HBM_PER_CORE="2GiB",
        PYTHONWARNINGS="ignore::FutureWarning,ignore::UserWarning",
    )
    env.update(extra or {})
    return env


def torchrun_cmd(worker: str, nproc: int, *args: str, nnodes: int = 1, node_rank: int = 0,
                 port: int | None = None, monitor_interval: float | None = None) -> list[str]:
    """The torchrun command line of ``workers/<worker>`` (static rendezvous on 127.0.0.1)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           f"--nnodes={nnodes}", f"--node-rank={node_rank}", "--master-addr=127.0.0.1",
           f"--master-port={port or free_port()}"]
    if monitor_interval is not None:
        cmd.append(f"--monitor-interval={monitor_interval}")
    return cmd + [str(WORKERS / worker), *args]


def torchrun(worker: str, nproc: int, *args: str, env: dict | None = None, timeout: float = 240,
             **kw) -> subprocess.CompletedProcess:
    """Runs ``workers/<worker>`` on ``nproc`` local processes and waits for it."""
    return subprocess.run(torchrun_cmd(worker, nproc, *args, **kw), env=job_env(env),
                          capture_output=True, text=True, timeout=timeout)


def report(proc: subprocess.CompletedProcess) -> str:
    """The tail of a job's output, for assertion messages."""
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}"

