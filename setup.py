"""Build of torch_neuronx's small C++ core, torch_neuronx._C: ``csrc/runtime/`` (the software
NeuronCore: allocators, device guard, streams, events, hooks, generator) and ``csrc/aten/`` (ATen
glue: minimal ops, boxed fallback, op policy, attention, autocast). Everything else is Python
(pyproject.toml)."""
import os
from pathlib import Path

from setuptools import setup

# Building needs torch's headers, not the neuron device: a previous install whose C++ core is
# missing or stale must not break `import torch` here (PyTorch autoloads installed backends).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

ROOT = Path(__file__).resolve().parent
CSRC = ROOT / "csrc"
# Every .cpp under csrc/ (setuptools wants source paths relative to the project root). Headers
# are included by their path below csrc/, e.g. "runtime/DeviceAllocator.h".
sources = sorted(str(p.relative_to(ROOT)) for p in CSRC.rglob("*.cpp"))
# Listed so that an sdist ships them and a header change triggers a rebuild.
headers = sorted(str(p.relative_to(ROOT)) for p in CSRC.rglob("*.h"))

setup(
    ext_modules=[
        CppExtension(
            name="torch_neuronx._C",
            sources=sources,
            depends=headers,
            include_dirs=[str(CSRC)],
            extra_compile_args=["-O2", "-std=c++17", "-Wno-unused-parameter"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
