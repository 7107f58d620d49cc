"""What happens when a graph fails to compile: TorchNeuron's fallback policy.

``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` (TorchNeuron's variable, default ``1``): a graph
that fails to compile raises :class:`NeuronCompileError` with the graph and the reason, so a
silent slow path never hides a compiler problem. ``=0``: the failure is warned
(:class:`CompileFallbackWarning`, recorded in ``get_dynamo_metrics()["fallbacks"]``) and the
graph runs eagerly on ``neuron``.

Usage errors (``dynamic=True``, symbolic shapes) always raise, whatever the policy.
"""
from __future__ import annotations

import os


class NeuronCompileError(RuntimeError):
    """A graph failed to compile for backend ``"neuron"``; the message holds the reason and
    the graph (FX text)."""


class DynamicShapeError(NeuronCompileError):
    """Backend ``"neuron"`` compiles static shapes only (``dynamic=True``, ``mark_dynamic`` or
    automatic dynamic shapes produced a symbolic graph)."""


class CompileFallbackWarning(UserWarning):
    """A graph failed to compile and runs eagerly (fallback execution enabled)."""


def fallback_execution_allowed() -> bool:
    """False (the default) unless ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` is ``0``,
    ``false`` or ``no``."""
    value = os.environ.get("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "1").strip().lower()
    return value in ("0", "false", "no")


def failure_message(what: str, graph_text: str, err: BaseException, limit: int = 20000) -> str:
    """The text of :class:`NeuronCompileError`: what failed, the reason, the fix, the graph.

    Args:
        what: e.g. ``"forward graph of 'forward' (model.py:12)"``.
        graph_text: FX code of the graph (truncated to ``limit`` characters).
        err: the original exception.
    """
    text = graph_text if len(graph_text) <= limit else graph_text[:limit] + "\n... (truncated)"
    return (
        f"backend 'neuron' failed to compile the {what}: {type(err).__name__}: {err}\n"
        "Set TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 to run such graphs eagerly (with a "
        "warning) instead of raising.\n"
        f"Graph:\n{text}"
    )
