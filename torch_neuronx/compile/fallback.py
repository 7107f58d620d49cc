"""What happens when a graph fails to compile: TorchNeuron's fallback policy.

``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` (TorchNeuron's variable, default ``1``): a graph
that fails to compile raises :class:`NeuronCompileError` with the graph and the reason, so a
silent slow path never hides a compiler problem. ``=0``: the failure is warned
(:class:`CompileFallbackWarning`, recorded in ``get_dynamo_metrics()["fallbacks"]``) and the
graph runs eagerly on ``neuron``. The compile option ``fallback_execution`` overrides the variable
for one ``torch.compile`` (TorchNeuron's rule): ``options={"fallback_execution": True}`` runs that
function's failing graphs eagerly, ``False`` raises (:func:`fallback_option`,
:func:`fallback_override`).

Usage errors (``dynamic=True``, symbolic shapes) always raise, whatever the policy.

Both levels of backend ``"neuron"`` (the Dynamo graph in :mod:`.backend`, each ATen graph in
:mod:`.aten_compile`) apply the policy the same way: a :class:`NeuronCompileError` raised below
them propagates unchanged (``except NeuronCompileError: raise``), any other exception goes to
:func:`handle_compile_failure`.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

from ..runtime.environment import env_flag
from . import metrics

log = logging.getLogger(__name__)


class NeuronCompileError(RuntimeError):
    """A graph failed to compile for backend ``"neuron"``; the message holds the reason and
    the graph (FX text)."""


class DynamicShapeError(NeuronCompileError):
    """Backend ``"neuron"`` compiles static shapes only (``dynamic=True``, ``mark_dynamic`` or
    automatic dynamic shapes produced a symbolic graph)."""


class CompileFallbackWarning(UserWarning):
    """A graph failed to compile and runs eagerly (fallback execution enabled)."""


#: The compile option that overrides ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` (TorchNeuron's name).
OPTION = "fallback_execution"

# The option of the torch.compile whose graph is being compiled (None: the variable decides). A
# context variable: Inductor compiles a Dynamo graph's ATen graphs in the same thread and context.
_override: contextvars.ContextVar[bool | None] = contextvars.ContextVar("fallback_execution", default=None)


def fallback_option(options: Mapping[str, Any] | None) -> bool | None:
    """The ``fallback_execution`` entry of ``torch.compile(..., options=...)``: True (run graphs
    that fail to compile eagerly), False (raise), or None when absent.

    Raises:
        TypeError: the value is not a bool (``0``/``1`` are accepted as False/True).
    """
    if not options or OPTION not in options:
        return None
    value = options[OPTION]
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(f"torch.compile(backend='neuron', options={{'{OPTION}': {value!r}}}): the option takes "
                    f"True (a graph that fails to compile runs eagerly, with a warning) or False (it raises)")


@contextlib.contextmanager
def fallback_override(allowed: bool | None) -> Iterator[None]:
    """Within the block, :func:`fallback_execution_allowed` answers ``allowed`` (unless None)."""
    token = _override.set(allowed)
    try:
        yield
    finally:
        _override.reset(token)


def fallback_execution_allowed() -> bool:
    """Whether a graph that fails to compile runs eagerly: the ``fallback_execution`` option of the
    ``torch.compile`` being compiled (:func:`fallback_override`) when given, else True only when
    ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` is ``0``, ``false``, ``no`` or ``off`` (default: False;
    a value that is not a boolean warns once and the default applies)."""
    override = _override.get()
    if override is not None:
        return override
    return not env_flag("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", True)


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
        "Set TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 (or pass options={'fallback_execution': True} "
        "to torch.compile) to run such graphs eagerly (with a warning) instead of raising.\n"
        f"Graph:\n{text}"
    )


def handle_compile_failure(what: str, graph_text: str, err: Exception, eager_allowed: bool) -> None:
    """Applies the policy to a graph that failed to compile.

    Args:
        what: the graph, for the messages (``"forward graph of 'forward' (model.py:12)"``).
        graph_text: its FX code (for the error).
        err: the exception code generation raised.
        eager_allowed: :func:`fallback_execution_allowed` when the compile started (the caller
            then holds an eager copy of the graph).

    Raises:
        NeuronCompileError: with the graph and the reason, unless ``eager_allowed``; then it
            warns (:class:`CompileFallbackWarning`), records the fallback in
            ``get_dynamo_metrics()["fallbacks"]`` and returns: the caller runs the graph eagerly.
    """
    if not eager_allowed:
        raise NeuronCompileError(failure_message(what, graph_text, err)) from err
    log.info("%s failed to compile (%s: %s): running it eagerly", what, type(err).__name__, err)
    warnings.warn(f"backend 'neuron' failed to compile the {what}: {type(err).__name__}: "
                  f"{err}; running it eagerly (fallback execution: TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 "
                  f"or the compile option fallback_execution=True)",
                  CompileFallbackWarning, stacklevel=3)
    metrics.record_fallback(what, f"{type(err).__name__}: {err}")
