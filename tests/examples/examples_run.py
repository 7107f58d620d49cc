"""Running the scripts under ``examples/`` from the tests: each runs as its own process (as a
user would run it), offline, with one OpenMP thread and a small HBM per core; torchrun jobs
use a static rendezvous on the loopback interface."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..processes import REPO, cold_compile_cache, free_port, job_env, report

__all__ = ["EXAMPLES", "REPO", "cold_compile_cache", "cpu_env", "free_port", "job_env", "report", "run_cpu_python",
           "run_example", "write_assets"]

EXAMPLES = REPO / "examples"


def cpu_env() -> dict:
    """A plain CPU process: torch_neuronx is not autoloaded (and nothing imports it)."""
    env = job_env()
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    return env


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


def write_assets(directory: Path, **kw) -> tuple[str, str]:
    """``write_tiny_assets(directory, **kw)`` of ``examples/tiny_llm.py``, run in a plain CPU process."""
    code = (f"import sys; sys.path.insert(0, {str(EXAMPLES)!r}); from tiny_llm import write_tiny_assets; "
            f"print('\\n'.join(write_tiny_assets({str(directory)!r}, **{kw!r})))")
    proc = run_cpu_python(code)
    assert proc.returncode == 0, report(proc)
    model_dir, data_file = proc.stdout.strip().splitlines()[-2:]
    return model_dir, data_file
