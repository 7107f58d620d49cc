"""``torch.autocast("neuron")`` runs ``avg_pool3d`` in float32: its CPU kernel has no bf16/fp16.

The device's autocast uses the cast lists PyTorch registers for CUDA (``csrc/aten/Autocast.cpp``).
CUDA's lists leave ``avg_pool3d`` out, so it runs in whatever dtype reaches it, and CUDA has
bf16/fp16 kernels for it. The device runs PyTorch's CPU kernel, which has neither: a ``conv3d`` (a
lower-precision op) followed by ``avg_pool3d`` inside ``torch.autocast("neuron")`` stopped with the
CPU kernel's error ("avg_pool3d_out_frame" not implemented for 'BFloat16'). The CPU's own
autocast puts ``avg_pool3d`` in its float32 list; :func:`register` gives the device the same
policy, for ``AutocastPrivateUse1`` only (the key is active only inside ``torch.autocast("neuron")``).
The other ops autocast can hand a low-precision tensor and whose CPU kernels lack one (the
antialiased upsamplings) are in PyTorch's shared float32 list already.
"""
from __future__ import annotations

import torch

__all__ = ["register"]

_KEY = "AutocastPrivateUse1"
_library: torch.library.Library | None = None
_EXCLUDED = torch._C.DispatchKeySet(torch._C._dispatch_key_parse(_KEY))


def _avg_pool3d_fp32(input: torch.Tensor, kernel_size: list[int], stride: list[int] = (),  # type: ignore[assignment]
                     padding: list[int] = (0,), ceil_mode: bool = False,  # type: ignore[assignment]
                     count_include_pad: bool = True, divisor_override: int | None = None) -> torch.Tensor:
    """``aten::avg_pool3d`` under ``torch.autocast("neuron")``: PyTorch's float32 cast policy.

    A bf16/fp16 ``neuron`` input is cast to float32 (autocast's eligible tensors: floating point,
    on the autocast device, not float64); the result is float32, shape ``(N, C, D', H', W')`` or
    ``(C, D', H', W')`` as ``avg_pool3d`` gives. Errors are ``avg_pool3d``'s own.
    """
    with torch._C._ExcludeDispatchKeyGuard(_EXCLUDED):
        if input.device.type == "neuron" and input.dtype in (torch.bfloat16, torch.float16):
            input = input.float()
        return torch.ops.aten.avg_pool3d.default(
            input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def register() -> None:
    """Registers the float32 policy of ``avg_pool3d`` for ``AutocastPrivateUse1`` once (a second call
    does nothing)."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    library.impl("avg_pool3d", _avg_pool3d_fp32, _KEY)
    _library = library
