// Scaled dot-product attention on `neuron`. Without a choice of its own a
// PrivateUse1 device takes SDPA's unfused math path (bmm, softmax and mask
// ops one by one); here the device picks the fused "overrideable" kernel
// whenever PyTorch's CPU flash-attention kernel applies, and runs that kernel
// on zero-copy aliases, forward and backward. Grouped-query attention
// (fewer key/value heads) is handled by expanding K/V and summing their
// gradients back over each group.
#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/Functions.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>
#include <torch/library.h>

#include <array>

namespace torch_neuronx {
namespace {

// SDPBackend.MATH, or PyTorch's "No viable backend" error when the user has
// turned the math path off too (sdpa_kernel / torch.backends.cuda.enable_*).
int64_t math_or_no_backend() {
  TORCH_CHECK(at::globalContext().userEnabledMathSDP(),
              "No viable backend for scaled_dot_product_attention was found on neuron: the device's fused "
              "kernel (SDPBackend.OVERRIDEABLE, also selected by FLASH_ATTENTION) does not take these inputs "
              "(dropout_p > 0, an attn_mask that requires grad, not 4-D, mismatched head counts or head "
              "dims, an unsupported dtype) and the math path is disabled. Allow SDPBackend.MATH "
              "(e.g. sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH])) or change the inputs.");
  return static_cast<int64_t>(sdp::SDPBackend::math);
}

// Whether the fused kernel (PyTorch's CPU flash-attention kernel) takes
// these inputs: the constraints of PyTorch's CPU choice but its runtime
// flag, which the caller replaces with the overrideable-or-flash flags.
bool fused_kernel_applies(const sdp::sdp_params& params) {
  constexpr bool debug = false;
  constexpr std::array<at::ScalarType, 4> dtypes{at::kFloat, at::kDouble, at::kBFloat16, at::kHalf};
  const bool same_head_dim = params.query.sym_size(-1) == params.key.sym_size(-1) &&
                             params.query.sym_size(-1) == params.value.sym_size(-1);
  return sdp::check_nested_tensor(params, debug) && sdp::check_for_dropout(params, debug) &&
         sdp::check_tensor_shapes(params, debug) &&
         sdp::check_batch_size_and_num_heads_dense<true>(params, debug) &&
         sdp::check_attn_mask_shape(params, debug) && same_head_dim &&
         sdp::check_nonzero_sequence_lengths_dense(params, debug) &&
         sdp::check_last_dim_stride_equals_1_dense<false>(params, debug) &&
         sdp::check_tensor_dtype(params, dtypes, debug);
}

int64_t neuron_sdp_choice(
    const at::Tensor& query,
    const at::Tensor& key,
    const at::Tensor& value,
    const std::optional<at::Tensor>& attn_mask,
    double dropout_p,
    bool is_causal,
    std::optional<double> /*scale*/,
    bool enable_gqa) {
  constexpr int64_t kMath = static_cast<int64_t>(sdp::SDPBackend::math);
  constexpr int64_t kOverrideable = static_cast<int64_t>(sdp::SDPBackend::overrideable);
  // Operands on other devices take the math path, whose ops raise PyTorch's
  // same-device error.
  if (key.device() != query.device() || value.device() != query.device() ||
      (attn_mask.has_value() && attn_mask->defined() && attn_mask->device() != query.device())) {
    return kMath;
  }
  // OVERRIDEABLE is PyTorch's name for a PrivateUse1 device's fused kernel;
  // FLASH_ATTENTION names the same kernel on the CPU, so either allows it.
  auto& ctx = at::globalContext();
  if (!ctx.userEnabledOverrideableSDP() && !ctx.userEnabledFlashSDP()) {
    return math_or_no_backend();
  }
  // Dropout draws from the device generator only on the math path; masks
  // that need a gradient are not produced by the fused kernel.
  if (dropout_p > 0.0 || (attn_mask.has_value() && attn_mask->defined() && attn_mask->requires_grad())) {
    return math_or_no_backend();
  }
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4) {
    return math_or_no_backend();
  }
  const bool grouped = query.size(1) != key.size(1);
  if (grouped && (!enable_gqa || key.size(1) == 0 || query.size(1) % key.size(1) != 0 ||
                  key.size(1) != value.size(1))) {
    return math_or_no_backend();
  }
  // The checks read metadata only, so they run on the neuron (or, under
  // torch.compile, fake) tensors themselves.
  const sdp::sdp_params params{query, key, value, attn_mask, dropout_p, is_causal, enable_gqa};
  return fused_kernel_applies(params) ? kOverrideable : math_or_no_backend();
}

// The layout the meta kernels promise (torch/_meta_registrations.py): outputs
// laid out like `like` (same stride order). torch.compile checks it.
at::Tensor match_layout(const at::Tensor& result, const at::Tensor& like) {
  if (like.is_non_overlapping_and_dense() ? result.strides() == like.strides()
                                          : result.is_contiguous()) {
    return result;
  }
  at::Tensor out = at::empty_like(like, like.options().dtype(result.scalar_type()));
  out.copy_(result);
  return out;
}

// The 0-dim int64 philox seed and offset the op returns: what at::empty({},
// kLong) on `device` makes (accounted device memory, counted as an empty),
// without a trip through the dispatcher and the device guard per tensor.
at::Tensor philox_scalar(c10::DeviceIndex device) {
  static const char kEmpty[] = "aten::empty.memory_format";
  track_op(static_cast<const void*>(kEmpty), kEmpty, false);
  c10::Storage storage(
      c10::Storage::use_byte_size_t(),
      sizeof(int64_t),
      allocate_accounted(sizeof(int64_t), device, c10::Device(kNeuron, device)),
      neuron_allocator(),
      /*resizable=*/true);
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      caffe2::TypeMeta::Make<int64_t>());
  t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef());
  return t;
}

at::Tensor repeat_heads(const at::Tensor& t, int64_t rep) {
  if (rep == 1) {
    return t;
  }
  return t.repeat_interleave(rep, /*dim=*/1);
}

at::Tensor sum_heads(const at::Tensor& grad, int64_t kv_heads) {
  const int64_t rep = grad.size(1) / kv_heads;
  if (rep == 1) {
    return grad;
  }
  return grad.view({grad.size(0), kv_heads, rep, grad.size(2), grad.size(3)}).sum(2);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor, at::Tensor>
sdpa_overrideable(
    const at::Tensor& query,
    const at::Tensor& key,
    const at::Tensor& value,
    const std::optional<at::Tensor>& attn_bias,
    double dropout_p,
    bool is_causal,
    bool return_debug_mask,
    std::optional<double> scale) {
  adaptive::flush_pending();
  static const char kName[] = "aten::_scaled_dot_product_fused_attention_overrideable";
  track_op(static_cast<const void*>(kName), kName, false);
  TORCH_CHECK(dropout_p == 0.0, "neuron fused attention: dropout must be 0 (the math path handles dropout)");
  const c10::DeviceIndex device = check_device(query.device().index());
  std::optional<at::Tensor> mask;
  if (attn_bias.has_value() && attn_bias->defined()) {
    TORCH_CHECK(
        attn_bias->device() == query.device(),
        "Expected all tensors to be on the same device, but found at least two devices, ",
        query.device(), " and ", attn_bias->device(),
        "! (when checking argument for argument 'attn_mask' in scaled_dot_product_attention). "
        "Move the mask to the query's device.");
    mask = cached_read_alias(*attn_bias);
  }
  at::Tensor out;
  at::Tensor lse;
  {
    RouteAllocationsTo route(device);
    const int64_t rep = query.size(1) / key.size(1);
    // The kernels only read their operands: aliases from the per-thread cache.
    const at::Tensor q = cached_read_alias(query);
    std::tie(out, lse) = at::_scaled_dot_product_flash_attention_for_cpu(
        q, repeat_heads(cached_read_alias(key), rep),
        repeat_heads(cached_read_alias(value), rep),
        dropout_p, is_causal, mask, scale);
    if (value.size(-1) == query.size(-1)) {
      out = match_layout(out, q);
    } else if (query.is_contiguous()) {
      out = out.contiguous();
    }
    lse = lse.contiguous();
  }
  return {
      to_neuron_result(out, device),
      to_neuron_result(lse, device),
      at::Tensor(),
      at::Tensor(),
      c10::SymInt(query.size(2)),
      c10::SymInt(key.size(2)),
      // 0-d philox seed/offset and no debug mask, as the meta kernel promises (Inductor
      // asserts the sizes of every output of a compiled training graph).
      philox_scalar(device),
      philox_scalar(device),
      at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sdpa_overrideable_backward(
    const at::Tensor& grad_out,
    const at::Tensor& query,
    const at::Tensor& key,
    const at::Tensor& value,
    const at::Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask,
    const at::Tensor& out,
    const at::Tensor& logsumexp,
    const at::Tensor& /*cum_seq_q*/,
    const at::Tensor& /*cum_seq_k*/,
    c10::SymInt /*max_q*/,
    c10::SymInt /*max_k*/,
    double dropout_p,
    bool is_causal,
    const at::Tensor& /*philox_seed*/,
    const at::Tensor& /*philox_offset*/,
    std::optional<double> scale) {
  if (!grad_out.defined()) {
    // No gradient reached the output (autograd passes an undefined grad, and
    // derivatives.yaml leaves this case to the kernel): no input gradients, as
    // the CPU flash kernel's backward answers.
    return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
  adaptive::flush_pending();
  static const char kName[] = "aten::_scaled_dot_product_fused_attention_overrideable_backward";
  track_op(static_cast<const void*>(kName), kName, false);
  TORCH_CHECK(
      !grad_input_mask[3],
      "neuron fused attention cannot produce a gradient for attn_mask; such calls use the math path");
  const c10::DeviceIndex device = check_device(query.device().index());
  std::optional<at::Tensor> mask;
  if (attn_bias.defined()) {
    mask = cached_read_alias(attn_bias);
  }
  at::Tensor gq;
  at::Tensor gk;
  at::Tensor gv;
  {
    RouteAllocationsTo route(device);
    const int64_t kv_heads = key.size(1);
    const int64_t rep = query.size(1) / kv_heads;
    std::tie(gq, gk, gv) = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        cached_read_alias(grad_out), cached_read_alias(query),
        repeat_heads(cached_read_alias(key), rep), repeat_heads(cached_read_alias(value), rep),
        cached_read_alias(out), cached_read_alias(logsumexp), dropout_p,
        is_causal, mask, scale);
    gq = match_layout(gq, cached_read_alias(query));
    gk = match_layout(sum_heads(gk, kv_heads), cached_read_alias(key));
    gv = match_layout(sum_heads(gv, kv_heads), cached_read_alias(value));
  }
  return {
      to_neuron_result(gq, device),
      to_neuron_result(gk, device),
      to_neuron_result(gv, device),
      at::Tensor()};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // The op torch._fused_sdp_choice answers with the choice scaled_dot_product_attention
  // makes through the stub below (the boxed fallback would answer with the CPU's).
  m.impl("_fused_sdp_choice", neuron_sdp_choice);
  m.impl("_scaled_dot_product_fused_attention_overrideable", sdpa_overrideable);
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", sdpa_overrideable_backward);
}

} // namespace torch_neuronx

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_neuronx::neuron_sdp_choice);
} // namespace at::native
