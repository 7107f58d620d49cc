"""Running this checkout in child processes from the tests (torchrun jobs, example scripts, workers).

The child environment drops the per-process device variables of the calling process, runs
offline with one OpenMP thread and a small HBM per core, and puts the repository root first on
``PYTHONPATH``: children import this checkout's ``torch_neuronx`` and the ``tests`` package
(torchrun workers run as modules, ``-m tests.distributed.workers.<name>``).
"""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: ``TORCH_NEURONX_*`` variables a child keeps: the execution mode the suite runs in
#: (``TORCH_NEURONX_ADAPTIVE_EAGER=1 pytest`` runs the children with it too).
INHERITED = ("TORCH_NEURONX_ADAPTIVE_EAGER", "TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER")

#: Variables describing one launched process; a child launcher sets its own.
_PER_PROCESS = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child job: ours minus ``NEURON_*`` / ``TORCH_NEURONX_*`` (but
    :data:`INHERITED`) and launcher variables, plus offline / CI settings,
    ``TORCH_NEURONX_HBM_PER_CORE=2GiB`` and the repository on ``PYTHONPATH``; ``extra`` is applied
    last."""
    env = {k: v for k, v in os.environ.items()
           if k in INHERITED or not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    for k in _PER_PROCESS:
        env.pop(k, None)
    env.update(
        OMP_NUM_THREADS="1",
        CI="true",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TORCH_NEURONX_HBM_PER_CORE="2GiB",
        PYTHONWARNINGS="ignore::FutureWarning,ignore::UserWarning",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    env.update(extra or {})
    return env


def report(proc: subprocess.CompletedProcess, limit: int = 6000) -> str:
    """The exit status and the tails (``limit`` characters each) of a child's stdout and stderr,
    for assertion messages."""
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-limit:]}\n--- stderr\n{proc.stderr[-limit:]}"
