"""``torch-neuronx compat``: every causal-LM architecture of the installed transformers, tiny,
on ``neuron`` against the CPU (:mod:`torch_neuronx.model_coverage`)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``compat [--only A,B] [--jobs N] [--out DIR] ...`` to ``subparsers``."""
    p = subparsers.add_parser(
        "compat", help="tiny model of every transformers causal-LM architecture: generate, compiled "
                       "static-cache generate and a training step on neuron vs CPU")
    p.add_argument("--only", default=None, help="comma-separated model types (default: all)")
    p.add_argument("--list", action="store_true", help="print the architectures and exit")
    p.add_argument("--jobs", type=int, default=2, help="worker processes, one NeuronCore each (default 2)")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per architecture (default 240)")
    p.add_argument("--checks", default="generate,compiled,train",
                   help="subset of generate,compiled,train (default: all three)")
    p.add_argument("--new-tokens", type=int, default=8, help="tokens generated per run (default 8)")
    p.add_argument("--atol", type=float, default=1e-3, help="logits tolerance (default 1e-3)")
    p.add_argument("--out", default="compat-results",
                   help="folder for compat.csv and compat.md (default ./compat-results)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def run(args: argparse.Namespace) -> int:
    """Runs the command; exit status 0 when the required rates (``report.THRESHOLDS``: generate ≥ 98%,
    compiled ≥ 95% of the architectures passing on CPU) are met, 1 otherwise, 2 on bad arguments."""
    from ..model_coverage import report as rpt
    from ..model_coverage.checks import CHECKS
    from ..model_coverage.runner import causal_lm_architectures, run_coverage

    every = causal_lm_architectures()
    if args.list:
        print("\n".join(every))
        return 0
    def fail(message: str) -> int:
        print(f"torch-neuronx compat: {message}", file=sys.stderr)
        return 2

    if args.only is not None:
        names = list(dict.fromkeys(n.strip() for n in args.only.split(",") if n.strip()))
        if not names:
            return fail("--only names no architecture (see --list)")
    else:
        names = every
    checks = tuple(dict.fromkeys(c.strip() for c in args.checks.split(",") if c.strip()))
    bad = [c for c in checks if c not in CHECKS]
    if bad or not checks:
        return fail(f"unknown check(s) {bad}; choose from {', '.join(CHECKS)}")
    if args.new_tokens < 1:
        return fail(f"--new-tokens must be at least 1, got {args.new_tokens}")
    if not args.atol >= 0:
        return fail(f"--atol must be ≥ 0, got {args.atol}")
    if not args.timeout > 0:
        return fail(f"--timeout must be > 0 seconds, got {args.timeout}")
    out = Path(args.out)
    try:  # before the run: a typo must not cost the results of a 10-minute run
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".compat-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        return fail(f"--out {out}: cannot write there ({err.strerror or err}); choose a writable folder")
    start = time.perf_counter()
    try:
        reports = run_coverage(names, jobs=args.jobs, timeout=args.timeout, progress=not args.no_progress,
                             options={"checks": list(checks), "new_tokens": args.new_tokens, "atol": args.atol})
    except ValueError as err:
        print(f"torch-neuronx compat: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    print(rpt.to_text(reports))
    (out / "compat.csv").write_text(rpt.to_csv(reports))
    (out / "compat.md").write_text(rpt.to_markdown(reports, seconds))
    print(f"\nwrote {out / 'compat.csv'} and {out / 'compat.md'}")
    summary = rpt.summarize(reports, seconds)
    print(summary.line())
    return 0 if summary.meets_thresholds() else 1
