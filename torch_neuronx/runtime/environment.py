"""Every environment variable of TorchNeuron and the Neuron runtime that this package reads or accepts.

Two tables, checked against the README's environment-variable tables and the code by
``tests/test_environment.py``:

* :data:`READ`: variables the software NeuronCore reads, with the module that reads each.
* :data:`NO_EFFECT`: variables AWS documents for TorchNeuron, the Neuron runtime or the compiler that
  concern what is not modelled here (neuronx-cc and NEFFs, ``libnrt``'s loading, timeouts and logs,
  the collective transport); each with the reason. They are accepted: setting one changes nothing
  and breaks nothing, and with ``TORCH_NEURONX_LOG_LEVEL=2`` each one set is logged at
  ``import torch`` with its reason (:func:`report_no_effect`). ``NEURON_CC_FLAGS`` also warns once
  (:class:`NoEffectWarning`) when its flags would change results or fail on Trainium
  (:func:`compiler_flag_warnings`).

Sources (AWS Neuron documentation): the TorchNeuron environment-variable reference
(``torch/reference/env-vars``), the Neuron Runtime configuration guide
(``neuron-runtime/guides/configuration-guide``), the logical NeuronCore configuration page
(``about-neuron/arch/neuron-features/logical-neuroncore-config``) and the PyTorch NeuronX
environment variables (``frameworks/torch/torch-neuronx/api-reference-guide/training/torch-neuron-envvars``);
``TORCH_NEURONX_SEGMENT_ALLOCATOR_CONFIG`` from TorchNeuron launch scripts (the allocator guidelines,
``torch/reference/guidelines-memory-management``, describe the allocator it tunes); the profiling
variables from the Neuron Explorer environment-variable reference (``tools/neuron-explorer/environment-variables``).
"""
from __future__ import annotations

import logging
import os
import re
import shlex
import warnings
from collections.abc import Mapping
from typing import Final

log = logging.getLogger(__name__)

#: Variables the package reads → the module that reads it.
READ: Final[dict[str, str]] = {
    "TORCH_NEURONX_PLATFORM": "runtime/platforms.py",
    "TORCH_NEURONX_CHIPS": "runtime/topology.py",
    "NEURON_LOGICAL_NC_CONFIG": "runtime/topology.py",
    "NEURON_RT_VIRTUAL_CORE_SIZE": "runtime/topology.py",
    "NEURON_RT_VISIBLE_CORES": "runtime/topology.py, distributed/rendezvous.py",
    "NEURON_RT_NUM_CORES": "runtime/topology.py",
    "TORCH_NEURONX_HBM_PER_CORE": "runtime/topology.py",
    "LOCAL_RANK": "runtime/topology.py, distributed/rendezvous.py",
    "LOCAL_WORLD_SIZE": "distributed/rendezvous.py",
    "MASTER_ADDR": "distributed/rendezvous.py",
    "MASTER_PORT": "distributed/rendezvous.py",
    "GROUP_RANK": "distributed/rendezvous.py",
    "NEURON_RT_ROOT_COMM_ID": "distributed/rendezvous.py",
    "TORCH_NEURONX_NEFF_CACHE_DIR": "compile/cache.py",
    "TORCH_NEURONX_NEFF_DISABLE_CACHE": "compile/cache.py",
    "TORCH_NEURONX_NEFF_CACHE_LOCK_TIMEOUT": "compile/cache.py",
    "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "compile/fallback.py",
    "TORCH_NEURONX_RECOMPILE_WARN": "compile/metrics.py",
    "TORCH_NEURONX_DEBUG_DIR": "compile/debug.py",
    "TORCH_NEURONX_NKI_KEEP_FP32": "nki/dtypes.py",
    "TORCH_NEURONX_ADAPTIVE_EAGER": "adaptive/__init__.py, csrc/aten/AdaptiveEager.cpp",
    "TORCH_NEURONX_ADAPTIVE_VERIFY": "csrc/aten/AdaptiveEager.cpp",
    "TORCH_NEURONX_ADAPTIVE_CHECK_RUNS": "csrc/aten/AdaptiveEager.cpp",
    "TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER": "csrc/aten/AdaptiveEager.cpp",
    "TORCH_NEURONX_ADAPTIVE_DEBUG": "csrc/aten/AdaptiveEager.cpp, adaptive/compiler.py",
    "TORCH_NEURONX_ADAPTIVE_VIEWS": "csrc/aten/AdaptiveEager.cpp",
    "TORCH_NEURONX_ADAPTIVE_GRAD": "csrc/aten/AdaptiveEager.cpp",
    "NKI_PRECISE_FP": "nki/dtypes.py",
    "TORCH_NEURONX_LOG_LEVEL": "_logging.py",
    "TORCH_NEURONX_LOG_FILE": "_logging.py",
    "NEURON_CC_FLAGS": "runtime/environment.py",
    "NEURON_RT_INSPECT_OUTPUT_DIR": "profiling/config.py",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "PyTorch (torch/__init__.py), before this package loads",
}

_NO_NEFF = "graphs are compiled by Inductor into C++ on the host, not by neuronx-cc into NEFFs"
_NO_NRT = "there is no Neuron runtime (libnrt): the software NeuronCore runs each op on the host"

#: Variables AWS documents that have no effect on the software NeuronCore → why.
NO_EFFECT: Final[dict[str, str]] = {
    # TorchNeuron: the torch.compile backend
    "TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS":
        f"{_NO_NEFF}; what there is to keep (FX and ATen graphs, generated code) is written to "
        "TORCH_NEURONX_DEBUG_DIR when it is set and never deleted",
    "TORCH_NEURONX_COMPLEX_DECOMPOSE":
        "complex ops are not lowered through a Neuron compiler: eager mode runs PyTorch's CPU kernels "
        "(counted as host fallbacks, as on Trainium) and compiled graphs are Inductor's",
    "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY":
        "a compiled graph given CPU tensors among neuron ones raises the device error eager mode gives; "
        "inputs are never copied to the device",
    "TORCH_NEURONX_RETAIN_DEVICE_MODE":
        "each output of a compiled graph is already on the device eager mode would give it",
    # TorchNeuron: caching
    "TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR":
        "the compile cache has one disk level (TORCH_NEURONX_NEFF_CACHE_DIR, safe on a shared file system) "
        "and the process's memory, no separate local level",
    # TorchNeuron: eager execution
    "NEURON_LAUNCH_BLOCKING":
        "execution is always synchronous (every op has finished when it returns), which is what "
        "NEURON_LAUNCH_BLOCKING=1 gives on Trainium",
    "TORCH_NEURONX_FALLBACK_ONLY_FOR_UNIMPLEMENTED_OPS":
        "every op runs PyTorch's CPU kernel on device memory: there is no device execution error to fall "
        "back from",
    "TORCH_NEURONX_ENABLE_STACK_TRACE":
        "ops execute synchronously, so a Python traceback already points at the op that failed",
    # TorchNeuron: the memory allocator (a caching segment allocator on Trainium; the variable is the
    # one TorchNeuron launch scripts set, e.g. kMaxSplitSizeBytes=...,kMaxNonSplitRoundingBytes=...)
    "TORCH_NEURONX_SEGMENT_ALLOCATOR_CONFIG":
        "device memory has no segments to split or round: each tensor gets a block of its own, accounted "
        "at its size rounded up to 64 bytes (reserved memory is allocated memory plus that rounding)",
    # TorchNeuron: distributed collectives
    "NEURON_USE_SPLIT_ALLGATHER": "collectives run gloo on device memory, not Neuron collectives",
    "NEURON_USE_SPLIT_REDUCE_SCATTER": "collectives run gloo on device memory, not Neuron collectives",
    "COLLECTIVE_BUCKETSIZE_IN_MB": "collectives run gloo on device memory, not Neuron collectives",
    "COLLECTIVE_MIN_BUCKETS": "collectives run gloo on device memory, not Neuron collectives",
    # TorchNeuron: metrics
    "TORCH_NEURONX_ENABLED_METRIC_TABLES":
        "no CSV metric tables are written; torch_neuronx.get_dynamo_metrics() returns the compile metrics",
    "TORCH_NEURONX_METRICS_DIR":
        "no CSV metric tables are written; torch_neuronx.get_dynamo_metrics() returns the compile metrics",
    # Neuron runtime
    "NEURON_RT_LOG_LEVEL": f"{_NO_NRT}; TORCH_NEURONX_LOG_LEVEL sets this package's log level",
    "NEURON_RT_LOG_LOCATION": f"{_NO_NRT}; TORCH_NEURONX_LOG_FILE sends this package's log to a file",
    "NEURON_RT_EXEC_TIMEOUT": f"{_NO_NRT}; an op returns when its CPU kernel does",
    "NEURON_RT_VALIDATE_HASH": f"{_NO_NRT}; every compile-cache entry is checked against its SHA-256 on read",
    "NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS": f"{_NO_NRT}; no model is loaded onto cores",
    "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": f"{_NO_NRT}; execution is synchronous",
    "NEURON_RT_STOCHASTIC_ROUNDING_EN":
        "bf16 / fp8 results are rounded to nearest even, as PyTorch's CPU kernels round; stochastic "
        "rounding is not modelled",
    # Neuron Explorer (profiling) and its PyTorch switches
    "NEURON_RT_INSPECT_ENABLE":
        f"{_NO_NRT}, so no runtime or device profile is captured; torch.profiler with "
        "torch_neuronx.profiling.NeuronConfig writes the framework trace",
    "NEURON_RT_INSPECT_SYSTEM_PROFILE": f"{_NO_NRT}: there is no system trace to capture",
    "NEURON_RT_INSPECT_DEVICE_PROFILE": "there is no NeuronCore hardware to trace (no .ntff files)",
    "NEURON_RT_INSPECT_EVENT_FILTER_NC": f"{_NO_NRT}: there are no runtime trace events to filter",
    "NEURON_RT_INSPECT_EVENT_FILTER_TYPE": f"{_NO_NRT}: there are no runtime trace events to filter",
    "NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC": f"{_NO_NRT}: there is no system trace buffer",
    "NEURON_RT_INSPECT_PRECACHE_ENABLE": f"{_NO_NEFF}: there is no NEFF metadata to precache",
    "NEURON_RT_ENABLE_DGE_NOTIFICATIONS": "there are no DMA descriptors to label (no NeuronCore hardware)",
    "TORCH_NEURONX_ENABLE_HOST_CC": "collectives already run on the host (gloo on device memory)",
    "TORCH_NEURONX_ENABLE_ASYNC_NRT":
        f"{_NO_NRT}; ops and collectives run synchronously, so nothing overlaps",
    # PyTorch NeuronX (XLA) variables seen in Trainium scripts
    "NEURON_COMPILE_CACHE_URL": f"{_NO_NEFF}; TORCH_NEURONX_NEFF_CACHE_DIR names the compile cache",
    "NEURON_FRAMEWORK_DEBUG": "there are no XLA graphs; TORCH_NEURONX_DEBUG_DIR dumps the compiled graphs",
}

#: Spellings seen in AWS's material that this package does not read → the variable it reads.
MISSPELLED: Final[dict[str, str]] = {
    "TORCH_NEURONX_DISABLE_NEFF_CACHE": "TORCH_NEURONX_NEFF_DISABLE_CACHE",
}

#: neuronx-cc flags whose effect the software NeuronCore does not give: ``--auto-cast`` (and its type)
#: changes the precision of matmuls on Trainium.
_NUMERIC_FLAGS: Final = ("--auto-cast", "--auto-cast-type")


class NoEffectWarning(UserWarning):
    """An environment variable asks for something only Trainium's compiler or runtime does."""


def _flag_values(flags: str) -> dict[str, str]:
    """``"--auto-cast=matmult -O1 --logical-nc-config 2"`` → ``{"--auto-cast": "matmult",
    "-O1": "", "--logical-nc-config": "2"}`` (``-lnc`` is the short form of the last)."""
    try:
        words = shlex.split(flags)
    except ValueError:
        words = flags.split()
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value = words[i + 1]
                i += 1
            out["--logical-nc-config" if name == "-lnc" else name] = value
        i += 1
    return out


def compiler_flag_warnings(env: Mapping[str, str] | None = None, lnc: int | None = None) -> list[str]:
    """What in ``NEURON_CC_FLAGS`` a user would be misled by here (each a message), empty if nothing.

    * ``--auto-cast`` other than ``none`` (or ``--auto-cast-type``): neuronx-cc would compute matmuls
      (or all ops) in bf16 / fp8; here they keep the tensors' dtypes, so results differ from Trainium's.
    * ``--logical-nc-config`` / ``-lnc`` different from the runtime's LNC (``lnc``): AWS does not
      support compiling for another LNC than ``NEURON_LOGICAL_NC_CONFIG`` sets.

    Every other flag only tunes neuronx-cc; it is ignored without a warning.
    """
    env = os.environ if env is None else env
    text = env.get("NEURON_CC_FLAGS", "")
    if not text.strip():
        return []
    flags = _flag_values(text)
    messages = []
    cast = {k: v for k, v in flags.items() if k in _NUMERIC_FLAGS}
    if cast and cast.get("--auto-cast", "").lower() != "none":
        shown = " ".join(f"{k}={v}" if v else k for k, v in cast.items())
        messages.append(
            f"NEURON_CC_FLAGS asks neuronx-cc for {shown}, but {_NO_NEFF}: compiled graphs keep their tensors' "
            f"dtypes, so results differ from Trainium's auto-cast ones. Cast the model yourself (e.g. "
            f"model.to(torch.bfloat16) or torch.autocast('neuron')) to get bf16 arithmetic here"
        )
    lnc_flag = flags.get("--logical-nc-config")
    if lnc is not None and lnc_flag is not None and re.fullmatch(r"\d+", lnc_flag) and int(lnc_flag) != lnc:
        messages.append(
            f"NEURON_CC_FLAGS compiles for --logical-nc-config={lnc_flag} but the runtime's LNC is {lnc} "
            f"(NEURON_LOGICAL_NC_CONFIG): AWS Neuron does not support a compiler LNC different from the "
            f"runtime's. Make them equal (or drop the flag; it has no effect here)"
        )
    return messages


def report_no_effect(env: Mapping[str, str] | None = None, lnc: int | None = None) -> list[str]:
    """Called at ``import torch``: logs (INFO) each :data:`NO_EFFECT` variable that is set, with its
    reason, and ``NEURON_CC_FLAGS``; warns once per message of :func:`compiler_flag_warnings` and for a
    :data:`MISSPELLED` variable set without the one it stands for.

    Args:
        env: the environment (default ``os.environ``).
        lnc: the runtime's LNC (None when the topology is invalid).

    Returns:
        The names of the set variables that have no effect (``NEURON_CC_FLAGS`` included).

    Warns:
        NoEffectWarning: for :func:`compiler_flag_warnings`'s messages and :data:`MISSPELLED` variables.
    """
    env = os.environ if env is None else env
    for wrong, right in MISSPELLED.items():
        if env.get(wrong, "").strip() and not env.get(right, "").strip():
            warnings.warn(f"{wrong}={env[wrong]} is not read: the compile cache is switched off with "
                          f"{right}=1", NoEffectWarning, stacklevel=2)
    found = [name for name in NO_EFFECT if env.get(name, "").strip()]
    for name in found:
        log.info("%s=%s has no effect on the software NeuronCore: %s", name, env[name], NO_EFFECT[name])
    if env.get("NEURON_CC_FLAGS", "").strip():
        found.append("NEURON_CC_FLAGS")
        log.info("NEURON_CC_FLAGS=%s has no effect on the software NeuronCore: %s", env["NEURON_CC_FLAGS"], _NO_NEFF)
        for message in compiler_flag_warnings(env, lnc):
            warnings.warn(message, NoEffectWarning, stacklevel=2)
    return found


#: How a boolean variable is written (case-insensitive): AWS's runtime reference accepts ``0``, ``1``,
#: ``false`` and ``true``; ``yes``/``no``/``on``/``off`` are accepted too, as this package always did.
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
_bad_flag_warned: set[tuple[str, str]] = set()


def env_flag(name: str, default: bool | None, env: Mapping[str, str] | None = None) -> bool | None:
    """The boolean environment variable ``name`` read now.

    Args:
        name: e.g. ``"TORCH_NEURONX_NEFF_DISABLE_CACHE"``.
        default: what an unset, empty or unreadable value means (None for a three-state switch whose
            caller then applies its own default).
        env: the environment (default ``os.environ``).

    Returns:
        True for ``1``/``true``/``yes``/``on``, False for ``0``/``false``/``no``/``off`` (any case,
        surrounding spaces ignored), else ``default``.

    Warns:
        UserWarning: once per (variable, value) for a value that is none of those (``maybe``, ``2``),
            naming the variable, the accepted values and the default applied, instead of guessing.
    """
    env = os.environ if env is None else env
    value = env.get(name, "").strip()
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    if value and (name, value) not in _bad_flag_warned:
        _bad_flag_warned.add((name, value))
        shown = "unset" if default is None else str(int(default))
        warnings.warn(f"{name}={value!r} is not a boolean: use 1/true/yes/on or 0/false/no/off (any case); "
                      f"the default ({shown}) applies", UserWarning, stacklevel=3)
    return default
