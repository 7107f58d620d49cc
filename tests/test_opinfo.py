"""Differential test of the ``neuron`` device over PyTorch's OpInfo database.

For every OpInfo in ``op_db`` and each of float32 / bfloat16 that the op supports on CPU, the
first sample inputs (``op.sample_inputs("cpu", dtype)``, up to TORCH_NEURONX_OPINFO_SAMPLES per op)
are run once on CPU and once on ``neuron``: every tensor is copied with its storage, strides and
offset (aliasing between arguments kept), ``device="cpu"`` / ``torch.device("cpu")`` arguments
become ``neuron``, and a sample without any tensor (``arange(2)``) runs under
``torch.device("neuron")``. Every tensor the neuron run returns must live on ``neuron`` and match
the CPU result (float32: rtol 1.3e-6, atol 1e-5; bfloat16: rtol 1.6e-2, atol 1e-2; NaNs equal);
input tensors the op mutated must match too.

Random ops (by name and the ``nondeterministic_seeded`` tag), ops returning uninitialised memory,
and any sample whose CPU result changes with the seed (OpInfo's ``wrapper_set_seed`` is bypassed
so that this shows) are checked for shape, dtype and device only. If a sample fails on neuron and
its sample function, asked for the ``neuron`` device, leaves some tensors on CPU (as CUDA OpInfo
tests see them, e.g. ``tensor_split``'s indices), it is retried with that placement.

Samples that raise on CPU are not counted; an op counts when at least one of its samples runs on
CPU, and passes when all of those samples pass on neuron. The expected results are explicit, per
(op, dtype), each with its reason (``tests/opinfo_expected_failures.py``): ``EXPECTED_FAILURES``
(runs on CPU, fails on neuron) and ``NOT_COUNTED`` (no sample runs on CPU). One pytest test per
dtype sweeps op_db and fails on any difference with them: an unexpected failure, an unexpected
pass (a fix: remove its entry), an op no longer counted, or an entry for an op that was not swept.
The message lists the entries to add or remove. Ops whose CPU sample is slower than
SLOW_CPU_SECONDS are skipped (machine load) and may be at most MAX_SLOW_FRACTION of the ops.

The sweep runs in worker subprocesses (``python -m tests.test_opinfo --worker ...``), so an op that
kills or hangs the interpreter is recorded as a failure of that op, with the sample and stage
(cpu run / neuron run) that did it, instead of aborting the run.

Environment:
  TORCH_NEURONX_OPINFO_REPORT   write the per-op result table here (``.json`` -> JSON, else TSV)
  TORCH_NEURONX_OPINFO_SAMPLES  samples checked per op and dtype (default 100, i.e. nearly all)
  TORCH_NEURONX_OPINFO_WORKERS  worker processes (default: min(2, CPU count))
  TORCH_NEURONX_OPINFO_OPS      comma-separated op names (``name`` or ``name.variant``) to restrict to

Run it standalone from the repository root for a readable summary and the differences with the
expectations: ``python -m tests.test_opinfo [float32|bfloat16 ...]``.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import torch

if not __package__:  # run as a file: the relative imports below need the tests package
    sys.exit("run the sweep as a module from the repository root: python -m tests.test_opinfo [float32|bfloat16 ...]")

from .opinfo_expected_failures import EXPECTED_FAILURES, NOT_COUNTED
from .processes import REPO

SAMPLES_PER_OP = int(os.environ.get("TORCH_NEURONX_OPINFO_SAMPLES", "100"))
MAX_SAMPLES_TRIED = 4 * SAMPLES_PER_OP  # samples looked at to find SAMPLES_PER_OP that run on CPU
SLOW_CPU_SECONDS = 5.0  # an op whose CPU sample takes longer is skipped (not counted)
HANG_SECONDS = 120.0  # a worker silent this long on one sample is killed; the op counts as failed
WORKERS = int(os.environ.get("TORCH_NEURONX_OPINFO_WORKERS", "0")) or min(2, os.cpu_count() or 1)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
TOLERANCES = {"float32": (1.3e-6, 1e-5), "bfloat16": (1.6e-2, 1e-2)}  # (rtol, atol)
MAX_SLOW_FRACTION = 0.02  # ops skipped as slow, of the ops swept; more means the sweep lost coverage

# Counted in the denominator; everything else (cpu_fail, slow) is excluded.
COUNTED = ("pass", "fail", "crash", "hang")
FAILED = ("fail", "crash", "hang")

# Ops that draw random numbers: only shape / dtype / device are compared.
_RANDOM_NAMES = re.compile(
    r"^(rand|randn|randint|randperm|rand_like|randn_like|randint_like|normal|bernoulli|multinomial"
    r"|uniform|exponential|geometric|cauchy|log_normal|poisson|nn\.functional\.rrelu"
    r"|nn\.functional\.fractional_max_pool\dd)$"
)
# Ops whose output is uninitialised memory: likewise shape / dtype / device only.
_UNINITIALISED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted"}


def _op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _values_unchecked(op) -> bool:
    """True for ops whose values are not reproducible across two runs (random / uninitialised)."""
    if op.name in _UNINITIALISED or op.has_nondeterministic_output:
        return True
    if _RANDOM_NAMES.match(op.name):
        return True
    if "dropout" in op.name and "backward" not in op.name and op.variant_test_name != "without_train":
        return True
    packet = getattr(torch.ops.aten, op.aten_name, None) if op.aten_name else None
    if packet is not None:
        try:
            overloads = [getattr(packet, name) for name in packet.overloads()]
        except Exception:  # noqa: BLE001  (an odd packet: no overloads to inspect)
            overloads = []
        if any(torch.Tag.nondeterministic_seeded in ov.tags for ov in overloads):
            return True
    return False


# --------------------------------------------------------------------------------------------
# Worker side: run ops, compare, emit JSON events.
# --------------------------------------------------------------------------------------------


class _Mismatch(Exception):
    pass


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(sample) -> str:
    try:
        text = sample.summary()
    except Exception:  # noqa: BLE001  (a description only: fall back to repr)
        text = repr(sample)
    text = text.replace(', device="cpu"', "").replace(", broadcasts_input=False", "")
    return _short(text, 600)


def _copy(obj, device: str, memo: dict, probe=None):
    """Copy a sample structure to ``device``.

    Tensors keep their exact layout (the whole storage is copied and the view rebuilt with the
    same sizes, strides and offset), tensors sharing a storage still share one, and the same
    tensor object maps to the same copy. ``torch.device("cpu")`` / ``"cpu"`` map to ``device``.
    ``probe`` is the same sample generated for the ``neuron`` device: a tensor the sample function
    left on CPU there (like CUDA's OpInfo tests do) is kept on CPU.
    memo["tensors"] collects (original, copy) pairs.
    """
    if isinstance(obj, torch.Tensor):
        target = device
        if isinstance(probe, torch.Tensor) and probe.device.type == "cpu":
            target = "cpu"
        key = (id(obj), target)
        tensors = memo.setdefault("tensors", {})
        if key not in tensors:
            tensors[key] = (obj, _copy_tensor(obj, target, memo.setdefault(("storages", target), {})))
        return tensors[key][1]
    if isinstance(obj, torch.device):
        return torch.device(device) if obj.type == "cpu" else obj
    if isinstance(obj, str) and obj in ("cpu", "cpu:0"):
        return device
    if isinstance(obj, (tuple, list)):
        probes = probe if isinstance(probe, (tuple, list)) and len(probe) == len(obj) else [None] * len(obj)
        items = [_copy(x, device, memo, p) for x, p in zip(obj, probes, strict=True)]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)(*items)
        return type(obj)(items)
    if isinstance(obj, dict):
        probes = probe if isinstance(probe, dict) else {}
        return {k: _copy(v, device, memo, probes.get(k)) for k, v in obj.items()}
    return obj


def _copy_tensor(t: torch.Tensor, device: str, storages: dict) -> torch.Tensor:
    t = t.detach()
    plain = (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and not t.is_nested
        and not t.is_quantized
        and not t.is_conj()
        and not t.is_neg()
        and t.device.type == "cpu"
    )
    if not plain:
        return t.clone() if device == "cpu" else t.to(device)
    storage = t.untyped_storage()
    key = storage.data_ptr() if storage.nbytes() else ("empty", id(t))
    flat = storages.get(key)
    if flat is None:
        raw = torch.empty(0, dtype=torch.uint8).set_(storage)
        flat = raw.clone() if device == "cpu" else raw.to(device)
        storages[key] = flat
    return flat.view(t.dtype).as_strided(t.size(), t.stride(), t.storage_offset())


def _probe_sample(op, dtype, index):
    """The ``index``-th sample generated for the ``neuron`` device (tensor placement only)."""
    try:
        _seed()
        sample = next(itertools.islice(op.sample_inputs("neuron", dtype, requires_grad=False), index, None))
        return (sample.input, sample.args, sample.kwargs)
    except Exception:  # noqa: BLE001  (no probe: the sample is copied without placement hints)
        return None


def _seed(seed: int = 0) -> None:
    # Only the CPU generator matters (sample inputs, CPU runs); torch.manual_seed would also queue
    # a lazy CUDA seeding call, with its stack trace, every time.
    random.seed(seed)
    torch.default_generator.manual_seed(seed)


def _compare(expected, actual, path: str, rtol: float, atol: float, values: bool, device="neuron") -> None:
    """Raise _Mismatch unless ``actual`` (neuron run) matches ``expected`` (CPU run).

    Tensors in ``actual`` must be on ``device`` (any device if None); ``values=False`` compares
    only types, shapes, dtypes and devices.
    """
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise _Mismatch(f"{path}: expected a Tensor, got {type(actual).__name__}")
        if device is not None and actual.device.type != device:
            raise _Mismatch(f"{path}: tensor on {actual.device}, not on {device}")
        if actual.dtype != expected.dtype or actual.shape != expected.shape:
            raise _Mismatch(
                f"{path}: {actual.dtype}{tuple(actual.shape)} on neuron vs "
                f"{expected.dtype}{tuple(expected.shape)} on CPU"
            )
        if actual.layout != expected.layout:
            raise _Mismatch(f"{path}: layout {actual.layout} on neuron vs {expected.layout} on CPU")
        if not values:
            return
        try:
            got = actual.detach().cpu()
        except Exception as e:
            raise _Mismatch(f"{path}: copying the neuron result to CPU raised "
                            f"{type(e).__name__}: {_short(e, 200)}") from e
        try:
            torch.testing.assert_close(
                got, expected.detach(), rtol=rtol, atol=atol, equal_nan=True, check_stride=False
            )
        except AssertionError as e:
            raise _Mismatch(f"{path}: {_short(e, 300)}") from e
        return
    if isinstance(expected, (tuple, list)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            raise _Mismatch(f"{path}: {type(actual).__name__} {_short(repr(actual), 80)} "
                            f"vs {_short(repr(expected), 80)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _compare(e, a, f"{path}[{i}]", rtol, atol, values, device)
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise _Mismatch(f"{path}: dict keys differ")
        for k in expected:
            _compare(expected[k], actual[k], f"{path}[{k!r}]", rtol, atol, values, device)
        return
    if isinstance(expected, torch.device):
        want = device if expected.type == "cpu" and device is not None else expected.type
        if not isinstance(actual, torch.device) or (device is not None and actual.type != want):
            raise _Mismatch(f"{path}: device {actual} vs {expected} on CPU")
        return
    if isinstance(expected, (bool, int, float, complex)) and not isinstance(expected, torch.SymInt):
        if type(actual) is not type(expected):
            raise _Mismatch(f"{path}: {type(actual).__name__} {actual!r} vs {type(expected).__name__} {expected!r}")
        if values and not isinstance(expected, bool):
            try:
                torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                raise _Mismatch(f"{path}: {_short(e, 200)}") from e
        elif values and actual != expected:
            raise _Mismatch(f"{path}: {actual!r} vs {expected!r}")
        return
    if values and actual != expected:
        raise _Mismatch(f"{path}: {_short(repr(actual), 100)} vs {_short(repr(expected), 100)}")


def _tensors(obj, path: str = "") -> list:
    """(path, tensor) for every tensor in a nested structure of tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return [(path, obj)]
    if isinstance(obj, (tuple, list)):
        return [item for i, x in enumerate(obj) for item in _tensors(x, f"{path}[{i}]")]
    if isinstance(obj, dict):
        return [item for k, v in obj.items() for item in _tensors(v, f"{path}[{k!r}]")]
    return []


def _seeded_by_caller(op, *args, **kwargs):
    # Replaces OpInfo's wrapper_set_seed (which reseeds with 42 around random ops): the CPU and
    # neuron generators differ anyway, and the seed-sensitivity probe must see the randomness.
    return op(*args, **kwargs)


def _patch_wrapper_set_seed() -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.testing._internal") and hasattr(module, "wrapper_set_seed"):
            module.wrapper_set_seed = _seeded_by_caller


def _run(op, sample_input, args, kwargs, seed: int = 0):
    _seed(seed)
    return op(sample_input, *args, **kwargs)


def _check_op(op, dtype_name: str, emit) -> dict:
    dtype = DTYPES[dtype_name]
    rtol, atol = TOLERANCES[dtype_name]
    op_values = not _values_unchecked(op)
    started = time.monotonic()
    result = {"status": "pass", "samples": 0, "values_checked": op_values}
    notes = set()

    try:
        _seed()
        samples = iter(op.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception as e:  # noqa: BLE001
        return {**result, "status": "cpu_fail", "error": f"sample_inputs: {type(e).__name__}: {_short(e, 200)}"}

    cpu_error = None
    for index in range(MAX_SAMPLES_TRIED):
        if result["samples"] >= SAMPLES_PER_OP:
            break
        try:
            sample = next(samples)
        except StopIteration:
            break
        except Exception as e:  # noqa: BLE001
            cpu_error = cpu_error or f"sample_inputs: {type(e).__name__}: {_short(e, 200)}"
            break
        desc = _describe(sample)
        emit({"event": "sample", "index": index, "sample": desc, "stage": "cpu run"})
        parts = (sample.input, sample.args, sample.kwargs)

        # Copies are made first: the CPU run may mutate the sample in place.
        try:
            pristine = _copy(parts, "cpu", {})
        except Exception as e:  # noqa: BLE001
            cpu_error = cpu_error or f"copying the sample: {type(e).__name__}: {_short(e, 200)}"
            continue
        try:
            n_parts = _copy(parts, "neuron", {})
        except Exception as e:  # noqa: BLE001
            return {**result, "status": "fail", "stage": "copy to neuron", "sample": desc,
                    "error": f"{type(e).__name__}: {_short(e)}"}

        t0 = time.monotonic()
        try:
            expected = _run(op, *parts)
        except Exception as e:  # noqa: BLE001
            cpu_error = cpu_error or f"{type(e).__name__}: {_short(e, 200)}"
            continue
        cpu_seconds = time.monotonic() - t0
        if cpu_seconds > SLOW_CPU_SECONDS:
            if result["samples"] == 0:
                return {**result, "status": "slow", "sample": desc,
                        "error": f"CPU sample took {cpu_seconds:.1f} s"}
            break
        result["samples"] += 1

        # A sample whose CPU result changes with the seed is random: compare metadata only.
        values = op_values
        if values:
            try:
                again = _run(op, *_copy(pristine, "cpu", {}), seed=1)
                _compare(expected, again, "output", 0.0, 0.0, True, "cpu")
            except Exception:  # noqa: BLE001
                values = False
                notes.add("random sample: values not compared")

        emit({"event": "stage", "stage": "neuron run"})
        try:
            if _tensors(parts):
                actual = _run(op, *n_parts)
            else:
                # No tensor and no device argument to map (e.g. ``arange(2)``): the op creates its
                # result on the default device, so make that neuron.
                with torch.device("neuron"):
                    actual = _run(op, *n_parts)
        except Exception as e:  # noqa: BLE001
            error = f"{type(e).__name__}: {_short(e)}"
            # Sample functions leave some tensors on CPU whatever the device (tensor_split's
            # indices, ...); CUDA runs them that way. Retry with the placement the sample
            # function gives for the neuron device.
            probe = _probe_sample(op, dtype, index)
            memo: dict = {}
            try:
                n_parts = _copy(pristine, "neuron", memo, probe)
                if not any(c.device.type == "cpu" for _, c in memo.get("tensors", {}).values()):
                    raise RuntimeError("no tensor placed on CPU")
                actual = _run(op, *n_parts)
                notes.add("some tensors left on CPU, as the sample function places them for the device")
            except Exception:  # noqa: BLE001
                return {**result, "status": "fail", "stage": "neuron run", "sample": desc, "error": error}
            parts = _copy(pristine, "cpu", {})
            expected = _run(op, *parts)
        try:
            _compare(expected, actual, "output", rtol, atol, values)
        except _Mismatch as e:
            return {**result, "status": "fail", "stage": "compare", "sample": desc, "error": str(e)}
        except Exception as e:  # noqa: BLE001
            return {**result, "status": "fail", "stage": "compare", "sample": desc,
                    "error": f"{type(e).__name__}: {_short(e)}"}
        # In-place effects: every input tensor must have been changed (or left alone) alike.
        try:
            for name, cpu_part, n_part in zip(("input", "args", "kwargs"), parts, n_parts, strict=True):
                cpu_tensors, n_tensors = _tensors(cpu_part), _tensors(n_part)
                if len(cpu_tensors) != len(n_tensors):
                    raise _Mismatch(f"{name}: tensor structure changed")
                for (path, c), (_, n) in zip(cpu_tensors, n_tensors, strict=True):
                    _compare(c, n, f"{name}{path} (after the op)", rtol, atol, values, None)
        except _Mismatch as e:
            return {**result, "status": "fail", "stage": "compare", "sample": desc, "error": str(e)}

    result["seconds"] = round(time.monotonic() - started, 3)
    if notes:
        result["notes"] = "; ".join(sorted(notes))
    if result["samples"] == 0:
        return {**result, "status": "cpu_fail", "error": cpu_error or "no sample inputs"}
    return result


def _worker_main(dtype_name: str, fd: int, check=None) -> None:
    import faulthandler
    import warnings

    faulthandler.enable()
    warnings.simplefilter("ignore")
    if WORKERS > 1:
        torch.set_num_threads(1)
    from torch.testing._internal.common_methods_invocations import op_db

    _patch_wrapper_set_seed()
    out = os.fdopen(fd, "w", buffering=1)

    def emit(event):
        out.write(json.dumps(event) + "\n")
        out.flush()

    emit({"event": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        index = int(line)
        op = op_db[index]
        try:
            res = (check or _check_op)(op, dtype_name, emit)
        except BaseException as e:  # noqa: BLE001 - anything escaping counts against the op
            res = {"status": "fail", "stage": "harness", "error": f"{type(e).__name__}: {_short(e)}"}
        emit({"event": "result", **res})


# --------------------------------------------------------------------------------------------
# Parent side: schedule ops over worker subprocesses, survive crashes and hangs.
# --------------------------------------------------------------------------------------------


class _Worker:
    def __init__(self, dtype_name: str, events: queue.Queue, module: str = "tests.test_opinfo"):
        read_fd, write_fd = os.pipe()
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.setdefault("PYTHONFAULTHANDLER", "1")
        # The worker is this module run as ``python -m tests.test_opinfo``: the repository first
        # on the path, so it imports this checkout's tests package and torch_neuronx.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--worker", dtype_name, str(write_fd)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            pass_fds=(write_fd,),
            env=env,
            text=True,
        )
        os.close(write_fd)
        self.ready = False
        self.dead = False
        self.task = None
        self.sample = None
        self.last = time.monotonic()
        self.events = events
        self.thread = threading.Thread(target=self._read, args=(read_fd,), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd) as f:
            for line in f:
                try:
                    self.events.put((self, json.loads(line)))
                except ValueError:
                    pass
        self.events.put((self, None))

    def send(self, index: int) -> None:
        self.task = index
        self.sample = None
        self.last = time.monotonic()
        self.proc.stdin.write(f"{index}\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def kill(self) -> None:
        self.dead = True
        self.proc.kill()
        self.proc.wait()

    def crash_message(self) -> str:
        """The fatal error and innermost frames faulthandler printed, else the stderr tail."""
        text = self.stderr_tail(20000)
        start = text.rfind("Fatal Python error")
        if start < 0:
            return _short(text[-600:], 600)
        text = text[start:].split("\nExtension modules:")[0]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return _short(" | ".join(lines[:8]), 700)

    def stderr_tail(self, limit: int = 1500) -> str:
        try:
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - limit))
            return self.log.read().decode(errors="replace")
        except OSError:
            return ""


def _selected_ops(dtype: torch.dtype):
    from torch.testing._internal.common_methods_invocations import op_db

    only = {s.strip() for s in os.environ.get("TORCH_NEURONX_OPINFO_OPS", "").split(",") if s.strip()}
    chosen = []
    for index, op in enumerate(op_db):
        if only and op.name not in only and _op_key(op) not in only:
            continue
        try:
            supported = dtype in op.supported_dtypes("cpu")
        except Exception:  # noqa: BLE001  (an op whose dtypes cannot be listed is not run)
            supported = False
        if supported:
            chosen.append((index, _op_key(op)))
    return chosen


def run_sweep(dtype_name: str, workers: int = WORKERS, module: str = "tests.test_opinfo",
              ops: list | None = None) -> list[dict]:
    """Run every op supporting ``dtype_name`` on CPU; one result dict per op.

    ``module`` and ``ops`` let other sweeps reuse the crash-isolating worker pool: ``module`` is run
    as ``python -m module --worker <dtype_name> <fd>`` (its worker calls :func:`_worker_main` with its
    own check), ``ops`` is the list of (op_db index, name) to run (default: every op supporting
    ``dtype_name``)."""
    ops = ops if ops is not None else _selected_ops(DTYPES[dtype_name])
    names = dict(ops)
    pending = collections.deque(index for index, _ in ops)
    results: dict[int, dict] = {}
    events: queue.Queue = queue.Queue()
    pool = [_Worker(dtype_name, events, module) for _ in range(min(workers, max(1, len(pending))))]

    def assign(w: _Worker) -> None:
        if pending:
            w.send(pending.popleft())
        else:
            w.task = None
            w.close()

    def replace(w: _Worker) -> None:
        pool.remove(w)
        if pending:
            pool.append(_Worker(dtype_name, events, module))

    try:
        while pending or any(w.task is not None or not w.ready for w in pool):
            try:
                w, event = events.get(timeout=1.0)
            except queue.Empty:
                w, event = None, None
            now = time.monotonic()
            if w is not None and not w.dead:
                w.last = now
                if event is None:  # the worker process ended
                    w.dead = True
                    rc = w.proc.wait()
                    if not w.ready:
                        raise RuntimeError(f"opinfo worker failed to start (rc={rc}):\n{w.stderr_tail()}")
                    if w.task is not None:
                        results[w.task] = {
                            "status": "crash", "stage": (w.sample or {}).get("stage", "sample_inputs"),
                            "sample": (w.sample or {}).get("sample"),
                            "error": f"worker died with exit code {rc}: {w.crash_message()}",
                        }
                    replace(w)
                elif event["event"] == "ready":
                    w.ready = True
                    assign(w)
                elif event["event"] == "sample":
                    w.sample = event
                elif event["event"] == "stage" and w.sample is not None:
                    w.sample["stage"] = event["stage"]
                elif event["event"] == "result":
                    event.pop("event")
                    results[w.task] = event
                    assign(w)
            for w in list(pool):
                if w.task is not None and not w.dead and now - w.last > HANG_SECONDS:
                    w.kill()
                    results[w.task] = {
                        "status": "hang", "stage": (w.sample or {}).get("stage", "sample_inputs"),
                        "sample": (w.sample or {}).get("sample"),
                        "error": f"no progress for {HANG_SECONDS:.0f} s (worker killed)",
                    }
                    replace(w)
    finally:
        for w in pool:
            w.close()
            if w.task is not None and not w.dead:  # interrupted in the middle of an op
                w.kill()
        for w in pool:
            try:
                w.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()

    rows = []
    for index, _ in ops:
        row = {"dtype": dtype_name, "op": names[index], **results.get(index, {"status": "fail", "error": "no result"})}
        rows.append(row)
    return rows


def summarize(rows: list[dict]) -> dict:
    counts = collections.Counter(r["status"] for r in rows)
    counted = sum(counts[s] for s in COUNTED)
    return {
        "passed": counts["pass"],
        "counted": counted,
        "cpu_fail": counts["cpu_fail"],
        "slow": counts["slow"],
        "rate": counts["pass"] / counted if counted else 1.0,
        "counts": dict(counts),
    }


def format_failures(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if r["status"] in ("pass", "cpu_fail", "slow"):
            continue
        lines.append(f"  {r['op']:<45} {r['status']:<5} [{r.get('stage', '')}] {r.get('error', '')}")
        if r.get("sample"):
            lines.append(f"  {'':<45}   sample: {r['sample']}")
    return "\n".join(lines)


_REPORT_ROWS: dict[str, list[dict]] = {}


def _write_report() -> None:
    path = os.environ.get("TORCH_NEURONX_OPINFO_REPORT")
    if not path:
        return
    rows = [r for dtype in DTYPES for r in _REPORT_ROWS.get(dtype, [])]
    with open(path, "w") as f:
        if path.endswith(".json"):
            json.dump(rows, f, indent=1)
            return
        f.write("dtype\top\tstatus\tsamples\tseconds\tvalues_checked\tstage\terror\tsample\tnotes\n")
        for r in rows:
            fields = [r["dtype"], r["op"], r["status"], r.get("samples", ""), r.get("seconds", ""),
                      r.get("values_checked", ""), r.get("stage", ""), r.get("error", ""),
                      r.get("sample", ""), r.get("notes", "")]
            f.write("\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in fields) + "\n")


def _sweep_and_record(dtype_name: str) -> list[dict]:
    rows = run_sweep(dtype_name)
    _REPORT_ROWS[dtype_name] = rows
    _write_report()
    return rows


def differences(rows: list[dict], dtype_name: str, whole_op_db: bool = True) -> list[str]:
    """How the sweep's ``rows`` for ``dtype_name`` differ from the expectation tables.

    Returns one message per difference, each naming the table entry to add or remove (empty when
    the sweep is exactly as expected). ``whole_op_db`` is False when the sweep was restricted to a
    few ops (TORCH_NEURONX_OPINFO_OPS): entries for ops that did not run are then not reported.
    """
    expected = {op: why for (op, dtype), why in EXPECTED_FAILURES.items() if dtype == dtype_name}
    not_counted = {op: why for (op, dtype), why in NOT_COUNTED.items() if dtype == dtype_name}
    by_op = {r["op"]: r for r in rows}
    out = []

    def detail(r: dict) -> str:
        text = f"{r['status']} [{r.get('stage', '')}] {r.get('error', '')}"
        return text + (f" | sample: {r['sample']}" if r.get("sample") else "")

    for r in rows:
        op, status = r["op"], r["status"]
        key = f'("{op}", "{dtype_name}")'
        if status in FAILED and op not in expected:
            out.append(f"unexpected failure: fix it, or add {key}: <reason> to EXPECTED_FAILURES — {detail(r)}")
        elif status == "pass" and op in expected:
            out.append(f"unexpected pass: remove {key} from EXPECTED_FAILURES (it said: {expected[op]})")
        elif status == "cpu_fail" and op not in not_counted:
            out.append(f"not counted (no sample runs on CPU): add {key}: <reason> to NOT_COUNTED, or fix the "
                       f"harness — {r.get('error', '')}")
        elif status not in ("cpu_fail", "slow") and op in not_counted:
            out.append(f"counted now ({status}): remove {key} from NOT_COUNTED (it said: {not_counted[op]})")
        if status == "cpu_fail" and op in expected:
            out.append(f"no longer runs on CPU: move {key} from EXPECTED_FAILURES to NOT_COUNTED — "
                       f"{r.get('error', '')}")
    if whole_op_db:
        for table, entries in (("EXPECTED_FAILURES", expected), ("NOT_COUNTED", not_counted)):
            for op in sorted(set(entries) - set(by_op)):
                out.append(f'not swept in {dtype_name} (not in op_db, or no CPU support for the dtype): '
                           f'remove ("{op}", "{dtype_name}") from {table}')
    slow = [r["op"] for r in rows if r["status"] == "slow"]
    if len(slow) > MAX_SLOW_FRACTION * len(rows):
        out.append(f"{len(slow)} of {len(rows)} ops skipped because their CPU sample took longer than "
                   f"{SLOW_CPU_SECONDS:g} s (at most {MAX_SLOW_FRACTION:.0%} may be): {', '.join(slow)}")
    return out


def _restricted() -> bool:
    return bool(os.environ.get("TORCH_NEURONX_OPINFO_OPS", "").strip())


def test_expectation_tables_are_well_formed():
    for table in (EXPECTED_FAILURES, NOT_COUNTED):
        for (op, dtype), reason in table.items():
            assert dtype in DTYPES, f"({op!r}, {dtype!r}): unknown dtype; use one of {list(DTYPES)}"
            assert isinstance(reason, str) and len(reason) > 20, f"({op!r}, {dtype!r}): give the reason"
    assert not set(EXPECTED_FAILURES) & set(NOT_COUNTED)


def test_differences_catch_unexpected_failures_passes_and_stale_entries(monkeypatch):
    """The oracle itself can fail: every kind of difference is reported, and a sweep that matches
    the tables exactly reports none."""
    monkeypatch.setitem(EXPECTED_FAILURES, ("op_known_bad", "float32"), "a reason long enough to be one")
    monkeypatch.setitem(NOT_COUNTED, ("op_cuda_only", "float32"), "a reason long enough to be one")
    good = [{"op": "op_known_bad", "status": "fail", "error": "E"}, {"op": "op_cuda_only", "status": "cpu_fail"},
            {"op": "add", "status": "pass"}]
    stale_entries = [k for k in (*EXPECTED_FAILURES, *NOT_COUNTED) if k[1] == "float32"
                     and k[0] not in ("op_known_bad", "op_cuda_only")]
    rows = good + [{"op": op, "status": "fail" if (op, "float32") in EXPECTED_FAILURES else "cpu_fail"}
                   for op, _ in stale_entries]
    assert differences(rows, "float32") == []
    bad = [{"op": "op_known_bad", "status": "pass"}, {"op": "op_cuda_only", "status": "pass"},
           {"op": "add", "status": "crash", "stage": "neuron run", "error": "worker died"},
           {"op": "sub", "status": "cpu_fail", "error": "E"}]
    found = "\n".join(differences(bad, "float32"))
    assert 'unexpected pass: remove ("op_known_bad", "float32") from EXPECTED_FAILURES' in found
    assert 'counted now (pass): remove ("op_cuda_only", "float32") from NOT_COUNTED' in found
    assert 'unexpected failure: fix it, or add ("add", "float32")' in found and "worker died" in found
    assert 'add ("sub", "float32"): <reason> to NOT_COUNTED' in found
    assert "not swept in float32" in found  # the real entries: these rows did not sweep them
    assert "not swept" not in "\n".join(differences(bad, "float32", whole_op_db=False))
    slow = [{"op": f"op{i}", "status": "slow"} for i in range(5)] + [{"op": "add", "status": "pass"}] * 5
    assert any("skipped because their CPU sample took longer" in d for d in differences(slow, "float32", False))


@pytest.mark.skipif(not hasattr(torch, "neuron"), reason="the neuron device is not registered")
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_opinfo_matches_expectations(dtype_name):
    rows = _sweep_and_record(dtype_name)
    s = summarize(rows)
    print(
        f"\n{dtype_name}: {s['passed']}/{s['counted']} ops pass ({100 * s['rate']:.2f} %); "
        f"{s['cpu_fail']} fail on CPU, {s['slow']} skipped as slow; statuses {s['counts']}; "
        f"{sum(r.get('samples', 0) for r in rows)} samples"
    )
    print(format_failures(rows))
    assert s["counted"] > 0
    found = differences(rows, dtype_name, whole_op_db=not _restricted())
    assert not found, (
        f"{dtype_name}: the OpInfo sweep differs from tests/opinfo_expected_failures.py "
        f"({len(found)}):\n  " + "\n  ".join(found)
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker_main(sys.argv[2], int(sys.argv[3]))
    else:
        for name in sys.argv[1:] or list(DTYPES):
            t0 = time.monotonic()
            rows = _sweep_and_record(name)
            s = summarize(rows)
            print(f"{name}: {s['passed']}/{s['counted']} pass ({100 * s['rate']:.2f} %), "
                  f"{s['cpu_fail']} fail on CPU, {s['slow']} slow, "
                  f"{sum(r.get('samples', 0) for r in rows)} samples; {time.monotonic() - t0:.0f} s")
            print(format_failures(rows))
            found = differences(rows, name, whole_op_db=not _restricted())
            print(f"differences with the expectations ({len(found)}):" + "".join(f"\n  {d}" for d in found))
