"""The all_reduce fast path of backend "neuron" (``_C._allreduce_alias``, what the group's C++ backend
``NeuronBackend::allreduce`` runs first; ``test_neuron_backend.py`` tests that backend): one contiguous tensor
of a dtype gloo reduces, ``ReduceOp.SUM``, goes to gloo on its zero-copy CPU alias and sums across ranks;
every other call is left to the general path untouched (None). The handle it returns is a C++ Work answering
as ``NeuronWork`` does: result and future are the caller's tensors, and a failed transfer raises the diagnosis
of the ``explain`` callable as a ``DistBackendError``, from ``wait`` and the future alike. Two gloo ranks in
this process (two threads), so the sums are real. ``tests/distributed/test_collectives.py`` checks the whole
backend through ``dist.all_reduce`` on three processes."""
from __future__ import annotations

from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from torch_neuronx import _C
from torch_neuronx.distributed.aliases import GLOO_DTYPES

from .in_process import connect_two

EVERY_DTYPE = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)


def connect_two_gloo_ranks() -> list:
    """Two gloo backends (ranks 0 and 1) on one store, built concurrently (each waits for the other)."""
    return connect_two(lambda store, r: dist.ProcessGroupGloo(store, r, 2, timedelta(seconds=60)), "gloo ranks")


@pytest.fixture(scope="module")
def two_ranks():
    """Two connected gloo ranks shared by the module's tests."""
    return connect_two_gloo_ranks()


def on_both(two_ranks, tensors_of_rank, opts=None):
    """``_allreduce_alias`` on both ranks (their tensors: ``tensors_of_rank(r)``); the two works."""
    opts = opts or dist.AllreduceOptions()
    tensors = [tensors_of_rank(r) for r in range(2)]
    works = [_C._allreduce_alias(two_ranks[r], tensors[r], opts, unexpected_failure) for r in range(2)]
    for w in works:
        if w is not None:
            w.wait(timedelta(seconds=60))
    return tensors, works


def unexpected_failure(op, err):
    raise AssertionError(f"the diagnosis ran, but {op} should have succeeded: {err}")


def test_cpp_dtype_set_is_gloo_dtypes():
    for dtype in EVERY_DTYPE:
        assert _C._gloo_reduces(dtype) == (dtype in GLOO_DTYPES), dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float64])
def test_sums_across_ranks_in_place_on_the_device_tensor(two_ranks, dtype):
    base = torch.arange(12).reshape(3, 4)
    (t0, t1), works = on_both(two_ranks, lambda r: [(base * 10**r).to(dtype).to("neuron")])
    assert all(w is not None for w in works)
    for t in (t0, t1):
        assert t[0].device.type == "neuron"
        torch.testing.assert_close(t[0].cpu(), (base * 11).to(dtype))
    # the handle's result is the caller's device tensor; gloo ran on an alias of its bytes: no copy
    (out,) = works[0].result()
    assert out.device.type == "neuron" and out.data_ptr() == t0[0].data_ptr()
    (alias,) = _C._allreduce_transfer(works[0]).result()
    assert alias.device.type == "cpu" and alias.data_ptr() == t0[0].data_ptr()


def test_cpu_tensors_are_passed_as_they_are(two_ranks):
    (t0, t1), works = on_both(two_ranks, lambda r: [torch.full((5,), float(r + 1))])
    assert all(w is not None for w in works)
    for t in (t0, t1):
        torch.testing.assert_close(t[0], torch.full((5,), 3.0))
    assert works[0].result()[0].data_ptr() == t0[0].data_ptr()


def test_the_future_resolves_to_the_device_tensors(two_ranks):
    """DDP's reducer reads the bucket from the future's value: it must be the ``neuron`` tensors."""
    tensors = [[torch.full((6,), float(r + 1), device="neuron")] for r in range(2)]
    works = [_C._allreduce_alias(two_ranks[r], tensors[r], dist.AllreduceOptions(), unexpected_failure)
             for r in range(2)]
    futures = [w.get_future() for w in works]
    for r, fut in enumerate(futures):
        (value,) = fut.wait()
        assert value.device.type == "neuron" and value.data_ptr() == tensors[r][0].data_ptr()
        torch.testing.assert_close(value.cpu(), torch.full((6,), 3.0))
    for w in works:  # (gloo completes its future just before it marks its work done: wait first)
        assert w.wait() and w.is_completed()


@pytest.fixture
def lonely_rank():
    """Rank 0 of a two-rank gloo group whose rank 1 never takes part in a collective."""
    ranks = connect_two_gloo_ranks()
    yield ranks[0]
    for r in ranks:
        r.abort()


def short_timeout() -> dist.AllreduceOptions:
    opts = dist.AllreduceOptions()
    opts.timeout = timedelta(seconds=1)
    return opts


def test_a_failed_transfer_raises_the_diagnosis_once(lonely_rank):
    seen: list = []

    def explain(op, err):
        seen.append((op, err))
        return dist.DistBackendError(f"{op} failed: rank 1 stopped (diagnosis {len(seen)})")

    t = torch.ones(4, device="neuron")
    work = _C._allreduce_alias(lonely_rank, [t], short_timeout(), explain)
    with pytest.raises(dist.DistBackendError) as first:
        work.wait()
    assert "all_reduce failed: rank 1 stopped (diagnosis 1)" in str(first.value)
    # the diagnosis saw the transport's own error, as Python sees it
    ((op, err),) = seen
    assert op == "all_reduce" and isinstance(err, Exception) and "timed out" in str(err).lower(), err
    # later waits, the future and exception() give the same diagnosis without running it again
    with pytest.raises(dist.DistBackendError, match=r"rank 1 stopped \(diagnosis 1\)"):
        work.wait()
    with pytest.raises(dist.DistBackendError, match=r"rank 1 stopped \(diagnosis 1\)"):
        work.get_future().wait()
    assert len(seen) == 1 and work.is_completed()


def test_a_failed_diagnosis_still_raises_the_transport_error(lonely_rank):
    def explain(op, err):
        raise KeyError("store gone")

    work = _C._allreduce_alias(lonely_rank, [torch.ones(4, device="neuron")], short_timeout(), explain)
    with pytest.raises(dist.DistBackendError) as raised:
        work.wait()
    message = str(raised.value)
    assert "all_reduce failed and its diagnosis raised" in message and "store gone" in message, message
    assert "timed out" in message.lower(), message


def other_calls():
    """(name, tensors of a rank, options) the fast path must leave alone."""
    opt_max = dist.AllreduceOptions()
    opt_max.reduceOp = dist.ReduceOp.MAX
    opt_avg = dist.AllreduceOptions()
    opt_avg.reduceOp = dist.ReduceOp.AVG
    opt_premul = dist.AllreduceOptions()
    opt_premul.reduceOp = dist._make_nccl_premul_sum(2.0)
    sum_opts = dist.AllreduceOptions()
    return [
        ("non-contiguous", lambda: [torch.ones(4, 3, device="neuron").t()], sum_opts),
        ("two tensors", lambda: [torch.ones(3, device="neuron"), torch.ones(3, device="neuron")], sum_opts),
        ("no tensor", lambda: [], sum_opts),
        ("MAX", lambda: [torch.ones(3, device="neuron")], opt_max),
        ("AVG", lambda: [torch.ones(3, device="neuron")], opt_avg),
        ("PREMUL_SUM", lambda: [torch.ones(3, device="neuron")], opt_premul),
        ("int16", lambda: [torch.ones(3, dtype=torch.int16, device="neuron")], sum_opts),
        ("float8", lambda: [torch.ones(3, device="neuron").to(torch.float8_e4m3fn)], sum_opts),
        ("meta", lambda: [torch.ones(3, device="meta")], sum_opts),
        ("sparse", lambda: [torch.ones(3).to_sparse()], sum_opts),
    ]


@pytest.mark.parametrize("name,tensors,opts", other_calls(), ids=[c[0] for c in other_calls()])
def test_every_other_call_is_left_to_the_general_path(two_ranks, name, tensors, opts):
    ts = tensors()
    before = [t.to_dense().cpu().clone() if t.device.type != "meta" else None for t in ts]
    assert _C._allreduce_alias(two_ranks[0], ts, opts, unexpected_failure) is None, name
    for t, b in zip(ts, before, strict=True):  # nothing was started: values unchanged
        if b is not None:
            assert torch.equal(t.to_dense().cpu(), b), name
