"""Inductor's CPU C++ code generator, running on ``neuron`` memory.

The software NeuronCore's device memory is host memory, so the C++ kernels Inductor
generates for the CPU can read and write ``neuron`` tensors directly (they receive raw
pointers); buffers the generated wrapper allocates are ``neuron`` tensors
(``empty_strided(..., device='neuron:0')``, accounted per core by our allocator), and
``extern_kernels.mm/addmm/bmm`` calls run CPU BLAS on zero-copy aliases
(:mod:`.wrapper_calls`: the wrapper's allocations and matmuls without the eager device path).
Outputs therefore stay on ``neuron`` with no copy.

Four registrations make Inductor accept the device (a fifth, :mod:`.codegen_config`, keys
Inductor's own FX graph cache by this code); without any one of them a compile on
``neuron`` fails:

1. a :class:`DeviceInterface` (``torch._dynamo.device_interface``): device count, current
   device, synchronize, and CPU-like properties (``multi_processor_count`` = host cores) for
   Inductor's reduction heuristics;
2. :class:`DeviceOpOverrides` (no streams, no device guard code: the wrapper runs on the
   calling thread's current device, as Inductor's CPU path does);
3. code generators registered through ``register_backend_for_device``: Inductor's C++/OpenMP
   kernel generator (``CppScheduling``, run with ``cuda_backend="cpp"`` while it generates our
   kernels: Inductor answers ``cuda_backend`` for devices it does not know), a Python wrapper
   generator that emits kernel calls as for ``cpu`` (PyTorch OpenReg's ``inductor_backend.py``
   does the same for ``openreg``), also for subgraphs (``nested_compile_region``), and a C++
   wrapper generator that refuses with a clear error (AOTInductor, ``cpp_wrapper``);
4. the scheduler treating ``neuron`` nodes as CPU nodes: ``BaseSchedulerNode.is_cpu()``
   compares ``device.type == "cpu"``; otherwise fusion takes a GPU-only reindexing path that
   fails on C++ kernels. This is the one patch of a private method in the project: it is
   pinned to torch 2.13 (:data:`PINNED_TORCH`), refuses to stack on another patch, and is
   tested against the original's source and behaviour (``tests/compile/test_inductor_device.py``).

:func:`register` is idempotent and imports Inductor; it runs when backend ``"neuron"`` is
first used, or when Inductor itself asks the device module for its code generators
(``torch.neuron.Scheduling`` ..., :func:`codegen_class`) because a graph on ``neuron`` reached
plain Inductor; never at ``import torch``.
"""
from __future__ import annotations

import multiprocessing
import re
import threading
from collections.abc import Callable
from textwrap import dedent
from typing import Any

import torch

DEVICE = "neuron"
#: The torch minor version whose private ``BaseSchedulerNode.is_cpu`` the patch was written
#: against (torch/_inductor/scheduler.py: ``return device is not None and device.type == "cpu"``).
PINNED_TORCH = "2.13"

_lock = threading.Lock()
_registered = False
_original_is_cpu: Callable[[Any], bool] | None = None
_classes: dict[str, type] = {}


class InductorDeviceError(RuntimeError):
    """Inductor cannot be set up for ``neuron`` (unsupported torch version)."""


def _neuron_mod():
    mod = getattr(torch, DEVICE, None)
    if mod is None:
        raise InductorDeviceError("torch.neuron is missing: the neuron device did not autoload")
    return mod


class _CpuLikeProperties:
    """What Inductor reads from device properties: ``multi_processor_count`` (host cores)."""

    def __init__(self, cores: int) -> None:
        self.multi_processor_count = cores


def _make_interface():
    from torch._dynamo.device_interface import DeviceInterface

    class NeuronInterface(DeviceInterface):
        """Inductor's view of the software NeuronCore (synchronous, no streams)."""

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                _neuron_mod().set_device(device)

            @staticmethod
            def current_device() -> int:
                return _neuron_mod().current_device()

            @staticmethod
            def get_device_properties(device=None) -> _CpuLikeProperties:
                return _CpuLikeProperties(multiprocessing.cpu_count())

        @staticmethod
        def current_device() -> int:
            return _neuron_mod().current_device()

        @staticmethod
        def set_device(device) -> None:
            _neuron_mod().set_device(device)

        @staticmethod
        def exchange_device(device: int) -> int:
            mod = _neuron_mod()
            prev = mod.current_device()
            if device >= 0:
                mod.set_device(device)
            return prev

        maybe_exchange_device = exchange_device

        @staticmethod
        def device_count() -> int:
            return _neuron_mod().device_count()

        @staticmethod
        def is_available() -> bool:
            return _neuron_mod().is_available()

        @staticmethod
        def synchronize(device=None) -> None:
            _neuron_mod().synchronize(device)

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @staticmethod
        def get_compute_capability(device=None) -> str:
            return ""

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @classmethod
        def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
            # NeuronCore engines have no fp64/complex (AWS Neuron documentation, "Neuron
            # hardware" → NeuronCore data types; the eager device counts them as host fallbacks).
            return dtype not in (torch.float64, torch.complex64, torch.complex128)

        @staticmethod
        def memory_allocated(device=None) -> int:
            return _neuron_mod().memory_allocated(device)

    return NeuronInterface


def _make_op_overrides():
    from torch._inductor.codegen.common import DeviceOpOverrides

    class NeuronDeviceOpOverrides(DeviceOpOverrides):
        """Python-wrapper snippets: no raw streams, no device switch (synchronous device)."""

        def import_get_raw_stream_as(self, name: str) -> str:
            return dedent(
                f"""
                def {name}(_):
                    return 0
                """
            )

        def set_device(self, device_idx: int) -> str:
            return "pass"

        def synchronize(self) -> str:
            return "pass"

        def device_guard(self, device_idx: int) -> str:
            return "torch._ops.contextlib.nullcontext()"

        def cpp_kernel_type(self) -> str:
            return "void*"

    return NeuronDeviceOpOverrides()


#: A shape or stride tuple of int literals as Inductor writes it: ``(1, 256)``, ``(256, )``, ``()``.
_INT_TUPLE = re.compile(r"\((?:-?\d+, ?)*(?:-?\d+)?\)")
#: ``reinterpret_tensor(name, (sizes), (strides), offset)`` with literal sizes, strides and offset.
_REINTERPRET = re.compile(r"reinterpret_tensor\((\w+), (\([-\d, ]*\)), (\([-\d, ]*\)), (\d+)\)")
#: The extern products of :data:`.wrapper_calls.extern_kernels` that take described views.
_VIEW_OPERAND_KERNELS = frozenset(f"extern_kernels.{op}" for op in ("mm", "bmm", "addmm", "baddbmm"))


def describe_view_operand(arg: str) -> str:
    """An extern product's argument as the wrapper passes it: a view Inductor writes as
    ``reinterpret_tensor(buf, (sizes), (strides), offset)`` with literal geometry becomes the
    tuple ``(buf, (sizes), (strides), offset)``, which the C++ product reads as that view without
    making a ``neuron`` tensor for it (see ``aten/CompiledGraph.cpp``); any other argument is
    returned unchanged."""
    match = _REINTERPRET.fullmatch(arg)
    if match is None or not (_INT_TUPLE.fullmatch(match[2]) and _INT_TUPLE.fullmatch(match[3])):
        return arg
    return f"({match[1]}, {match[2]}, {match[3]}, {match[4]})"


def _graph_input_core() -> int | None:
    """The one NeuronCore index of the graph's ``neuron`` inputs being generated (the core
    :mod:`.device_pinning` makes current while the graph runs), or None (no such input, or
    inputs on several cores)."""
    from torch._inductor.virtualized import V

    indices = set()
    for value in V.graph.graph_inputs.values():
        get_device = getattr(value, "get_device", None)
        device = get_device() if get_device is not None else None
        if device is not None and device.type == DEVICE:
            indices.add(device.index)
    indices.discard(None)
    return next(iter(indices)) if len(indices) == 1 else None


def _kernel_call_on_cpu(wrapper_cls: type) -> type:
    """``wrapper_cls`` whose C++ kernel calls are generated as for ``cpu``, whose ``neuron``
    buffers are allocated by :func:`~.wrapper_calls.empty_strided_neuron` (the direct allocator
    Inductor gives ``cpu`` buffers, instead of ``torch.empty_strided(device=...)``) on the current
    core when they live on the inputs' core, else by
    :func:`~.wrapper_calls.empty_strided_neuron_on` on their own core (each buffer on the core
    eager gives it: Inductor emits no device guard for a non-GPU device), and whose
    extern matmuls take their view operands described (:func:`describe_view_operand`)."""

    class NeuronKernelCalls(wrapper_cls):
        def _generate_extern_kernel_out_helper(self, kernel, out, out_view, args, device, *rest, **kw):
            if device == DEVICE and kernel in _VIEW_OPERAND_KERNELS:
                args = [describe_view_operand(a) for a in args]
            super()._generate_extern_kernel_out_helper(kernel, out, out_view, args, device, *rest, **kw)

        def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, **kwargs):
            from torch._inductor.virtualized import V

            device = device or V.graph.get_current_device_or_throw()
            if device.type == DEVICE:
                device = torch.device("cpu")
            super()._generate_kernel_call_helper(kernel_name, call_args, device=device, **kwargs)

        def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None,
                            is_pinned=False):
            from torch._inductor import config as inductor_config

            if device.type != DEVICE or inductor_config.test_configs.track_memory_lifecycle:
                return super().make_allocation(name, device, dtype, shape, stride,
                                               allocation_shape, is_pinned)
            allocation_shape = shape if allocation_shape is None else allocation_shape
            shape_s = self.codegen_python_shape_tuple(shape)
            allocation_s = self.codegen_python_shape_tuple(allocation_shape)
            stride_s = self.codegen_python_shape_tuple(stride)
            home = _graph_input_core()
            if device.index is None or device.index == home:
                out = f"{name} = empty_strided_neuron({allocation_s}, {stride_s}, {dtype})"
            else:
                out = f"{name} = empty_strided_neuron_on({device.index}, {allocation_s}, {stride_s}, {dtype})"
            if shape_s != allocation_s:
                out += f".as_strided({shape_s}, {stride_s})"
            return out

    return NeuronKernelCalls


def _make_wrapper_codegen():
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen

    class NeuronSubgraphWrapperCodegen(_kernel_call_on_cpu(SubgraphPythonWrapperCodegen)):  # type: ignore[misc]
        """Wrapper of a subgraph (``torch.compiler.nested_compile_region``, control flow)."""

    class NeuronWrapperCodegen(_kernel_call_on_cpu(PythonWrapperCodegen)):  # type: ignore[misc]
        """Python wrapper whose C++ kernel calls are generated as for ``cpu``, whose header
        binds ``extern_kernels``, ``empty_strided_neuron`` and ``assert_input_layouts`` to
        :mod:`.wrapper_calls`, and whose input checks are one call at the top of the run.

        Inductor writes one ``assert_size_stride(argN, sizes, strides, 'input')`` before the
        first kernel that reads each input (a decode step of a small Llama: 55 calls per token);
        here the checks with literal sizes and strides (all of them under static shapes) are
        collected and written as one ``assert_input_layouts`` call after the inputs are
        unpacked: the same inputs checked against the same layouts, with Inductor's error
        for a mismatch, before any kernel runs instead of between kernels. Other checks stay
        Inductor's."""

        def __init__(self) -> None:
            # (set first: Inductor's __init__ writes the prefix, which records the indent)
            self._input_layouts: list[tuple[str, str, str]] = []
            self._prefix_indent = 1
            super().__init__()

        def write_launcher_fn_call_get_indent(self) -> int:
            self._prefix_indent = super().write_launcher_fn_call_get_indent()
            return self._prefix_indent

        def _codegen_assert_size_stride(self, code, name, size, stride, op_name) -> None:
            if op_name == "input" and _INT_TUPLE.fullmatch(size) and _INT_TUPLE.fullmatch(stride):
                self._input_layouts.append((name, size, stride))
                return
            super()._codegen_assert_size_stride(code, name, size, stride, op_name)

        def finalize_prefix(self) -> None:
            super().finalize_prefix()
            if self._input_layouts:
                names = "".join(f"{name}, " for name, _, _ in self._input_layouts)
                layouts = "".join(f"({size}, {stride}), " for _, size, stride in self._input_layouts)
                with self.prefix.indent(self._prefix_indent):
                    self.prefix.writeline(f"assert_input_layouts(({names}), ({layouts}))")

        def write_header(self) -> None:
            from .kernel_bundle import KERNEL_BUNDLE
            from .wrapper_calls import WRAPPER_IMPORT

            super().write_header()
            self.header.writeline(WRAPPER_IMPORT)
            # the graph's C++ kernels built as one library when the module runs async_compile.wait
            self.header.writeline(KERNEL_BUNDLE)

        def generate_after_suffix(self, result) -> None:
            # The module's entry point goes through wrapper_calls.graph_call (the inputs' core,
            # adaptive eager).
            super().generate_after_suffix(result)
            # With the inputs' core, graph_call makes it current (plain Inductor emits no device
            # guard for a non-GPU device).
            result.writeline(f"call = graph_call(call, {_graph_input_core()})")

        @staticmethod
        def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
            if is_subgraph:
                return NeuronSubgraphWrapperCodegen(subgraph_name, parent_wrapper,
                                                    partition_signatures)
            return NeuronWrapperCodegen()

    return NeuronWrapperCodegen


def _make_scheduling():
    from torch._inductor import config as inductor_config
    from torch._inductor.codegen.cpp import CppScheduling

    class NeuronScheduling(CppScheduling):
        """Inductor's C++ scheduling with ``cuda_backend="cpp"`` while it generates code.

        Inductor's ``get_current_backend()`` answers ``config.cuda_backend`` ("triton") for any
        device it does not know; the C++ code generator needs "cpp" there (dtype propagation of
        indirect indices). Scoped to our kernels' code generation, so no process-wide setting
        changes and plain ``torch.compile(backend="inductor")`` works on ``neuron``.
        """

        def codegen_node(self, node):
            with inductor_config.patch(cuda_backend="cpp"):
                return super().codegen_node(node)

        def codegen_template(self, template_node, epilogue_nodes, prologue_nodes):
            with inductor_config.patch(cuda_backend="cpp"):
                return super().codegen_template(template_node, epilogue_nodes, prologue_nodes)

        def flush(self):
            with inductor_config.patch(cuda_backend="cpp"):
                return super().flush()

    return NeuronScheduling


class CppWrapperUnsupportedError(NotImplementedError):
    """Inductor's C++ wrapper (``cpp_wrapper=True``, AOTInductor ``aoti_compile_and_package``)
    was asked to generate code for ``neuron``."""


def _make_cpp_wrapper_codegen():
    class NeuronCppWrapperCodegen:
        """Refuses Inductor's C++ wrapper for ``neuron`` with what to do instead."""

        supports_caching = False  # read by compile_fx before it creates the wrapper

        @staticmethod
        def create(*args: Any, **kwargs: Any):
            raise CppWrapperUnsupportedError(
                "Inductor's C++ wrapper (config cpp_wrapper=True, AOTInductor: "
                "torch._inductor.aoti_compile_and_package / aot_compile) is not supported on the "
                "neuron device: its generated C++ would call device runtime APIs the neuron backend "
                "does not have. Use torch.compile(model, backend='neuron') (compiled graphs persist "
                "in TORCH_NEURONX_NEFF_CACHE_DIR), or export and package the model on the CPU "
                "(move it and its example inputs to 'cpu' first).")

    return NeuronCppWrapperCodegen


def patched_is_cpu(self: Any) -> bool:
    """``BaseSchedulerNode.is_cpu`` for torch 2.13 with ``neuron`` counted as CPU (``self``: a
    scheduler node, anything with ``get_device() -> torch.device | None``)."""
    device = self.get_device()
    return device is not None and device.type in ("cpu", DEVICE)


def _patch_scheduler() -> None:
    global _original_is_cpu
    from torch._inductor import scheduler

    if not torch.__version__.startswith(PINNED_TORCH + "."):
        raise InductorDeviceError(
            f"torch_neuronx.compile patches torch._inductor.scheduler.BaseSchedulerNode.is_cpu "
            f"for torch {PINNED_TORCH}; this is torch {torch.__version__}: check that method "
            "against the new release and update PINNED_TORCH in torch_neuronx/compile/inductor_device.py"
        )
    current = scheduler.BaseSchedulerNode.is_cpu
    if current is patched_is_cpu:
        return
    if current.__qualname__ != "BaseSchedulerNode.is_cpu":
        raise InductorDeviceError(
            f"BaseSchedulerNode.is_cpu is already replaced by {current.__qualname__}; "
            "refusing to stack a second patch"
        )
    _original_is_cpu = current
    scheduler.BaseSchedulerNode.is_cpu = patched_is_cpu  # type: ignore[method-assign]  # the pinned patch above


def register() -> None:
    """Registers ``neuron`` with Inductor (the four registrations above). Idempotent.

    Raises:
        InductorDeviceError: torch is not 2.13.x (the scheduler patch is pinned), or the
            neuron device is not loaded.
    """
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        _neuron_mod()
        from torch._dynamo.device_interface import register_interface_for_device
        from torch._inductor.codegen.common import (
            register_backend_for_device,
            register_device_op_overrides,
        )

        _patch_scheduler()
        register_interface_for_device(DEVICE, _make_interface())
        register_device_op_overrides(DEVICE, _make_op_overrides())
        _classes.update(Scheduling=_make_scheduling(), PythonWrapperCodegen=_make_wrapper_codegen(),
                        CppWrapperCodegen=_make_cpp_wrapper_codegen())
        from . import codegen_config
        from .cache_key import code_hash

        codegen_config.code = code_hash()
        register_backend_for_device(DEVICE, _classes["Scheduling"], _classes["PythonWrapperCodegen"],
                                    _classes["CppWrapperCodegen"],
                                    device_custom_config=codegen_config)  # type: ignore[arg-type]
        _registered = True


#: The names Inductor reads from the device module (``torch.neuron.<name>``) to register a
#: PrivateUse1 device's code generators (``torch._inductor.codegen.common.init_backend_registration``).
CODEGEN_ATTRIBUTES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen")


def codegen_class(name: str) -> type:
    """``torch.neuron.Scheduling`` / ``.PythonWrapperCodegen`` / ``.CppWrapperCodegen``: runs
    :func:`register` and returns the class Inductor registers for ``neuron``. This is how
    Inductor learns the device when a graph on ``neuron`` reaches it without backend
    ``"neuron"`` (``torch.compile(backend="inductor")``, transformers' ``CompileConfig``).

    Raises:
        AttributeError: ``name`` is not one of :data:`CODEGEN_ATTRIBUTES`.
        InductorDeviceError: as :func:`register`.
    """
    if name not in CODEGEN_ATTRIBUTES:
        raise AttributeError(f"torch.neuron has no Inductor class {name!r}; "
                             f"it serves {', '.join(CODEGEN_ATTRIBUTES)}")
    register()
    return _classes[name]


def is_registered() -> bool:
    """True once :func:`register` has run in this process."""
    return _registered


def original_is_cpu() -> Callable[[Any], bool] | None:
    """torch's own ``BaseSchedulerNode.is_cpu`` that :func:`register` replaced (None before)."""
    return _original_is_cpu
