"""Which graph backend ``"neuron"`` is compiling, in the user's terms: the function Dynamo is
compiling, Dynamo's compile id, the guard that made it recompile, and the names and static
shapes of the graph's tensor inputs.

The metrics (:mod:`.metrics`: recompile diagnosis), the debug dumps (:mod:`.debug`) and the
error messages read these; none of it goes into the cache key (:mod:`.cache_key`), which must
not depend on file names or line numbers.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch


def input_name(node: torch.fx.Node) -> str:
    """Dynamo's source name of a placeholder (``"L['input_ids']"``), else the node's name."""
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is not None:
        name = source.name
        name = name() if callable(name) else name
        return str(name)
    return node.name


def _dynamo_internal(filename: str) -> bool:
    """True for Dynamo's own wrappers (``torch.compile(module)`` traces ``external_utils``'s
    ``inner`` first, then the module's ``forward``)."""
    return os.path.dirname(os.path.abspath(filename)) == os.path.dirname(os.path.abspath(torch._dynamo.__file__))


def current_function() -> str:
    """``"'name' (file:line)"`` of the function Dynamo is compiling, or ``"'<graph>'"`` outside a
    Dynamo compile.

    Dynamo lists the frame it compiles first, then each function it inlined as that function
    finishes (innermost first). The frame itself is the user's function unless it is one of
    Dynamo's own wrappers (``torch.compile`` of a ``torch.nn`` module traces ``external_utils``'s
    ``inner``); then the outermost inlined function, the last one listed, is the module's
    ``forward``: ``'Linear.forward' (linear.py:124)`` for ``torch.compile(nn.Linear(...))``,
    ``'Sequential.forward'`` (not the ``Sequential.__iter__`` it calls) for an ``nn.Sequential``."""
    tc = torch._guards.TracingContext.try_get()
    codes = getattr(tc, "traced_code", None) if tc is not None else None
    if codes:
        code = codes[0]
        if _dynamo_internal(code.co_filename):
            code = next((c for c in reversed(codes[1:]) if not _dynamo_internal(c.co_filename)), code)
        name = getattr(code, "co_qualname", code.co_name)   # "Linear.forward"; a nested function by its name
        name = code.co_name if "<locals>" in name else name
        return f"'{name}' ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    return "'<graph>'"


def compile_id() -> tuple[int | None, int | None]:
    """Dynamo's id of the compile in progress: ``(frame_id, attempt)``; ``attempt`` is 0 for a
    frame's first compile and counts its recompiles. ``(None, None)`` outside a compile."""
    cid = torch._guards.CompileContext.current_compile_id()
    return getattr(cid, "frame_id", None), getattr(cid, "frame_compile_id", None)


def recompile_reason() -> str | None:
    """Dynamo's first failed guard for the compile in progress (read from Dynamo's metrics
    context, where ``convert_frame`` stores it; None if unavailable)."""
    try:
        from torch._dynamo.utils import get_metrics_context

        return get_metrics_context()._metrics.get("recompile_reason")
    except Exception:  # noqa: BLE001  (a diagnosis only: never fail a compile for it)
        return None


def input_signature(gm: torch.fx.GraphModule,
                    example_inputs: Sequence[Any]) -> list[tuple[str, tuple[int, ...]]]:
    """``(input name, static shape)`` for each tensor input of ``gm``, in placeholder order."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    sig = []
    for node, x in zip(placeholders, example_inputs, strict=False):
        if isinstance(x, torch.Tensor):
            sig.append((input_name(node), tuple(int(s) for s in x.shape)))
    return sig
