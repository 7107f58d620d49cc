"""The FLUX.2, Qwen-Image-2.1 and H3 examples (``examples/flux2.py``, ``qwen_image21.py``, ``h3.py``) run as
scripts, as a user runs them, with their tiny random-weight pipelines (same seeded weights and CPU latents
everywhere):

- eager ``neuron`` vs ``cpu``: max |diff| of the saved float32 outputs <= 1e-3;
- compiled (``--compile``, cold compile cache) vs ``cpu``: <= 1e-3;
- ``torchrun --nproc-per-node 2 ... --tp 2`` vs single-core ``neuron`` <= 1e-3 for FLUX.2 and Qwen-Image-2.1
  (their transformers have a ``_tp_plan``); H3 refuses ``--tp 2`` and says why.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .examples_run import EXAMPLES, cold_compile_cache, free_port, job_env, report

TOL = 1e-3


def _launch(script: str, tmp: Path, name: str, *args: str, nproc: int = 1) -> tuple[subprocess.Popen, Path]:
    out = tmp / name
    cmd = [str(EXAMPLES / script), "--steps", "2", "--seed", "0", "--out", str(out), *args]
    if nproc > 1:
        cmd = ["-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1",
               f"--master-port={free_port()}", *cmd]
    # "--compile" really compiles: no graph of an earlier run in the cache
    env = job_env({"TORCH_NEURONX_NEFF_CACHE_DIR": cold_compile_cache(tmp / "neff-cache")})
    logs = [open(out.with_suffix(f".{s}.log"), "w+") for s in ("stdout", "stderr")]
    return subprocess.Popen([sys.executable, *cmd], env=env, cwd=tmp, text=True, stdout=logs[0],
                            stderr=logs[1]), out


def _wait(job: tuple[subprocess.Popen, Path], timeout: float = 600) -> tuple[dict[str, np.ndarray], str]:
    proc, out = job
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    stdout, stderr = (out.with_suffix(f".{s}.log").read_text() for s in ("stdout", "stderr"))
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 0, report(done)
    if out.with_suffix(".npz").is_file():
        arrays = dict(np.load(out.with_suffix(".npz")))
    else:
        arrays = {"image": np.load(out.with_suffix(".npy"))}
    for value in arrays.values():
        assert value.dtype == np.float32 and np.isfinite(value).all() and value.std() > 0.01, stdout
    return arrays, stdout


def _max_diff(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    assert a.keys() == b.keys() and all(a[k].shape == b[k].shape for k in a)
    return max(float(np.abs(a[k].astype(np.float64) - b[k]).max()) for k in a)


@pytest.mark.parametrize("script, tp", [("flux2.py", True), ("qwen_image21.py", True), ("h3.py", False)])
def test_seed_pipeline_on_neuron_matches_cpu(script, tp, tmp_path):
    """CPU, eager neuron, compiled neuron (and TP 2): the cold compile and the TP run start first and run
    while the others do."""
    compiled = _launch(script, tmp_path, "compiled", "--device", "neuron", "--compile")
    tp2 = _launch(script, tmp_path, "tp2", "--device", "neuron", "--tp", "2", nproc=2) if tp else None
    cpu, _ = _wait(_launch(script, tmp_path, "cpu", "--device", "cpu"))
    neuron, out = _wait(_launch(script, tmp_path, "neuron", "--device", "neuron"))
    assert "on neuron [eager, float32]" in out and "host fallbacks:" in out, out
    assert _max_diff(neuron, cpu) <= TOL, out
    got, out = _wait(compiled, timeout=900)  # a cold compile: ~35 CPU-s each on an idle 2-core machine
    assert "on neuron [compiled, float32]" in out, out
    assert _max_diff(got, cpu) <= TOL, out
    if tp2 is not None:
        got, out = _wait(tp2)
        line = next(ln for ln in out.splitlines() if "parameters sharded" in ln)
        local, total = map(int, line.split("holds ")[1].split()[0].split("/"))
        assert int(line.split("transformer:")[1].split()[0]) > 0 and local < 0.9 * total, line
        assert "over 2 ranks: 0" in out, out
        assert _max_diff(got, neuron) <= TOL, out


def test_h3_refuses_tensor_parallel_and_says_why(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "h3.py"), "--tp", "2"], env=job_env({}),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "defines no _tp_plan" in proc.stderr, report(proc)
