// Autocast for `neuron`: torch.autocast("neuron", dtype=torch.bfloat16).
// The cast policy uses PyTorch's shared op lists (ATen/autocast_mode.h): matmuls
// and convolutions run in the autocast dtype, numerically sensitive ops
// (softmax, norms, losses, exp/log, ...) in float32, mixed-dtype ops promote.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::Tensor;

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
#undef NEURON_LOWER
#undef NEURON_FP32
#undef NEURON_FP32_OPT_DTYPE
#undef NEURON_PROMOTE
}

} // namespace
