"""The compat table: terminal text, CSV, Markdown and the summary line.

Counting rules (the acceptance's): a check's rate is ``pass / (pass + fail)`` — architectures
whose CPU reference raises (``cpu-fail``) or that a check does not apply to (``skip``) are left
out of that check's denominator and listed separately, with the CPU's reason.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from .checks import CHECKS, CPU_FAIL, FAIL, PASS, SKIP, Report

#: Acceptance thresholds of ``torch-neuronx compat`` (issue 6): pass rates among the
#: architectures that pass the same check on the CPU.
THRESHOLDS = {"generate": 0.98, "compiled": 0.95}


@dataclass
class Rate:
    """``passed`` of ``counted`` (pass + fail) architectures for one check."""

    passed: int
    counted: int

    @property
    def ratio(self) -> float:
        return self.passed / self.counted if self.counted else 1.0

    def __str__(self) -> str:
        return f"{self.passed}/{self.counted} ({100 * self.ratio:.1f}%)"


def rates(reports: list[Report]) -> dict[str, Rate]:
    """Per check (:data:`~.checks.CHECKS`), the :class:`Rate` over ``reports``."""
    out = {}
    for check in CHECKS:
        statuses = [r.outcomes[check].status for r in reports if check in r.outcomes]
        out[check] = Rate(statuses.count(PASS), statuses.count(PASS) + statuses.count(FAIL))
    return out


def cpu_failures(reports: list[Report]) -> list[Report]:
    """Architectures whose greedy generate fails on the CPU itself (not counted against us)."""
    return [r for r in reports if r.outcomes.get("generate") and r.outcomes["generate"].status == CPU_FAIL]


def meets_thresholds(reports: list[Report]) -> bool:
    """True when every rate of :data:`THRESHOLDS` is met."""
    r = rates(reports)
    return all(r[check].ratio >= need for check, need in THRESHOLDS.items())


LABELS = {"generate": "generate", "compiled": "compiled static-cache generate", "train": "train step"}


def summary_line(reports: list[Report], seconds: float | None = None) -> str:
    """One line: each check's rate (with how many more architectures fail that check on the CPU
    itself, or "not run"), the architectures failing on the CPU, their count and the wall time."""
    r = rates(reports)
    on_cpu = cpu_failures(reports)
    generating = [rep for rep in reports if rep not in on_cpu]
    parts = []
    for check in CHECKS:
        outcomes = [rep.outcomes.get(check) for rep in reports]
        if all(o is None or (o.status == SKIP and o.reason == "not requested") for o in outcomes):
            parts.append(f"{LABELS[check]} not run")
            continue
        part = f"{LABELS[check]} {r[check]}"
        cpu_only = sum(1 for rep in generating if rep.outcomes.get(check) and rep.outcomes[check].status == CPU_FAIL)
        if check != "generate" and cpu_only:
            part += f" (+{cpu_only} failing it on CPU, not counted)"
        parts.append(part)
    n = len(reports)
    parts += [f"{len(on_cpu)} fail on CPU itself (not counted)",
              f"{n} architecture{'s' if n != 1 else ''}"]
    if seconds is not None:
        parts[-1] += f" in {int(seconds // 60)}m{int(seconds % 60):02d}s"
    return "compat: " + " · ".join(parts)


def _first_reason(report: Report) -> str:
    for check in CHECKS:
        o = report.outcomes.get(check)
        if o and o.status in (FAIL, CPU_FAIL):
            return f"{check}: {o.reason}"
    for check in CHECKS:
        o = report.outcomes.get(check)
        if o and o.reason and o.reason != "not requested":  # a skip's reason, or a note on a pass
            return f"{check}: {o.reason}"
    return ""


def rows(reports: list[Report]) -> list[list[str]]:
    """Header and one row per architecture: model type, class, each check's status, seconds,
    the first failure's reason."""
    out = [["architecture", "class", *CHECKS, "seconds", "reason"]]
    for rep in reports:
        out.append([rep.model_type, rep.model_class,
                    *[rep.outcomes[c].status if c in rep.outcomes else SKIP for c in CHECKS],
                    f"{rep.seconds:.1f}", _first_reason(rep)])
    return out


def to_csv(reports: list[Report]) -> str:
    """The table as CSV text (one reason per check: ``<check>_reason`` columns)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["architecture", "class", "params", *CHECKS, *[f"{c}_max_diff" for c in CHECKS],
                *[f"{c}_reason" for c in CHECKS], "seconds"])
    for rep in reports:
        o = [rep.outcomes.get(c) for c in CHECKS]
        w.writerow([rep.model_type, rep.model_class, rep.params, *[x.status if x else SKIP for x in o],
                    *["" if not x or x.max_diff is None else f"{x.max_diff:.3g}" for x in o],
                    *[x.reason if x else "" for x in o], f"{rep.seconds:.1f}"])
    return buf.getvalue()


def to_markdown(reports: list[Report], seconds: float | None = None) -> str:
    """The summary line, the table of architectures passing the CPU checks, then the CPU
    failures with their reasons, as Markdown."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    cpu = cpu_failures(reports)
    lines = [f"**{summary_line(reports, seconds)}**", "",
             "| architecture | class | " + " | ".join(CHECKS) + " | reason |",
             "|---|---|" + "---|" * len(CHECKS) + "---|"]
    for row in rows([r for r in reports if r not in cpu])[1:]:
        lines.append("| " + " | ".join(cell(x) for x in row[:2 + len(CHECKS)]) + f" | {cell(row[-1])} |")
    if cpu:
        lines += ["", f"Failing on CPU itself ({len(cpu)}, not counted):", "",
                  "| architecture | reason |", "|---|---|"]
        for r in cpu:
            reasons = [f"{c}: {r.outcomes[c].reason}" for c in CHECKS
                       if c in r.outcomes and r.outcomes[c].status == CPU_FAIL]
            lines.append(f"| {r.model_type} | {cell('; '.join(reasons))} |")
    return "\n".join(lines) + "\n"


def to_text(reports: list[Report], width: int = 160) -> str:
    """The table for a terminal: aligned columns, the reason cut to the line width."""
    table = rows(reports)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    lines = []
    for r in table:
        head = "  ".join(x.ljust(w) for x, w in zip(r[:-1], widths))
        lines.append((head + "  " + r[-1])[:width].rstrip())
    return "\n".join(lines)
