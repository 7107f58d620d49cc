"""Running this checkout in child processes from the tests (torchrun jobs, example scripts, workers).

The child environment drops the per-process device variables of the calling process, runs
offline with one OpenMP thread and a small HBM per core, and puts the repository root first on
``PYTHONPATH``: children import this checkout's ``torch_neuronx`` and the ``tests`` package
(torchrun workers run as modules, ``-m tests.distributed.workers.<name>``).
"""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
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


_isa_probes: Path | None = None


def _inductor_isa_probes() -> Path:
    """A folder holding only Inductor's CPU vector-ISA probe builds, made once per test session.

    Before its first C++ compile in a kernel cache folder, Inductor dry-compiles a small program for
    each vector ISA it may use (``torch._inductor.cpu_vec_isa``: AVX-512 VNNI, AVX-512, AVX2 ... as
    the CPU offers) and keeps the ``.so`` files there; about 9 CPU-s, the same for every folder."""
    global _isa_probes
    if _isa_probes is None:
        folder = Path(tempfile.mkdtemp(prefix="inductor-isa-probes-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        env = job_env({"TORCHINDUCTOR_CACHE_DIR": str(folder), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
        probe = "from torch._inductor import cpu_vec_isa; cpu_vec_isa.pick_vec_isa()"
        proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, report(proc)
        shutil.rmtree(folder / "locks", ignore_errors=True)
        _isa_probes = folder
    return _isa_probes


def cold_compile_cache(folder: Path) -> str:
    """``folder`` made a compile cache folder (``TORCH_NEURONX_NEFF_CACHE_DIR``) for a child that
    must really compile its graphs, and returned as a string.

    Nothing compiled is in it: no graph entry, no Inductor kernel. Only Inductor's ISA probe builds
    (:func:`_inductor_isa_probes`, which hold no graph) are copied into ``folder/inductor``, so each
    such child does not pay the same ~9 CPU-s again. The first use of an empty folder, probes
    included, is covered where that is the point (``tests/compile/test_backend.py``,
    ``tests/compile/test_cache_processes.py``)."""
    shutil.copytree(_inductor_isa_probes(), Path(folder) / "inductor", dirs_exist_ok=True)
    return str(folder)
