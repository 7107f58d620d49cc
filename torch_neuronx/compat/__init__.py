"""``torch-neuronx compat``: does every causal-LM architecture of the installed transformers run
on ``neuron`` as on the CPU?

* :mod:`.tiny` — a tiny random-weight model per architecture, from its own config class;
* :mod:`.checks` — greedy generate, compiled static-cache generate and one training step on
  ``neuron`` against the CPU, for one architecture;
* :mod:`.worker` / :mod:`.runner` — parallel worker processes with per-architecture timeouts;
* :mod:`.report` — the table (text, CSV, Markdown) and the summary line.

Python use::

    from torch_neuronx.compat import check_architecture, run_compat
    report = check_architecture("llama")          # one architecture, this process
    reports = run_compat(["llama", "qwen3"])      # several, in worker processes
"""
from .checks import CHECKS, Outcome, Report, check_architecture
from .runner import causal_lm_architectures, run_compat

__all__ = ["CHECKS", "Outcome", "Report", "causal_lm_architectures", "check_architecture", "run_compat"]
