"""Three contract sweeps over PyTorch's OpInfo database, float32, one sample per op.

* ``autograd``: the gradients of every differentiable output (fixed random grad_outputs) with
  respect to every input that requires grad, on ``neuron`` against the CPU (rtol/atol 1e-5; metadata
  only for random ops and samples). At least ``MIN_AUTOGRAD_AGREEMENT`` of the counted ops must
  agree, and every disagreement must be listed in ``EXPECTED`` with its reason. Sparse samples,
  refused by design (``REFUSED``), are not counted.
* ``placement``: for a sample with two tensors or more, each non-0-dim tensor in turn is left on
  the CPU and the rest moved to ``neuron``: the op must raise a device error (the documented
  exceptions, where CUDA accepts the CPU tensor too, are in ``PLACEMENT_EXCEPTIONS``).
* ``warnings``: the op on ``neuron`` warns nothing the CPU run does not (e.g. "An output with one or
  more elements was resized" from an out= kernel given a wrongly shaped out).

Each sweep runs in worker subprocesses (the pool of :mod:`tests.test_opinfo`): an op that kills the
interpreter is recorded as a ``crash`` of that op. Standalone: ``python -m tests.test_opinfo_contract
[autograd|placement|warnings ...]`` prints the results and the differences with the expectations.
"""
from __future__ import annotations

import collections
import sys
import time
import warnings

import pytest
import torch

if not __package__:
    sys.exit("run as a module from the repository root: python -m tests.test_opinfo_contract [mode ...]")

from . import test_opinfo as T

MODES = ("autograd", "placement", "warnings")
RTOL, ATOL = 1e-5, 1e-5
MIN_AUTOGRAD_AGREEMENT = 0.995
# The device's layout refusal (sparse, nested, quantized): by design, not counted.
REFUSED = "neuron supports only dense"
# A device error names the device; PyTorch's wording varies by op ("Expected all tensors to be on the
# same device", "meshgrid expects all tensors to have the same device", ...). An internal assert is
# never one, even when it mentions a device.


def _is_device_error(message: str) -> bool:
    return "device" in message.lower() and "INTERNAL ASSERT" not in message


# Messages of the CPU run that the neuron run may not add (the fp64/complex host-fallback notice is
# the device's own, documented).
_IGNORED_WARNINGS = ("float64/complex work on the device",)

_SPARSE = ("sparse layout: the sample's input is a sparse tensor; neuron refuses sparse tensors by design "
           "(NeuronCores have none) with an error that says to keep them on the CPU")
_METADATA_ONLY = ("metadata only: the CPU tensor gives only its shape (as on CUDA, which accepts it too); no "
                  "computation mixes devices")
_SCATTER_COPY = ("composite of clone + copy_ into a slice: copying a CPU tensor into a neuron tensor is a "
                 "cross-device copy, accepted on CUDA too")
_CPU_INDICES = "CPU index tensors are accepted beside device tensors, as on CUDA"

#: (op, mode) -> why the op does not pass that sweep (a pass of a listed op is reported: remove it).
EXPECTED: dict[tuple[str, str], str] = {
    ("sparse.sampled_addmm", "placement"): _SPARSE,
    ("sparse.mm.reduce", "placement"): _SPARSE,
    ("broadcast_tensors", "placement"): _METADATA_ONLY,
    ("expand_as", "placement"): _METADATA_ONLY,
    ("reshape_as", "placement"): _METADATA_ONLY,
    ("view_as", "placement"): _METADATA_ONLY,
    ("resize_as_", "placement"): _METADATA_ONLY,
    ("atleast_1d", "placement"): "each tensor of the list is handled on its own (no computation mixes devices)",
    ("atleast_2d", "placement"): "each tensor of the list is handled on its own (no computation mixes devices)",
    ("atleast_3d", "placement"): "each tensor of the list is handled on its own (no computation mixes devices)",
    ("narrow", "placement"): "the CPU tensor is the 0-dim-like `start` index read as a number, as on CUDA",
    ("diagonal_scatter", "placement"): _SCATTER_COPY,
    ("select_scatter", "placement"): _SCATTER_COPY,
    ("slice_scatter", "placement"): _SCATTER_COPY,
    ("as_strided_scatter", "placement"): _SCATTER_COPY,
    ("_unsafe_masked_index", "placement"): _CPU_INDICES,
    ("_unsafe_masked_index_put_accumulate", "placement"): _CPU_INDICES,
    ("index_put", "placement"): _CPU_INDICES + " (the sample leaves only its indices on the CPU)",
    ("tensor_split", "placement"): "PyTorch requires tensor_indices_or_sections on the CPU for every device",
    ("nn.functional.ctc_loss", "placement"): "PyTorch moves the CPU targets/lengths itself (as on CUDA)",
}


def _leaves(obj) -> list:
    return [t for _, t in T._tensors(obj) if t.requires_grad]


def _diff_outputs(out) -> list:
    return [t for _, t in T._tensors(out) if t.requires_grad and (t.is_floating_point() or t.is_complex())]


def _grads(op, parts, leaves, gouts=None, seed=0):
    T._seed(seed)
    outs = _diff_outputs(op(parts[0], *parts[1], **parts[2]))
    if gouts is None:
        g = torch.Generator().manual_seed(1234)
        gouts = [torch.randn(o.shape, dtype=o.dtype, generator=g) for o in outs]
    if len(outs) != len(gouts):
        raise RuntimeError(f"{len(outs)} differentiable outputs, {len(gouts)} on CPU")
    if not outs:
        return None, gouts
    grads = torch.autograd.grad(outs, leaves, [g.to(o.device) for g, o in zip(gouts, outs, strict=True)],
                                allow_unused=True)
    return grads, gouts


def _autograd_sample(op, sample, index):
    parts = (sample.input, sample.args, sample.kwargs)
    leaves = _leaves(parts)
    if not leaves:
        return None
    try:
        memo: dict = {}
        pristine = T._copy(parts, "cpu", memo)  # before the CPU run, which may mutate the sample
        p_leaves = [memo["tensors"][(id(leaf), "cpu")][1] for leaf in leaves]
        cpu_grads, gouts = _grads(op, parts, leaves)
        if cpu_grads is None:
            return None
        # Another seed: a sample whose gradients change with it is random (values not compared).
        again, _ = _on(op, pristine, p_leaves, "cpu", gouts, seed=1)
    except Exception:  # noqa: BLE001  (the CPU reference fails: not counted)
        return None
    values = not T._values_unchecked(op) and all(
        (a is None) == (b is None) and (a is None or torch.equal(a, b)) for a, b in zip(cpu_grads, again, strict=True))
    try:
        n_grads, _ = _on(op, pristine, p_leaves, "neuron", gouts)
    except Exception as e:  # noqa: BLE001
        error = f"{type(e).__name__}: {T._short(e, 300)}"
        if REFUSED in error:
            return {"status": "refused", "error": error}
        try:  # sample functions leave some tensors on CPU for a device (tensor_split's indices)
            n_grads, memo = _on(op, pristine, p_leaves, "neuron", gouts, T._probe_sample(op, torch.float32, index))
            if not any(c.device.type == "cpu" for _, c in memo.get("tensors", {}).values()):
                raise RuntimeError("no tensor left on CPU") from None
        except Exception:  # noqa: BLE001
            return {"status": "fail", "stage": "neuron autograd", "error": error}
    for k, (c, n) in enumerate(zip(cpu_grads, n_grads, strict=True)):
        if c is None and n is None:
            continue
        if (c is None) != (n is None):
            return {"status": "fail", "stage": "compare", "error": f"grad[{k}] is None on one device only"}
        try:
            T._compare(c, n, f"grad[{k}]", RTOL, ATOL, values)
        except T._Mismatch as e:
            return {"status": "fail", "stage": "compare", "error": str(e)}
    return {"status": "pass"}


def _on(op, pristine, p_leaves, device, gouts, probe=None, seed=0):
    """Gradients of the op on a fresh copy of ``pristine`` on ``device`` (w.r.t. the copies of
    ``p_leaves``); returns (grads, the copy memo)."""
    memo: dict = {}
    parts = T._copy(pristine, device, memo, probe)
    pairs = memo.get("tensors", {})
    leaves = [(pairs.get((id(p), device)) or pairs[(id(p), "cpu")])[1].requires_grad_() for p in p_leaves]
    return _grads(op, parts, leaves, gouts, seed)[0], memo


def _replace_kth(obj, k: int, counter: list, repl):
    if isinstance(obj, torch.Tensor):
        i = counter[0]
        counter[0] += 1
        return repl(obj) if i == k else obj
    if isinstance(obj, (tuple, list)):
        items = [_replace_kth(x, k, counter, repl) for x in obj]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)(*items)
        return type(obj)(items)
    if isinstance(obj, dict):
        return {key: _replace_kth(v, k, counter, repl) for key, v in obj.items()}
    return obj


def _placement_sample(op, sample, index):
    parts = (sample.input, sample.args, sample.kwargs)
    tensors = T._tensors(parts)
    if len(tensors) < 2 or all(t.dim() == 0 for _, t in tensors):
        return None
    pristine = T._copy(parts, "cpu", {})
    try:
        T._run(op, *T._copy(pristine, "cpu", {}))
    except Exception:  # noqa: BLE001  (the CPU reference fails: not counted)
        return None
    accepted = []
    for k, (path, t) in enumerate(tensors):
        if t.dim() == 0:
            continue
        n_parts = _replace_kth(T._copy(pristine, "neuron", {}), k, [0], lambda x: x.cpu())
        where = {"[0]": "input", "[1]": "args", "[2]": "kwargs"}[path[:3]] + path[3:]
        try:
            T._run(op, *n_parts)
        except Exception as e:  # noqa: BLE001
            if not _is_device_error(str(e)):
                return {"status": "fail", "stage": "placement", "error": f"{where} on CPU: not a device error: "
                                                                           f"{type(e).__name__}: {T._short(e, 200)}"}
            continue
        accepted.append(where)
    if accepted:
        return {"status": "fail", "stage": "placement", "error": f"accepted with {', '.join(accepted)} on the CPU"}
    return {"status": "pass"}


def _warnings_sample(op, sample, index):
    parts = (sample.input, sample.args, sample.kwargs)
    pristine = T._copy(parts, "cpu", {})

    def run(device):
        p = T._copy(pristine, device, {})
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            if T._tensors(parts):
                T._run(op, *p)
            else:
                with torch.device(device):
                    T._run(op, *p)
        return {str(r.message).split("\n")[0][:160] for r in record}

    try:
        on_cpu = run("cpu")
    except Exception:  # noqa: BLE001  (the CPU reference fails: not counted)
        return None
    try:
        on_neuron = run("neuron")
    except Exception:  # noqa: BLE001  (a neuron failure is the differential sweep's business)
        return None
    extra = sorted(m for m in on_neuron - on_cpu if not any(i in m for i in _IGNORED_WARNINGS))
    return {"status": "fail", "stage": "warnings", "error": "; ".join(extra)} if extra else {"status": "pass"}


_SAMPLE_CHECKS = {"autograd": _autograd_sample, "placement": _placement_sample, "warnings": _warnings_sample}


def _check_mode(op, mode: str, emit) -> dict:
    """One op in one sweep: the first sample (of the first 8) the check applies to."""
    dtype = torch.float32
    if mode == "autograd" and (not op.supports_autograd or dtype not in op.supported_backward_dtypes("cpu")):
        return {"status": "skip", "error": "no float32 autograd on CPU"}
    check = _SAMPLE_CHECKS[mode]
    try:
        T._seed()
        samples = iter(op.sample_inputs("cpu", dtype, requires_grad=(mode == "autograd")))
        for index in range(8):
            sample = next(samples)
            emit({"event": "sample", "index": index, "sample": T._describe(sample), "stage": mode})
            result = check(op, sample, index)
            if result is not None:
                return {**result, "sample": T._describe(sample)}
    except StopIteration:
        pass
    except Exception as e:  # noqa: BLE001  (sample_inputs itself fails on CPU)
        return {"status": "skip", "error": f"sample_inputs: {type(e).__name__}: {T._short(e, 200)}"}
    return {"status": "skip", "error": "no sample this check applies to"}


def check_op(op, modes: str, emit) -> dict:
    """The worker's check: every sweep of ``modes`` (comma-separated) on one op."""
    return {"status": "done", "modes": {mode: _check_mode(op, mode, emit) for mode in modes.split(",")}}


def run(modes: tuple[str, ...] = MODES) -> dict[str, list[dict]]:
    """Runs the sweeps over every OpInfo with float32 on CPU, in one pass of worker processes.

    Returns one list per mode of result dicts, one per op (an op that crashed or hung its worker
    gets that status in every mode)."""
    rows = T.run_sweep(",".join(modes), module="tests.test_opinfo_contract", ops=T._selected_ops(torch.float32))
    out: dict[str, list[dict]] = {mode: [] for mode in modes}
    for row in rows:
        for mode in modes:
            result = row.get("modes", {}).get(mode) or {k: v for k, v in row.items() if k != "modes"}
            out[mode].append({"op": row["op"], **result})
    return out


def differences(rows: list[dict], mode: str) -> list[str]:
    """Failures not in ``EXPECTED`` and entries of ``EXPECTED`` that passed (empty: as expected)."""
    out = []
    for r in rows:
        key = (r["op"], mode)
        if r["status"] in T.FAILED and key not in EXPECTED:
            out.append(f"unexpected {r['status']}: fix it, or add {key!r}: <reason> to EXPECTED — "
                       f"[{r.get('stage', '')}] {r.get('error', '')} | sample: {r.get('sample', '')}")
        elif r["status"] == "pass" and key in EXPECTED:
            out.append(f"unexpected pass: remove {key!r} from EXPECTED (it said: {EXPECTED[key]})")
    return out


def _summary(rows: list[dict]) -> tuple[int, int]:
    counts = collections.Counter(r["status"] for r in rows)
    return counts["pass"], sum(counts[s] for s in T.COUNTED)


def test_differences_report_both_ways(monkeypatch):
    monkeypatch.setitem(EXPECTED, ("op_bad", "placement"), "a reason long enough to be one")
    rows = [{"op": "op_bad", "status": "fail"}, {"op": "add", "status": "pass"}, {"op": "mul", "status": "skip"}]
    assert differences(rows, "placement") == []
    found = "\n".join(differences([{"op": "op_bad", "status": "pass"}, {"op": "add", "status": "crash"}],
                                  "placement"))
    assert "unexpected pass: remove ('op_bad', 'placement')" in found
    assert "unexpected crash: fix it, or add ('add', 'placement')" in found


@pytest.fixture(scope="module")
def sweeps() -> dict[str, list[dict]]:
    return run()


@pytest.mark.skipif(not hasattr(torch, "neuron"), reason="the neuron device is not registered")
@pytest.mark.parametrize("mode", MODES)
def test_opinfo_contract_sweep(sweeps, mode):
    rows = sweeps[mode]
    passed, counted = _summary(rows)
    print(f"\n{mode}: {passed}/{counted} ops pass")
    assert counted > 100
    if mode == "autograd":
        assert passed / counted >= MIN_AUTOGRAD_AGREEMENT
    found = differences(rows, mode)
    assert not found, f"{mode}: {len(found)} differences with EXPECTED:\n  " + "\n  ".join(found)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        T._worker_main(sys.argv[2], int(sys.argv[3]), check=check_op)
    else:
        t0 = time.monotonic()
        results = run(tuple(sys.argv[1:]) or MODES)
        print(f"{time.monotonic() - t0:.0f} s")
        for mode, rows in results.items():
            passed, counted = _summary(rows)
            print(f"{mode}: {passed}/{counted} pass ({100 * passed / max(counted, 1):.2f} %)")
            for r in rows:
                if r["status"] in T.FAILED:
                    print(f"  {r['op']:<40} {r['status']:<5} [{r.get('stage', '')}] {r.get('error', '')}")
            found = differences(rows, mode)
            print(f"differences ({len(found)}):" + "".join(f"\n  {d}" for d in found))
