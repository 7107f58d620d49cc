"""Op tracking of the ``neuron`` device: which ATen ops ran on it and which of them were host
fallbacks (``get_executed_ops``, ``get_fallback_ops``, ``clear_op_tracking``).

The policy behind the counts is C++ and lives with the boxed fallback: the tables of
``csrc/aten/OpPolicy.cpp`` say which dtypes count as host fallbacks (float64, complex), which ops
run PyTorch's CPU kernel and which accept CPU index tensors. Autocast uses PyTorch's own cast
lists (``csrc/aten/Autocast.cpp``), with bfloat16 as the default dtype set when the backend loads.
"""
from .tracking import clear_op_tracking, get_executed_ops, get_fallback_ops

__all__ = ["clear_op_tracking", "get_executed_ops", "get_fallback_ops"]
