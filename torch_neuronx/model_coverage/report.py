"""The model-coverage table (``torch-neuronx compat``): terminal text, CSV, Markdown and the summary line.

Counting: a check's rate is ``pass / (pass + fail)``. Architectures whose CPU reference raises
(``cpu-fail``) or that a check does not apply to (``skip``) are left out of that check's
denominator and listed separately, with the CPU's reason: a model transformers itself cannot run
says nothing about the device.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from .checks import CHECK_LABELS, CHECKS, CPU_FAIL, FAIL, PASS, SKIP, Check, Report

#: Pass rates ``torch-neuronx compat`` requires (else it exits 1), among the architectures that
#: pass the same check on the CPU.
THRESHOLDS: dict[Check, float] = {"generate": 0.98, "compiled": 0.95}


@dataclass(frozen=True)
class Rate:
    """``passed`` of ``counted`` (pass + fail) architectures for one check."""

    passed: int
    counted: int

    @property
    def ratio(self) -> float:
        """``passed / counted`` (1.0 when nothing was counted)."""
        return self.passed / self.counted if self.counted else 1.0

    def __str__(self) -> str:
        return f"{self.passed}/{self.counted} ({100 * self.ratio:.1f}%)"


@dataclass(frozen=True)
class Summary:
    """The counts behind the summary line.

    Attributes:
        rates: per check of :data:`~.checks.CHECKS`, its :class:`Rate`.
        cpu_only: per check, architectures that generate on the CPU but fail this check there
            (not counted in its rate).
        not_run: checks no architecture ran (all "not requested").
        cpu_failures: model types whose greedy generate fails on the CPU itself.
        architectures: number of reports.
        seconds: wall time of the run (s), or None.
    """

    rates: dict[Check, Rate]
    cpu_only: dict[Check, int]
    not_run: tuple[Check, ...]
    cpu_failures: tuple[str, ...]
    architectures: int
    seconds: float | None = None

    def meets_thresholds(self) -> bool:
        """True when every rate of :data:`THRESHOLDS` is met."""
        return all(self.rates[check].ratio >= need for check, need in THRESHOLDS.items())

    def line(self) -> str:
        """One line: each check's rate (with how many more architectures fail that check on the CPU
        itself, or "not run"), the architectures failing on the CPU, their count and the wall time."""
        parts = []
        for check in CHECKS:
            if check in self.not_run:
                parts.append(f"{CHECK_LABELS[check]} not run")
                continue
            part = f"{CHECK_LABELS[check]} {self.rates[check]}"
            if check != "generate" and self.cpu_only[check]:
                part += f" (+{self.cpu_only[check]} failing it on CPU, not counted)"
            parts.append(part)
        n = self.architectures
        parts += [f"{len(self.cpu_failures)} fail on CPU itself (not counted)",
                  f"{n} architecture{'s' if n != 1 else ''}"]
        if self.seconds is not None:
            parts[-1] += f" in {int(self.seconds // 60)}m{int(self.seconds % 60):02d}s"
        return "compat: " + " · ".join(parts)


def rates(reports: list[Report]) -> dict[Check, Rate]:
    """Per check (:data:`~.checks.CHECKS`), the :class:`Rate` over ``reports``."""
    out = {}
    for check in CHECKS:
        statuses = [r.outcomes[check].status for r in reports if check in r.outcomes]
        out[check] = Rate(statuses.count(PASS), statuses.count(PASS) + statuses.count(FAIL))
    return out


def cpu_failures(reports: list[Report]) -> list[Report]:
    """Architectures whose greedy generate fails on the CPU itself (not counted against us)."""
    return [r for r in reports if r.outcomes.get("generate") and r.outcomes["generate"].status == CPU_FAIL]


def summarize(reports: list[Report], seconds: float | None = None) -> Summary:
    """The :class:`Summary` of ``reports``; ``seconds`` is the run's wall time, if known."""
    on_cpu = cpu_failures(reports)
    generating = [rep for rep in reports if rep not in on_cpu]
    not_run = tuple(
        check for check in CHECKS
        if all(o is None or (o.status == SKIP and o.reason == "not requested")
               for o in (rep.outcomes.get(check) for rep in reports))
    )
    cpu_only = {check: sum(1 for rep in generating
                           if rep.outcomes.get(check) and rep.outcomes[check].status == CPU_FAIL)
                for check in CHECKS}
    return Summary(rates(reports), cpu_only, not_run, tuple(r.model_type for r in on_cpu), len(reports), seconds)


def meets_thresholds(reports: list[Report]) -> bool:
    """True when every rate of :data:`THRESHOLDS` is met."""
    return summarize(reports).meets_thresholds()


def summary_line(reports: list[Report], seconds: float | None = None) -> str:
    """:meth:`Summary.line` of ``reports``."""
    return summarize(reports, seconds).line()


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
