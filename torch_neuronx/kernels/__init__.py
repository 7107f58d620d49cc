"""torch_neuronx.kernels: our NKI kernels (legacy API) registered as torch ops with ``nki_op``.

Every op runs on ``neuron`` tensors through the NeuronCore simulator and lives in
``torch.ops.neuron_kernels``; each has a fake implementation (usable in ``torch.compile`` graphs) and
a backward registered with ``register_autograd``:

| function | op | forward | backward |
|---|---|---|---|
| :func:`rms_norm` (x, weight, eps) | ``rms_norm`` -> (y, rstd) | NKI | NKI (``rms_norm_backward``) |
| :func:`layer_norm` (x, weight, bias, eps) | ``layer_norm`` -> (y, mean, rstd) | NKI, bn_stats/bn_aggr | PyTorch ops |
| :func:`softmax` (x) | ``softmax`` | NKI | PyTorch ops |
| :func:`swiglu_mlp` (x, w_gate, w_up, w_down) | ``swiglu_mlp`` | NKI fused, hidden not in HBM | PyTorch (recompute) |
| :func:`attention` (q, k, v, scale) | ``attention`` | NKI, one 128-row Q strip at a time | PyTorch (recompute) |

Shapes, dtypes and limits are in each module's docstring. Use them directly, inside modules, or
through Hugging Face ``kernels`` (``examples/kernels/neuron-rmsnorm``).
"""
from .attention import attention
from .layernorm import layer_norm
from .rmsnorm import rms_norm
from .softmax import softmax
from .swiglu import swiglu_mlp

__all__ = ["rms_norm", "layer_norm", "softmax", "swiglu_mlp", "attention"]
