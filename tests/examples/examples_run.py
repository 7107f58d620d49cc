"""Running the scripts under ``examples/`` from the tests: each runs as its own process (as a
user would run it), offline, with one OpenMP thread and a small HBM per core; torchrun jobs
use a static rendezvous on the loopback interface."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def job_env(extra: dict | None = None) -> dict:
    """Our environment minus per-process device variables, plus offline / CI settings. The
    repository is put on ``PYTHONPATH`` so the scripts import this checkout's torch_neuronx."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_", "TORCH_NEURONX_"))}
    for k in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    env.update(
        OMP_NUM_THREADS="1", CI="true", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1", TORCH_NEURONX_HBM_PER_CORE="2GiB",
        PYTHONWARNINGS="ignore::FutureWarning,ignore::UserWarning",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    env.update(extra or {})
    return env


def cpu_env() -> dict:
    """A plain CPU process: torch_neuronx is not autoloaded (and nothing imports it)."""
    env = job_env()
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    return env


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_example(script: str, *args: str, nproc: int | None = None, env: dict | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs ``examples/<script> args...``: plainly, or under torchrun with ``nproc`` processes."""
    cmd = [sys.executable]
    if nproc is not None:
        cmd += ["-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--nnodes=1",
                "--master-addr=127.0.0.1", f"--master-port={free_port()}"]
    cmd += [str(EXAMPLES / script), *args]
    return subprocess.run(cmd, env=job_env(env), capture_output=True, text=True, timeout=timeout,
                          cwd=str(REPO))


def run_cpu_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs ``code`` in a plain CPU interpreter (see :func:`cpu_env`)."""
    return subprocess.run([sys.executable, "-c", code], env=cpu_env(), capture_output=True, text=True,
                          timeout=timeout)


def report(proc: subprocess.CompletedProcess) -> str:
    """The tail of a process's output, for assertion messages."""
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-5000:]}\n--- stderr\n{proc.stderr[-5000:]}"


def write_assets(directory: Path, **kw) -> tuple[str, str]:
    """``examples/tiny_llm.write_tiny_assets(directory, **kw)`` run in a plain CPU process."""
    code = (f"import sys; sys.path.insert(0, {str(EXAMPLES)!r}); from tiny_llm import write_tiny_assets; "
            f"print('\\n'.join(write_tiny_assets({str(directory)!r}, **{kw!r})))")
    proc = run_cpu_python(code)
    assert proc.returncode == 0, report(proc)
    model_dir, data_file = proc.stdout.strip().splitlines()[-2:]
    return model_dir, data_file
