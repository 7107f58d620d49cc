"""Inductor picks some lowerings by ``device.type == "cpu"``; ``neuron`` runs Inductor's CPU C++ code
generator, so where such a choice decides what IR the C++ generator gets, ``neuron`` takes the CPU's
choice (``aten_compile.INDUCTOR_PATCHES``, ``compile/decompositions.py``). Every such site of torch
2.13's lowerings is reviewed in docs/ARCHITECTURE.md ("Inductor's CPU-only lowering choices"); the
census test below fails when a torch upgrade adds, removes or rewrites one, so the table is read again.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import torch
import torch.nn.functional as F

#: Source lines of Inductor (torch 2.13) that choose a lowering by comparing a device with "cpu",
#: per file under ``torch/_inductor``: the rows of docs/ARCHITECTURE.md's table.
CPU_CHOICE_SITES = {
    "lowering.py": [
        'and cur_device.type == "cpu"',
        'if device and device.type == "cpu":',
        'cpu_device = inputs[0].get_device().type == "cpu"',
        'assert config.fallback_random or x.get_device() == torch.device("cpu"), (',
        'assert config.fallback_random or x.get_device() == torch.device("cpu"), (',
        'if device is not None and device.type == "cpu":',
        'if device and device.type == "cpu":',
        'if (divisor := get_constant_value(b)) is not None and a.get_device().type != "cpu":',
    ],
    "decomposition.py": [
        'if self.device.type == "cpu":',
        'if self.device.type == "cpu":',
        'self.device.type == "cpu"',
        'if self.device.type == "cpu":',
        'a.device == torch.device("cpu")',
        '# if grad_output.device == torch.device("cpu"):',
    ],
    "kernel/conv.py": ['if bias is not None and device_type != "cpu":'],
    "kernel/bmm.py": ['if all(x.get_device().type == "cpu" for x in [mat1, mat2]):'],
}
_SITE = re.compile(r'(type|device_type) ?[!=]= ?"cpu"|== torch\.device\("cpu"\)')


def test_every_cpu_only_lowering_choice_of_inductor_is_reviewed():
    import torch._inductor as inductor

    root = Path(inspect.getfile(inductor)).parent
    found = {name: [line.strip() for line in (root / name).read_text().splitlines() if _SITE.search(line)]
             for name in CPU_CHOICE_SITES}
    assert found == CPU_CHOICE_SITES, "Inductor's CPU-only lowering choices changed: review the table of " \
                                      "docs/ARCHITECTURE.md and update CPU_CHOICE_SITES"


def test_cat_is_lowered_as_on_the_cpu():
    from torch._inductor import lowering

    from torch_neuronx.compile.aten_compile import INDUCTOR_PATCHES

    source = inspect.getsource(lowering.cat)
    # what the patches rely on: pointwise_cat only below these input counts, ConcatKernel otherwise
    assert "len(inputs) <= config.max_complex_pointwise_cat_inputs" in source
    assert "(len(inputs) <= config.max_pointwise_cat_inputs)" in source
    assert source.rstrip().endswith("return TensorBox(ir.ConcatKernel.create(inputs, dim))")
    assert INDUCTOR_PATCHES["max_pointwise_cat_inputs"] == INDUCTOR_PATCHES["max_complex_pointwise_cat_inputs"] == 0


def test_cat_of_a_padded_pooled_tensor_compiles_and_equals_cpu():
    """Diffusers' Helios history latents in a few lines: a replicate pad read by an average pool,
    flattened into a sequence and concatenated. Lowered as a pointwise cat, Inductor's C++ loop
    simplification failed on it ("The argument '2*(ModularIndexing((0), 4, 4))' is not comparable")."""

    def history(a, b):
        r = F.pad(a, (0, 0, 0, 0, 0, 1), mode="replicate")      # [1, 4, 2, 8, 8]
        r = F.avg_pool3d(r, (2, 2, 2), stride=(2, 2, 2))         # [1, 4, 1, 4, 4]
        return torch.cat([r.flatten(2).transpose(1, 2), b], dim=1)

    a, b = torch.randn(1, 4, 1, 8, 8), torch.randn(1, 8, 4)
    out = torch.compile(history, backend="neuron")(a.to("neuron"), b.to("neuron"))
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), history(a, b), rtol=1e-6, atol=1e-6)
