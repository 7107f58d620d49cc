"""``torch-neuronx compat``: every Hugging Face model family of the installed transformers and
Diffusers, tiny, on ``neuron`` against the CPU (:mod:`torch_neuronx.model_coverage`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``compat [--family F] [--only A,B] [--jobs N] [--out DIR] ...`` to ``subparsers``."""
    from ..model_coverage.families import FAMILIES

    p = subparsers.add_parser(
        "compat", help="tiny model of every Hugging Face architecture of each family (causal LMs, vision-language, "
                       "seq2seq, speech, encoders, Diffusers models): neuron vs CPU, eager, compiled and a "
                       "training step")
    p.add_argument("--family", default="all",
                   help=f"comma-separated families of {', '.join(FAMILIES)} (default: all)")
    p.add_argument("--only", default=None,
                   help="comma-separated entries: model types (class names for encoder and diffusers; a model "
                        "type selects all its encoder classes); default: all")
    p.add_argument("--list", action="store_true", help="print the entries of the families and exit")
    p.add_argument("--jobs", type=int, default=2, help="worker processes, one NeuronCore each (default 2)")
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per entry (default 240)")
    p.add_argument("--checks", default=None,
                   help="subset of each family's checks (generate, forward, compiled, train); default: all of them")
    p.add_argument("--new-tokens", type=int, default=None,
                   help="tokens generated per run by generative families (default 8 for causal-lm, 4 for the others)")
    p.add_argument("--atol", type=float, default=1e-3, help="logits tolerance (default 1e-3)")
    p.add_argument("--out", default="compat-results",
                   help="folder for compat-<family>.csv / .md and compat.md (default ./compat-results)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def run(args: argparse.Namespace) -> int:
    """Runs the command; exit status 0 when every family run meets the required rates
    (``report.THRESHOLDS``: the eager check ≥ 98%, compiled ≥ 95% of the entries passing on CPU),
    1 otherwise, 2 on bad arguments."""
    from ..model_coverage import report as rpt
    from ..model_coverage.families import FAMILIES, Family, get_family
    from ..model_coverage.runner import FamilyRun, run_families

    def fail(message: str) -> int:
        print(f"torch-neuronx compat: {message}", file=sys.stderr)
        return 2

    wanted = [f.strip() for f in args.family.split(",") if f.strip()]
    if wanted == ["all"] or not wanted:
        wanted = list(FAMILIES)
    try:
        families = [get_family(f) for f in dict.fromkeys(wanted)]
    except ValueError as err:
        return fail(str(err))
    plan: list[tuple[Family, list[str]]] = []
    if args.only is not None:
        names = list(dict.fromkeys(n.strip() for n in args.only.split(",") if n.strip()))
        if not names:
            return fail("--only names no architecture (see --list)")
        matched: set[str] = set()
        for fam in families:
            selected = fam.select(names)
            matched |= set(selected)
            if fam.name == "encoder":
                table = fam.implementation().entry_table()
                matched |= {table[e][0] for e in selected}
            if selected:
                plan.append((fam, selected))
        unknown = [n for n in names if n not in matched]
        if unknown:
            if [f.name for f in families] == ["causal-lm"]:
                return fail(f"not causal-LM architectures of transformers: {unknown} (see --list)")
            return fail(f"not entries of {', '.join(f.name for f in families)}: {unknown} (see --list)")
    else:
        plan = [(fam, fam.entries()) for fam in families]
    if args.list:  # what would run: --only applies
        for fam, names in plan:
            if len(families) > 1:
                print(f"# {fam.name}")
            print("\n".join(names))
        return 0
    checks = None
    if args.checks is not None:
        checks = tuple(dict.fromkeys(c.strip() for c in args.checks.split(",") if c.strip()))
        every = {c for fam, _ in plan for c in fam.checks}
        bad = [c for c in checks if c not in every]
        if bad or not checks:
            return fail(f"unknown check(s) {bad}; choose from {', '.join(sorted(every))}")
    if args.new_tokens is not None and args.new_tokens < 1:
        return fail(f"--new-tokens must be at least 1, got {args.new_tokens}")
    if not args.atol >= 0:
        return fail(f"--atol must be ≥ 0, got {args.atol}")
    if not args.timeout > 0:
        return fail(f"--timeout must be > 0 seconds, got {args.timeout}")
    out = Path(args.out)
    try:  # before the run: a typo must not cost the results of a long run
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".compat-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        return fail(f"--out {out}: cannot write there ({err.strerror or err}); choose a writable folder")
    runs: list[FamilyRun] = []
    for fam, names in plan:
        options: dict[str, object] = {"atol": args.atol}
        fam_checks = fam.checks
        if checks is not None:
            options["checks"] = [c for c in checks if c in fam_checks]
            if not options["checks"]:
                continue
        if args.new_tokens is not None and "generate" in fam_checks:
            options["new_tokens"] = args.new_tokens
        runs.append(FamilyRun(fam.name, names, options))
    written: dict[str, tuple[str, str, bool]] = {}  # family -> (summary line, Markdown table, meets thresholds)

    def write(run: FamilyRun) -> None:  # as soon as a family's last entry is done (one call at a time)
        labels = get_family(run.family).labels()
        print(rpt.to_text(run.reports))
        stem = f"compat-{run.family}"
        (out / f"{stem}.csv").write_text(rpt.to_csv(run.reports))
        md = rpt.to_markdown(run.reports, run.seconds, run.family, labels)
        (out / f"{stem}.md").write_text(md)
        summary = rpt.summarize(run.reports, run.seconds, run.family, labels)
        written[run.family] = (summary.line(), md, summary.meets_thresholds())
        print(f"\nwrote {out / (stem + '.csv')} and {out / (stem + '.md')} ({run.worker_seconds:.0f} worker-seconds)"
              f"\n{summary.line()}\n", flush=True)

    try:
        run_families(runs, jobs=args.jobs, timeout=args.timeout, progress=not args.no_progress,
                     on_family_done=write)
    except ValueError as err:
        return fail(str(err))
    done = [written[run.family] for run in runs]  # in the order the families were asked for
    lines = [line for line, _, _ in done]
    ok = all(meets for _, _, meets in done)
    tables = [f"## {run.family}\n\n{md}" for run, (_, md, _) in zip(runs, done, strict=True)]
    (out / "compat.md").write_text("\n".join(f"**{line}**  " for line in lines) + "\n\n" + "\n".join(tables))
    if len(lines) > 1:  # one family: its line was printed right after its table
        print("\n".join(lines))
    return 0 if ok else 1
