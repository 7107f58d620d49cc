"""Compiles one recorded trace of eager ``neuron`` ops into an Inductor kernel.

The C++ recorder (``csrc/aten/AdaptiveEager.cpp``) hands over a description of the queued ops:
``(nodes, refs, inputs, outputs)`` where each node is ``(op name, overload, args, number of
results)``, each argument ``(kind, value)`` (0: a plain value, 1: a tensor reference or None, 2: a
list of references, 3: a list of references or None, 4: an ``out=`` tensor, dropped: ``out=``
overloads become their functional overload), a reference is ``("ext", i)`` (external input
``i``) or ``("out", node, result, view, sizes, strides, storage_offset)``, each input is
``(sizes, strides, dtype, storage_offset)`` and ``outputs`` lists the ``(node, result)`` pairs still
alive. :func:`build_graph` turns it into an ATen FX graph over CPU tensors, and
:func:`compile_trace` compiles that graph with Inductor's CPU code generation: the kernel runs on
zero-copy CPU aliases of the device memory.
"""
from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch._inductor.config
import torch.fx

Description = tuple[list[Any], list[Any], list[Any], list[Any]]

#: Inductor settings of merged kernels. One thread: the merged runs of eager ops are small (a decode
#: step's few hundred ops on vectors), where OpenMP's fork/join costs more than the loops (measured:
#: 25-40 ms per kernel call on a loaded 2-core machine with OpenMP, well under 1 ms without). No size
#: asserts: a kernel is looked up by its inputs' exact sizes, strides, dtypes and alignment class, so
#: the generated code's per-input checks (Python calls at every run) could never fail.
INDUCTOR_CONFIG: dict[str, Any] = {"cpp.threads": 1, "size_asserts": False}


class TraceCompileError(RuntimeError):
    """A recorded trace that cannot become a kernel (the trace then runs op by op)."""


def _aten_op(name: str, overload: str) -> Any:
    namespace, _, base = name.partition("::")
    if namespace != "aten":
        raise TraceCompileError(f"adaptive eager merges ATen ops only, not {name}")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _writes(arg: Any) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


def functional_op(name: str, overload: str) -> Any:
    """The ATen op itself, or for an ``out=`` overload (``aten::mm.out``) the functional overload
    taking the same arguments without the ``out`` tensors (``aten::mm.default``).

    Raises:
        TraceCompileError: when there is no such overload.
    """
    op = _aten_op(name, overload)
    args = op._schema.arguments
    if not any(_writes(a) for a in args):
        return op
    wanted = [(a.name, str(a.type)) for a in args if not _writes(a)]
    packet = getattr(torch.ops.aten, name.partition("::")[2])
    for candidate in packet.overloads():
        schema = getattr(packet, candidate)._schema
        if any(_writes(a) for a in schema.arguments) or any(r.alias_info for r in schema.returns):
            continue
        if [(a.name, str(a.type)) for a in schema.arguments] == wanted:
            return getattr(packet, candidate)
    raise TraceCompileError(f"{name}.{overload} has no functional overload to merge")


def build_graph(description: Description) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
    """The FX graph of a recorded trace and CPU example inputs of its external inputs.

    Args:
        description: the recorder's ``(nodes, refs, inputs, outputs)`` (module docstring).

    Returns:
        ``(graph module, example inputs)``: the module takes the external inputs in order and
        returns a tuple of the live results in the order of ``outputs``; the examples are zero
        CPU tensors with each input's sizes, strides, dtype and storage offset.

    Raises:
        TraceCompileError: for an op outside the ``aten`` namespace.
    """
    nodes, refs, inputs, outputs = description
    graph = torch.fx.Graph()
    placeholders = [graph.placeholder(f"in{i}") for i in range(len(inputs))]
    results: list[list[torch.fx.Node]] = []

    def value(index: int | None) -> torch.fx.Node | None:
        if index is None:
            return None
        ref = refs[index]
        if ref[0] == "ext":
            return placeholders[ref[1]]
        _, node, out, view, sizes, strides, offset = ref
        source = results[node][out]
        if not view:
            return source
        return graph.call_function(torch.ops.aten.as_strided.default, (source, sizes, strides, offset))

    for name, overload, args, num_results in nodes:
        op = functional_op(name, overload)
        values: list[Any] = []
        for kind, arg in args:
            if kind == 4:
                continue  # an out= tensor: the functional op returns the result instead
            if kind == 0:
                values.append(arg)
            elif kind == 1:
                values.append(value(arg))
            else:
                values.append([value(r) for r in arg])
        if len(values) != len(op._schema.arguments):
            raise TraceCompileError(f"{name}.{overload}: {len(values)} arguments recorded for {op._schema}")
        fx_args: list[Any] = []
        fx_kwargs: dict[str, Any] = {}
        for schema_arg, arg in zip(op._schema.arguments, values, strict=True):
            if schema_arg.kwarg_only:
                fx_kwargs[schema_arg.name] = arg
            else:
                fx_args.append(arg)
        call = graph.call_function(op, tuple(fx_args), fx_kwargs)
        if num_results == 1:
            results.append([call])
        else:
            results.append([graph.call_function(operator.getitem, (call, i)) for i in range(num_results)])
    graph.output(tuple(results[node][out] for node, out in outputs))
    module = torch.fx.GraphModule(torch.nn.Module(), graph)
    examples = [_example(sizes, strides, dtype, offset) for sizes, strides, dtype, offset in inputs]
    return module, examples


def _example(sizes: Sequence[int], strides: Sequence[int], dtype: torch.dtype, offset: int) -> torch.Tensor:
    span = 1 + sum((s - 1) * st for s, st in zip(sizes, strides, strict=True) if s > 0)
    if any(s == 0 for s in sizes):
        span = 0
    base = torch.zeros(offset + span, dtype=dtype)
    return base.as_strided(tuple(sizes), tuple(strides), offset)


def check_traced(traced: torch.fx.GraphModule) -> None:
    """Refuses a traced graph in which an op ran outside the tracer.

    ``make_fx`` records an op only when it reaches the tracer through the ``Python`` dispatch key; an
    op that runs while that key is excluded (a thread-local state of the caller) runs on the example
    inputs and its result enters the graph as a constant tensor (a ``get_attr`` node), so the
    kernel would return the examples' values whatever its inputs. The recorded graph has no
    constants, so any ``get_attr`` means the trace is wrong.

    Raises:
        TraceCompileError: naming the constant and the cause.
    """
    for node in traced.graph.nodes:
        if node.op == "get_attr":
            raise TraceCompileError(
                f"the traced kernel holds a constant tensor ({node.target}): its ops ran outside "
                "make_fx's tracer (the Python dispatch key was excluded where the merge was compiled)")


def compile_trace(description: Description) -> Callable[[list[torch.Tensor]], Sequence[torch.Tensor]]:
    """An Inductor (CPU) kernel computing the live results of a recorded trace.

    Args:
        description: the recorder's ``(nodes, refs, inputs, outputs)`` (module docstring).

    Returns:
        A callable taking the list of external inputs (CPU tensors, aliases of device memory) and
        returning the live results as CPU tensors, in the order of ``outputs``.

    Raises:
        TraceCompileError: for an op outside the ``aten`` namespace; Inductor's own errors pass
        through (the recorder then runs the trace op by op and never compiles it again).
    """
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    module, examples = build_graph(description)
    if os.environ.get("TORCH_NEURONX_ADAPTIVE_DEBUG"):
        print(f"[adaptive eager] compiling {len(description[0])} ops, inputs "
              f"{[tuple(e.shape) for e in examples]}:\n{module.code}", file=sys.stderr)
    with torch.no_grad(), torch._inductor.config.patch(INDUCTOR_CONFIG):
        traced = make_fx(module, decomposition_table=select_decomp_table())(*examples)
        check_traced(traced)
        compiled = compile_fx_inner(traced, examples)
    # The generated `call(args)` itself (it empties the list it is given; the recorder passes a
    # fresh one): no AOTAutograd wrapper, no grad-mode handling, as the ops are below autograd.
    # A graph with nothing to generate comes back as a boxed function taking the same list.
    call = getattr(compiled, "current_callable", None)
    if os.environ.get("TORCH_NEURONX_ADAPTIVE_DEBUG"):
        print(f"[adaptive eager] generated code:\n{getattr(compiled, 'source_code', '')}", file=sys.stderr)
    return call if call is not None else compiled
