"""The Diffusers examples (``examples/flux.py``, ``examples/qwen_image.py``) run as scripts, as a user runs them.

Each test launches the example in a fresh process (``python examples/<script>.py`` or ``torchrun``) with the tiny
random-weight pipeline (same seeded weights and CPU latents everywhere), reads the raw image it saved with
``--out`` (``.npy``, float32 ``(1, H, W, 3)`` in [0, 1]) and compares it with the reference run:

- eager ``neuron`` vs ``cpu``: max |diff| <= 1e-3;
- compiled (``--compile``, ``torch.compile(backend="neuron")``, cold compile cache) vs ``cpu``: <= 1e-3;
- ``torchrun --nproc-per-node 2 ... --tp 2`` (Diffusers' neuron tensor-parallel path) vs single-core
  ``neuron``: <= 1e-3, and the transformer really is sharded (the example prints the split).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .examples_run import EXAMPLES, cold_compile_cache, free_port, job_env, report

TOL = 1e-3
# Small enough to keep the whole file well under 3 minutes on 2 cores, large enough to be a real image:
# Flux 32x32 -> 256 image tokens, Qwen-Image 32x32 -> 4 image tokens after its 8x VAE and 2x2 patches.
SIZE = ["--steps", "2", "--height", "32", "--width", "32", "--seed", "0"]
SCRIPTS = ["flux.py", "qwen_image.py"]


def _env(tmp_path: Path) -> dict:
    # job_env puts the repository root on the path (the examples import torch, whose autoload imports
    # this checkout's torch_neuronx). A private compile cache: "--compile" must really compile, not
    # read an earlier run's graphs.
    return job_env({"TORCH_NEURONX_NEFF_CACHE_DIR": cold_compile_cache(tmp_path / "neff-cache")})


class _Job:
    """One launch of ``examples/<script>`` (under torchrun when ``nproc`` > 1), started at construction so
    long jobs (a cold compile) overlap with the others; ``result()`` waits and returns the saved image and
    stdout."""

    def __init__(self, script: str, tmp_path: Path, name: str, *args: str, nproc: int = 1):
        self.out = tmp_path / name
        cmd = [str(EXAMPLES / script), *SIZE, "--out", str(self.out), *args]
        if nproc > 1:
            cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                   "--master-addr=127.0.0.1", f"--master-port={free_port()}", *cmd]
        else:
            cmd = [sys.executable, *cmd]
        # Output to files, not pipes: a job left running in the background must never block on a full pipe.
        self.logs = [open(self.out.with_suffix(f".{s}.log"), "w+") for s in ("stdout", "stderr")]
        self.proc = subprocess.Popen(cmd, env=_env(tmp_path), cwd=tmp_path, text=True,
                                     stdout=self.logs[0], stderr=self.logs[1])

    def result(self, timeout: float = 300) -> tuple[np.ndarray, str]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        stdout, stderr = (f.seek(0) or f.read() for f in self.logs)
        for f in self.logs:
            f.close()
        done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, stdout, stderr)
        assert done.returncode == 0, report(done)
        assert self.out.with_suffix(".png").is_file(), report(done)
        image = np.load(self.out.with_suffix(".npy"))
        assert image.shape == (1, 32, 32, 3) and image.dtype == np.float32, image.shape
        assert np.isfinite(image).all()
        return image, stdout


def _run(script: str, tmp_path: Path, name: str, *args: str, nproc: int = 1) -> tuple[np.ndarray, str]:
    """Runs ``examples/<script>`` to the end; returns the saved image and stdout."""
    return _Job(script, tmp_path, name, *args, nproc=nproc).result()


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())


@pytest.fixture(scope="module", params=SCRIPTS)
def reference(request, tmp_path_factory):
    """The example's CPU image and its single-core eager ``neuron`` image (shared by the tests of a script)."""
    script = request.param
    tmp = tmp_path_factory.mktemp(script.removesuffix(".py"))
    # The cold compile is the longest job: start it first, it runs while the others do.
    compiled = _Job(script, tmp, "compiled", "--device", "neuron", "--compile")
    cpu, cpu_out = _run(script, tmp, "cpu", "--device", "cpu")
    neuron, neuron_out = _run(script, tmp, "neuron", "--device", "neuron")
    # A real picture, not a constant: random VAE weights still give a spread of values.
    assert cpu.std() > 0.01, cpu_out
    yield script, tmp, cpu, neuron, neuron_out, compiled
    if compiled.proc.poll() is None:
        compiled.proc.kill()
        compiled.proc.wait()


def test_eager_matches_cpu(reference):
    script, _, cpu, neuron, out, _ = reference
    diff = _max_diff(neuron, cpu)
    print(f"{script} eager neuron vs cpu: max |diff| = {diff:.3g}")
    assert diff <= TOL, f"{script}: neuron image differs from CPU by {diff}\n{out}"
    assert "on neuron [eager, float32]" in out and "host fallbacks:" in out, out


def test_tensor_parallel_matches_single_core(reference):
    script, tmp, _, neuron, _, _ = reference
    tp, out = _run(script, tmp, "tp2", "--device", "neuron", "--tp", "2", nproc=2)
    assert "tp=2" in out, out
    # Diffusers' neuron TP path really split the transformer: rank 0 holds well under all of its weights.
    line = next(ln for ln in out.splitlines() if "parameters sharded" in ln)
    n_sharded = int(line.split("transformer:")[1].split()[0])
    local, total = map(int, line.split("holds ")[1].split()[0].split("/"))
    assert n_sharded > 0 and local < 0.9 * total, line
    # Every rank produced the same image.
    assert "over 2 ranks: 0" in out, out
    diff = _max_diff(tp, neuron)
    print(f"{script} tp=2 vs single-core neuron: max |diff| = {diff:.3g}")
    assert diff <= TOL, f"{script}: tp=2 image differs from single-core neuron by {diff}\n{out}"


def test_compiled_matches_cpu(reference):
    script, _, cpu, _, _, job = reference
    compiled, out = job.result()
    assert "on neuron [compiled, float32]" in out, out
    diff = _max_diff(compiled, cpu)
    print(f"{script} compiled neuron vs cpu: max |diff| = {diff:.3g}")
    assert diff <= TOL, f"{script}: compiled neuron image differs from CPU by {diff}\n{out}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_tp_without_torchrun_is_refused(script, tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), "--tp", "2"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, report(proc)
    assert "torchrun --nproc-per-node 2" in proc.stderr, report(proc)
