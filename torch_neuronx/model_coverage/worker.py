"""A model-coverage worker process: ``python -m torch_neuronx.model_coverage.worker DEVICE [OPTIONS_JSON]``.

``OPTIONS_JSON`` is ``{"families": {family: check_entry options}}``. Reads one line
``FAMILY<TAB>ENTRY`` per entry on stdin (a line without a tab names an entry of ``causal-lm``), runs
that family's ``check_entry`` (:mod:`.families`) with the family's options on ``DEVICE`` and writes
one line ``@@compat@@ <report JSON>`` per entry on stdout (other
output of the models — prints, warnings — goes to stderr, which the runner discards). Each
architecture runs in this long-lived process with Dynamo reset between them, so imports and
Inductor's kernel cache are paid once per worker, whatever the families; the runner restarts a worker that crashes or
exceeds the per-architecture timeout.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

MARK = "@@compat@@ "


def main() -> int:
    """Serves architectures from stdin until EOF (module docstring); returns the exit status."""
    device = sys.argv[1]
    per_family: dict[str, dict[str, object]] = (json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}).get(
        "families", {})
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # model prints must not corrupt the protocol
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TORCH_NEURONX_RECOMPILE_WARN", "0")

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    from .families import get_family

    for opts in per_family.values():
        if "checks" in opts:
            opts["checks"] = tuple(opts["checks"])  # type: ignore[arg-type]  # a JSON list
    torch.set_num_threads(1)
    for line in sys.stdin:
        family_name, _, model_type = line.strip().rpartition("\t")
        if not model_type:
            continue
        family = get_family(family_name or "causal-lm")
        options = per_family.get(family.name, {})
        try:
            report = family.check(model_type, device=device, **options)
        except Exception as err:  # noqa: BLE001 - a bug of the harness itself: report, keep serving
            from .checks import FAIL, Outcome, Report

            report = Report(model_type, outcomes={c: Outcome(FAIL, f"model-coverage harness error: {err!r}"[:300])
                                                  for c in family.checks})
        torch._dynamo.reset()
        out.write(MARK + json.dumps(report.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
