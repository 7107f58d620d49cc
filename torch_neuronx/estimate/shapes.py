"""Shape-only runs: a program on fake ``neuron`` tensors, at the real world size, with no weight allocated.

:class:`ShapeOnly` enters PyTorch's ``FakeTensorMode`` (tensors carry shapes, dtypes and devices, no data)
and, for a world size above 1, PyTorch's fake process group (``torch.testing._internal.distributed.fake_pg``:
collectives do nothing and return results of the right shapes, so values are wrong by design) registered
for ``neuron`` and CPU (``"cpu:fake,neuron:fake"``), at rank 0. DTensor, ``parallelize_module`` and FSDP2
then run as on rank 0 of the real job, and ``torch_neuronx.estimate`` records what that rank runs::

    with shape_only(world_size=64) as so:
        model = so.causal_lm(config, tp=64)                 # nothing allocated
        with torch_neuronx.estimate(platform="trn2", modules=[model]) as est:
            with torch.no_grad():
                model(input_ids=so.tokens(1, 12288), use_cache=False, logits_to_keep=1)

Device meshes cannot be created under ``FakeTensorMode`` (creating one reads real tensors), and FSDP2 builds
meshes inside ``fully_shard``: :meth:`ShapeOnly.causal_lm` therefore builds and shards the model on the
``meta`` device outside the fake mode and materialises it with ``to_empty(device="neuron")`` inside it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh
    from transformers import PreTrainedConfig, PreTrainedModel

    from .models import ModelKind

__all__ = ["ShapeOnly", "shape_only"]


class ShapeOnly:
    """Context manager for a shape-only run (see the module docstring).

    Args:
        world_size: ranks of the simulated job (1: no process group).
        rank: the rank this process plays (0).

    Raises:
        RuntimeError: a process group is already initialised in this process (a shape-only run needs its
            own fake one), or ``world_size`` < 1.
    """

    def __init__(self, world_size: int = 1, rank: int = 0):
        if world_size < 1 or not 0 <= rank < world_size:
            raise RuntimeError(f"shape_only(world_size={world_size}, rank={rank}): need world_size >= 1 and "
                               "0 <= rank < world_size")
        self.world_size = world_size
        self.rank = rank
        self.fake_mode: FakeTensorMode | None = None
        self._owns_group = False
        self._meshes: dict[tuple[tuple[int, ...], tuple[str, ...]], DeviceMesh] = {}

    def __enter__(self) -> ShapeOnly:
        if self.world_size > 1:
            if dist.is_initialized():
                raise RuntimeError("shape_only(world_size>1) needs its own fake process group, but one is already "
                                   "initialised in this process: call torch.distributed.destroy_process_group() "
                                   "first, or run the estimate in a fresh process")
            import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers backend "fake")

            dist.init_process_group("cpu:fake,neuron:fake", store=dist.HashStore(), rank=self.rank,
                                    world_size=self.world_size)
            self._owns_group = True
        mode = self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.fake_mode is not None:
                self.fake_mode.__exit__(*exc)
        finally:
            if self._owns_group and dist.is_initialized():
                dist.destroy_process_group()
            self._owns_group = False

    @contextlib.contextmanager
    def real(self) -> Iterator[None]:
        """Leaves the fake mode temporarily (to build device meshes or shard on ``meta``)."""
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():
            yield

    def mesh(self, shape: tuple[int, ...], names: tuple[str, ...]) -> DeviceMesh:
        """A ``neuron`` DeviceMesh of ``shape`` over the fake world (built outside the fake mode; cached).

        Raises:
            ValueError: the mesh does not cover the world size.
        """
        import math

        if math.prod(shape) != self.world_size:
            raise ValueError(f"a mesh {shape} covers {math.prod(shape)} ranks, the shape-only world has "
                             f"{self.world_size}")
        key = (tuple(shape), tuple(names))
        if key not in self._meshes:
            from torch.distributed.device_mesh import init_device_mesh

            with self.real():
                self._meshes[key] = init_device_mesh("neuron", tuple(shape), mesh_dim_names=tuple(names))
        return self._meshes[key]

    def causal_lm(self, config: PreTrainedConfig, dtype: torch.dtype = torch.bfloat16, tp: int = 1, fsdp: int = 1,
                  sequence_parallel: bool = False, kind: ModelKind | None = None,
                  task: str = "forward") -> PreTrainedModel:
        """A transformers model of ``config`` on fake ``neuron`` tensors, sharded ``tp`` x ``fsdp``.

        See :func:`.parallel.build_model` (which this calls) for the arguments and errors.
        """
        from .parallel import build_model

        return build_model(self, config, dtype=dtype, tp=tp, fsdp=fsdp, sequence_parallel=sequence_parallel,
                           kind=kind, task=task)[0]

    @staticmethod
    def tokens(batch: int, seq: int, vocab: int = 32000) -> torch.Tensor:
        """Fake token ids ``[batch, seq]`` (int64) on ``neuron``."""
        return torch.randint(0, vocab, (batch, seq), device="neuron")


def shape_only(world_size: int = 1, rank: int = 0) -> ShapeOnly:
    """A :class:`ShapeOnly` context (see the module docstring)."""
    return ShapeOnly(world_size, rank)
