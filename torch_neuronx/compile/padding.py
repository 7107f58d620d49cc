"""Static shapes for ``torch.compile(backend="neuron")``: pad and bucket.

Every new input shape is a new static graph on TorchNeuron (and on this software
NeuronCore), so a loop whose sequence length or batch size varies recompiles until
Dynamo gives up (``torch._dynamo.config.recompile_limit``, 8, then eager). The fix the
recompile diagnostics of :mod:`torch_neuronx.compile.metrics` point to is here:

* :func:`pad_to_multiple` pads one dimension (sequence length, usually) up to a multiple
  of ``multiple`` (128: the NeuronCore's partition count, TRL's ``pad_to_multiple_of``
  on ``neuron``), so lengths 1..128 share one graph, 129..256 the next, ...;
* :func:`bucket_size` / :func:`pad_batch_to_bucket` round a batch size up to one of a few
  buckets (powers of two by default) and pad the batch with filler rows, so the last,
  short batch of an epoch does not add a graph.
"""
from __future__ import annotations

import copy
import math
import operator
from collections.abc import MutableMapping, Sequence

import torch


def _default_fill(x: torch.Tensor) -> int | float | bool:
    return False if x.dtype == torch.bool else 0


def _fill_fits(value: object, dtype: torch.dtype) -> bool:
    """Whether ``value`` is a number an integer or bool ``dtype`` holds (any real number for floats).

    ``torch.full`` converts a Python number to an integer or bool dtype without a check:
    -100 becomes 156 in uint8 and ``True`` in bool, 0.5 becomes 0 in int64.
    """
    if dtype.is_floating_point or dtype.is_complex:
        return isinstance(value, (bool, int, float)) or (isinstance(value, complex) and dtype.is_complex)
    if dtype == torch.bool:
        return isinstance(value, (bool, int, float)) and value in (0, 1)
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return False
    elif not isinstance(value, int):
        return False
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def _check_fill(value: object, x: torch.Tensor, what: str, fix: str) -> None:
    """Raises ``ValueError`` when ``value`` would not be stored exactly in ``x``'s dtype."""
    if not _fill_fits(value, x.dtype):
        raise ValueError(f"{what}: fill value {value!r} does not fit a {x.dtype} tensor "
                         f"(torch.full would store another value); {fix}")


def pad_to_multiple(
    x: torch.Tensor, multiple: int = 128, dim: int = -1, value: int | float | bool | None = None
) -> torch.Tensor:
    """Pads ``x`` at the end of dimension ``dim`` so that its size is a multiple of ``multiple``.

    Args:
        x: any tensor (any dtype, any device; the result is on ``x.device`` with ``x.dtype``).
        multiple: positive int, the granularity (default 128).
        dim: the dimension to pad, negative counts from the end (default ``-1``).
        value: fill value for the new positions: a pad token id for ``input_ids``, ``0`` for an
            ``attention_mask``, ``-100`` for ``labels`` (ignored by the loss). ``None`` means 0
            (``False`` for bool).

    Returns:
        ``x`` itself when ``x.size(dim)`` already is a multiple (no copy), otherwise a new
        tensor of shape ``x.shape`` with ``size(dim)`` rounded up to the next multiple, whose
        first ``x.size(dim)`` positions equal ``x``. A size of 0 stays 0.

    Raises:
        ValueError: ``multiple`` < 1, or ``value`` does not fit ``x.dtype`` (a non-integer or
            out-of-range value for an integer dtype, anything but 0/1 for bool).
        IndexError: ``dim`` out of range.
    """
    if not isinstance(multiple, int) or multiple < 1:
        raise ValueError(f"pad_to_multiple: multiple must be a positive int, got {multiple!r}")
    if x.dim() == 0:
        raise IndexError("pad_to_multiple: a 0-dim tensor has no dimension to pad")
    d = dim if dim >= 0 else dim + x.dim()
    if not 0 <= d < x.dim():
        raise IndexError(f"pad_to_multiple: dim {dim} out of range for a {x.dim()}-dim tensor")
    size = x.size(d)
    target = -(-size // multiple) * multiple
    if target == size:
        return x
    fill = _default_fill(x) if value is None else value
    _check_fill(fill, x, "pad_to_multiple", f"pass a value= that a {x.dtype} tensor holds")
    shape = list(x.shape)
    shape[d] = target
    out = torch.full(shape, fill, dtype=x.dtype, device=x.device)
    out.narrow(d, 0, size).copy_(x)
    return out


def bucket_size(n: int, buckets: Sequence[int] | None = None) -> int:
    """The smallest bucket ≥ ``n``.

    Args:
        n: a size ≥ 1 (a batch size, a sequence length).
        buckets: allowed sizes, any order; ``None`` means powers of two (1, 2, 4, 8, ...).

    Returns:
        The bucket, an int ≥ ``n``.

    Raises:
        TypeError: ``n`` or a bucket is not an integer (Python int, NumPy integer, 0-dim integer tensor).
        ValueError: ``n`` < 1, a bucket < 1, or ``n`` larger than every bucket.
    """
    n = _as_size(n, "n")
    if n < 1:
        raise ValueError(f"bucket_size: n must be ≥ 1, got {n}")
    if buckets is None:
        return 1 << (n - 1).bit_length()
    buckets = [_as_size(b, "a bucket") for b in buckets]
    bad = [b for b in buckets if b < 1]
    if bad:
        raise ValueError(f"bucket_size: buckets must be ≥ 1, got {bad} in {sorted(buckets)}")
    fitting = [b for b in buckets if b >= n]
    if not fitting:
        raise ValueError(f"bucket_size: {n} is larger than every bucket {sorted(buckets)}")
    return min(fitting)


def _as_size(v: object, what: str) -> int:
    try:
        return operator.index(v)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"bucket_size: {what} must be an integer, got {v!r} ({type(v).__name__})") from None


def pad_batch_to_bucket(
    batch: dict[str, torch.Tensor] | torch.Tensor,
    buckets: Sequence[int] | None = None,
    dim: int = 0,
    values: dict[str, int | float | bool] | None = None,
) -> dict[str, torch.Tensor] | torch.Tensor:
    """Pads a batch along its batch dimension up to :func:`bucket_size` of its size.

    Args:
        batch: a tensor, or a dict of tensors that share the size of dimension ``dim`` (a
            tokenizer/collator output: ``input_ids``, ``attention_mask``, ``labels``...; a
            ``BatchEncoding`` or other mutable mapping comes back as a copy of its own type).
            Entries that are not tensors are returned unchanged.
        buckets: allowed batch sizes (``None``: powers of two).
        dim: the batch dimension (default 0).
        values: fill value per dict key. Defaults: ``labels`` → -100 (ignored by the loss),
            everything else → 0 (an ``attention_mask`` of 0 makes filler rows inert).

    Returns:
        The same structure with dimension ``dim`` padded to the bucket; filler rows come last,
        so ``out[:n]`` is the original batch. Unchanged objects when already at a bucket.

    Raises:
        ValueError: tensors of a dict disagree on the batch size, a tensor has no dimension
            ``dim`` (a 0-dim entry such as a token count), the size fits no bucket, or a fill
            value does not fit a tensor's dtype (the default -100 of ``labels`` in a bool or
            unsigned tensor: pass ``values={"labels": ...}``).
    """
    if isinstance(batch, torch.Tensor):
        n = batch.size(dim)
        return _pad_dim_to(batch, dim, bucket_size(n, buckets), None, "the batch")
    tensors = {k: v for k, v in batch.items() if isinstance(v, torch.Tensor)}
    flat = [k for k, v in tensors.items() if not -v.dim() <= dim < v.dim()]
    if flat:
        raise ValueError(
            f"pad_batch_to_bucket: {flat} have no dimension {dim} to pad (shapes "
            f"{[tuple(tensors[k].shape) for k in flat]}): take them out of the batch before padding")
    sizes = {k: v.size(dim) for k, v in tensors.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"pad_batch_to_bucket: tensors disagree on dimension {dim}: {sizes}")
    if not sizes:
        return batch
    target = bucket_size(next(iter(sizes.values())), buckets)
    fills: dict[str, int | float | bool] = {"labels": -100}
    fills.update(values or {})
    padded = {k: _pad_dim_to(v, dim, target, fills.get(k), repr(k)) for k, v in tensors.items()}
    if type(batch) is not dict and isinstance(batch, MutableMapping):
        out = copy.copy(batch)
        for k, v in padded.items():
            out[k] = v
        return out
    return {k: padded.get(k, v) for k, v in batch.items()}


def _pad_dim_to(x: torch.Tensor, dim: int, target: int, value: int | float | bool | None,
                name: str) -> torch.Tensor:
    size = x.size(dim)
    if size == target:
        return x
    d = dim if dim >= 0 else dim + x.dim()
    shape = list(x.shape)
    shape[d] = target
    fill = _default_fill(x) if value is None else value
    _check_fill(fill, x, f"pad_batch_to_bucket ({name})",
                f"pass values={{{name}: <fill>}} with a fill value that a {x.dtype} tensor holds")
    out = torch.full(shape, fill, dtype=x.dtype, device=x.device)
    out.narrow(d, 0, size).copy_(x)
    return out
