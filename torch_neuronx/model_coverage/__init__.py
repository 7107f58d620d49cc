"""Model coverage: does every causal-LM architecture of the installed transformers run on ``neuron``
as on the CPU? (The ``torch-neuronx compat`` command.)

* :mod:`.tiny` — a tiny random-weight model per architecture, from its own config class;
* :mod:`.checks` — greedy generate, compiled static-cache generate and one training step on
  ``neuron`` against the CPU, for one architecture; typed results (:class:`Outcome`,
  :class:`Report`);
* :mod:`.worker` / :mod:`.runner` — parallel worker processes with per-architecture timeouts;
* :mod:`.report` — the table (text, CSV, Markdown) and the summary.

Python use::

    from torch_neuronx.model_coverage import check_architecture, run_coverage
    report = check_architecture("llama")          # one architecture, this process
    reports = run_coverage(["llama", "qwen3"])    # several, in worker processes
"""
from .checks import CHECKS, Check, Outcome, Report, Status, check_architecture
from .report import Summary, summarize
from .runner import causal_lm_architectures, run_coverage

__all__ = ["CHECKS", "Check", "Outcome", "Report", "Status", "Summary", "causal_lm_architectures",
           "check_architecture", "run_coverage", "summarize"]
