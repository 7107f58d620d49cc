"""Every collective of backend "neuron" on neuron tensors against the same collective
of a gloo group on CPU tensors, for float32/bfloat16, contiguous/non-contiguous
tensors, on the default group and on a new_group that leaves rank 1 out.

Inputs are random per rank; outputs start as NaN, so an output the backend did
not write cannot equal gloo's. Non-contiguous tensors are every other element
of a NaN buffer: the elements in between must still be NaN afterwards (nothing
written outside the view). Prints "CHECKS <n>" and exits 0 when all passed.
"""
from __future__ import annotations


import torch
import torch.distributed as dist

from .common import init, say

DEV = init()
RANK, WORLD = dist.get_rank(), dist.get_world_size()
NAN = float("nan")
checks = 0


def data(shape, salt: int, dtype, rank: int = RANK) -> torch.Tensor:
    """Deterministic values in [0.5, 1.5) for (rank, salt), on CPU."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    return (torch.rand(shape, generator=g) + 0.5).to(dtype)


def place(cpu: torch.Tensor, strided: bool) -> torch.Tensor:
    """A neuron copy of ``cpu``; if ``strided``, every other element of a NaN buffer."""
    if not strided:
        return cpu.to(DEV)
    shape = cpu.shape if cpu.dim() else (1,)
    buf = torch.full((*shape[:-1], 2 * shape[-1]), NAN, dtype=cpu.dtype, device=DEV)
    view = buf[..., ::2]
    view.copy_(cpu.reshape(shape).to(DEV))
    assert not view.is_contiguous()
    return view


def empty(shape, dtype, strided: bool) -> torch.Tensor:
    return place(torch.full(shape, NAN, dtype=dtype), strided)


def check(name: str, got: list[torch.Tensor], want: list[torch.Tensor]) -> None:
    global checks
    assert len(got) == len(want), (name, len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.device.type == "neuron", (name, g.device)
        gc = g.cpu()
        if not torch.equal(gc, w):
            raise AssertionError(f"{name}[{i}]: neuron {gc.flatten()[:6]} != gloo {w.flatten()[:6]}")
        if not g.is_contiguous():
            # the elements between the view's elements were never written
            base = g.as_strided((g.numel(),), (2,), g.storage_offset() + 1) if g.dim() == 1 else None
            if base is not None:
                assert torch.isnan(base.cpu().float()).all(), f"{name}: wrote outside the view"
    checks += 1


def run_case(group, gloo, dtype, strided: bool) -> None:
    """Runs every collective once on ``group`` (neuron) and ``gloo`` (CPU) and compares."""
    tag = f"{'default' if group is None else 'sub'}/{dtype}/{'strided' if strided else 'contig'}"
    group = group or dist.group.WORLD
    n = dist.get_world_size(group)
    me = dist.get_rank(group)
    root = dist.get_global_rank(group, n - 1)
    S = 6  # elements per rank chunk

    # all_reduce, every reduction op
    for i, op in enumerate([dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MIN,
                            dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT]):
        x = data((S,), 10 + i, dtype)
        t = place(x, strided)
        c = x.clone()
        dist.all_reduce(t, op=op, group=group)
        dist.all_reduce(c, op=op, group=gloo)
        check(f"{tag} all_reduce {op}", [t], [c])
    # async handle: wait() and get_future()
    x = data((S,), 20, dtype)
    t, c = place(x, strided), x.clone()
    work = dist.all_reduce(t, group=group, async_op=True)
    assert work.wait()
    dist.all_reduce(c, group=gloo)
    check(f"{tag} all_reduce async wait", [t], [c])
    t = place(x, strided)
    fut = dist.all_reduce(t, group=group, async_op=True).get_future()
    value = fut.wait()
    check(f"{tag} all_reduce future", [t, value[0]], [c, c])

    # all_gather_into_tensor / all_gather
    x = data((S,), 30, dtype)
    out, ref = empty((n * S,), dtype, strided), torch.empty(n * S, dtype=dtype)
    dist.all_gather_into_tensor(out, place(x, strided), group=group)
    dist.all_gather_into_tensor(ref, x.clone(), group=gloo)
    check(f"{tag} all_gather_into_tensor", [out], [ref])
    outs = [empty((S,), dtype, strided) for _ in range(n)]
    refs = [torch.empty(S, dtype=dtype) for _ in range(n)]
    dist.all_gather(outs, place(x, strided), group=group)
    dist.all_gather(refs, x.clone(), group=gloo)
    check(f"{tag} all_gather", outs, refs)

    # reduce_scatter_tensor (sum, avg) / reduce_scatter
    for i, op in enumerate([dist.ReduceOp.SUM, dist.ReduceOp.AVG]):
        x = data((n * S,), 40 + i, dtype)
        out, ref = empty((S,), dtype, strided), torch.empty(S, dtype=dtype)
        dist.reduce_scatter_tensor(out, place(x, strided), op=op, group=group)
        dist.reduce_scatter_tensor(ref, x.clone(), op=op, group=gloo)
        check(f"{tag} reduce_scatter_tensor {op}", [out], [ref])
    xs = [data((S,), 50 + j, dtype) for j in range(n)]
    out, ref = empty((S,), dtype, strided), torch.empty(S, dtype=dtype)
    dist.reduce_scatter(out, [place(x, strided) for x in xs], group=group)
    dist.reduce_scatter(ref, [x.clone() for x in xs], group=gloo)
    check(f"{tag} reduce_scatter", [out], [ref])

    # broadcast / reduce / gather / scatter (root: the group's last rank)
    x = data((S,), 60, dtype)
    t, c = place(x, strided), x.clone()
    dist.broadcast(t, src=root, group=group)
    dist.broadcast(c, src=root, group=gloo)
    check(f"{tag} broadcast", [t], [c])
    t, c = place(x, strided), x.clone()
    dist.reduce(t, dst=root, group=group)
    dist.reduce(c, dst=root, group=gloo)
    if dist.get_rank() == root:
        check(f"{tag} reduce", [t], [c])
    outs = [empty((S,), dtype, strided) for _ in range(n)] if dist.get_rank() == root else None
    refs = [torch.empty(S, dtype=dtype) for _ in range(n)] if dist.get_rank() == root else None
    dist.gather(place(x, strided), outs, dst=root, group=group)
    dist.gather(x.clone(), refs, dst=root, group=gloo)
    if dist.get_rank() == root:
        check(f"{tag} gather", outs, refs)
    xs = [data((S,), 70 + j, dtype) for j in range(n)]
    out, ref = empty((S,), dtype, strided), torch.empty(S, dtype=dtype)
    dist.scatter(out, [place(x, strided) for x in xs] if dist.get_rank() == root else None, src=root, group=group)
    dist.scatter(ref, [x.clone() for x in xs] if dist.get_rank() == root else None, src=root, group=gloo)
    check(f"{tag} scatter", [out], [ref])

    # all_to_all_single (equal and uneven splits) / all_to_all
    x = data((n * S,), 80, dtype)
    out, ref = empty((n * S,), dtype, strided), torch.empty(n * S, dtype=dtype)
    dist.all_to_all_single(out, place(x, strided), group=group)
    dist.all_to_all_single(ref, x.clone(), group=gloo)
    check(f"{tag} all_to_all_single", [out], [ref])
    in_splits = [(me + j) % 3 + 1 for j in range(n)]  # what I send to rank j
    out_splits = [(j + me) % 3 + 1 for j in range(n)]  # what rank j sends me
    x = data((sum(in_splits),), 81, dtype)
    out, ref = empty((sum(out_splits),), dtype, strided), torch.empty(sum(out_splits), dtype=dtype)
    dist.all_to_all_single(out, place(x, strided), out_splits, in_splits, group=group)
    dist.all_to_all_single(ref, x.clone(), out_splits, in_splits, group=gloo)
    check(f"{tag} all_to_all_single uneven", [out], [ref])
    xs = [data((S,), 90 + j, dtype) for j in range(n)]
    outs = [empty((S,), dtype, strided) for _ in range(n)]
    refs = [torch.empty(S, dtype=dtype) for _ in range(n)]
    dist.all_to_all(outs, [place(x, strided) for x in xs], group=group)
    dist.all_to_all(refs, [x.clone() for x in xs], group=gloo)
    check(f"{tag} all_to_all", outs, refs)
    # all_to_all with a different size per peer (as NCCL allows; gloo's list form does not): the
    # reference is gloo's all_to_all_single of the concatenation with those splits
    xs = [data((in_splits[j], 2), 95 + j, dtype) for j in range(n)]
    outs = [empty((out_splits[j], 2), dtype, strided) for j in range(n)]
    dist.all_to_all(outs, [place(x, strided) for x in xs], group=group)
    ref = torch.empty(sum(out_splits) * 2, dtype=dtype)
    dist.all_to_all_single(ref, torch.cat([x.reshape(-1) for x in xs]), [2 * k for k in out_splits],
                           [2 * k for k in in_splits], group=gloo)
    check(f"{tag} all_to_all uneven", outs, [r.view(-1, 2) for r in ref.split([2 * k for k in out_splits])])

    # send/recv and batch_isend_irecv around the ring of the group
    nxt = dist.get_global_rank(group, (me + 1) % n)
    prv = dist.get_global_rank(group, (me - 1) % n)
    x = data((S,), 100, dtype)
    out = empty((S,), dtype, strided)
    if me % 2 == 0:
        dist.send(place(x, strided), nxt, group=group)
        dist.recv(out, prv, group=group)
    else:
        dist.recv(out, prv, group=group)
        dist.send(place(x, strided), nxt, group=group)
    check(f"{tag} send/recv", [out], [data((S,), 100, dtype, rank=prv)])
    out = empty((S,), dtype, strided)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, place(x, strided), nxt, group),
                                   dist.P2POp(dist.irecv, out, prv, group)])
    for req in reqs:
        req.wait()
    check(f"{tag} batch_isend_irecv", [out], [data((S,), 100, dtype, rank=prv)])

    # coalesced all_reduce (c10d's coalescing manager: _start/_end_coalescing, allreduce_coalesced)
    xs = [data((S,), 110 + j, dtype) for j in range(3)]
    ts, cs = [place(x, strided) for x in xs], [x.clone() for x in xs]
    with dist._coalescing_manager(group=group, device=DEV, async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t, group=group)
    cm.wait()
    with dist._coalescing_manager(group=gloo, async_ops=True) as cm:  # gloo: no startCoalescing
        for c in cs:
            dist.all_reduce(c, group=gloo)
    cm.wait()
    check(f"{tag} coalesced all_reduce", ts, cs)

    dist.barrier(group=group, device_ids=[DEV.index])


def raw(shape, salt: int, dtype, rank: int = RANK) -> torch.Tensor:
    """Random bytes for (rank, salt) viewed as ``dtype`` (any bit pattern, NaNs included), on CPU."""
    g = torch.Generator().manual_seed(7000 * rank + salt)
    n = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return torch.randint(0, 256, (n,), generator=g, dtype=torch.uint8).view(dtype).reshape(shape)


def same_bytes(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    global checks
    assert got.device.type == "neuron" and got.dtype == want.dtype, (name, got.device, got.dtype)
    if not torch.equal(got.cpu().contiguous().view(torch.uint8), want.contiguous().view(torch.uint8)):
        raise AssertionError(f"{name}: bytes differ: {got.cpu().flatten()[:4]} != {want.flatten()[:4]}")
    checks += 1


def moved_as_bytes(dtype) -> None:
    """Dtypes the transport cannot reduce (float8, int16, uint32) still move bit for bit in the
    collectives that do no arithmetic (as NCCL moves float8), and a reduction of them is refused
    at once with a TypeError on every rank instead of failing inside the transfer."""
    global checks
    S, root = 5, WORLD - 1
    x = raw((S,), 1, dtype)
    t = x.to(DEV)
    dist.broadcast(t, src=root)
    same_bytes(f"{dtype} broadcast", t, raw((S,), 1, dtype, rank=root))
    out = torch.empty(WORLD * S, dtype=dtype, device=DEV)
    dist.all_gather_into_tensor(out, raw((S,), 2, dtype).to(DEV))
    same_bytes(f"{dtype} all_gather_into_tensor", out, torch.cat([raw((S,), 2, dtype, rank=r) for r in range(WORLD)]))
    outs = [torch.empty(2, S, dtype=dtype, device=DEV) for _ in range(WORLD)]
    dist.all_gather(outs, raw((2, S), 3, dtype).to(DEV))
    for r in range(WORLD):
        same_bytes(f"{dtype} all_gather[{r}]", outs[r], raw((2, S), 3, dtype, rank=r))
    # uneven all_to_all_single: rank r sends (r + j) % 2 + 1 rows of width 3 to rank j
    rows = [(RANK + j) % 2 + 1 for j in range(WORLD)]
    mine = raw((sum(rows), 3), 4, dtype)
    got_rows = [(j + RANK) % 2 + 1 for j in range(WORLD)]
    out = torch.empty(sum(got_rows), 3, dtype=dtype, device=DEV)
    dist.all_to_all_single(out, mine.to(DEV), got_rows, rows)
    want = []
    for j in range(WORLD):
        theirs = raw((sum((j + k) % 2 + 1 for k in range(WORLD)), 3), 4, dtype, rank=j)
        start = sum((j + k) % 2 + 1 for k in range(RANK))
        want.append(theirs[start:start + got_rows[j]])
    same_bytes(f"{dtype} all_to_all_single uneven", out, torch.cat(want))
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    out = torch.empty(S, dtype=dtype, device=DEV)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, raw((S,), 5, dtype).to(DEV), nxt),
                                   dist.P2POp(dist.irecv, out, prv)])
    for req in reqs:
        req.wait()
    same_bytes(f"{dtype} send/recv", out, raw((S,), 5, dtype, rank=prv))
    try:
        dist.all_reduce(torch.zeros(S, dtype=dtype, device=DEV))
    except TypeError as e:
        assert str(dtype) in str(e) and "wider dtype" in str(e), e
        checks += 1
    else:
        raise AssertionError(f"all_reduce of {dtype} was not refused")


def objects() -> None:
    """Object collectives (what accelerate and the HF Trainer use) on the default group."""
    global checks
    got = [None] * WORLD
    dist.all_gather_object(got, {"rank": RANK, "tag": "x" * RANK})
    assert got == [{"rank": r, "tag": "x" * r} for r in range(WORLD)], got
    box = [f"from {RANK}"]
    dist.broadcast_object_list(box, src=WORLD - 1)
    assert box == [f"from {WORLD - 1}"], box
    checks += 2


def main() -> None:
    global checks
    gloo_world = dist.new_group(backend="gloo")
    sub_ranks = [r for r in range(WORLD) if r != 1]
    sub = dist.new_group(sub_ranks)  # backend "neuron", like the default group
    gloo_sub = dist.new_group(sub_ranks, backend="gloo")
    assert dist.get_backend() == "neuron"
    assert RANK not in sub_ranks or dist.get_backend(sub) == "neuron"
    for dtype in (torch.float32, torch.bfloat16):
        for strided in (False, True):
            run_case(None, gloo_world, dtype, strided)
            if RANK in sub_ranks:
                run_case(sub, gloo_sub, dtype, strided)
    objects()
    for dtype in (torch.float8_e4m3fn, torch.int16, torch.uint32):
        moved_as_bytes(dtype)
    # Multi-dimensional all_gather_into_tensor / reduce_scatter_tensor (FSDP2's shape: dim 0)
    x = data((3, 4), 200, torch.float32)
    out, ref = torch.empty(WORLD * 3, 4, device=DEV), torch.empty(WORLD * 3, 4)
    dist.all_gather_into_tensor(out, x.to(DEV))
    dist.all_gather_into_tensor(ref, x.clone(), group=gloo_world)
    check("2-d all_gather_into_tensor", [out], [ref])
    # The other output layouts PyTorch documents / NCCL accepts: stacked (WORLD, 3, 4) and flat
    # (accelerate's gather); reduce_scatter_tensor from a stacked input. Any shape of the right
    # element count works; a wrong count is a ValueError naming both counts, on every rank.
    for shape in [(WORLD, 3, 4), (WORLD * 12,)]:
        out = torch.full(shape, NAN, device=DEV)
        dist.all_gather_into_tensor(out, x.to(DEV))
        check(f"all_gather_into_tensor into {shape}", [out], [ref.reshape(shape)])
    xs = data((WORLD, 3, 4), 201, torch.float32)
    out = torch.full((3, 4), NAN, device=DEV)
    dist.reduce_scatter_tensor(out, xs.to(DEV))
    want = sum(data((WORLD, 3, 4), 201, torch.float32, rank=r)[RANK] for r in range(WORLD))
    torch.testing.assert_close(out.cpu(), want, rtol=1e-6, atol=1e-6)
    checks += 1
    try:
        dist.all_gather_into_tensor(torch.empty(WORLD * 12 + 1, device=DEV), x.to(DEV))
    except ValueError as e:
        assert str(WORLD * 12) in str(e) and str(WORLD * 12 + 1) in str(e), e
        checks += 1
    else:
        raise AssertionError("a wrong-size all_gather_into_tensor output was not refused")
    # A tensor of another device type (here meta: no bytes to alias) is refused on every rank
    # before any transfer, naming its device, on all_reduce's short path as on the general one.
    for meta in (torch.ones(4, device="meta"), torch.ones(4, 2, device="meta").t()):
        try:
            dist.all_reduce(meta)
        except TypeError as e:
            assert "meta" in str(e) and "neuron (or CPU)" in str(e), e
            checks += 1
        else:
            raise AssertionError(f"all_reduce of a meta tensor {tuple(meta.shape)} was not refused")
    dist.barrier(device_ids=[DEV.index])
    say("CHECKS", checks)
    dist.destroy_process_group()


main()
