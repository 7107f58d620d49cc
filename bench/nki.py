"""ESTIMATED trn2 time of a ViT-style encoder block: our fused NKI kernels vs the unfused op sequence.

    python bench/nki.py [--seq 256] [--hidden 768] [--heads 12] [--mlp 2048] [--json]
                        [--published NKI_SAMPLES_DIR [--published-platform trn1] [--large]]

Everything here is an ESTIMATE; no Trainium is involved.

The block (pre-norm, bf16, batch 1): x -> LN1 -> QKV projection -> attention -> output projection
-> + x -> LN2 -> SwiGLU MLP -> + residual. Defaults: ViT-B dimensions (hidden 768, 12 heads of 64),
256 tokens (a 224 px image in 14 px patches, no class token), SwiGLU MLP of width 2048 (~8/3 x 768,
as in SwiGLU ViTs such as EVA-02; a GELU MLP has no kernel in our library yet).

* Unfused: every PyTorch op of the block (the ATen ops eager mode runs: one ``native_layer_norm`` per
  LayerNorm, matmuls, the score scale, softmax, silu, multiply, adds) is a roofline estimate
  ``max(FLOPs / peak, bytes moved / HBM bandwidth)``, each op reading its inputs from HBM and writing
  its output to HBM.
* Fused: LN1, attention, LN2 and the SwiGLU MLP are our NKI kernels (``torch_neuronx.kernels``),
  timed by the NeuronCore simulator's cost model (``nki.benchmark``: per-engine queues, published
  instruction costs, DMA model). Ops without a kernel (QKV / output projections, residual adds) keep
  their roofline estimate, identical on both sides.

Peaks, per physical NeuronCore-v3 (trn2 at LNC=1, the core the simulator models), from the platform
table (torch_neuronx/runtime/platforms.py, which cites the AWS pages): Tensor Engine 79 dense BF16
TFLOPS; HBM 2.9 TB/s per chip / 8 cores = 362.5 GB/s. All FLOPs are charged at the Tensor-Engine peak
(so element-wise ops are always bandwidth-bound in the roofline, which flatters the unfused side).
A second unfused column uses the cost model's sustained DMA rate instead of the HBM peak (16 DMA engines
x 23 B/ns x 0.38 calibrated efficiency = 139.8 GB/s, see torch_neuronx/runtime/platforms.py), i.e. the
same memory system the fused estimates see.

Also reported: the simulator's own throughput, instructions simulated per host second.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from torch_neuronx.runtime.platforms import PLATFORMS  # after the path set-up above

TRN2 = PLATFORMS["trn2"]
PEAK_FLOPS = TRN2.core.tensor.peak_flops("bfloat16")                      # 79e12 per NeuronCore-v3
HBM_BYTES_PER_S = TRN2.chip.hbm_bytes_per_s / TRN2.chip.physical_cores    # 2.9 TB/s per chip / 8 cores
BF16 = 2                      # bytes per element


def roofline_us(flops: float, nbytes: float, bw: float = HBM_BYTES_PER_S) -> float:
    """max(FLOPs / peak, bytes / bandwidth) in microseconds (an ESTIMATE)."""
    return max(flops / PEAK_FLOPS, nbytes / bw) * 1e6


def unfused_ops(S, H, nh, I):  # noqa: E741  (I: the MLP intermediate size)
    """[(group, op, FLOPs, bytes moved)] of the eager op sequence; group names the fused kernel
    that replaces the op, or "" when the op stays as is."""
    d = H // nh
    e = BF16
    mm = lambda m, k, n: (2 * m * k * n, (m * k + k * n + m * n) * e)          # noqa: E731
    ops = [
        ("ln1", "native_layer_norm", 8 * S * H, (2 * S * H + 2 * H) * e),
        ("", "qkv matmul [S,H]x[H,3H]", *mm(S, H, 3 * H)),
        ("attention", "q @ k^T (per head)", 2 * nh * S * S * d, (2 * S * H + nh * S * S) * e),
        ("attention", "scores * scale", nh * S * S, 2 * nh * S * S * e),
        ("attention", "softmax", 5 * nh * S * S, 2 * nh * S * S * e),
        ("attention", "probs @ v", 2 * nh * S * S * d, (nh * S * S + 2 * S * H) * e),
        ("", "out projection [S,H]x[H,H]", *mm(S, H, H)),
        ("", "residual add", S * H, 3 * S * H * e),
        ("ln2", "native_layer_norm", 8 * S * H, (2 * S * H + 2 * H) * e),
        ("swiglu", "gate matmul [S,H]x[H,I]", *mm(S, H, I)),
        ("swiglu", "up matmul [S,H]x[H,I]", *mm(S, H, I)),
        ("swiglu", "silu", 4 * S * I, 2 * S * I * e),
        ("swiglu", "multiply", S * I, 3 * S * I * e),
        ("swiglu", "down matmul [S,I]x[I,H]", *mm(S, I, H)),
        ("", "residual add", S * H, 3 * S * H * e),
    ]
    return ops


def fused_kernels(S, H, nh, I, platform="trn2"):  # noqa: E741  (I: the MLP intermediate size)
    """{group: (estimated us, simulated instructions, host seconds, dma bytes)} from nki.benchmark."""
    from torch_neuronx import nki
    from torch_neuronx.kernels.attention import attention_kernel
    from torch_neuronx.kernels.layernorm import layernorm_fwd_kernel
    from torch_neuronx.kernels.swiglu import swiglu_kernel

    rng = np.random.default_rng(0)
    bf = lambda *s, scale=1.0: (rng.standard_normal(s, dtype=np.float32) * scale).astype(ml_dtypes.bfloat16)  # noqa: E731
    d = H // nh
    x = bf(S, H)
    runs = {
        "ln1": (layernorm_fwd_kernel, None, (x, bf(H), bf(H), 1e-6)),
        "attention": (attention_kernel, nh, (bf(nh, S, d), bf(nh, S, d), bf(nh, S, d), d ** -0.5)),
        "ln2": (layernorm_fwd_kernel, None, (x, bf(H), bf(H), 1e-6)),
        "swiglu": (swiglu_kernel, None, (x, bf(H, I, scale=H ** -0.5), bf(H, I, scale=H ** -0.5),
                                         bf(I, H, scale=I ** -0.5))),
    }
    out = {}
    for group, (kern, grid, args) in runs.items():
        bench = nki.benchmark(kern, platform=platform)
        if grid:
            bench = bench[grid]
        t0 = time.perf_counter()
        bench(*args)
        host = time.perf_counter() - t0
        r = bench.benchmark_result
        n_instr = sum(v["instructions"] for v in r.engines.values())
        out[group] = dict(estimated_us=r.latency_us, instructions=n_instr, host_s=host,
                          dma_bytes=r.dma_bytes, flops_util_pct=r.flops_utilization,
                          engines={k: round(v["busy_pct"], 1) for k, v in r.engines.items()})
    return out


# AWS's published latencies (microseconds) of public NKI kernels, with their shapes, platforms and sources.
# ``fit`` marks the three rows the cost model's DMA_DESCRIPTOR_NS, DMA_FIXED_LATENCY_NS and KERNEL_LAUNCH_NS
# were fitted on (declared before fitting; torch_neuronx/nki/cost_model.py, bench/RESULTS.md); the DMA
# efficiency comes from the first three steps of AWS's matmul tutorial (docs/NKI.md). Every other row is
# an out-of-sample check. Platforms: the Mamba tutorial's measurements are taken as trn1 (the matmul
# tutorial it follows names trn1.32xlarge); nki-samples' test bounds as trn2, whose DMA rate their
# largest transfer matches.
_SAMPLES = "aws-neuron/nki-samples@0898a77"
_SDK = "aws-neuron/aws-neuron-sdk@81ce03a"
_POOL = f"{_SAMPLES}:test/unit/test_adaptive_avg_pool2d.py"


def _pool(shape, out, dtype, us, line, fit=False):
    return ("avgpool", "adaptive_avg_pool2d_kernel", dict(shape=shape, out=out, dtype=dtype), us, "measured",
            f"{_POOL}:{line}", "trn2", fit)


PUBLISHED = [
    # (kind, kernel, shape, published us, 'measured', source, platform, fitted on)
    ("mamba", "mamba_v1", dict(ch=256, seq=512), 172.93, "measured",
     f"{_SDK}:nki/guides/tutorials/fused_mamba.rst:514", "trn1", False),
    ("mamba", "mamba_v1", dict(ch=4096, seq=512), 2340.0, "measured",
     f"{_SDK}:nki/guides/tutorials/fused_mamba.rst:548", "trn1", False),
    ("mamba", "mamba_v2", dict(ch=4096, seq=512), 1610.0, "measured",
     f"{_SDK}:nki/guides/tutorials/fused_mamba.rst:731", "trn1", False),
    # nki-samples' perf test asserts p99 <= published x 1.05 (the 5% is its margin)
    _pool((1, 64, 56, 56), 7, "float32", 65.0, 50),
    _pool((2, 128, 28, 28), 7, "float32", 109.0, 51, fit=True),
    _pool((1, 256, 14, 14), 7, "float16", 88.0, 52),
    _pool((4, 64, 56, 56), (7, 7), "float32", 152.0, 53),
    _pool((2, 128, 28, 28), (14, 14), "float32", 327.0, 54),
    _pool((1, 512, 7, 7), 1, "float32", 14.0, 55, fit=True),
    _pool((8, 64, 32, 32), (4, 4), "float16", 103.0, 56),
    _pool((2, 2048, 32, 32), (3, 3), "float32", 564.0, 57, fit=True),
    _pool((2, 64, 256, 256), 1, "float32", 255.0, 58),
    # p1 <= published x 1.05
    ("sd_attention", "fused_self_attn_for_SD_small_head_size", dict(seq=4096, d=128, dtype="bfloat16"), 536.0,
     "measured", f"{_SAMPLES}:test/unit/test_SD_attention_small_head.py:29", "trn2", False),
    ("sd_attention", "fused_self_attn_for_SD_small_head_size", dict(seq=4096, d=128, dtype="float32"), 675.0,
     "measured", f"{_SAMPLES}:test/unit/test_SD_attention_small_head.py:28", "trn2", False),
]


def published_checks(samples_dir: str, platform: str | None = None, large: bool = False) -> list:
    """Run AWS's public kernels from a checkout of ``aws-neuron/nki-samples`` at 0898a77 (never part of
    this repository; loaded through the NKI import hook) at the shapes of :data:`PUBLISHED` and return
    ``[dict(kernel, shape, platform, fitted, estimated_us, published_us, kind, error_pct, source)]``, each
    row on its own platform unless ``platform`` names one. ``large`` adds the 4096-token SD-attention rows
    (minutes of host time)."""
    import importlib.util

    from torch_neuronx import nki
    here = os.path.dirname(os.path.abspath(__file__))     # this file is 'nki.py': not AWS's nki package
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    nki.install_import_hook()
    sys.path.insert(0, os.path.join(samples_dir, "src"))
    rng = np.random.default_rng(0)

    def load(rel: str):
        spec = importlib.util.spec_from_file_location(os.path.basename(rel)[:-3], os.path.join(samples_dir, rel))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    dt = dict(float32=np.float32, float16=np.float16, bfloat16=ml_dtypes.bfloat16)
    rows = []
    for kind, name, shape, pub, what, src, row_platform, fitted in PUBLISHED:
        if kind == "sd_attention" and not large:
            continue
        plat = platform or row_platform
        if kind == "mamba":
            k = getattr(load("src/nki_samples/tutorials/fused_mamba/mamba_nki_kernels.py"), name)
            ch, seq, ss = shape["ch"], shape["seq"], 16
            args = ((rng.random((1, ch, seq)) * 0.1).astype(np.float32), rng.standard_normal((1, ch, seq), np.float32),
                    -rng.random((ch, ss)).astype(np.float32), rng.standard_normal((1, ss, seq), np.float32),
                    rng.standard_normal((1, ss, seq), np.float32))
            bench = nki.benchmark(getattr(k, "func", k), platform=plat)
        elif kind == "avgpool":
            k = getattr(load("src/nki_samples/reference/vision.py"), name)
            args = (rng.standard_normal(shape["shape"], np.float32).astype(dt[shape["dtype"]]), shape["out"])
            bench = nki.benchmark(getattr(k, "func", k), platform=plat)
        else:
            k = getattr(load("src/nki_samples/reference/attention.py"), name)
            s, d, t = shape["seq"], shape["d"], dt[shape["dtype"]]
            args = tuple(rng.random(sh).astype(t) for sh in ((1, d, s), (1, s, d), (1, s, d)))
            bench = nki.benchmark(getattr(k, "func", k), platform=plat)[1]
        bench(*args)
        est = bench.benchmark_result.latency_us
        rows.append(dict(kernel=name, shape=shape, platform=plat, fitted=fitted, estimated_us=est, published_us=pub,
                         kind=what, error_pct=100.0 * (est - pub) / pub, source=src))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--published", metavar="NKI_SAMPLES_DIR",
                    help="also check the cost model against AWS's published latencies, running AWS's kernels "
                         "from a checkout of aws-neuron/nki-samples at 0898a77 (not part of this repository)")
    ap.add_argument("--published-platform", default=None,
                    help="platform of those checks (default: each row's own, trn1 for Mamba, trn2 for nki-samples)")
    ap.add_argument("--large", action="store_true", help="with --published: add the 4096-token SD-attention rows")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--mlp", type=int, default=2048)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    a = ap.parse_args(argv)
    S, H, nh, I = a.seq, a.hidden, a.heads, a.mlp  # noqa: E741  (I: the MLP intermediate size)
    dma_bw = TRN2.core.dma.sustained_bytes_per_s

    ops = unfused_ops(S, H, nh, I)
    fused = fused_kernels(S, H, nh, I)
    groups = ["ln1", "attention", "ln2", "swiglu"]
    rows = []
    for g in groups:
        sel = [o for o in ops if o[0] == g]
        flops = sum(o[2] for o in sel)
        rows.append(dict(group=g, unfused_ops=len(sel),
                         unfused_roofline_us=sum(roofline_us(o[2], o[3]) for o in sel),
                         unfused_roofline_dma_us=sum(roofline_us(o[2], o[3], dma_bw) for o in sel),
                         unfused_bytes=sum(o[3] for o in sel), flops=flops,
                         fused_estimated_us=fused[g]["estimated_us"], fused_dma_bytes=fused[g]["dma_bytes"],
                         fused_flops_util_pct=fused[g]["flops_util_pct"], engines_busy_pct=fused[g]["engines"]))
    common = [o for o in ops if o[0] == ""]
    common_us = sum(roofline_us(o[2], o[3]) for o in common)
    common_dma_us = sum(roofline_us(o[2], o[3], dma_bw) for o in common)
    unfused_total = sum(r["unfused_roofline_us"] for r in rows) + common_us
    unfused_total_dma = sum(r["unfused_roofline_dma_us"] for r in rows) + common_dma_us
    fused_total = sum(r["fused_estimated_us"] for r in rows) + common_us
    instr = sum(f["instructions"] for f in fused.values())
    host = sum(f["host_s"] for f in fused.values())
    result = dict(
        label="ESTIMATE (cost model + roofline; no Trainium)", platform="trn2, one NeuronCore-v3",
        shape=dict(seq=S, hidden=H, heads=nh, head_dim=H // nh, mlp=I, dtype="bfloat16"),
        peaks=dict(bf16_tflops=PEAK_FLOPS / 1e12, hbm_gb_s=HBM_BYTES_PER_S / 1e9, dma_model_gb_s=dma_bw / 1e9),
        groups=rows, other_ops_roofline_us=common_us,
        block=dict(unfused_roofline_us=unfused_total, unfused_roofline_dma_us=unfused_total_dma,
                   fused_estimated_us=fused_total, speedup_vs_roofline=unfused_total / fused_total,
                   speedup_vs_roofline_dma=unfused_total_dma / fused_total),
        simulator=dict(instructions=instr, host_seconds=host, instructions_per_second=instr / host),
    )
    if a.json:
        print(json.dumps(result, indent=1, default=str))
        return result
    print(f"ViT-style encoder block, ESTIMATED trn2 time (one NeuronCore-v3, bf16): S={S}, H={H}, "
          f"heads={nh}x{H // nh}, SwiGLU MLP {I}")
    print(f"peaks (runtime platform table): {PEAK_FLOPS / 1e12:.0f} TFLOPS bf16, HBM {HBM_BYTES_PER_S / 1e9:.1f} GB/s; "
          f"cost-model DMA {dma_bw / 1e9:.1f} GB/s\n")
    hdr = f"{'part':<11}{'ops':>4}{'unfused roofline us':>21}{'(at DMA rate)':>15}{'fused NKI est. us':>19}" \
          f"{'ratio':>7}{'HBM MB unf/fused':>19}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['group']:<11}{r['unfused_ops']:>4}{r['unfused_roofline_us']:>21.2f}"
              f"{r['unfused_roofline_dma_us']:>15.2f}{r['fused_estimated_us']:>19.2f}"
              f"{r['unfused_roofline_us'] / r['fused_estimated_us']:>7.2f}"
              f"{r['unfused_bytes'] / 1e6:>10.2f}/{r['fused_dma_bytes'] / 1e6:<8.2f}")
    print(f"{'other ops':<11}{len(common):>4}{common_us:>21.2f}{common_dma_us:>15.2f}{common_us:>19.2f}"
          f"{'(roofline both sides)':>27}")
    b = result["block"]
    print(f"{'block':<15}{b['unfused_roofline_us']:>21.2f}{b['unfused_roofline_dma_us']:>15.2f}"
          f"{b['fused_estimated_us']:>19.2f}{b['speedup_vs_roofline']:>7.2f}")
    print(f"\nfused vs unfused (ESTIMATE): x{b['speedup_vs_roofline']:.2f} against the HBM-peak roofline, "
          f"x{b['speedup_vs_roofline_dma']:.2f} against the roofline at the cost model's DMA rate")
    for r in rows:
        print(f"  {r['group']:<10} kernel FLOPs utilization {r['fused_flops_util_pct']:.1f}% (estimate); "
              f"engine busy % {r['engines_busy_pct']}")
    s = result["simulator"]
    print(f"\nsimulator throughput: {s['instructions']} instructions in {s['host_seconds']:.2f} s host = "
          f"{s['instructions_per_second']:,.0f} instructions/s")
    if a.published:
        rows = published_checks(a.published, a.published_platform, a.large)
        result["published"] = rows
        print("\ncost model vs AWS's published latencies (ESTIMATES; 'fit' rows were used to fit the model, the "
              "others are out-of-sample checks)")
        for r in rows:
            print(f"  {r['kernel']:<40} {str(r['shape']):<52} {r['platform']:<5} est {r['estimated_us']:>9.1f} us  "
                  f"published {r['published_us']:>8.1f} {r['error_pct']:+6.0f}%  {'fit' if r['fitted'] else 'check'}"
                  f"  {r['source']}")
        checks = [r for r in rows if not r["fitted"]]
        ok = sum(abs(r["error_pct"]) <= 25 for r in checks)
        print(f"  out of sample, within +-25%: {ok} of {len(checks)}")
    else:
        print("\ncost model vs AWS's published latencies: add --published <checkout of aws-neuron/nki-samples at "
              "0898a77> [--large] (AWS's kernels are run from the checkout, never copied here); "
              "python tests/nki/matmul_kernels.py prints the matmul tutorial's steps")
    return result


if __name__ == "__main__":
    main()
