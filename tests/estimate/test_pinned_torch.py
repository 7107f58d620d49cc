"""The estimator's uses of torch internals still look as they were written against (torch 2.13)."""
import inspect

import torch
from torch.distributed.tensor._sharding_prop import ShardingPropagator

from torch_neuronx.estimate import dtensor_propagation
from torch_neuronx.estimate.dtensor_propagation import PINNED_TORCH, PropagationMarker


def test_sharding_propagation_lock_is_where_the_marker_expects_it():
    assert torch.__version__.startswith(PINNED_TORCH + ".")
    original = ShardingPropagator._fake_mode_lock
    assert not isinstance(original, PropagationMarker) and hasattr(original, "__enter__")
    source = inspect.getsource(ShardingPropagator._propagate_tensor_meta_non_cached)
    # the fake run of the op on global shapes happens inside the lock (what the marker counts)
    assert "with ShardingPropagator._fake_mode_lock:" in source
    assert source.index("_fake_mode_lock") < source.index("op_schema.op(*fake_args")


def test_marker_wraps_the_original_and_is_removed():
    original = ShardingPropagator._fake_mode_lock
    dtensor_propagation.install()
    try:
        marker = ShardingPropagator._fake_mode_lock
        assert isinstance(marker, PropagationMarker) and marker.inner is original
        assert not dtensor_propagation.inside()
        with marker:
            assert dtensor_propagation.inside()
            with marker:
                assert marker.depth == 2
        assert not dtensor_propagation.inside()
    finally:
        dtensor_propagation.uninstall()
    assert ShardingPropagator._fake_mode_lock is original


def test_private_torch_apis_the_estimator_calls_exist():
    # autograd's graph-task id tells backward from forward; c10d resolves a functional collective's group name
    assert torch._C._current_graph_task_id() == -1
    from torch._C._distributed_c10d import _resolve_process_group  # noqa: F401
