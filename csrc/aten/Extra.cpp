// Ops whose CPU kernel lacks something a device is expected to offer, so
// they get a neuron kernel of their own instead of the boxed fallback.
//
// histc on integer tensors: CUDA supports it and transformers' MoE routing
// calls it on any device that is not CPU/MPS (integrations/moe.py); the CPU
// kernel has no integer version, so the counts are taken in float64 on the
// host alias and returned in the input's dtype, as CUDA returns them.
//
// mode.values (torch.mode(x, dim, out=(values, indices))): PyTorch's only kernel
// is a composite that refuses devices other than CPU, CUDA and XPU; the device
// runs mode (the CPU kernel through the boxed fallback) and writes the outputs
// with the composite's own checks, as the out= forms of other ops do.
#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/Functions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

at::Tensor histc_cpu_alias(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  at::Tensor input = cpu_alias(self);
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    return at::histc(input.to(at::kDouble), bins, min, max).to(self.scalar_type());
  }
  return at::histc(input, bins, min, max);
}

at::Tensor neuron_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  adaptive::flush_pending();
  static const char kName[] = "aten::histc";
  track_op(static_cast<const void*>(kName), kName, is_host_fallback_dtype(self.scalar_type()));
  const c10::DeviceIndex device = check_device(self.device().index());
  at::Tensor out;
  {
    RouteAllocationsTo route(device);
    out = histc_cpu_alias(self, bins, min, max);
  }
  return to_neuron_result(out, device);
}

at::Tensor& histc_out(
    const at::Tensor& self,
    int64_t bins,
    const at::Scalar& min,
    const at::Scalar& max,
    at::Tensor& out) {
  adaptive::flush_pending();
  TORCH_CHECK(
      out.device() == self.device(),
      "histc: out is on ", out.device(), " but the input is on ", self.device());
  // The CPU kernel's rule (CUDA's out= kernel skips it and casts the counts):
  // an out= of another dtype would be an unsafe cast of the result.
  TORCH_CHECK(
      out.scalar_type() == self.scalar_type(),
      "torch.histc: input tensor and hist tensor should have the same dtype, but got input ",
      self.scalar_type(), " and hist ", out.scalar_type(),
      ". Pass an out= tensor of the input's dtype, or call histc without out= and cast the result.");
  at::Tensor result = neuron_histc(self, bins, min, max);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> mode_out(
    const at::Tensor& self,
    int64_t dim,
    bool keepdim,
    at::Tensor& values,
    at::Tensor& indices) {
  TORCH_CHECK(
      self.device() == values.device(),
      "expected device '", self.device(), "' but got '", values.device(), "' for values output");
  TORCH_CHECK(
      self.device() == indices.device(),
      "expected device '", self.device(), "' but got '", indices.device(), "' for indices output");
  TORCH_CHECK(
      self.scalar_type() == values.scalar_type(),
      "expected scalar type '", self.scalar_type(), "' but got '", values.scalar_type(),
      "' for values output");
  TORCH_CHECK(
      indices.scalar_type() == at::ScalarType::Long,
      "expected scalar type '", at::ScalarType::Long, "' but got '", indices.scalar_type(),
      "' for indices output");
  auto [v, i] = at::mode(self, dim, keepdim);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", neuron_histc);
  m.impl("histc.out", histc_out);
  m.impl("mode.values", mode_out);
}

} // namespace torch_neuronx
