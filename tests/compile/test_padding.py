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


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_fill_values_a_dtype_cannot_hold_are_refused(device):
    # torch.full stores -100 as 156 in uint8 and as True in bool, and 0.5 as 0 in int64:
    # filler labels would silently become real labels.
    with pytest.raises(ValueError, match=r"-100 does not fit a torch.uint8 tensor.*values=\{'labels'"):
        pad_batch_to_bucket({"labels": torch.ones(3, dtype=torch.uint8, device=device)})
    with pytest.raises(ValueError, match=r"-100 does not fit a torch.bool tensor"):
        pad_batch_to_bucket({"labels": torch.ones(3, dtype=torch.bool, device=device)})
    with pytest.raises(ValueError, match=r"0.5 does not fit a torch.int64 tensor"):
        pad_to_multiple(torch.ones(3, dtype=torch.long, device=device), 4, value=0.5)
    with pytest.raises(ValueError, match=r"does not fit a torch.int8 tensor"):
        pad_to_multiple(torch.ones(3, dtype=torch.int8, device=device), 4, value=200)
    # values a dtype holds still pad as before
    out = pad_batch_to_bucket({"labels": torch.ones(3, dtype=torch.uint8, device=device)}, values={"labels": 255})
    assert out["labels"].cpu().tolist() == [1, 1, 1, 255]
    assert pad_to_multiple(torch.ones(3, dtype=torch.uint32, device=device), 4, value=2**32 - 1).cpu().tolist() \
        == [1, 1, 1, 2**32 - 1]
    assert pad_to_multiple(torch.ones(3, dtype=torch.bfloat16, device=device), 4, value=-100).cpu().tolist() \
        == [1.0, 1.0, 1.0, -100.0]
    assert pad_to_multiple(torch.zeros(3, dtype=torch.bool, device=device), 4, value=1).cpu().tolist() \
        == [False, False, False, True]


def test_bucket_size_refuses_non_integer_sizes_and_buckets():
    with pytest.raises(TypeError, match="n must be an integer, got 3.5"):
        bucket_size(3.5)
    with pytest.raises(TypeError, match="a bucket must be an integer, got 4.5"):
        bucket_size(3, [2, 4.5])
    with pytest.raises(ValueError, match=r"buckets must be ≥ 1, got \[0, -4\]"):
        bucket_size(3, [0, -4, 8])
    assert bucket_size(torch.tensor(5)) == 8  # a 0-dim integer tensor (batch.size(0) under tracing)
    assert bucket_size(5, [torch.tensor(6), 16]) == 6


def test_pad_batch_to_bucket_keeps_the_mapping_type_and_names_flat_entries():
    transformers = pytest.importorskip("transformers")
    enc = transformers.BatchEncoding({"input_ids": torch.ones(3, 2, dtype=torch.long),
                                      "attention_mask": torch.ones(3, 2, dtype=torch.long)})
    out = pad_batch_to_bucket(enc)
    assert type(out) is transformers.BatchEncoding
    assert out["input_ids"].shape == (4, 2) and out["attention_mask"][3].tolist() == [0, 0]
    assert enc["input_ids"].shape == (3, 2)  # the input is not modified
    assert out.to("neuron")["input_ids"].device.type == "neuron"
    with pytest.raises(ValueError, match=r"\['num_items'\] have no dimension 0 to pad"):
        pad_batch_to_bucket({"input_ids": torch.ones(3, 2), "num_items": torch.tensor(5)})
