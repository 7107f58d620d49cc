"""pad_to_multiple and batch bucketing: the fix the recompile diagnostics point to."""
from __future__ import annotations

import pytest
import torch

from torch_neuronx.compile import bucket_size, pad_batch_to_bucket, pad_to_multiple


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_pad_to_multiple_pads_last_dim_and_keeps_values(device):
    x = torch.arange(2 * 130, dtype=torch.long, device=device).view(2, 130)
    y = pad_to_multiple(x, 128, value=7)
    assert y.shape == (2, 256) and y.device.type == device and y.dtype == torch.long
    assert torch.equal(y[:, :130].cpu(), x.cpu())
    assert (y[:, 130:] == 7).all()


def test_pad_to_multiple_other_dim_default_fill_and_noop():
    x = torch.ones(3, 5, 4)
    y = pad_to_multiple(x, 4, dim=1)
    assert y.shape == (3, 8, 4) and (y[:, 5:] == 0).all() and torch.equal(y[:, :5], x)
    assert pad_to_multiple(y, 4, dim=1) is y
    m = pad_to_multiple(torch.ones(2, 3, dtype=torch.bool), 8)
    assert m.shape == (2, 8) and not m[:, 3:].any()
    assert pad_to_multiple(torch.ones(2, 0), 128).shape == (2, 0)


def test_pad_to_multiple_errors():
    with pytest.raises(ValueError):
        pad_to_multiple(torch.ones(3), 0)
    with pytest.raises(IndexError):
        pad_to_multiple(torch.ones(3), 8, dim=2)


def test_bucket_size():
    assert [bucket_size(n) for n in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, 16]
    assert bucket_size(5, [4, 12, 8]) == 8
    with pytest.raises(ValueError):
        bucket_size(20, [4, 8])
    with pytest.raises(ValueError):
        bucket_size(0)


def test_pad_batch_to_bucket_dict():
    batch = {"input_ids": torch.ones(3, 4, dtype=torch.long),
             "attention_mask": torch.ones(3, 4, dtype=torch.long),
             "labels": torch.ones(3, 4, dtype=torch.long)}
    out = pad_batch_to_bucket(batch)
    assert {k: tuple(v.shape) for k, v in out.items()} == {k: (4, 4) for k in batch}
    assert (out["labels"][3] == -100).all() and (out["attention_mask"][3] == 0).all()
    assert torch.equal(out["input_ids"][:3], batch["input_ids"])
    assert pad_batch_to_bucket(torch.ones(4, 2)).shape == (4, 2)
    with pytest.raises(ValueError):
        pad_batch_to_bucket({"a": torch.ones(2, 1), "b": torch.ones(3, 1)})
