"""Adaptive eager execution: merged kernels give the op-by-op values, cuts flush, counters count.

Each test turns it on for itself (the ``on`` fixture of ``conftest.py``: an empty trace cache, the
previous state restored afterwards), so the file runs the same with or without
``TORCH_NEURONX_ADAPTIVE_EAGER=1``.
"""
from __future__ import annotations

import pytest
import torch

import torch_neuronx
from torch_neuronx import _C, adaptive

TOL = 1e-6


def chain(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ w
    y = y * 2 + 1
    y = torch.nn.functional.silu(y)
    return (y / y.sum(-1, keepdim=True)).exp()


def metrics() -> dict:
    return dict(torch_neuronx.get_adaptive_eager_metrics())


def test_merged_kernel_equals_op_by_op_and_counts_a_hit(on):
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    expected = chain(x, w)
    dx, dw = x.to("neuron"), w.to("neuron")
    results = [chain(dx, dw).cpu() for _ in range(3)]  # record, compile on the 2nd end, hit
    m = metrics()
    assert m["recorded_ops"] == 7 and m["compiles"] == 1 and m["kernel_hits"] == 2
    assert m["merged_ops"] == 14 and m["compile_time_s"] > 0
    for r in results:
        torch.testing.assert_close(r, expected, atol=TOL, rtol=0)


def test_a_trace_is_compiled_only_once_it_has_ended_compile_after_times(on):
    adaptive.set_compile_after(4)
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    expected = chain(x, w)
    dx, dw = x.to("neuron"), w.to("neuron")
    # end 1 records, ends 2 and 3 run the queued ops op by op (waiting), end 4 compiles, 4-6 hit
    results = [chain(dx, dw).cpu() for _ in range(6)]
    m = metrics()
    assert m["recorded_ops"] == 7 and m["waiting_flushes"] == 2 and m["replayed_ops"] == 14
    assert m["compiles"] == 1 and m["kernel_hits"] == 3 and m["kernel_misses"] == 2
    for r in results:
        torch.testing.assert_close(r, expected, atol=TOL, rtol=0)


def test_compile_after_rejects_a_count_below_one_and_reads_its_variable():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="integer >= 1"):
            adaptive.set_compile_after(bad)
    import subprocess
    import sys

    from tests.processes import job_env

    def child(value: str | None) -> subprocess.CompletedProcess:
        env = job_env()
        env.pop("TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER", None)
        if value is not None:
            env["TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER"] = value
        code = "import torch, torch_neuronx.adaptive as a; print(a.compile_after())"
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=300, check=True)

    assert child("3").stdout.split()[-1] == "3"
    bad = child("many")
    assert bad.stdout.split()[-1] == "8" and "is not an integer >= 1" in bad.stderr
    assert child(None).stdout.split()[-1] == "8"


def test_a_storage_resize_runs_the_queued_ops_that_read_the_storage_first(on):
    # FSDP2 frees a parameter's unsharded memory (UntypedStorage.resize_(0)) once the forward has
    # used it, while the ops that read it may still be queued: they must run before the memory goes.
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    expected = chain(x, w)
    dx = x.to("neuron")
    for _ in range(4):  # recorded, then queued (op by op, then the kernel)
        dw = w.to("neuron")
        y = chain(dx, dw)
        dw.untyped_storage().resize_(0)
        torch.testing.assert_close(y.cpu(), expected, atol=TOL, rtol=0)
    m = metrics()
    assert m["queued_ops"] >= 14 and m["kernel_hits"] >= 1 and m["kernel_failures"] == 0


def test_dead_intermediates_are_not_materialized_but_live_ones_are(on):
    torch.manual_seed(0)
    x, w = torch.randn(3, 8, device="neuron"), torch.randn(8, 8, device="neuron")
    for _ in range(3):
        y = x @ w
        z = (y * 3).relu()  # y stays alive, the product does not
        torch.neuron.synchronize()
    torch.testing.assert_close(y.cpu(), x.cpu() @ w.cpu(), atol=TOL, rtol=0)
    torch.testing.assert_close(z.cpu(), (x.cpu() @ w.cpu() * 3).relu(), atol=TOL, rtol=0)


@pytest.mark.parametrize("read", ["item", "cpu", "tolist", "print", "synchronize"])
def test_a_host_read_flushes_the_queued_ops(on, read, capsys):
    x = torch.arange(6, dtype=torch.float32, device="neuron").reshape(2, 3)
    for _ in range(2):  # the second pass queues what the first recorded
        y = ((x + 1) * 2).sum()
        before = metrics()
        value = {"item": lambda t: t.item(), "cpu": lambda t: t.cpu().item(), "tolist": lambda t: t.tolist(),
                 "print": print, "synchronize": lambda t: torch.neuron.synchronize()}[read](y)
        if read not in ("print", "synchronize"):
            assert value == 42.0
        assert metrics()["flushes"] >= before["flushes"] + 1  # printing runs more ops, and cuts more
        assert y.storage().data_ptr() != 0  # the queued result exists now
    assert metrics()["queued_ops"] >= 3
    assert y.item() == 42.0


def test_deterministic_mode_turns_queuing_off(on):
    x = torch.randn(4, 4, device="neuron")
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        for _ in range(3):
            y = (x * 2 + 1).exp()
        assert metrics()["queued_ops"] == 0 and metrics()["recorded_ops"] == 0
        torch.testing.assert_close(y.cpu(), (x.cpu() * 2 + 1).exp(), atol=TOL, rtol=0)
    finally:
        torch.use_deterministic_algorithms(previous)


def test_in_place_op_on_an_input_cuts_before_it(on):
    x = torch.ones(5, device="neuron")
    for _ in range(3):
        x.fill_(1.0)
        y = (x * 2) + 3  # queued: reads x
        x.add_(10)  # in place on the queued op's input: must cut first
        assert y.cpu().tolist() == [5.0] * 5
        assert x.cpu().tolist() == [11.0] * 5


def test_ops_on_unrelated_tensors_run_without_cutting_the_merge(on):
    x = torch.arange(6, dtype=torch.float32, device="neuron")
    other = torch.ones(4, device="neuron")
    for _ in range(3):
        y = (x * 2 + 1).exp()
        before = metrics()
        r = torch.arange(5, device="neuron")  # a factory: touches nothing queued
        other.mul_(2)  # in place, but on a tensor no queued op reads
        assert metrics()["flushes"] == before["flushes"]
        y = (y * 3).log()
        torch.testing.assert_close(y.cpu(), torch.log((torch.arange(6.0) * 2 + 1).exp() * 3), atol=TOL, rtol=0)
        assert r.cpu().tolist() == [0, 1, 2, 3, 4]
    assert other.cpu().tolist() == [8.0] * 4
    assert metrics()["kernel_hits"] >= 1


def test_a_failing_compile_runs_op_by_op_with_the_right_values(on):
    def refuse(description):
        raise RuntimeError("refused on purpose")

    _C._adaptive_set_compiler(refuse)
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    results = [chain(x.to("neuron"), w.to("neuron")).cpu() for _ in range(4)]
    m = metrics()
    assert m["compile_failures"] == 1 and m["kernel_hits"] == 0 and m["kernel_misses"] == 3
    assert "refused on purpose" in adaptive.last_compile_error()
    for r in results:
        torch.testing.assert_close(r, chain(x, w), atol=TOL, rtol=0)


def test_warnings_of_a_compile_do_not_reach_the_op_that_cut_the_merge(on, monkeypatch):
    import warnings

    from torch_neuronx.adaptive import compiler

    real = compiler.compile_trace

    def warning_compile(description):
        warnings.warn("an import inside Inductor is deprecated", DeprecationWarning, stacklevel=1)
        return real(description)

    monkeypatch.setattr(compiler, "compile_trace", warning_compile)
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        results = [chain(x.to("neuron"), w.to("neuron")).cpu() for _ in range(3)]
    assert metrics()["compiles"] == 1 and metrics()["kernel_hits"] == 2
    assert [str(w.message) for w in seen] == []
    for r in results:
        torch.testing.assert_close(r, chain(x, w), atol=TOL, rtol=0)


def test_flag_off_queues_nothing():
    previous = adaptive.enabled()
    adaptive.set_enabled(False)
    try:
        adaptive.reset_adaptive_eager_metrics()
        x = torch.randn(4, 4, device="neuron")
        for _ in range(3):
            (x * 2 + 1).exp()
        assert metrics()["queued_ops"] == 0 and metrics()["recorded_ops"] == 0
    finally:
        adaptive.set_enabled(previous)


def test_device_change_cuts(on):
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two visible NeuronCores")
    a = torch.ones(3, device="neuron:0")
    b = torch.ones(3, device="neuron:1")
    for _ in range(3):
        ya = a * 2 + 1
        yb = b * 3 + 1
        assert ya.device.index == 0 and yb.device.index == 1
        assert ya.cpu().tolist() == [3.0] * 3 and yb.cpu().tolist() == [4.0] * 3


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding: ``neg``, ``cat``, ``mul``, ``add`` on two slices of ``x``."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def test_a_merge_cut_inside_torch_tensor_compiles_a_kernel_of_its_inputs(on):
    # torch.tensor() excludes the Python dispatch key while it copies to the device, and that copy
    # cuts the merge: the kernel compiled there once traced no op and returned the compile-time
    # example values (zeros) whatever its inputs (off by 0.34 in a Llama). Inputs change every pass.
    gen = torch.Generator().manual_seed(0)
    cos, sin = torch.randn(1, 1, 12, 8, generator=gen), torch.randn(1, 1, 12, 8, generator=gen)
    dcos, dsin = cos.to("neuron"), sin.to("neuron")
    for _ in range(4):  # record, compile at the second end, then hits
        x = torch.randn(2, 12, 2, 8, generator=gen).transpose(1, 2)  # strides (192, 8, 16, 1)
        y = rotate(x.to("neuron"), dcos, dsin)
        torch.tensor([], device="neuron")  # the cut
        torch.testing.assert_close(y.cpu(), rotate(x, cos, sin), atol=TOL, rtol=0)
    m = metrics()
    assert m["compiles"] >= 1 and m["kernel_hits"] >= 2 and m["kernel_failures"] == 0


def test_a_trace_whose_ops_escape_the_tracer_is_refused_not_compiled_to_constants():
    from torch_neuronx.adaptive import compiler

    f32 = torch.float32
    description = ([("aten::neg", "", [(1, 0)], 1), ("aten::mul", "Tensor", [(1, 1), (1, 2)], 1)],
                   [("ext", 0), ("out", 0, 0, False, [], [], 0), ("ext", 0)], [([4], [1], f32, 0)], [(1, 0)])
    with torch._C._DisableTorchDispatch():  # what torch.tensor() does around its copy
        with pytest.raises(compiler.TraceCompileError, match="constant tensor"):
            compiler.compile_trace(description)
    x = torch.arange(4.0)
    torch.testing.assert_close(compiler.compile_trace(description)([x])[0], -x * x, atol=TOL, rtol=0)


def test_inputs_at_other_storage_offsets_and_alignments_give_their_values(on):
    # The same ops on slices of one buffer at offsets 4 (16-byte aligned) and 1 (misaligned) and on
    # a tensor read twice as two operands: each is keyed apart where the kernel's meaning differs.
    gen = torch.Generator().manual_seed(0)
    for step in range(8):
        offset = (4, 1)[step % 2]
        base = torch.randn(64 + offset, generator=gen)
        x = base[offset:].view(8, 8)
        dx = base.to("neuron")[offset:].view(8, 8)
        y = ((-dx).exp() * dx + dx.t()).amax(0)
        torch.neuron.synchronize()
        torch.testing.assert_close(y.cpu(), ((-x).exp() * x + x.t()).amax(0), atol=TOL, rtol=0)
    m = metrics()
    assert m["kernel_hits"] >= 2 and m["kernel_failures"] == 0


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def test_llama_logits_generate_and_training_equal_op_by_op(on):
    model = _tiny_llama().to("neuron")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    ids = torch.randint(3, 64, (2, 12), generator=torch.Generator().manual_seed(1)).to("neuron")

    def run_all():
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            logits = model(input_ids=ids).logits.cpu()
            tokens = model.generate(input_ids=ids[:1], attention_mask=torch.ones_like(ids[:1]),
                                    max_new_tokens=6, do_sample=False, pad_token_id=0).cpu()
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(3):
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
        return logits, tokens, losses

    adaptive.set_enabled(False)
    ref_logits, ref_tokens, ref_losses = run_all()
    adaptive.set_enabled(True)
    for _ in range(3):  # record, compile, hit
        logits, tokens, losses = run_all()
        torch.testing.assert_close(logits, ref_logits, atol=TOL, rtol=0)
        assert torch.equal(tokens, ref_tokens)
        assert losses == pytest.approx(ref_losses, abs=TOL, rel=0)
    m = metrics()
    assert m["kernel_hits"] > 0 and m["merged_ops"] > 0 and m["kernel_failures"] == 0


def test_plain_inductor_graph_reads_queued_results_and_queues_nothing_inside(on, tmp_path, monkeypatch):
    # A graph compiled by plain Inductor reads its inputs through raw pointers in C++ kernels: the
    # queued eager ops that produce them must run first, and the ATen ops its wrapper dispatches
    # (Inductor's fallbacks: topk here) must run at once, not be queued behind the next kernel.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    x, w = torch.randn(4, 16), torch.randn(16, 16)

    def graph(y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        top = torch.topk(y @ w, 3, dim=-1).values
        return top * 2 + y[:, :3]

    compiled = torch.compile(graph, backend="inductor", fullgraph=True)
    expected = graph(chain(x, w), w)
    dx, dw = x.to("neuron"), w.to("neuron")
    for _ in range(3):  # the chain is recorded, then queued on the next passes
        result = compiled(chain(dx, dw), dw).cpu()
        torch.testing.assert_close(result, expected, atol=1e-5, rtol=1e-5)
    assert metrics()["queued_ops"] > 0
    torch._dynamo.reset()


@pytest.mark.parametrize("replace", ["zeros_like", "zeros", "parameter", "set_"])
def test_replacing_an_inputs_storage_after_queuing_keeps_the_value_it_had(on, replace):
    # The first pass records (runs at once); later passes queue (op by op, then the kernel): the queued
    # op must read the storage the input had when the op was issued, as with the flag off.
    for _ in range(4):
        y = torch.arange(1.0, 5.0, device="neuron")
        if replace == "parameter":
            y = torch.nn.Parameter(y, requires_grad=False)
        u = y * 2
        if replace == "zeros_like":
            y.data = torch.zeros_like(y)
        elif replace == "set_":
            y.set_(torch.zeros(4, device="neuron"))
        else:
            y.data = torch.zeros(4, device="neuron")
        assert u.cpu().tolist() == [2.0, 4.0, 6.0, 8.0]
        assert y.cpu().tolist() == [0.0, 0.0, 0.0, 0.0]


def test_swap_tensors_of_a_queued_input_swaps_as_with_the_flag_off(on):
    for _ in range(4):
        a, b = torch.ones(4, device="neuron"), torch.zeros(4, device="neuron")
        t = a * 3
        torch.utils.swap_tensors(a, b)
        assert t.cpu().tolist() == [3.0] * 4
        assert a.cpu().tolist() == [0.0] * 4 and b.cpu().tolist() == [1.0] * 4


@pytest.mark.parametrize("pointer", ["tensor", "storage"])
def test_the_data_pointer_of_a_queued_result_runs_the_queue_and_is_real(on, pointer):
    import ctypes

    base = torch.arange(1.0, 5.0).to("neuron")
    for step in range(4):  # record, then queued (op by op, then the kernel)
        before = metrics()["queued_ops"]
        y = (base * 2 + 1) * 3
        assert metrics()["queued_ops"] == before + (3 if step else 0)  # still queued here
        ptr = y.data_ptr() if pointer == "tensor" else y.untyped_storage().data_ptr()
        assert ptr != 0
        assert list((ctypes.c_float * 4).from_address(ptr)) == [9.0, 15.0, 21.0, 27.0]
        torch.neuron.synchronize()  # the trace ends here, so the next pass repeats it
    assert metrics()["kernel_hits"] >= 1
