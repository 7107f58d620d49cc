"""The estimate in progress, if any.

One module-level reference, read by the small hooks of other layers (compiled-graph launches in
``torch_neuronx/compile``, collectives of the ``"neuron"`` process group, NKI kernels): each hook costs one
attribute read when no estimate is active. This module imports nothing, so any layer may import it.
"""
from __future__ import annotations

from typing import Any

#: The active ``torch_neuronx.estimate.session.EstimateSession``, or None.
current: Any = None
