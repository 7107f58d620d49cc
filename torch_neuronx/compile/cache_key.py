"""The cache key of one ATen graph: everything the compiled code depends on, and nothing else.

:func:`graph_cache_key` hashes (:func:`torch_neuronx.compile.cache.cache_key`, SHA-256 of
canonical JSON):

* the graph: its Python code without comments (:func:`graph_text`; stack-trace comments name
  files and lines that do not change what it computes), and the tensors it reads as constants
  (metadata and a content hash: their values are baked into the code, :func:`constants_meta`);
* the inputs: shape, stride, dtype, device, storage offset, ``requires_grad``; Python scalars
  by value (:func:`input_meta`);
* the kind (forward, backward, inference) and Inductor's configuration (:func:`inductor_flags`);
* the environment (:func:`versions`): torch, torch_neuronx and a hash of the code that
  generates and runs the graph (:func:`code_hash`), Python, the CPU's vector ISA, the
  kernels' thread count, the default dtype and the cache format.

No address, process id, path or time goes in: every process and every rank computes the same
key for the same graph (the device index is included, and with one process per NeuronCore
every rank sees its core as ``neuron:0``).

**Code hash.** An editable install keeps ``torch_neuronx.__version__`` while its code changes,
so like Inductor's own ``torch_key()`` the key hashes the code itself, once per process: every
``.py`` file of ``torch_neuronx/compile/`` (the backend, the Inductor device registration, the
decompositions...) and the C++ extension ``torch_neuronx._C`` (the device's allocator, copies
and the eager kernels that ``extern_kernels`` calls run through). What else of the package
``compile/`` imports is listed in :data:`PACKAGE_DEPENDENCIES` with how it enters the key.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import torch

from .._version import __version__
from . import cache
from .cache import GraphKind

#: The folder whose ``.py`` files :func:`code_hash` hashes.
COMPILE_DIR: Final = Path(__file__).resolve().parent
#: The C++ extension :func:`code_hash` hashes (its shared library).
EXTENSION_MODULE: Final = "torch_neuronx._C"
#: Every name ``compile/`` imports from the rest of the package, and how it enters the key
#: (checked by the tests: a new import must be added here, hashed or explained).
PACKAGE_DEPENDENCIES: Final[dict[str, str]] = {
    "torch_neuronx._version.__version__": "versions()['torch_neuronx']",
    "torch_neuronx._C": "code_hash() hashes the extension's shared library (EXTENSION_MODULE)",
    # the estimator only observes: it reads the FX graph and Inductor's fusion decisions while a
    # torch_neuronx.estimate session records, and never changes the code Inductor generates
    "torch_neuronx.estimate.active": "not a dependency: observation only, the generated code is unchanged",
    "torch_neuronx.estimate.graphs.GraphLauncher": "not a dependency: wraps the launch of the cached code, "
                                                   "records its cost, calls it unchanged",
    "torch_neuronx.estimate.graphs.InductorCapture": "not a dependency: reads Inductor's scheduler nodes "
                                                     "after code generation",
    "torch_neuronx.runtime.environment.env_flag": "not a dependency: reads the cache and fallback switches "
                                                  "(whether to cache, whether a failed compile runs "
                                                  "eagerly), never the code Inductor generates",
}
_CHUNK = 1 << 20


def graph_text(gm: torch.fx.GraphModule) -> str:
    """The graph's Python code (and its subgraphs'), without blank lines and comments."""
    parts = []
    for name, mod in gm.named_modules():
        if isinstance(mod, torch.fx.GraphModule):
            code = "\n".join(line for line in mod.code.splitlines()
                             if line.strip() and not line.strip().startswith("#"))
            parts.append(f"## {name or '<root>'}\n{code}")
    return "\n".join(parts)


def tensor_meta(x: torch.Tensor) -> list[Any]:
    """``[shape, stride, dtype, device, storage offset, requires_grad]`` of a tensor."""
    return [list(x.shape), list(x.stride()), str(x.dtype), str(x.device), x.storage_offset(),
            bool(x.requires_grad)]


def constants_meta(gm: torch.fx.GraphModule) -> dict[str, list[Any]]:
    """For each tensor the graph reads with ``get_attr``: :func:`tensor_meta` plus the SHA-256
    of its bytes (``""`` for empty, meta and fake tensors)."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    out: dict[str, list[Any]] = {}
    # AOTAutograd calls the inner compiler under its FakeTensorMode; a real constant (e.g. a
    # cache's index tensor captured by Dynamo) must be read outside that mode.
    with unset_fake_temporarily():
        for node in gm.graph.nodes:
            if node.op != "get_attr":
                continue
            obj = gm
            try:
                for part in str(node.target).split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            if isinstance(obj, torch.Tensor):
                digest = ""
                if obj.numel() and not obj.is_meta and not isinstance(obj, FakeTensor):
                    data = obj.detach().cpu().contiguous().reshape(-1)  # 0-d tensors cannot be viewed as bytes
                    digest = hashlib.sha256(data.view(torch.uint8).numpy().tobytes()).hexdigest()
                out[str(node.target)] = tensor_meta(obj) + [digest]
    return out


def input_meta(example_inputs: Sequence[Any]) -> list[Any]:
    """:func:`tensor_meta` of each tensor input, ``repr`` of each int/float/bool, else the
    type's name."""
    meta: list[Any] = []
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            meta.append(tensor_meta(x))
        elif isinstance(x, int | float | bool):
            meta.append(repr(x))
        else:
            meta.append(type(x).__name__)
    return meta


def _update_with_file(h: Any, label: str, path: Path) -> None:
    h.update(f"{label}\0{path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)


def hash_code(sources: Iterable[Path], extension: Path) -> str:
    """SHA-256 (hex) of the files ``sources`` (each under its file name) and ``extension``.

    Raises:
        FileNotFoundError: a file is missing.
    """
    h = hashlib.sha256()
    for path in sorted(sources, key=lambda p: p.name):
        _update_with_file(h, path.name, path)
    _update_with_file(h, "<extension>", extension)
    return h.hexdigest()


def extension_path() -> Path:
    """The shared library of :data:`EXTENSION_MODULE`.

    Raises:
        ImportError: the extension is not built (see ``torch_neuronx``'s import error).
    """
    spec = importlib.util.find_spec(EXTENSION_MODULE)
    if spec is None or not spec.origin:
        raise ImportError(f"{EXTENSION_MODULE} is not built: reinstall torch-neuronx "
                          "(`pip install --no-build-isolation -e .` in its checkout)")
    return Path(spec.origin)


@functools.cache
def code_hash() -> str:
    """:func:`hash_code` of ``compile/*.py`` and the C++ extension, computed once per process
    (the code a process runs does not change under it)."""
    sources = list(COMPILE_DIR.glob("*.py"))
    if not sources:  # an install without sources: the module files Python loaded
        sources = [Path(file) for name, m in list(sys.modules.items())
                   if name.startswith(f"{__package__}.") and (file := getattr(m, "__file__", None))]
    return hash_code(sources, extension_path())


def versions() -> dict[str, str]:
    """What a compiled graph depends on besides itself (see the module docstring)."""
    from torch._inductor.utils import parallel_num_threads

    return {
        "torch": torch.__version__,
        "torch_neuronx": __version__,
        "code": code_hash(),
        "python": sys.version.split()[0],
        # the ISA level ATen dispatches to (e.g. "AVX512"); the C++ kernels are built for the
        # same host capabilities
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        # Inductor's C++ kernels are generated for this many OpenMP threads (as its own FX
        # graph cache keys them), and factory ops without a dtype use the default dtype
        "threads": str(parallel_num_threads()),
        "default_dtype": str(torch.get_default_dtype()),
        "format": str(cache.FORMAT_VERSION),
    }


def inductor_flags() -> str:
    """SHA-256 of Inductor's current configuration (portable part, as JSON)."""
    from torch._inductor import config as inductor_config

    blob = json.dumps(inductor_config.save_config_portable(), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def graph_cache_key(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], kind: GraphKind) -> str:
    """Cache key (64 hex digits) of one ATen graph (see the module docstring)."""
    return cache.cache_key({
        "graph": graph_text(gm),
        "constants": constants_meta(gm),
        "inputs": input_meta(example_inputs),
        "kind": kind,
        "flags": inductor_flags(),
        "versions": versions(),
    })
