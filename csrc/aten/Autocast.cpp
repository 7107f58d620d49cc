// Autocast for `neuron`: torch.autocast("neuron", dtype=torch.bfloat16).
// The cast policy uses PyTorch's shared op lists (ATen/autocast_mode.h): matmuls
// and convolutions run in the autocast dtype, numerically sensitive ops
// (softmax, norms, losses, exp/log, ...) in float32, mixed-dtype ops promote,
// norm's dtype-less overloads redispatch with a float32 dtype, and
// binary_cross_entropy is refused: the same registrations PyTorch makes for CUDA.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// binary_cross_entropy under autocast: refused, as on CUDA (its inputs are often
// low-precision sigmoid outputs, which lose too much near 0 and 1).
Tensor binary_cross_entropy_banned(
    const Tensor& /*self*/,
    const Tensor& /*target*/,
    const std::optional<Tensor>& /*weight*/,
    int64_t /*reduction*/) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast. "
      "Use torch.nn.functional.binary_cross_entropy_with_logits / torch.nn.BCEWithLogitsLoss, "
      "which take the logits before the sigmoid and are safe to autocast, or compute the loss "
      "outside torch.autocast(\"neuron\").");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define NEURON_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define NEURON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define NEURON_FP32_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define NEURON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(NEURON_LOWER)
  AT_FORALL_FP32(NEURON_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(NEURON_FP32_OPT_DTYPE)
  AT_FORALL_PROMOTE(NEURON_PROMOTE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  m.impl(
      TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
      TORCH_FN((&binary_cross_entropy_banned)));
#undef NEURON_LOWER
#undef NEURON_FP32
#undef NEURON_FP32_OPT_DTYPE
#undef NEURON_PROMOTE
}

} // namespace
