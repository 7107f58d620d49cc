"""Per-core HBM accounting, out-of-memory, storage resize."""
import torch


def test_results_are_counted_and_freed():
    x = torch.randn(256, 256, device="neuron")
    before = torch.neuron.memory_allocated()
    y = x @ x
    assert torch.neuron.memory_allocated() - before == y.numel() * y.element_size()
    z = torch.relu(y) + 1  # fallback results too
    assert torch.neuron.memory_allocated() - before == 2 * y.numel() * 4
    del y, z
    assert torch.neuron.memory_allocated() == before


def test_accounting_is_per_core():
    before0 = torch.neuron.memory_allocated(0)
    before1 = torch.neuron.memory_allocated(1)
    t = torch.empty(1 << 20, dtype=torch.uint8, device="neuron:1")
    assert torch.neuron.memory_allocated(1) - before1 == 1 << 20
    assert torch.neuron.memory_allocated(0) == before0
    del t
    assert torch.neuron.memory_allocated(1) == before1


def test_peak_and_reset():
    torch.neuron.reset_peak_memory_stats()
    base = torch.neuron.memory_allocated()
    t = torch.empty(4 << 20, dtype=torch.uint8, device="neuron")
    del t
    assert torch.neuron.max_memory_allocated() - base >= 4 << 20
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == torch.neuron.memory_allocated()


def test_reserved_mem_get_info_stats_summary():
    t = torch.empty(1000, dtype=torch.uint8, device="neuron")
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()
    free, total = torch.neuron.mem_get_info()
    assert total == 24 << 30 and free == total - torch.neuron.memory_reserved()
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    assert stats["hbm_capacity_bytes"] == 24 << 30
    assert stats["max_split_size"] == -1  # no split limit, as CUDA reports when none is configured
    assert torch.accelerator.memory_allocated(0) == torch.neuron.memory_allocated(0)
    summary = torch.neuron.memory_summary()
    assert "neuron:0" in summary and "Allocated memory" in summary
    torch.neuron.empty_cache()
    del t


def test_out_of_memory_names_the_core(py):
    r = py("""
        import torch
        base = torch.neuron.memory_allocated()
        keep = torch.empty(8 << 20, dtype=torch.uint8, device='neuron')
        try:
            torch.empty(100 << 20, dtype=torch.uint8, device='neuron')
        except torch.OutOfMemoryError as e:
            print('OOM', e)
        print(torch.neuron.memory_allocated() - base)
        del keep
        print(torch.neuron.memory_allocated() - base)
        x = torch.ones(3 << 20, device='neuron')   # 12 MiB
        try:
            y = torch.cat([x] * 6)                   # 72 MiB result inside the fallback
        except torch.OutOfMemoryError as e:
            print('OOM2', 'neuron:0' in str(e))
        print(torch.neuron.memory_stats()['num_ooms'])
    """, env={"TORCH_NEURONX_HBM_PER_CORE": "64MiB"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().split("\n")
    assert lines[0].startswith("OOM neuron:0 out of memory")
    assert "100.00 MiB" in lines[0] and "64.00 MiB" in lines[0] and "TORCH_NEURONX_HBM_PER_CORE" in lines[0]
    assert lines[1] == str(8 << 20)
    assert lines[2] == "0"
    assert lines[3] == "OOM2 True"
    assert lines[4] == "2"


def test_storage_resize_frees_and_restores_bytes():
    base = torch.neuron.memory_allocated()
    p = torch.randn(1024, device="neuron")
    storage = p.untyped_storage()
    storage.resize_(0)
    assert torch.neuron.memory_allocated() == base
    storage.resize_(4096)
    assert torch.neuron.memory_allocated() - base == 4096
    p.copy_(torch.arange(1024.0))
    assert torch.equal(p.cpu(), torch.arange(1024.0))


def test_resize_and_out_variants_reallocate_on_device():
    out = torch.empty(0, device="neuron")
    a = torch.randn(10, 10, device="neuron")
    torch.mm(a, a, out=out)
    assert out.shape == (10, 10) and out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), a.cpu() @ a.cpu())
    out.resize_(3, 4)
    assert out.shape == (3, 4)


def test_per_process_memory_fraction(py):
    r = py("""
        import torch
        assert torch.neuron.get_per_process_memory_fraction() == 1.0
        torch.neuron.set_per_process_memory_fraction(0.5)
        assert torch.neuron.get_per_process_memory_fraction(0) == 0.5
        assert torch.neuron.get_per_process_memory_fraction("neuron:1") == 1.0
        print(torch.neuron.mem_get_info()[1])
        try:
            torch.empty(40 << 20, dtype=torch.uint8, device='neuron')
        except torch.neuron.OutOfMemoryError as e:
            print('OOM')
            print(str(e).splitlines()[0], file=__import__('sys').stderr)
        t = torch.empty(40 << 20, dtype=torch.uint8, device='neuron:1')
        print('ok')
    """, env={"TORCH_NEURONX_HBM_PER_CORE": "64MiB"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(32 << 20), "OOM", "ok"]
    # The error gives the core's full HBM and the share this process may use, and names the fraction as a fix.
    assert "total capacity of 64.00 MiB of HBM" in r.stderr, r.stderr
    assert "this process may use 32.00 MiB (torch.neuron.set_per_process_memory_fraction(0.5))" in r.stderr
    assert "raise the fraction given to torch.neuron.set_per_process_memory_fraction" in r.stderr


def test_freed_memory_goes_back_to_the_host_before_the_process_grows(py):
    # Freed device memory stays resident for reuse, but when an allocation would raise the
    # process's host footprint past its peak, the free pages are given back first: peak RSS
    # follows the peak of live device memory (as glibc returns large CPU blocks).
    r = py("""
        import torch
        def shmem_mib():  # shared memory resident in this process (device memory is shared memory)
            for line in open('/proc/self/status'):
                if line.startswith('RssShmem:'):
                    return int(line.split()[1]) / 1024
        a = torch.full((6 << 20,), 1.0, device='neuron')   # 24 MiB in a segment
        b = torch.full((2 << 20,), 2.0, device='neuron')   # 8 MiB after it
        del a                                               # 24 MiB free, still resident
        before = shmem_mib()
        c = torch.full((10 << 20,), 3.0, device='neuron')  # 40 MiB, a fresh mapping
        print(round(shmem_mib() - before))
        d = torch.full((6 << 20,), 4.0, device='neuron')   # reuses the released range
        print(b.sum().item() == 2.0 * (2 << 20), c.sum().item() == 3.0 * (10 << 20), d.sum().item() == 4.0 * (6 << 20))
        print(torch.neuron.memory_allocated() == (18 << 20) * 4)
    """)
    assert r.returncode == 0, r.stderr
    grew, values, accounted = r.stdout.strip().split("\n")
    assert int(grew) <= 40 - 24 + 2  # not 40: the freed 24 MiB went back first
    assert values == "True True True"
    assert accounted == "True"


def test_a_freed_small_block_is_reused_and_accounted_exactly():
    # A freed small block is kept for the next allocation of its size; while kept it is free
    # memory for the accounting (allocated and reserved drop at once), and reused it is
    # accounted again and holds the new values.
    base = torch.neuron.memory_allocated()
    base_reserved = torch.neuron.memory_reserved()
    frees = torch.neuron.memory_stats()["num_device_free"]
    x = torch.full((250,), 1.0, device="neuron")  # 1000 bytes, 1024 reserved
    ptr = x.data_ptr()
    assert torch.neuron.memory_allocated() - base == 1000
    assert torch.neuron.memory_reserved() - base_reserved == 1024
    del x
    assert torch.neuron.memory_allocated() == base
    assert torch.neuron.memory_reserved() == base_reserved
    assert torch.neuron.memory_stats()["num_device_free"] == frees + 1
    y = torch.full((256,), 2.0, device="neuron")  # 1024 bytes: the same reserved size
    assert y.data_ptr() == ptr
    assert torch.neuron.memory_allocated() - base == 1024
    assert torch.equal(y.cpu(), torch.full((256,), 2.0))
    del y
    torch.neuron.empty_cache()  # the kept blocks go back to the arena
    assert torch.neuron.memory_allocated() == base


def test_kept_blocks_do_not_move_the_out_of_memory_limit(py):
    # Kept blocks are not reserved memory: a core that is full raises at its capacity, and a
    # freed block (kept for reuse) makes room for exactly its size again.
    r = py("""
        import torch
        kib = 64 << 10
        live = [torch.empty(kib, dtype=torch.uint8, device='neuron') for _ in range(16)]
        print(torch.neuron.memory_reserved() == 1 << 20)
        try:
            torch.empty(64, dtype=torch.uint8, device='neuron')
        except torch.neuron.OutOfMemoryError:
            print('OOM')
        del live[0]
        live.append(torch.empty(kib, dtype=torch.uint8, device='neuron'))
        print(torch.neuron.memory_allocated() == 1 << 20)
        try:
            torch.empty(64, dtype=torch.uint8, device='neuron')
        except torch.neuron.OutOfMemoryError:
            print('OOM')
        del live[:4]
        more = [torch.empty(kib // 2, dtype=torch.uint8, device='neuron') for _ in range(8)]
        print(torch.neuron.memory_allocated() == 1 << 20, torch.neuron.memory_stats()['num_ooms'])
    """, env={"TORCH_NEURONX_HBM_PER_CORE": "1MiB"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "OOM", "True", "OOM", "True", "2"]


def test_profiler_memory_view_sees_device_allocations():
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(256, 256, device="neuron")
    nbytes = x.numel() * x.element_size()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        y = x * 2
        z = y + 1
        del y
    usage = {e.name: e.device_memory_usage for e in prof.events() if e.name in ("aten::mul", "aten::add")}
    assert usage == {"aten::mul": nbytes, "aten::add": nbytes}
    # the free of y is reported as a negative allocation on the device
    frees = [e for e in prof.events() if e.name == "[memory]" and e.device_memory_usage == -nbytes]
    assert len(frees) == 1
    del z


def test_accelerate_batch_size_finder_recognises_the_out_of_memory_error(py):
    # accelerate's find_executable_batch_size (Trainer's auto_find_batch_size) halves the batch only for
    # errors whose text it knows (" out of memory." in a one-argument RuntimeError): the neuron OOM must be one.
    r = py("""
        import torch
        from accelerate.utils import find_executable_batch_size
        from accelerate.utils.memory import should_reduce_batch_size
        tried = []
        @find_executable_batch_size(starting_batch_size=64)
        def step(batch_size):
            tried.append(batch_size)
            x = torch.ones(batch_size * (10 << 20), dtype=torch.uint8, device='neuron')  # 10 MiB per sample
            return x.numel() // (10 << 20)
        print(step(), tried)
        x = torch.ones(3 << 20, device='neuron')
        try:
            torch.cat([x] * 6)   # the result is allocated inside an op
        except torch.OutOfMemoryError as e:
            print(should_reduce_batch_size(e))
    """, env={"TORCH_NEURONX_HBM_PER_CORE": "64MiB"})
    assert r.returncode == 0, r.stderr
    found, tried = r.stdout.split("\n")[0].split(" ", 1)
    sizes = [int(b) for b in tried.strip("[]").split(", ")]
    # 64 MiB of HBM, 10 MiB per sample: every batch the finder tried above 6 failed, 6 (60 MiB) ran, as on a
    # CUDA device with 64 MiB free (the reduction schedule is accelerate's).
    assert int(found) == sizes[-1] == 6 and all(b * 10 > 64 for b in sizes[:-1]) and len(sizes) > 1
    assert r.stdout.split("\n")[1] == "True"


def test_memory_stats_as_nested_dict_nests_the_flat_stats():
    keep = torch.ones(1000, device="neuron")
    flat = torch.neuron.memory_stats()
    nested = torch.neuron.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"] >= 4000
    assert nested["num_ooms"] == flat["num_ooms"]
    leaves = []

    def walk(prefix, node):
        for key, value in node.items():
            if isinstance(value, dict):
                walk(f"{prefix}{key}.", value)
            else:
                leaves.append(f"{prefix}{key}")

    walk("", nested)
    assert sorted(leaves) == sorted(flat)
    del keep
