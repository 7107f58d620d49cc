"""Model coverage: does every architecture of every Hugging Face model family (causal LMs,
vision-language, seq2seq, speech, encoders, Diffusers models) run on ``neuron`` as on the CPU?
(The ``torch-neuronx compat`` command; families in :mod:`.families`.)

* :mod:`.tiny` — a tiny random-weight model per architecture, from its own config class;
* :mod:`.checks` — greedy generate, compiled static-cache generate and one training step on
  ``neuron`` against the CPU, for one architecture; typed results (:class:`Outcome`,
  :class:`Report`);
* :mod:`.families` — the other families (one module each), their tiny models (:mod:`.composite`)
  and offline inputs (:mod:`.inputs`);
* :mod:`.worker` / :mod:`.runner` — parallel worker processes with per-architecture timeouts;
* :mod:`.report` — the table (text, CSV, Markdown) and the summary.

Python use::

    from torch_neuronx.model_coverage import check_architecture, run_coverage
    report = check_architecture("llama")          # one architecture, this process
    reports = run_coverage(["llama", "qwen3"])    # several, in worker processes
    reports = run_coverage(["t5", "bart"], family="seq2seq")
"""
from .checks import CHECKS, Check, Outcome, Report, Status, check_architecture
from .families import FAMILIES, Family, get_family
from .report import Summary, summarize
from .runner import causal_lm_architectures, run_coverage

__all__ = ["CHECKS", "FAMILIES", "Check", "Family", "Outcome", "Report", "Status", "Summary",
           "causal_lm_architectures", "check_architecture", "get_family", "run_coverage", "summarize"]
