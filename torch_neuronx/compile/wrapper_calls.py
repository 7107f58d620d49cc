"""What the Python wrapper Inductor generates for a ``neuron`` graph calls on each run.

A compiled graph's wrapper allocates its buffers (``empty_strided``) and calls the extern BLAS
kernels (``extern_kernels.mm / bmm / addmm / baddbmm`` with ``out=``) once per run; a decode step
of a small Llama does about 40 allocations and 30 matmuls per token. For ``cpu`` Inductor emits a
direct allocator (``torch._C._dynamo.guards._empty_strided_cpu``); for other devices it emits
``torch.empty_strided(..., device=...)``, and ``torch.mm(..., out=)`` on ``neuron`` goes through
the eager device path (Python argument parsing, the dispatcher, the boxed fallback). The C++ core
provides both directly (``torch_neuronx._C``, ``csrc/aten/CompiledGraph.cpp``):

* :func:`empty_strided_neuron`: an accounted allocation on the current NeuronCore, the same
  memory and op count (``aten::empty_strided``) as ``torch.empty_strided(device="neuron")``;
* :func:`empty_strided_neuron_on`: the same on a given core, for the buffers of a multi-core
  graph that live on another core than its inputs;
* :data:`extern_kernels`: Inductor's ``extern_kernels`` namespace whose matmuls run the CPU
  kernel on zero-copy aliases (op counts ``aten::mm.out`` ... as eager); operands on another
  device, host-only dtypes (fp64) and ``alpha``/``beta`` other than 1 take the eager path, with
  its errors and warnings. Every other kernel is Inductor's own;
* :func:`assert_input_layouts`: Inductor's input checks (``assert_size_stride(x, size, stride,
  'input')``) of one run in one call, with Inductor's error for a mismatch;
* :func:`graph_call`: the module's entry point, which runs the graph with its inputs' core
  current and, with adaptive eager execution on, runs the queued eager ops first and queues
  nothing while the graph runs.

The generated code imports these names (:mod:`.inductor_device` writes the import into the
wrapper's header and emits ``empty_strided_neuron`` for ``neuron`` buffers), so a graph loaded
from the compile cache calls them too.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _C

#: ``empty_strided_neuron(size, stride, dtype) -> Tensor``: ``torch.empty_strided(size, stride,
#: dtype=dtype, device="neuron")`` on the current core (sizes and strides in elements).
empty_strided_neuron = _C._empty_strided_neuron


def empty_strided_neuron_on(index: int, size: tuple[int, ...], stride: tuple[int, ...], dtype: Any) -> Any:
    """:func:`empty_strided_neuron` on NeuronCore ``index`` (sizes and strides in elements): the
    allocation of a buffer that lives on another core than the graph's inputs (a graph that moves
    a tensor with ``.to("neuron:1")``, or whose inputs span several cores), so that the kernels and
    extern matmuls writing it, and the outputs, are on the core eager gives them. The index comes
    from the traced graph, whose devices exist. Same memory accounting and op count as eager."""
    previous = _current_device()
    if previous == index:
        return empty_strided_neuron(size, stride, dtype)
    _set_device(index)
    try:
        return empty_strided_neuron(size, stride, dtype)
    finally:
        _set_device(previous)


_current_device, _set_device = _C._current_device, _C._set_device


#: ``assert_input_layouts(inputs, layouts)``: for every ``i``, Inductor's
#: ``assert_size_stride(inputs[i], *layouts[i], 'input')`` (``layouts[i]`` a ``(sizes, strides)``
#: pair of int tuples, in elements); an input that matches exactly passes in C++, any other goes
#: to Inductor's check, which raises ``AssertionError`` naming the input, or passes as before.
assert_input_layouts = _C._assert_input_layouts


class NeuronExternKernels:
    """Inductor's ``torch._inductor.select_algorithm.extern_kernels`` for ``neuron`` graphs:
    ``mm``, ``bmm``, ``addmm`` and ``baddbmm`` (``out=`` required, as Inductor calls them) from
    the C++ core; any other name is Inductor's kernel. An operand of these four may be a tensor
    or a described view ``(base, sizes, strides, offset)`` (what
    ``reinterpret_tensor(base, sizes, strides, offset)`` would return; the generated code passes
    this form, so no ``neuron`` tensor is made for the view)."""

    mm = staticmethod(_C._mm_out)
    bmm = staticmethod(_C._bmm_out)
    addmm = staticmethod(_C._addmm_out)
    baddbmm = staticmethod(_C._baddbmm_out)

    def __getattr__(self, name: str) -> Any:
        from torch._inductor.select_algorithm import extern_kernels as inductor_kernels

        return getattr(inductor_kernels, name)


def graph_call(call: Callable[[list[Any]], Any], core: int | None = None) -> Callable[[list[Any]], Any]:
    """The entry point of a generated ``neuron`` wrapper module: ``call`` itself, or ``call``
    wrapped so that

    * with ``core`` (the one NeuronCore of the graph's inputs, written in by the code generator),
      it runs with ``core`` as the current device, restored afterwards: the buffers allocated on
      the current core (:func:`empty_strided_neuron`) are then on the inputs' core, as eager's
      results are, whatever the calling thread's current device (backend ``"neuron"`` already
      switches before the call; plain ``backend="inductor"`` does not);
    * while adaptive eager execution is on (``TORCH_NEURONX_ADAPTIVE_EAGER=1`` when the module is
      loaded), the eager ops still queued run first (the graph's C++ kernels read device memory
      through raw pointers, so those results must exist) and no op the wrapper dispatches
      (Inductor's fallback ATen ops, ``out=`` calls) is queued while it runs: each runs at once.

    ``args`` is the wrapper's list of inputs (cleared by ``call``, as Inductor's wrappers do)."""
    if core is not None:
        call = _on_core(call, core)
    if not _C._adaptive_enabled():
        return call
    enter, leave = _C._adaptive_enter_graph, _C._adaptive_exit_graph

    def run(args: list[Any]) -> Any:
        previous = enter()
        try:
            return call(args)
        finally:
            leave(previous)

    return run


def _on_core(call: Callable[[list[Any]], Any], core: int) -> Callable[[list[Any]], Any]:
    """``call`` run with NeuronCore ``core`` current (switched only when it is not already)."""

    def run(args: list[Any]) -> Any:
        previous = _current_device()
        if previous == core:
            return call(args)
        _set_device(core)
        try:
            return call(args)
        finally:
            _set_device(previous)

    return run


#: The namespace generated wrappers of ``neuron`` graphs call as ``extern_kernels``.
extern_kernels = NeuronExternKernels()

#: The import line :mod:`.inductor_device` writes into the header of every ``neuron`` wrapper.
WRAPPER_IMPORT = ("from torch_neuronx.compile.wrapper_calls import assert_input_layouts, empty_strided_neuron, "
                  "empty_strided_neuron_on, extern_kernels, graph_call")
