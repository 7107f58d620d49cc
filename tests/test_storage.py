"""torch.save / torch.load, safetensors, pinned memory and DataLoader, threaded copies."""
import io
import threading

import torch
from torch.utils.data import DataLoader, TensorDataset


def test_save_load_roundtrip_and_map_location(tmp_path):
    sd = {"w": torch.randn(4, 5, device="neuron"), "b": torch.arange(3, device="neuron:1")}
    path = tmp_path / "ckpt.pt"
    torch.save(sd, path)
    back = torch.load(path, weights_only=True)
    assert back["w"].device == torch.device("neuron:0") and back["b"].device == torch.device("neuron:1")
    assert torch.equal(back["w"].cpu(), sd["w"].cpu())
    cpu = torch.load(path, map_location="cpu", weights_only=True)
    assert cpu["w"].device.type == "cpu" and torch.equal(cpu["w"], sd["w"].cpu())
    moved = torch.load(path, map_location="neuron:2", weights_only=True)
    assert moved["w"].device == torch.device("neuron:2")
    buf = io.BytesIO()
    torch.save({"c": torch.ones(2)}, buf)
    buf.seek(0)
    assert torch.load(buf, map_location="neuron", weights_only=True)["c"].device.type == "neuron"


def test_module_state_dict_roundtrip(tmp_path):
    m = torch.nn.Linear(3, 3).to("neuron")
    torch.save(m.state_dict(), tmp_path / "m.pt")
    m2 = torch.nn.Linear(3, 3).to("neuron")
    m2.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    assert torch.equal(m2.weight.cpu(), m.weight.cpu())


def test_safetensors_roundtrip(tmp_path):
    from safetensors.torch import load_file, save_file

    t = {"a": torch.randn(3, 4, device="neuron").to(torch.bfloat16)}
    save_file({k: v.cpu() for k, v in t.items()}, tmp_path / "x.safetensors")
    # safetensors' reader knows only its own device names: load on CPU, then move (as transformers does).
    back = {k: v.to("neuron") for k, v in load_file(tmp_path / "x.safetensors").items()}
    assert back["a"].device.type == "neuron" and torch.equal(back["a"].cpu(), t["a"].cpu())


def test_pin_memory_and_dataloader():
    c = torch.randn(8)
    p = c.pin_memory()
    assert p.is_pinned() and not c.is_pinned() and torch.equal(p, c)
    assert p.to("neuron", non_blocking=True).cpu().equal(c)
    dl = DataLoader(TensorDataset(torch.randn(16, 3), torch.arange(16)), batch_size=4, pin_memory=True)
    seen = 0
    for x, y in dl:
        assert x.is_pinned() and y.is_pinned()
        seen += int(y.to("neuron").sum().item())
    assert seen == sum(range(16))


def test_memory_inside_a_pinned_block_is_pinned():
    # A storage sliced out of pinned memory starts inside the block, not at its start; CUDA answers
    # is_pinned() for any address inside a pinned allocation, and so must the device's host allocator.
    pinned = torch.arange(10, dtype=torch.float32).pin_memory()
    inner = torch.tensor((), dtype=torch.float32).set_(
        pinned.untyped_storage()[8:], size=(5,), stride=(1,), storage_offset=0)
    assert inner.data_ptr() == pinned.data_ptr() + 8
    assert inner.is_pinned() and pinned[2:].is_pinned() and pinned.untyped_storage()[36:].is_pinned()
    assert torch.equal(inner, torch.arange(2, 7, dtype=torch.float32))
    # The byte just past the block is not pinned memory.
    assert not torch.empty(0).set_(pinned.untyped_storage()[40:]).is_pinned()
    assert not torch.arange(10, dtype=torch.float32).is_pinned()
    storage = torch.randn(4).untyped_storage()
    assert not storage.is_pinned("neuron") and storage.pin_memory("neuron")[4:].is_pinned("neuron")


def test_pinned_host_memory_is_counted_and_empty_host_cache_runs():
    # torch.accelerator.empty_host_cache() reaches the device's registered host allocator (a
    # segmentation fault when a PrivateUse1 device registers none).
    torch.accelerator.empty_host_cache()
    torch.neuron.reset_peak_host_memory_stats()
    before = torch.neuron.host_memory_stats()
    p = torch.randn(1000).pin_memory()  # 4,000 bytes
    during = torch.neuron.host_memory_stats()
    assert during["active_bytes.current"] == before["active_bytes.current"] + 4000
    assert during["active_requests.current"] == before["active_requests.current"] + 1
    assert during["num_host_alloc"] == before["num_host_alloc"] + 1
    assert during["active_bytes.peak"] >= during["active_bytes.current"]
    nested = torch.neuron.host_memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["current"] == during["allocated_bytes.current"]
    del p
    after = torch.neuron.host_memory_stats()
    assert after["active_bytes.current"] == before["active_bytes.current"]
    assert after["active_bytes.freed"] == before["active_bytes.freed"] + 4000
    assert after["num_host_free"] == before["num_host_free"] + 1
    torch.accelerator.empty_host_cache()  # nothing cached: the counts stay
    assert torch.neuron.host_memory_stats()["allocations.current"] == after["allocations.current"]
    torch.neuron.reset_peak_host_memory_stats()
    assert torch.neuron.host_memory_stats()["active_bytes.peak"] == after["active_bytes.current"]
    torch.neuron.reset_accumulated_host_memory_stats()
    reset = torch.neuron.host_memory_stats()
    assert reset["active_bytes.freed"] == reset["num_host_alloc"] == reset["host_alloc_time.count"] == 0


def test_concurrent_host_to_device_copies_from_four_threads():
    src = [torch.randn(257, 129) for _ in range(32)]
    out = [None] * len(src)
    base = torch.neuron.memory_allocated()

    def worker(k):
        for i in range(k, len(src), 4):
            out[i] = src[i].to("neuron", torch.bfloat16).to(torch.float32)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o, s in zip(out, src, strict=True):
        assert o.device.type == "neuron" and torch.equal(o.cpu(), s.to(torch.bfloat16).float())
    assert torch.neuron.memory_allocated() - base == sum(o.numel() * 4 for o in out)


def test_dataloader_workers_return_neuron_tensors():
    ds = TensorDataset(torch.arange(8.0).view(4, 2).to("neuron"))
    batches = list(DataLoader(ds, batch_size=2, num_workers=1, timeout=120))
    assert all(b[0].device == torch.device("neuron:0") for b in batches)
    assert torch.cat([b[0] for b in batches]).cpu().tolist() == torch.arange(8.0).view(4, 2).tolist()


def _load_in_child(py, path, failing: list, working: str, env: dict):
    """Loads the checkpoint at ``path`` in a child process with ``env``: once per map_location in
    ``failing`` (None: none given), printing each RuntimeError as an ``ERROR <type> <message>`` line, then
    with ``working``, printing ``LOADED <device> <values>``. Returns the process and its ERROR lines."""
    tries = "".join(
        f"""
        try:
            torch.load({str(path)!r}, map_location={where!r}, weights_only=True)
        except RuntimeError as e:
            print("ERROR", type(e).__name__, str(e).replace(chr(10), " "))"""
        for where in failing
    )
    code = f"""
        import torch{tries}
        w = torch.load({str(path)!r}, map_location={working!r}, weights_only=True)["w"]
        print("LOADED", w.device, w.tolist())
    """
    proc = py(code, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc, [line for line in proc.stdout.splitlines() if line.startswith("ERROR")]


def test_load_with_the_device_unavailable_names_the_variable(tmp_path, py):
    # A bad environment variable makes the device unavailable: torch.load must say which and how to
    # fix it (PyTorch's own text would blame a "CPU-only machine"); map_location="cpu" still loads.
    path = tmp_path / "ckpt.pt"
    torch.save({"w": torch.arange(3.0, device="neuron")}, path)
    proc, errors = _load_in_child(py, path, [None, "neuron"], "cpu", {"TORCH_NEURONX_PLATFORM": "trn9"})
    assert len(errors) == 2, proc.stdout
    for line in errors:
        assert line.startswith("ERROR TopologyError neuron device unavailable: TORCH_NEURONX_PLATFORM='trn9'")
        assert "trn1, trn2, trn3" in line and "map_location='cpu'" in line
        assert "CPU-only machine" not in line
    assert "LOADED cpu [0.0, 1.0, 2.0]" in proc.stdout


def test_load_of_a_core_not_visible_names_map_location(tmp_path, py):
    # Saved on neuron:3, loaded by a process that sees two cores: the error names the visible cores
    # and map_location (as PyTorch's own check does for CUDA), and map_location loads the values.
    path = tmp_path / "ckpt.pt"
    torch.save({"w": torch.arange(3.0, device="neuron:3")}, path)
    proc, errors = _load_in_child(py, path, [None], "neuron:1", {"NEURON_RT_VISIBLE_CORES": "0-1"})
    assert len(errors) == 1, proc.stdout
    assert "neuron:3" in errors[0] and "map_location" in errors[0], errors[0]
    assert "LOADED neuron:1 [0.0, 1.0, 2.0]" in proc.stdout
