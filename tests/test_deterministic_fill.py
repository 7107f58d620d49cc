"""With ``torch.use_deterministic_algorithms(True)`` (and
``torch.utils.deterministic.fill_uninitialized_memory``, on by default), new ``neuron``
memory is filled as on the CPU: NaN for floating dtypes, the dtype's max for integers and
bool — for ``empty``, ``empty_like``, ``empty_strided`` and the grown part of ``resize_``.
Without it, a freed block's bytes come back (the allocator reuses small blocks)."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture
def deterministic():
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(was)


def _dirty_the_allocator(n: int, dtype: torch.dtype) -> None:
    x = torch.full((n,), 7, dtype=dtype, device="neuron")  # a block with known bytes, then freed
    del x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.uint8, torch.bool])
def test_new_memory_is_filled_like_the_cpu(deterministic, dtype):
    for make in (
        lambda d: torch.empty(5, dtype=dtype, device=d),
        lambda d: torch.empty_like(torch.zeros(5, dtype=dtype, device=d)),
        lambda d: torch.empty_strided((5,), (1,), dtype=dtype, device=d),
        lambda d: torch.empty((1, 2, 2, 2), dtype=dtype, device=d, memory_format=torch.channels_last),
    ):
        _dirty_the_allocator(5, dtype)
        got, want = make("neuron").cpu(), make("cpu")
        assert torch.equal(got, want) or (
            dtype.is_floating_point and torch.isnan(got).all() and torch.isnan(want).all()
        ), (dtype, got, want)


def test_resize_fills_only_the_grown_part(deterministic):
    for d in ("cpu", "neuron"):
        t = torch.ones(2, device=d)
        t.resize_(5)
        got = t.cpu()
        assert got[:2].tolist() == [1.0, 1.0], d
        assert torch.isnan(got[2:]).all(), (d, got)
    t = torch.ones(2, dtype=torch.int32, device="neuron")
    t.resize_(4)
    assert t.cpu().tolist() == [1, 1, 2**31 - 1, 2**31 - 1]


def test_the_fill_can_be_turned_off(deterministic):
    """With the fill off, the freed block's bytes come back (the allocator reuses a freed
    block of the same size), which is what the fill exists to expose."""
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        _dirty_the_allocator(6, torch.float32)
        assert torch.empty(6, device="neuron").cpu().tolist() == [7.0] * 6
        torch.utils.deterministic.fill_uninitialized_memory = True
        _dirty_the_allocator(6, torch.float32)
        assert torch.isnan(torch.empty(6, device="neuron").cpu()).all()
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = True
