"""Runs the model-coverage checks of one or several families over many entries in parallel worker
processes.

``jobs`` workers (:mod:`.worker`) each take the next entry from one shared queue; worker
``i`` runs on ``neuron:(i mod device_count)``, so a two-worker run uses two NeuronCores. Several
families share the same workers (:func:`run_families`): the workers start once, and the queue holds
the families' entries in :data:`COST_ORDER` (the family costing the most per entry first, the
cheapest last), so the last entries, which leave a worker idle while the other finishes, are the
cheapest ones. An
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
from dataclasses import dataclass, field

from .checks import FAIL, Check, Outcome, Report
from .families import get_family, validate_family_options
from .worker import MARK


def causal_lm_architectures() -> list[str]:
    """Every ``model_type`` of the installed transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``,
    sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


#: Families from the highest CPU time per entry to the lowest, the order :func:`run_families` queues
#: them in (CPU-seconds per entry of a cold all-family run on two cores: diffusers ~22, speech-seq2seq
#: ~10, causal-lm ~7, image-text-to-text ~5, seq2seq ~3, encoder ~0.2; see bench/RESULTS.md).
COST_ORDER: tuple[str, ...] = ("diffusers", "speech-seq2seq", "causal-lm", "image-text-to-text", "seq2seq",
                               "encoder")


class _Worker:
    def __init__(self, device: str, options: dict[str, dict[str, object]], env: dict[str, str]):
        self.device, self.options, self.env = device, options, env
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torch_neuronx.model_coverage.worker", self.device,
             json.dumps({"families": self.options})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=self.env, bufsize=1)
        return self.proc

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def run(self, family: str, model_type: str, timeout: float, checks: tuple[Check, ...],
            class_name: str = "") -> Report:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes (start)
        start = time.perf_counter()
        try:
            proc.stdin.write(f"{family}\t{model_type}\n")
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
    runs = run_families([FamilyRun(family, list(architectures), dict(options or {}))], jobs=jobs, timeout=timeout,
                        progress=progress, on_report=on_report)
    return runs[0].reports


@dataclass
class FamilyRun:
    """One family's part of :func:`run_families`: what to run, and (filled by the run) its reports.

    Attributes:
        family: a family name of :data:`~.families.FAMILIES`.
        names: its entries to check, in the order the reports are returned.
        options: keyword arguments of the family's ``check_entry`` (JSON-serialisable).
        reports: one per entry, in the order of ``names`` (filled by the run).
        seconds: wall time from the start of the family's first entry to the end of its last (s;
            other families' entries may run meanwhile on the other workers).
        worker_seconds: the sum of its entries' seconds (worker time spent on this family).
    """

    family: str
    names: list[str]
    options: dict[str, object] = field(default_factory=dict)
    reports: list[Report] = field(default_factory=list)
    seconds: float = 0.0
    worker_seconds: float = 0.0


def queue_order(runs: list[FamilyRun]) -> list[tuple[int, int]]:
    """``(run index, entry index)`` pairs in the order the workers take them: the families in
    :data:`COST_ORDER` (a family not listed there after those that are, in the given order), each
    family's entries in their given order."""
    rank = {name: i for i, name in enumerate(COST_ORDER)}
    order = sorted(range(len(runs)), key=lambda r: (rank.get(runs[r].family, len(rank)), r))
    return [(r, e) for r in order for e in range(len(runs[r].names))]


def run_families(runs: list[FamilyRun], *, jobs: int = 2, timeout: float = 240.0, progress: bool = True,
                 on_report: Callable[[Report], None] | None = None,
                 on_family_done: Callable[[FamilyRun], None] | None = None) -> list[FamilyRun]:
    """Checks the entries of every family of ``runs`` with one pool of ``jobs`` worker processes
    (started once for all families, entries queued by :func:`queue_order`), fills each run's
    ``reports``, ``seconds`` and ``worker_seconds`` and returns ``runs``.

    Args:
        runs: the families and their entries and options (:class:`FamilyRun`).
        jobs: worker processes (≥ 1); each uses one NeuronCore and one CPU thread.
        timeout: seconds allowed per entry (all its checks together).
        progress: show a tqdm progress bar on stderr.
        on_report: called (from a runner thread) with each report as it arrives.
        on_family_done: called (from a runner thread, one call at a time) with a family's run as
            soon as its last entry has finished, so its table can be written before the others end.

    Raises:
        ValueError: an unknown family or one listed twice, ``jobs`` < 1, ``timeout`` ≤ 0, an entry unknown
            to its family or listed twice, or an option a family's ``check_entry`` does not take or rejects.
    """
    import torch

    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    seen_families = [r.family for r in runs]
    if len(set(seen_families)) != len(seen_families):
        raise ValueError(f"families listed twice: {sorted({f for f in seen_families if seen_families.count(f) > 1})}")
    checks_of: list[tuple[Check, ...]] = []
    for run in runs:
        fam = get_family(run.family)
        names = run.names
        known = set(fam.entries())
        unknown = [n for n in names if n not in known]
        if unknown:
            what = "causal-LM architectures of transformers" if run.family == "causal-lm" else f"{run.family} entries"
            raise ValueError(f"not {what}: {unknown}; see `torch-neuronx compat --family {run.family} --list`")
        if len(set(names)) != len(names):
            raise ValueError(f"architectures listed twice: {sorted({n for n in names if names.count(n) > 1})}")
        # A bad option raises here, in the caller's process, not as a model failure in a worker.
        validate_family_options(fam, dict(run.options))
        requested = run.options.get("checks")
        checks_of.append(tuple(requested) if isinstance(requested, (list, tuple)) else fam.checks)
    cores = max(1, torch.neuron.device_count())  # type: ignore[attr-defined]  # registered by the autoload
    env = {k: v for k, v in os.environ.items()}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false")
    order = queue_order(runs)
    todo: queue.Queue[tuple[int, int]] = queue.Queue()
    for item in order:
        todo.put(item)
    results: list[list[Report | None]] = [[None] * len(run.names) for run in runs]
    left = [len(run.names) for run in runs]
    first_start: list[float | None] = [None] * len(runs)

    from tqdm import tqdm

    desc = runs[0].family if len(runs) == 1 else f"{len(runs)} families"
    bar = tqdm(total=len(order), desc=f"compat {desc}", unit="arch", disable=not progress, file=sys.stderr)
    lock = threading.Lock()

    def finish(r: int) -> None:
        run = runs[r]
        run.reports = [x for x in results[r] if x is not None]
        run.worker_seconds = sum(x.seconds for x in run.reports)
        run.seconds = time.perf_counter() - (first_start[r] or time.perf_counter())
        if on_family_done:
            on_family_done(run)

    def serve(worker: _Worker) -> None:
        try:
            while True:
                try:
                    r, e = todo.get_nowait()
                except queue.Empty:
                    return
                run, name = runs[r], runs[r].names[e]
                with lock:
                    if first_start[r] is None:
                        first_start[r] = time.perf_counter()
                report = worker.run(run.family, name, timeout, checks_of[r], get_family(run.family).class_name(name))
                results[r][e] = report
                with lock:
                    bar.set_postfix_str(name)
                    bar.update(1)
                    if on_report:
                        on_report(report)
                    left[r] -= 1
                    if left[r] == 0:
                        finish(r)
        finally:
            worker.stop()

    worker_options = {run.family: dict(run.options) for run in runs}
    workers = [_Worker(f"neuron:{i % cores}", worker_options, env) for i in range(min(jobs, len(order)) or 1)]
    threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    for r, run in enumerate(runs):
        if not run.names:  # nothing queued: finished now
            finish(r)
    return runs
