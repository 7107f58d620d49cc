"""Validation of ``torch-neuronx estimate`` against AWS's and Hugging Face's published Trainium measurements.

    python bench/estimate.py                 # every measurement: published, estimated, error (ESTIMATES)
    python bench/estimate.py --fit           # re-fit the three constants on their three measurements
    python bench/estimate.py --only ID[,ID]  # some rows

The measurements, their setups and sources are ``bench/estimate_measurements.json``; which three are fitted
and which are scored out of sample was declared in ``bench/RESULTS.md`` before any fitting. Each row runs
shape-only (fake tensors, the fake process group at the real world size) in a fresh process. The NKI row
runs the fully blocked matmul kernel of ``tests/nki/matmul_kernels.py`` as an ``nki_op`` under the estimator:
NKI kernels are costed by the NKI simulator's cost model (calibrated separately on AWS's NKI tutorial).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
MEASUREMENTS = HERE / "estimate_measurements.json"

_ROW = r"""
import json, sys, time
sys.path.insert(0, {root!r})
row = json.loads({row!r})
constants = json.loads({constants!r})
t0 = time.perf_counter()
setup = row["setup"]
if "kernel" in setup:
    sys.path.insert(0, {tests!r})
    import torch, torch_neuronx
    import matmul_kernels
    from torch_neuronx import nki_op
    from torch_neuronx.estimate import estimate, shape_only
    kernel = getattr(matmul_kernels, setup["kernel"])

    @nki_op("bench_estimate::matmul", mutates_args=())
    def matmul(lhsT: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        return kernel(lhsT, rhs)

    with shape_only():
        a = torch.empty(setup["lhsT"], dtype=torch.bfloat16, device="neuron")
        b = torch.empty(setup["rhs"], dtype=torch.bfloat16, device="neuron")
        with estimate(platform=setup["platform"], lnc=1, compiled=True) as est:
            matmul(a, b)
    rep = est.report
    value = rep.step_time_s - rep.launch_overhead_s           # the tutorial times the kernel alone
else:
    from torch_neuronx.estimate.calibration import default_constants
    from torch_neuronx.estimate.workloads import Setup, run_estimate
    c = default_constants()
    if constants:
        c = c.with_values(**constants)
    rep = run_estimate(Setup(constants=c, **setup))
    value = rep.step_time_s
    if row.get("sequences_per_step"):
        value = row["sequences_per_step"] / rep.step_time_s
print("RESULT " + json.dumps({{"value": value, "wall_s": time.perf_counter() - t0, "mode": rep.mode,
                              "peak_hbm": rep.peak_hbm_bytes_per_core, "fits": rep.fits,
                              "collective_share": rep.collective_share, "mfu": rep.mfu}}))
"""


def _run_fresh(code: str, tag: str, what: str) -> dict:
    """Runs ``code`` in a fresh interpreter (this checkout first on the path) and returns the JSON of its
    first stdout line starting with ``tag``; RuntimeError with the end of its stderr when there is none."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    raise RuntimeError(f"{what} failed:\n{r.stderr[-3000:]}")


def run_row(row: dict, constants: dict | None = None) -> dict:
    """Runs one measurement's setup in a fresh interpreter; returns its result dict."""
    code = _ROW.format(root=str(ROOT), row=json.dumps(row), constants=json.dumps(constants or {}),
                       tests=str(ROOT / "tests" / "nki"))
    return _run_fresh(code, "RESULT", row["id"])


def error(row: dict, value: float) -> float:
    """Signed relative error of the estimate (estimated / published - 1)."""
    return value / row["published"] - 1


# --- fitting ------------------------------------------------------------------------------------------------

_FIT = {"eta_tensor": "nxd-llama3.1-70b-pretrain-trn1-32nodes", "eta_hbm": "optimum-qwen3-32b-trn2-tp4-itl",
        "alpha_cc_s": "nxdi-llama3.3-70b-trn2-tp64-tpot"}
_BOUNDS = {"eta_tensor": (0.05, 1.0), "eta_hbm": (0.05, 1.0), "alpha_cc_s": (0.0, 50e-6)}

_FIT_CODE = r"""
import json, sys
sys.path.insert(0, {root!r})
from torch_neuronx.estimate.calibration import default_constants
from torch_neuronx.estimate.workloads import Setup, run_estimate
rows = json.loads({rows!r})
fit, bounds = json.loads({fit!r}), json.loads({bounds!r})
reports = {{}}
for row in rows:
    reports[row["id"]] = (row, run_estimate(Setup(**row["setup"])))

def value(row, rep, constants=None):
    t = rep.step_time_s if constants is None else rep.step_time_with(constants)
    return row["sequences_per_step"] / t if row.get("sequences_per_step") else t

c = default_constants()
for sweep in range(5):
    for name, mid in fit.items():
        row, rep = reports[mid]
        lo, hi = bounds[name]
        # each measurement moves monotonically with its own constant: bisect on it, the others held
        def err(x):
            return value(row, rep, c.with_values(**{{name: x}})) / row["published"] - 1
        f_lo, f_hi = err(lo), err(hi)
        if f_lo * f_hi > 0:
            x = lo if abs(f_lo) < abs(f_hi) else hi
        else:
            for _ in range(30):
                mid_x = (lo + hi) / 2
                f_mid = err(mid_x)
                if f_mid * f_lo > 0:
                    lo, f_lo = mid_x, f_mid
                else:
                    hi = mid_x
            x = (lo + hi) / 2
        c = c.with_values(**{{name: x}})
out = {{name: getattr(c, name) for name in fit}}
errs = {{mid: value(reports[mid][0], reports[mid][1], c) / reports[mid][0]["published"] - 1 for mid in fit.values()}}
print("FIT " + json.dumps({{"constants": out, "errors": errs}}))
"""


def fit(rows: list) -> dict:
    """Fits the three constants, each on its one measurement (see ``calibration.py``)."""
    chosen = [r for r in rows if r["id"] in _FIT.values()]
    code = _FIT_CODE.format(root=str(ROOT), rows=json.dumps(chosen), fit=json.dumps(_FIT), bounds=json.dumps(_BOUNDS))
    return _run_fresh(code, "FIT", "fit")


def _fmt(v: float, unit: str) -> str:
    if unit == "s":
        return f"{v * 1e3:,.2f} ms"
    return f"{v:,.2f} {unit}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="fit the three constants and print them")
    parser.add_argument("--only", default=None, help="comma-separated measurement ids (prefix match)")
    args = parser.parse_args(argv)
    rows = json.loads(MEASUREMENTS.read_text())["measurements"]
    if args.fit:
        result = fit(rows)
        print("fitted constants (write them into torch_neuronx/estimate/calibration.py):")
        for name, value in result["constants"].items():
            after = 100 * result["errors"][_FIT[name]]
            print(f"  {name} = {value:.6g}   (fitted on {_FIT[name]}, error after fit {after:+.2f}%)")
        return 0
    if args.only:
        keys = args.only.split(",")
        rows = [r for r in rows if any(r["id"].startswith(k) for k in keys)]
    print("| # | measurement | role | published | estimated (ESTIMATE) | error | source |")
    print("|---|---|---|---|---|---|---|")
    scored = []
    t0 = time.perf_counter()
    for i, row in enumerate(rows, 1):
        res = run_row(row)
        e = error(row, res["value"])
        if row["role"] == "scored":
            scored.append(abs(e))
        role = {"fit": "fitted", "scored": "out of sample", "unscored": "out of sample, not scored"}[row["role"]]
        print(f"| {i} | `{row['id']}` ({row['metric']}) | {role} | {_fmt(row['published'], row['unit'])} | "
              f"{_fmt(res['value'], row['unit'])} | {100 * e:+.1f}% | {row['source']} |", flush=True)
    if scored:
        print(f"\nscored out of sample: n={len(scored)}, median |error| {100 * statistics.median(scored):.1f}%, "
              f"worst {100 * max(scored):.1f}%, within 50%: {sum(x <= 0.5 for x in scored)}/{len(scored)} "
              f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
