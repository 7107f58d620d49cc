"""Runs the model-coverage checks of one family over many entries in parallel worker processes.

``jobs`` workers (:mod:`.worker`) each take the next architecture from a shared queue; worker
``i`` runs on ``neuron:(i mod device_count)``, so a two-worker run uses two NeuronCores. An
architecture that crashes its worker (segfault, abort) or runs longer than ``timeout``
seconds is reported as failing on ``neuron`` with that reason — unless its CPU reference had
not finished, which the report cannot know, so the reason says so — and the worker is
restarted for the next one. A progress bar (tqdm, on stderr) shows the architectures done.
"""
from __future__ import annotations

import json
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable

from .checks import FAIL, Check, Outcome, Report
from .families import get_family, validate_family_options
from .worker import MARK


def causal_lm_architectures() -> list[str]:
    """Every ``model_type`` of the installed transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``,
    sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


class _Worker:
    def __init__(self, device: str, options: dict[str, object], env: dict[str, str]):
        self.device, self.options, self.env = device, options, env
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torch_neuronx.model_coverage.worker", self.device, json.dumps(self.options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=self.env, bufsize=1)
        return self.proc

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def run(self, model_type: str, timeout: float, checks: tuple[Check, ...], class_name: str = "") -> Report:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes (start)
        start = time.perf_counter()
        try:
            proc.stdin.write(model_type + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return _failed(model_type, "the worker process exited before starting", 0.0, checks, class_name)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                left = timeout - (time.perf_counter() - start)
                if left <= 0 or not sel.select(left):
                    self.stop()
                    return _failed(model_type, f"timed out after {timeout:.0f} s", time.perf_counter() - start,
                                   checks, class_name)
                line = proc.stdout.readline()
                if not line:  # EOF: the worker died
                    code = proc.wait()
                    self.proc = None
                    return _failed(model_type, f"the worker process died (exit status {code})",
                                   time.perf_counter() - start, checks, class_name)
                if line.startswith(MARK):
                    return Report.from_dict(json.loads(line[len(MARK):]))
        finally:
            sel.close()


def _failed(model_type: str, reason: str, seconds: float, checks: tuple[Check, ...], class_name: str) -> Report:
    return Report(model_type, class_name, outcomes={c: Outcome(FAIL, reason) for c in checks}, seconds=seconds)


def run_coverage(architectures: Iterable[str], *, jobs: int = 2, timeout: float = 240.0,
               options: dict[str, object] | None = None, progress: bool = True,
               on_report: Callable[[Report], None] | None = None, family: str = "causal-lm") -> list[Report]:
    """Checks ``architectures`` with ``jobs`` worker processes and returns the reports in the
    order of ``architectures``.

    Args:
        architectures: entry names of ``family`` (model types; class names for ``encoder`` and
            ``diffusers``; see :func:`causal_lm_architectures` and :mod:`.families`).
        jobs: worker processes (≥ 1); each uses one NeuronCore and one CPU thread.
        timeout: seconds allowed per architecture (all its checks together).
        options: keyword arguments of :func:`~.checks.check_architecture` (``new_tokens``,
            ``atol``, ``checks``, ...), JSON-serialisable.
        progress: show a tqdm progress bar on stderr.
        on_report: called (from a runner thread) with each report as it arrives.
        family: a family name of :data:`~.families.FAMILIES` (default ``"causal-lm"``).

    Raises:
        ValueError: an unknown family, ``jobs`` < 1, ``timeout`` ≤ 0, an entry unknown to the family or
            listed twice, or an option the family's ``check_entry`` does not take or rejects.
    """
    import torch

    fam = get_family(family)
    names = list(architectures)
    known = set(fam.entries())
    unknown = [n for n in names if n not in known]
    if unknown:
        what = "causal-LM architectures of transformers" if family == "causal-lm" else f"{family} entries"
        raise ValueError(f"not {what}: {unknown}; see `torch-neuronx compat --family {family} --list`")
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if len(set(names)) != len(names):
        raise ValueError(f"architectures listed twice: {sorted({n for n in names if names.count(n) > 1})}")
    # A bad option raises here, in the caller's process, not as a model failure in a worker.
    validate_family_options(fam, dict(options or {}))
    requested = (options or {}).get("checks")
    checks: tuple[Check, ...] = tuple(requested) if isinstance(requested, (list, tuple)) else fam.checks
    cores = max(1, torch.neuron.device_count())  # type: ignore[attr-defined]  # registered by the autoload
    env = {k: v for k, v in os.environ.items()}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false")
    todo: queue.Queue[tuple[int, str]] = queue.Queue()
    for item in enumerate(names):
        todo.put(item)
    results: list[Report | None] = [None] * len(names)

    from tqdm import tqdm

    bar = tqdm(total=len(names), desc=f"compat {family}", unit="arch", disable=not progress, file=sys.stderr)
    lock = threading.Lock()

    def serve(worker: _Worker) -> None:
        try:
            while True:
                try:
                    index, name = todo.get_nowait()
                except queue.Empty:
                    return
                report = worker.run(name, timeout, checks, fam.class_name(name))
                results[index] = report
                with lock:
                    bar.set_postfix_str(name)
                    bar.update(1)
                    if on_report:
                        on_report(report)
        finally:
            worker.stop()

    worker_options = {**(options or {}), "family": family}
    workers = [_Worker(f"neuron:{i % cores}", worker_options, env) for i in range(min(jobs, len(names)) or 1)]
    threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    return [r for r in results if r is not None]
