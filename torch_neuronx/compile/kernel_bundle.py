"""One C++ library per compiled ``neuron`` graph instead of one per kernel.

Inductor's Python wrapper defines each C++ kernel of a graph with
``async_compile.cpp_pybinding(argtypes, source)``, and each such call is one ``g++`` run that builds a
shared library of its own. Most of that run does not depend on the kernel: loading the precompiled
header of Inductor's C++ prelude and optimising the vector templates every kernel instantiates
(``at::vec::Vectorized``, the reduction helpers). On this project's 2-core machine a run costs about
0.9 CPU-s for a median kernel, and 97 kernels of three Diffusers models (a UNet, a video UNet, a
transformer) cost 99 CPU-s as 97 libraries and 5 CPU-s as one (``bench/RESULTS.md``).

The wrapper generated for a ``neuron`` graph (:mod:`.inductor_device`) therefore binds
``async_compile`` to :class:`KernelBundleCompile`: ``cpp_pybinding`` only records the kernel, and
``async_compile.wait(globals())`` — which every wrapper module runs once after defining its kernels —
builds all of them as one translation unit, each kernel's ``extern "C" kernel`` renamed ``kernel_<i>``
with a Python binding of its own, through Inductor's ``CppPythonBindingsCodeCache`` (the same compiler
command, flags, ``-O3``, vector ISA and precompiled header as a single kernel, and its on-disk cache,
keyed by the source). The kernels' code is unchanged: the same functions compiled with the same flags,
so the results are the same. A set of kernels that cannot share a translation unit (a source without
exactly one ``kernel`` definition, an argument type the binding does not parse, or any compile error of
the combined file) is built one kernel per library as before, where a genuine kernel error raises as
it always did.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from torch._inductor.async_compile import AsyncCompile
from torch._inductor.codecache import CppPythonBindingsCodeCache
from torch._inductor.utils import clear_on_fresh_cache

log = logging.getLogger(__name__)

#: The definition Inductor writes for a C++ kernel of the Python wrapper (``kernel_decl_name`` is
#: ``"kernel"`` outside ``cpp_wrapper`` mode).
_DEFINITION: Final = re.compile(r'extern\s+"C"\s+void\s+kernel\s*\(')
#: Argument types besides pointers that the bundle's bindings parse (Inductor's bindings parse the same).
_SCALARS: Final = frozenset({"int64_t", "uintptr_t", "float"})
#: The C++ of the bindings shared by every kernel of a bundle (``kernel_<i>_py`` functions follow).
_PRELUDE: Final = r"""
// Python bindings of the kernels above: kernel_<i>_py(args) calls kernel_<i>(parsed args).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>

static void* (*tnx_tensor_data_ptr)(PyObject* obj);

template <typename T> static inline T tnx_arg(PyObject* args, Py_ssize_t n) {
    static_assert(std::is_pointer_v<T>, "a kernel argument is a pointer, int64_t, uintptr_t or float");
    return static_cast<T>(tnx_tensor_data_ptr(PyTuple_GET_ITEM(args, n)));
}
template <> inline int64_t tnx_arg<int64_t>(PyObject* args, Py_ssize_t n) {
    auto value = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, n));
    if (value == -1 && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return value;
}
template <> inline uintptr_t tnx_arg<uintptr_t>(PyObject* args, Py_ssize_t n) {
    auto value = PyLong_AsVoidPtr(PyTuple_GET_ITEM(args, n));
    if (value == reinterpret_cast<void*>(-1) && PyErr_Occurred()) throw std::runtime_error("expected an int argument");
    return reinterpret_cast<uintptr_t>(value);
}
template <> inline float tnx_arg<float>(PyObject* args, Py_ssize_t n) {
    auto value = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n));
    if (value == -1.0 && PyErr_Occurred()) throw std::runtime_error("expected a float argument");
    return static_cast<float>(value);
}
"""
_BINDING: Final = r"""
static PyObject* kernel_{i}_py(PyObject* self, PyObject* args) {{
    try {{
        if (!PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) != {n}) [[unlikely]]
            throw std::runtime_error("kernel_{i} takes a tuple of {n} arguments");
        kernel_{i}({parsed});
        Py_RETURN_NONE;
    }} catch (std::exception const& e) {{
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return nullptr;
    }} catch (...) {{
        PyErr_SetString(PyExc_RuntimeError, "unhandled error");
        return nullptr;
    }}
}}
"""
_MODULE: Final = r"""
static PyMethodDef tnx_methods[] = {{
{methods}
    {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef tnx_module = {{PyModuleDef_HEAD_INIT, "kernel", NULL, -1, tnx_methods}};

PyMODINIT_FUNC PyInit_kernel(void) {{
    const char* address = std::getenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
    if (!address) {{
        PyErr_SetString(PyExc_RuntimeError, "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR must be set");
        return nullptr;
    }}
    char* end = nullptr;
    errno = 0;
    uintptr_t value = std::strtoull(address, &end, 10);
    if (errno != 0 || end == address || value == 0) {{
        PyErr_SetString(PyExc_RuntimeError, "cannot parse _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR");
        return nullptr;
    }}
    tnx_tensor_data_ptr = reinterpret_cast<decltype(tnx_tensor_data_ptr)>(value);
    return PyModule_Create(&tnx_module);
}}
"""


@clear_on_fresh_cache
class KernelBundleCodeCache(CppPythonBindingsCodeCache):
    """Inductor's code cache of C++ libraries with Python bindings (compile command, flags, on-disk
    cache by source hash, module loading), holding bundles: one library whose module ``kernel`` has a
    function ``kernel_<i>`` per kernel. Cleared with Inductor's own caches (``fresh_cache()``)."""

    cache: dict[str, Callable[[], Any]] = {}

    @staticmethod
    def cache_clear() -> None:
        KernelBundleCodeCache.cache.clear()


def _arg_type(argtype: str) -> str | None:
    """The C++ type a binding parses for one of Inductor's kernel argument types (``"const float*"``
    → ``"float*"``), or None when the bindings do not parse it."""
    t = argtype.replace("const ", "").strip()
    return t if t.endswith("*") or t in _SCALARS else None


def bundle_source(kernels: Sequence[tuple[Sequence[str], str]]) -> str | None:
    """The C++ of one library holding ``kernels`` (``(argument types, source)`` pairs as Inductor's
    ``cpp_pybinding`` receives them), with the Python bindings ``kernel_<i>``; None when a source does
    not define exactly one ``extern "C" void kernel(`` or an argument type is not one the bindings
    parse."""
    parts, bindings, methods = [], [], []
    for i, (argtypes, source) in enumerate(kernels):
        if len(_DEFINITION.findall(source)) != 1:
            return None
        types = [_arg_type(a) for a in argtypes]
        if any(t is None for t in types):
            return None
        parts.append(_DEFINITION.sub(f'extern "C" void kernel_{i}(', source))
        parsed = ", ".join(f"tnx_arg<{t}>(args, {n})" for n, t in enumerate(types))
        bindings.append(_BINDING.format(i=i, n=len(types), parsed=parsed))
        methods.append(f'    {{"kernel_{i}", kernel_{i}_py, METH_VARARGS, ""}},')
    return "\n".join(parts) + _PRELUDE + "".join(bindings) + _MODULE.format(methods="\n".join(methods))


def load_kernels(kernels: Sequence[tuple[Sequence[str], str]]) -> list[Callable[..., Any]]:
    """The callable of each of ``kernels`` (``(argument types, source)`` pairs), built as one library
    (:func:`bundle_source`) when there are several and they can share it, else one library each as
    Inductor builds them.

    Raises:
        Whatever Inductor raises for a kernel that does not compile on its own.
    """
    if len(kernels) > 1:
        source = bundle_source(kernels)
        if source is not None:
            try:
                module = KernelBundleCodeCache.load_async(source, "cpu")()
                return [getattr(module, f"kernel_{i}") for i in range(len(kernels))]
            except Exception as err:  # noqa: BLE001 - built one by one below, where a kernel's own error raises
                log.debug("the %d kernels of a graph do not build as one library (%s); building each alone",
                          len(kernels), err)
    return [CppPythonBindingsCodeCache.load_pybinding(list(argtypes), source) for argtypes, source in kernels]


class _PendingKernel:
    """A kernel recorded by :meth:`KernelBundleCompile.cpp_pybinding`, replaced in the wrapper's
    globals by its callable when the wrapper runs ``async_compile.wait(globals())``."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, *args: Any) -> Any:
        raise RuntimeError("a C++ kernel of a neuron graph was called before async_compile.wait(globals()) "
                           "built it: the generated wrapper module was not run to its end")


class KernelBundleCompile(AsyncCompile):
    """The ``async_compile`` of a ``neuron`` graph's wrapper module: Inductor's ``AsyncCompile``
    whose C++ kernels (``cpp_pybinding``) are built together, as one library, in :meth:`wait`."""

    def __init__(self) -> None:
        super().__init__()
        self._kernels: list[tuple[list[str], str]] = []

    def cpp_pybinding(self, argtypes: list[str], source_code: str) -> Any:
        """Records the kernel; its built function replaces the returned pending handle in :meth:`wait`."""
        self._kernels.append((list(argtypes), source_code))
        return _PendingKernel(len(self._kernels) - 1)

    def wait(self, scope: dict[str, Any]) -> None:
        """Builds the recorded kernels (:func:`load_kernels`), puts each callable in ``scope`` in
        place of its pending handle, then waits for anything else as Inductor does."""
        kernels, self._kernels = self._kernels, []
        if kernels:
            built = load_kernels(kernels)
            for name, value in list(scope.items()):
                if isinstance(value, _PendingKernel):
                    scope[name] = built[value.index]
        super().wait(scope)


#: The lines :mod:`.inductor_device` writes into the header of every ``neuron`` wrapper, after
#: Inductor's ``async_compile = AsyncCompile()``.
KERNEL_BUNDLE: Final = ("from torch_neuronx.compile.kernel_bundle import KernelBundleCompile\n"
                        "async_compile = KernelBundleCompile()")

__all__ = ["KERNEL_BUNDLE", "KernelBundleCodeCache", "KernelBundleCompile", "bundle_source", "load_kernels"]
