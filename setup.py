"""Build of torch_neuronx's small C++ core (PrivateUse1 allocator, guard, hooks,
generator, boxed fallback, autocast). Everything else is Python (pyproject.toml)."""
import os
from pathlib import Path

from setuptools import setup

# Building needs torch's headers, not the neuron device: a previous install whose C++ core is
# missing or stale must not break `import torch` here (PyTorch autoloads installed backends).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

ROOT = Path(__file__).parent
sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").glob("*.cpp"))

setup(
    ext_modules=[
        CppExtension(
            name="torch_neuronx._C",
            sources=sources,
            extra_compile_args=["-O2", "-std=c++17", "-Wno-unused-parameter"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
