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

from .checks import ALL_CHECKS, CHECK_LABELS, CHECKS, CPU_FAIL, FAIL, PASS, SKIP, Check, Report

#: Pass rates ``torch-neuronx compat`` requires (else it exits 1), among the architectures that
#: pass the same check on the CPU: the eager check (``generate`` or ``forward``) and ``compiled``.
THRESHOLDS: dict[Check, float] = {"generate": 0.98, "forward": 0.98, "compiled": 0.95}


def checks_of(reports: list[Report]) -> tuple[Check, ...]:
    """The checks present in ``reports`` in :data:`~.checks.ALL_CHECKS` order (the causal-LM
    :data:`~.checks.CHECKS` when there are no reports)."""
    present = {c for r in reports for c in r.outcomes}
    return tuple(c for c in ALL_CHECKS if c in present) or CHECKS


def _eager(checks: tuple[Check, ...]) -> Check:
    return "generate" if "generate" in checks else "forward"


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
        cpu_failures: entries whose eager check (generate or forward) fails on the CPU itself.
        architectures: number of reports.
        seconds: wall time of the run (s), or None.
        family: the family's name (prefixes the line), or None for the plain causal-LM line.
        labels: how the line names each check.
        skipped: entries every check of which was skipped for a reason of their own (e.g. no
            tiny spec), listed apart.
    """

    rates: dict[Check, Rate]
    cpu_only: dict[Check, int]
    not_run: tuple[Check, ...]
    cpu_failures: tuple[str, ...]
    architectures: int
    seconds: float | None = None
    family: str | None = None
    labels: dict[Check, str] | None = None
    skipped: tuple[str, ...] = ()

    def meets_thresholds(self) -> bool:
        """True when every rate of :data:`THRESHOLDS` among this summary's checks is met."""
        return all(self.rates[check].ratio >= need for check, need in THRESHOLDS.items() if check in self.rates)

    def line(self) -> str:
        """One line: each check's rate (with how many more architectures fail that check on the CPU
        itself, or "not run"), the architectures failing on the CPU, their count and the wall time."""
        labels = self.labels or CHECK_LABELS
        parts = []
        for check in self.rates:
            if check in self.not_run:
                parts.append(f"{labels[check]} not run")
                continue
            part = f"{labels[check]} {self.rates[check]}"
            if check != _eager(tuple(self.rates)) and self.cpu_only[check]:
                part += f" (+{self.cpu_only[check]} failing it on CPU, not counted)"
            parts.append(part)
        n = self.architectures
        parts.append(f"{len(self.cpu_failures)} fail on CPU itself (not counted)")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped (not counted)")
        parts.append(f"{n} architecture{'s' if n != 1 else ''}")
        if self.seconds is not None:
            parts[-1] += f" in {int(self.seconds // 60)}m{int(self.seconds % 60):02d}s"
        return ("compat: " if self.family is None else f"compat [{self.family}]: ") + " · ".join(parts)


def rates(reports: list[Report]) -> dict[Check, Rate]:
    """Per check of ``reports`` (:func:`checks_of`), the :class:`Rate` over ``reports``."""
    out = {}
    for check in checks_of(reports):
        statuses = [r.outcomes[check].status for r in reports if check in r.outcomes]
        out[check] = Rate(statuses.count(PASS), statuses.count(PASS) + statuses.count(FAIL))
    return out


def cpu_failures(reports: list[Report]) -> list[Report]:
    """Entries whose eager check (greedy generate, or forward) fails on the CPU itself (not counted
    against us)."""
    eager = _eager(checks_of(reports))
    return [r for r in reports if r.outcomes.get(eager) and r.outcomes[eager].status == CPU_FAIL]


def skipped(reports: list[Report]) -> list[Report]:
    """Entries all of whose checks were skipped for a reason of their own (not "not requested")."""
    return [r for r in reports if r.outcomes and all(o.status == SKIP and o.reason != "not requested"
                                                     for o in r.outcomes.values())]


def summarize(reports: list[Report], seconds: float | None = None, family: str | None = None,
              labels: dict[Check, str] | None = None) -> Summary:
    """The :class:`Summary` of ``reports``; ``seconds`` is the run's wall time, if known; ``family``
    and ``labels`` name the family and its checks in the line."""
    checks = checks_of(reports)
    on_cpu = cpu_failures(reports)
    generating = [rep for rep in reports if rep not in on_cpu]
    not_run = tuple(
        check for check in checks
        if all(o is None or (o.status == SKIP and o.reason == "not requested")
               for o in (rep.outcomes.get(check) for rep in reports))
    )
    cpu_only = {check: sum(1 for rep in generating
                           if rep.outcomes.get(check) and rep.outcomes[check].status == CPU_FAIL)
                for check in checks}
    return Summary(rates(reports), cpu_only, not_run, tuple(r.model_type for r in on_cpu), len(reports), seconds,
                   family, labels, tuple(r.model_type for r in skipped(reports)))


def meets_thresholds(reports: list[Report]) -> bool:
    """True when every rate of :data:`THRESHOLDS` is met."""
    return summarize(reports).meets_thresholds()


def summary_line(reports: list[Report], seconds: float | None = None, family: str | None = None,
                 labels: dict[Check, str] | None = None) -> str:
    """:meth:`Summary.line` of ``reports``."""
    return summarize(reports, seconds, family, labels).line()


def _first_reason(report: Report) -> str:
    for check in ALL_CHECKS:
        o = report.outcomes.get(check)
        if o and o.status in (FAIL, CPU_FAIL):
            return f"{check}: {o.reason}"
    for check in ALL_CHECKS:
        o = report.outcomes.get(check)
        if o and o.reason and o.reason != "not requested":  # a skip's reason, or a note on a pass
            return f"{check}: {o.reason}"
    return ""


def rows(reports: list[Report]) -> list[list[str]]:
    """Header and one row per architecture: model type, class, each check's status, seconds,
    the first failure's reason."""
    checks = checks_of(reports)
    out = [["architecture", "class", *checks, "seconds", "reason"]]
    for rep in reports:
        out.append([rep.model_type, rep.model_class,
                    *[rep.outcomes[c].status if c in rep.outcomes else SKIP for c in checks],
                    f"{rep.seconds:.1f}", _first_reason(rep)])
    return out


def to_csv(reports: list[Report]) -> str:
    """The table as CSV text (one reason per check: ``<check>_reason`` columns)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    checks = checks_of(reports)
    w.writerow(["architecture", "class", "params", *checks, *[f"{c}_max_diff" for c in checks],
                *[f"{c}_reason" for c in checks], "seconds"])
    for rep in reports:
        o = [rep.outcomes.get(c) for c in checks]
        w.writerow([rep.model_type, rep.model_class, rep.params, *[x.status if x else SKIP for x in o],
                    *["" if not x or x.max_diff is None else f"{x.max_diff:.3g}" for x in o],
                    *[x.reason if x else "" for x in o], f"{rep.seconds:.1f}"])
    return buf.getvalue()


def to_markdown(reports: list[Report], seconds: float | None = None, family: str | None = None,
                labels: dict[Check, str] | None = None) -> str:
    """The summary line, the table of architectures passing the CPU checks, then the CPU
    failures with their reasons, as Markdown."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    checks = checks_of(reports)
    cpu = cpu_failures(reports)
    lines = [f"**{summary_line(reports, seconds, family, labels)}**", "",
             "| architecture | class | " + " | ".join(checks) + " | reason |",
             "|---|---|" + "---|" * len(checks) + "---|"]
    for row in rows([r for r in reports if r not in cpu])[1:]:
        lines.append("| " + " | ".join(cell(x) for x in row[:2 + len(checks)]) + f" | {cell(row[-1])} |")
    if cpu:
        lines += ["", f"Failing on CPU itself ({len(cpu)}, not counted):", "",
                  "| architecture | reason |", "|---|---|"]
        for r in cpu:
            reasons = [f"{c}: {r.outcomes[c].reason}" for c in checks
                       if c in r.outcomes and r.outcomes[c].status == CPU_FAIL]
            lines.append(f"| {r.model_type} | {cell('; '.join(reasons))} |")
    return "\n".join(lines) + "\n"


def to_text(reports: list[Report], width: int = 160) -> str:
    """The table for a terminal: aligned columns, the reason cut to the line width."""
    table = rows(reports)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    lines = []
    for r in table:
        head = "  ".join(x.ljust(w) for x, w in zip(r[:-1], widths, strict=True))
        lines.append((head + "  " + r[-1])[:width].rstrip())
    return "\n".join(lines)
