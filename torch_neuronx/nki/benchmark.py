"""``nki.benchmark``: ESTIMATED kernel latency from the cost model (no device is involved).

API shape follows AWS's ``nki.benchmark`` page (awsdocs-neuron.readthedocs-hosted.com/en/latest/
general/nki/api/generated/nki.benchmark.html)::

    bench = nki.benchmark(warmup=5, iters=10, platform="trn1")(kernel)   # or nki.benchmark(kernel, ...)
    outputs = bench(*arrays)                                               # bench[grid](...) for SPMD
    r = bench.benchmark_result
    r.nc_latency.get_latency_percentile(50)   # microseconds (estimate; every percentile is the same)
    r.latency_s, r.latency_us, r.engines, r.flops, r.flops_utilization

``warmup`` / ``iters`` do not change the estimate (it is deterministic) and no NEFF exists
(``save_neff_name``); ``save_trace_name`` writes the estimated per-instruction timeline as a Chrome
trace-event JSON file (open it in chrome://tracing or Perfetto). Units: seconds / microseconds / percent;
FLOPs count matmul multiply-adds x 2; peaks per dtype are the platform's per-core Tensor Engine
peaks (``torch_neuronx.runtime.platforms``, ``core.tensor.dense_flops``).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from .cost_model import ENGINES
from .launch import COMPILER_OPTIONS, Kernel, check_options

__all__ = ["benchmark", "profile", "BenchmarkResult", "BenchmarkedKernel", "LatencyEstimate"]


class LatencyEstimate:
    """AWS-compatible ``nc_latency`` object; the single estimate is every percentile (microseconds)."""

    def __init__(self, latency_us: float) -> None:
        self.latency_us = latency_us

    def get_latency_percentile(self, percentile: float) -> float:
        """Estimated latency in microseconds (the same for every percentile)."""
        return self.latency_us

    def __repr__(self) -> str:
        return f"LatencyEstimate({self.latency_us:.3f} us, estimate)"


class BenchmarkResult:
    """Estimated performance of one kernel launch on a simulated NeuronCore.

    Attributes:
        platform: "trn1" | "trn2" | "trn3" | "inf2".
        latency_s / latency_us: estimated end-to-end latency (last result ready).
        engines: {engine: {"busy_us", "busy_pct", "instructions"}} for tensor/vector/scalar/gpsimd/dma.
        flops: matmul FLOPs (2*K*M*N per nc_matmul); achieved_tflops = flops / latency.
        flops_utilization: percent of the Tensor Engine peak, i.e. (sum of flops/peak(dtype)) / latency.
        dma_bytes: bytes moved by DMA.
        by_instruction: {name: (count, busy_us)}.
        trace: per instruction (name, engine, start_ns, end_ns, ready_ns) -- an estimated timeline.
    """

    def __init__(self, sim: Any, kernel_name: str = "kernel") -> None:
        tl = sim.timeline
        self.kernel_name = kernel_name
        self.platform = sim.platform.name
        self.latency_ns = tl.latency_ns
        self.latency_s = self.latency_ns * 1e-9
        self.latency_us = self.latency_ns * 1e-3
        self.latency_ms = self.latency_ns * 1e-6
        lat = self.latency_ns or 1.0
        self.engines = {e: {"busy_us": tl.busy_ns.get(e, 0.0) * 1e-3,
                            "busy_pct": 100.0 * tl.busy_ns.get(e, 0.0) / lat,
                            "instructions": tl.count.get(e, 0)} for e in ENGINES}
        self.flops = tl.flops
        self.achieved_tflops = tl.flops / (self.latency_s or 1.0) / 1e12
        self.flops_utilization = 100.0 * tl.ideal_pe_ns / lat
        self.peak_tflops_bf16 = sim.platform.core.tensor.peak_flops("bfloat16") / 1e12
        self.dma_bytes = tl.dma_bytes
        self.by_instruction = {k: (v[0], v[1] * 1e-3) for k, v in tl.by_name.items()}
        self.nc_latency = LatencyEstimate(self.latency_us)
        self.trace = tl.trace   # (instruction, engine, start ns, end ns, result-ready ns), estimates
        self.spilled_bytes = getattr(tl, "spilled_bytes", 0)

    def save_trace(self, path: str) -> None:
        """Write the estimated timeline as a Chrome trace-event JSON file (``path``; its directory is
        created, as AWS's profiler creates its working directory)."""
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        events = [{"name": n, "cat": e, "ph": "X", "ts": s / 1e3, "dur": max(end - s, 0) / 1e3, "pid": 0,
                   "tid": e} for n, e, s, end, _ in self.trace if e]
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ns",
                       "otherData": {"kernel": self.kernel_name, "platform": self.platform,
                                     "note": "ESTIMATED by the torch_neuronx NKI cost model"}}, f)

    def __str__(self) -> str:
        lines = [f"NKI benchmark ESTIMATE (cost model, no device) of {self.kernel_name} on {self.platform}:",
                 f"  estimated latency: {self.latency_us:.3f} us ({self.latency_ms:.4f} ms)",
                 f"  estimated FLOPs utilization: {self.flops_utilization:.2f} % of Tensor Engine peak "
                 f"(estimate; {self.flops:.4g} matmul FLOPs, estimated {self.achieved_tflops:.2f} TFLOPS, "
                 f"bf16 peak {self.peak_tflops_bf16:.1f} TFLOPS)",
                 f"  estimated DMA traffic: {self.dma_bytes} bytes",
                 "  estimated engine busy time:"]
        for e, d in self.engines.items():
            lines.append(f"    {e:<7} {d['busy_us']:12.3f} us  {d['busy_pct']:6.2f} %  "
                         f"({d['instructions']} instructions) (estimate)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<BenchmarkResult estimate: {self.latency_us:.3f} us on {self.platform}, "
                f"{self.flops_utilization:.1f}% FLOPs utilization (estimate)>")


class BenchmarkedKernel:
    """A kernel wrapped by :func:`benchmark`: calling it simulates the kernel, stores the estimate in
    ``benchmark_result`` and returns the kernel's outputs."""

    def __init__(self, kernel: Any, platform: Any = None, grid: Any = None, parent: Any = None,
                 **options: Any) -> None:
        self.kernel = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
        if grid:
            self.kernel = self.kernel[grid]
        self.platform = platform
        self.options = options
        self.parent = parent      # bench[grid](...) also stores its result on bench
        self.benchmark_result: BenchmarkResult | None = None

    def __getitem__(self, grid: Any) -> BenchmarkedKernel:
        return BenchmarkedKernel(self.kernel[grid], self.platform, parent=self, **self.options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        k = self.kernel._copy(mode="benchmark", platform=self.platform or self.kernel.platform)
        out = k(*args, **kwargs)
        self.benchmark_result = BenchmarkResult(k.last_run, getattr(k.fn, "__name__", "kernel"))
        trace = self.options.get("save_trace_name")
        if trace:
            wd = self.options.get("working_directory")
            self.benchmark_result.save_trace(os.path.join(wd, trace) if wd else trace)
        if self.parent is not None:
            self.parent.benchmark_result = self.benchmark_result
        return out


def benchmark(kernel: Callable | None = None, *, warmup: int = 5, iters: int = 10, platform: Any = None,
              platform_target: Any = None, **kwargs: Any) -> Any:
    """Wrap ``kernel`` so that calling it reports an ESTIMATED latency (see module docstring).

    ``platform`` / ``platform_target``: "trn1" | "trn2" | "trn3" | "inf2" (default: the kernel's, else
    the default platform of :mod:`.platforms`).

    Raises:
        TypeError: an option AWS's ``nki.benchmark`` does not take.
    """
    unknown = sorted(set(kwargs) - COMPILER_OPTIONS)
    if unknown:
        raise TypeError(f"nki.benchmark() got an unexpected keyword argument {unknown[0]!r}")
    plat = platform or platform_target
    _ = (warmup, iters)
    if kernel is None:
        return lambda k: BenchmarkedKernel(k, plat, **kwargs)
    return BenchmarkedKernel(kernel, plat, **kwargs)


def profile(func: Callable | None = None, **kwargs: Any) -> Any:
    """``nki.profile``: run the kernel on the simulator and keep its ESTIMATED profile in
    ``kernel.benchmark_result`` (see :func:`benchmark`); no NEFF / NTFF file is produced.

    Raises:
        TypeError: an option AWS's ``nki.profile`` does not take.
    """
    check_options("nki.profile", kwargs)
    return benchmark(func, **kwargs)
