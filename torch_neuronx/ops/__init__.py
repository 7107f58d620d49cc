"""Op policy of the ``neuron`` device: op tracking, dtype policy, autocast defaults."""
from .tracking import clear_op_tracking, get_executed_ops, get_fallback_ops

__all__ = ["clear_op_tracking", "get_executed_ops", "get_fallback_ops"]
