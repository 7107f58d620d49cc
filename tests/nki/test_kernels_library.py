"""torch_neuronx.kernels: each NKI kernel op against the PyTorch op it replaces, forward and backward,
on neuron tensors (rows not a multiple of 128 where the kernel masks; bf16 where it matters)."""
import pytest
import torch
import torch.nn.functional as F

from torch_neuronx import kernels as K

G = torch.Generator().manual_seed(0)


def _randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=G) * scale


def _run(fn, ref, cpu_inputs, dtype=torch.float32):
    """Forward and backward of ``fn`` on neuron vs ``ref`` on CPU (fp32 math on the same values)."""
    dev = [t.to(dtype).to("neuron").requires_grad_() for t in cpu_inputs]
    ref_in = [t.to(dtype).float().requires_grad_() for t in cpu_inputs]
    out = fn(*dev)
    expected = ref(*ref_in)
    dy = _randn(*expected.shape)
    out.backward(dy.to(dtype).to("neuron"))
    expected.backward(dy.to(dtype).float())
    assert out.device.type == "neuron" and out.dtype == dtype
    return out.detach().cpu().float(), expected.detach(), [d.grad.cpu().float() for d in dev], \
        [r.grad for r in ref_in]


def _llama_rmsnorm(x, w, eps=1e-6):
    h = x.float()
    return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def test_rms_norm_fp32_forward_and_nki_backward():
    out, exp, grads, ref_grads = _run(lambda x, w: K.rms_norm(x, w, 1e-6), _llama_rmsnorm,
                                      [_randn(2, 150, 256), _randn(256)])
    torch.testing.assert_close(out, exp, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)


def test_rms_norm_bf16_input_fp32_weight_promotes_like_llama():
    x = _randn(130, 128).to(torch.bfloat16)
    w = torch.rand(128, generator=G) + 0.5
    out = K.rms_norm(x.to("neuron"), w.to("neuron"), 1e-6)
    assert out.dtype == torch.float32                    # weight (fp32) * hidden.to(bf16)
    torch.testing.assert_close(out.cpu(), _llama_rmsnorm(x, w), rtol=1e-5, atol=1e-5)


def test_rms_norm_passes_torch_library_opcheck():
    x = _randn(40, 64).to("neuron").requires_grad_()
    w = _randn(64).to("neuron").requires_grad_()
    torch.library.opcheck(torch.ops.neuron_kernels.rms_norm.default, (x, w, 1e-6),
                          test_utils=("test_schema", "test_faketensor"))  # autograd: NYI in torch off CPU/CUDA/XPU


def test_layer_norm_bn_stats_matches_torch():
    out, exp, grads, ref_grads = _run(lambda x, w, b: K.layer_norm(x, w, b, 1e-5),
                                      lambda x, w, b: F.layer_norm(x, (768,), w, b, 1e-5),
                                      [_randn(3, 70, 768, scale=2) + 1, _randn(768), _randn(768)])
    torch.testing.assert_close(out, exp, rtol=1e-4, atol=1e-4)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_softmax_matches_torch(dtype, tol):
    out, exp, grads, ref_grads = _run(K.softmax, lambda x: torch.softmax(x, -1),
                                      [_randn(2, 100, 1000, scale=3)], dtype)
    torch.testing.assert_close(out, exp, rtol=tol, atol=tol)
    torch.testing.assert_close(grads[0], ref_grads[0], rtol=tol, atol=tol)


def test_swiglu_mlp_matches_unfused_torch():
    out, exp, grads, ref_grads = _run(K.swiglu_mlp, lambda x, g, u, d: (F.silu(x @ g) * (x @ u)) @ d,
                                      [_randn(2, 100, 256), _randn(256, 384, scale=0.06),
                                       _randn(256, 384, scale=0.06), _randn(384, 256, scale=0.05)])
    torch.testing.assert_close(out, exp, rtol=1e-4, atol=1e-4)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)


def test_swiglu_mlp_bf16_close_to_fp32_math():
    x, g, u, d = _randn(128, 128), _randn(128, 256, scale=0.09), _randn(128, 256, scale=0.09), \
        _randn(256, 128, scale=0.06)
    xb, gb, ub, db = (t.to(torch.bfloat16) for t in (x, g, u, d))
    out = K.swiglu_mlp(*(t.to("neuron") for t in (xb, gb, ub, db)))
    exp = (F.silu(xb.float() @ gb.float()) * (xb.float() @ ub.float())) @ db.float()
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu().float(), exp, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 1e-2)])
def test_attention_matches_sdpa(dtype, tol):
    out, exp, grads, ref_grads = _run(K.attention, F.scaled_dot_product_attention,
                                      [_randn(2, 2, 256, 64) for _ in range(3)], dtype)
    torch.testing.assert_close(out, exp, rtol=tol, atol=tol)
    for g, r in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=tol, atol=tol)


def test_attention_rejects_unaligned_sequence():
    q = torch.randn(1, 1, 100, 64, device="neuron")
    with pytest.raises(ValueError, match="multiple of 128"):
        K.attention(q, q, q)


@pytest.mark.parametrize("k_shape,v_shape", [
    ((1, 2, 256, 64), (1, 2, 256, 64)),      # more keys than queries (cross-attention lengths)
    ((1, 1, 128, 64), (1, 1, 128, 64)),      # grouped-query: fewer key/value heads
    ((1, 2, 128, 64), (1, 2, 128, 32)),      # value head size other than d
    ((2, 2, 128, 64), (2, 2, 128, 64)),      # another batch size
])
def test_attention_refuses_key_value_shapes_it_would_misread(k_shape, v_shape):
    # The kernel reads k and v with q's [BH, S, d]; before the check these ran and returned a wrong
    # output (0.76 from SDPA for 256 keys), through the public function and the op alike.
    q = torch.randn(1, 2, 128, 64, device="neuron")
    k, v = torch.randn(*k_shape, device="neuron"), torch.randn(*v_shape, device="neuron")
    with pytest.raises(ValueError, match="same shape"):
        K.attention(q, k, v)
    with pytest.raises(ValueError, match="repeat_interleave"):
        torch.ops.neuron_kernels.attention(q, k, v, 0.125)


def test_attention_op_called_directly_names_the_sequence_rule():
    q = torch.randn(1, 1, 100, 64, device="neuron")
    with pytest.raises(ValueError, match="multiple of 128"):
        torch.ops.neuron_kernels.attention(q, q, q, 0.125)


def test_attention_refuses_mixed_dtypes():
    q = torch.randn(1, 1, 128, 64, device="neuron")
    with pytest.raises(ValueError, match="dtype"):
        K.attention(q, q.to(torch.bfloat16), q)


@pytest.mark.parametrize("shapes", [
    ((3, 128), (256, 256), (256, 256), (256, 128)),      # w_gate has more rows than x's H
    ((3, 128), (128, 256), (128, 256), (256, 256)),      # w_down wider than H
    ((3, 128), (128, 256), (128, 128), (256, 128)),      # w_up narrower than w_gate
])
def test_swiglu_mlp_refuses_weights_of_other_shapes(shapes):
    # Before the check the first two ran: the kernel read w_gate's first H rows / w_down's first H
    # columns and returned a value where the PyTorch reference raises a shape error.
    x, g, u, d = (torch.randn(*s, device="neuron") for s in shapes)
    with pytest.raises(ValueError, match=r"w_gate \[H, I\]"):
        K.swiglu_mlp(x, g, u, d)


def test_swiglu_mlp_names_the_tile_rule_and_the_dtype_rule():
    x = torch.randn(3, 128, device="neuron")
    with pytest.raises(ValueError, match="multiple of 128"):
        K.swiglu_mlp(x, torch.randn(128, 192, device="neuron"), torch.randn(128, 192, device="neuron"),
                     torch.randn(192, 128, device="neuron"))
    w = torch.randn(128, 128, device="neuron")
    with pytest.raises(ValueError, match="one dtype"):
        K.swiglu_mlp(x.to(torch.bfloat16), w, w, w)


def test_kernels_take_empty_inputs_as_pytorch_does():
    # No rows (an empty batch): PyTorch's ops return empty results and zero weight gradients; the
    # kernels raised err_tensor_output_not_written_to (nothing for the tile loop to write).
    def empty(*s):
        return torch.randn(*s, device="neuron").requires_grad_()
    x, w, b = empty(0, 64), empty(64), empty(64)
    cases = [
        (K.rms_norm(x, w), _llama_rmsnorm(x.detach().cpu(), w.detach().cpu())),
        (K.layer_norm(x, w, b), F.layer_norm(x.detach().cpu(), (64,))),
        (K.softmax(x), x.detach().cpu()),
        (K.softmax(empty(4, 0)), torch.empty(4, 0)),
        (K.swiglu_mlp(empty(0, 128), empty(128, 256), empty(128, 256), empty(256, 128)), torch.empty(0, 128)),
        (K.attention(empty(0, 2, 128, 64), empty(0, 2, 128, 64), empty(0, 2, 128, 64)),
         torch.empty(0, 2, 128, 64)),
    ]
    for out, exp in cases:
        assert out.device.type == "neuron" and out.shape == exp.shape and out.dtype == exp.dtype
    K.rms_norm(x, w).sum().backward()
    K.layer_norm(x, w, b).sum().backward()
    torch.testing.assert_close(w.grad.cpu(), torch.zeros(64))
    torch.testing.assert_close(b.grad.cpu(), torch.zeros(64))
    assert x.grad.shape == (0, 64)


def test_rms_norm_refuses_a_width_its_backward_cannot_hold_before_the_forward():
    # H = 1031 (prime): dweight needs 1031 PSUM banks. The forward used to run and the backward to
    # stop with a bare AssertionError; the docstring's "H <= 4096" missed it.
    x = torch.randn(4, 1031, device="neuron", requires_grad=True)
    w = torch.randn(1031, device="neuron", requires_grad=True)
    with pytest.raises(ValueError, match="H=1031 needs 1031"):
        K.rms_norm(x, w)
    with torch.no_grad():                                       # inference: the forward kernel takes it
        torch.testing.assert_close(K.rms_norm(x, w).cpu(), _llama_rmsnorm(x.cpu(), w.cpu()),
                                   rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"weight \[H\]"):
        K.rms_norm(x.detach(), w.detach()[:8])


def test_layer_norm_takes_no_weight_or_bias_like_torch():
    x = _randn(5, 96)
    w = _randn(96)
    out = K.layer_norm(x.to("neuron"), None, None)
    torch.testing.assert_close(out.cpu(), F.layer_norm(x, (96,)), rtol=1e-5, atol=1e-5)
    out = K.layer_norm(x.to("neuron"), w.to("neuron"), None)
    torch.testing.assert_close(out.cpu(), F.layer_norm(x, (96,), w), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"bias \[H\]"):
        K.layer_norm(x.to("neuron"), w.to("neuron"), w[:32].to("neuron"))
