// The ops every device must implement itself (PyTorch's OpenReg "minimal"
// set): allocation, views, copies, resize, set_, scalar reads, and the
// convolution entry points that at::_convolution sends unknown devices to.
// Everything else goes through the boxed fallback (Fallback.cpp).
#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Functions.h>
#include <ATen/ops/mul.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <c10/util/strides.h>
#include <ATen/ops/copy_ops.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

c10::DeviceIndex device_from(std::optional<c10::Device> device) {
  if (!device.has_value() || !device->has_index()) {
    return check_device(current_device());
  }
  TORCH_CHECK(device->type() == kNeuron, "expected a neuron device, got ", *device);
  return check_device(device->index());
}

// Validates a factory call's options; returns the device index to allocate on.
c10::DeviceIndex factory_device(
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_CHECK(
      !layout.has_value() || *layout == c10::kStrided,
      "neuron supports only strided (dense) tensors, got layout ", *layout,
      ": NeuronCores have no sparse tensor support; keep sparse tensors on the CPU.");
  TORCH_CHECK(
      !pin_memory.value_or(false),
      "pin_memory=True applies to CPU tensors only; neuron tensors live in device HBM");
  return device_from(device);
}

// torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (the default) fills new
// memory with NaN (floating/complex) or the dtype's max (integers, bool), as
// the CPU and CUDA kernels of empty/empty_strided/resize_ do, so reads of
// uninitialized memory show up instead of returning a freed block's bytes.
bool fill_uninitialized_memory() {
  const auto& ctx = at::globalContext();
  return C10_UNLIKELY(ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory());
}

at::Tensor empty_memory_format(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory,
    std::optional<c10::MemoryFormat> memory_format) {
  TORCH_NEURONX_TRACK("aten::empty.memory_format");
  const c10::DeviceIndex index = factory_device(layout, device, pin_memory);
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  at::Tensor result = at::detail::empty_generic(
      size,
      neuron_allocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::dtype_or_default(dtype),
      memory_format);
  if (fill_uninitialized_memory()) {
    at::native::fill_empty_deterministic_(result);
  }
  return result;
}

at::Tensor empty_strided(
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_NEURONX_TRACK("aten::empty_strided");
  const c10::DeviceIndex index = factory_device(layout, device, pin_memory);
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  at::Tensor result = at::detail::empty_strided_generic(
      size,
      stride,
      neuron_allocator(),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::dtype_or_default(dtype));
  if (fill_uninitialized_memory()) {
    at::native::fill_empty_deterministic_(result);
  }
  return result;
}

// A ZeroTensor: sizes and dtype without memory (a null data pointer), which
// PyTorch's backward formulas return for gradients known to be zero (e.g.
// sgn of a real tensor) and forward AD uses for zero tangents. The ZeroTensor
// dispatch key's own fallback materializes zeros on the device when an op
// needs data. Same construction as CUDA's _efficientzerotensor_cuda; without
// it the boxed fallback would return the CPU ZeroTensor's null memory.
at::Tensor efficientzerotensor(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_NEURONX_TRACK("aten::_efficientzerotensor");
  const c10::DeviceIndex index = factory_device(layout, device, pin_memory);
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  at::native::ZeroTensorAllocator allocator(c10::Device(kNeuron, index));
  return at::detail::empty_generic(
      size,
      &allocator,
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) |
          c10::DispatchKeySet(c10::DispatchKey::ZeroTensor),
      c10::dtype_or_default(dtype),
      std::nullopt);
}

at::Tensor as_strided(
    const at::Tensor& self,
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor view_as_real(const at::Tensor& self) {
  return at::native::view_as_real(self);
}

at::Tensor view_as_complex(const at::Tensor& self) {
  return at::native::view_as_complex(self);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  adaptive::flush_pending();
  const bool self_neuron = self.device().type() == kNeuron;
  const bool dst_neuron = dst.device().type() == kNeuron;
  TORCH_CHECK(
      (self_neuron || self.device().is_cpu()) && (dst_neuron || dst.device().is_cpu()),
      "neuron can copy to and from cpu and neuron tensors only, not from ", self.device(),
      " to ", dst.device());
  {
    static const char kName[] = "aten::_copy_from";
    const bool fallback = (self_neuron && is_host_fallback_dtype(self.scalar_type())) ||
        (dst_neuron && is_host_fallback_dtype(dst.scalar_type()));
    track_op(static_cast<const void*>(kName), kName, fallback);
    if (dst_neuron && !self_neuron && is_host_fallback_dtype(dst.scalar_type())) {
      warn_host_fallback_dtype(dst.scalar_type(), "a host-to-device copy");
    }
  }
  if (self.numel() == 0) {
    return dst;
  }
  at::Tensor src_cpu;
  at::Tensor dst_cpu;
  if (self_neuron && dst_neuron && self.storage().is_alias_of(dst.storage())) {
    // One alias storage for both, so the CPU copy's overlap checks see it.
    c10::Storage shared = cpu_alias_storage(self.storage());
    src_cpu = cpu_alias(self, shared);
    dst_cpu = cpu_alias(dst, shared);
  } else {
    // The CPU copy writes the destination's bytes, never its metadata: both
    // sides can take cached aliases (Alias.h).
    src_cpu = self_neuron ? cached_read_alias(self) : self;
    dst_cpu = dst_neuron ? cached_read_alias(dst) : dst;
  }
  // Straight to the CPU kernel: the aliases need no autograd or version
  // counting (the dispatcher did both for the neuron tensors).
  at::_ops::copy_::redispatch(
      c10::DispatchKeySet(c10::DispatchKey::CPU), dst_cpu, src_cpu, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  adaptive::flush_pending();
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

const at::Tensor& resize_(
    const at::Tensor& self,
    c10::IntArrayRef size,
    std::optional<c10::MemoryFormat> memory_format) {
  adaptive::flush_pending();
  TORCH_NEURONX_TRACK("aten::resize_");
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  // As the CPU and CUDA kernels: resizing to the current sizes keeps the strides (a strided out= view
  // stays a view of the same elements); only a new shape is laid out contiguously.
  if (impl->sizes() != size) {
    impl->set_sizes_contiguous(size);
  }
  const size_t needed = at::detail::computeStorageNbytesContiguous(
      size, impl->dtype().itemsize(), impl->storage_offset());
  const size_t old_nbytes = impl->unsafe_storage().nbytes();
  if (needed > old_nbytes) {
    resize_storage_bytes(impl->unsafe_storage(), needed);
    if (fill_uninitialized_memory()) {
      at::native::fill_resize_deterministic_(self, static_cast<int64_t>(old_nbytes));
    }
  }
  if (memory_format.has_value()) {
    TORCH_CHECK(
        *memory_format != c10::MemoryFormat::Preserve,
        "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  adaptive::flush_pending();
  TORCH_NEURONX_TRACK("aten::_local_scalar_dense");
  return at::_local_scalar_dense(cpu_alias(self));
}

at::Tensor& set_storage(
    at::Tensor& result,
    c10::Storage storage,
    int64_t storage_offset,
    c10::IntArrayRef size,
    c10::IntArrayRef stride) {
  TORCH_NEURONX_TRACK("aten::set_");
  adaptive::flush_pending();
  at::native::checkSetStorage(result, storage, storage_offset, size, stride);
  std::vector<int64_t> strides;
  if (stride.data() != nullptr) {
    strides.assign(stride.begin(), stride.end());
  } else {
    const auto contiguous = c10::contiguous_strides(size);
    strides.assign(contiguous.begin(), contiguous.end());
  }
  const size_t needed = size.empty()
      ? (storage_offset + 1) * result.dtype().itemsize()
      : at::detail::computeStorageNbytes(size, strides, result.dtype().itemsize(), storage_offset);
  bool any_zero = false;
  for (auto s : size) {
    any_zero |= s == 0;
  }
  if (!any_zero && needed > result.storage().nbytes()) {
    resize_storage_bytes(result.storage(), needed);
  }
  result.unsafeGetTensorImpl()->set_sizes_and_strides(size, strides, storage_offset);
  return result;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t itemsize = static_cast<int64_t>(self.dtype().itemsize());
  const int64_t n = static_cast<int64_t>(source.nbytes()) / itemsize;
  return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) {
    return self;
  }
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  const c10::DeviceIndex index = check_device(self.device().index());
  c10::Storage fresh(
      c10::Storage::use_byte_size_t(),
      0,
      allocate_accounted(0, index, c10::Device(kNeuron, index)),
      neuron_allocator(),
      /*resizable=*/true);
  return set_storage(self, std::move(fresh), 0, {0}, {});
}

at::Tensor convolution_overrideable(
    const at::Tensor& input,
    const at::Tensor& weight,
    const std::optional<at::Tensor>& bias,
    c10::IntArrayRef stride,
    c10::IntArrayRef padding,
    c10::IntArrayRef dilation,
    bool transposed,
    c10::IntArrayRef output_padding,
    int64_t groups) {
  adaptive::flush_pending();
  TORCH_NEURONX_TRACK("aten::convolution_overrideable");
  // at::_convolution sends any tensor set with a neuron tensor here without
  // checking devices: every operand is checked (a CPU weight is an error, as
  // on CUDA, not a CPU computation labelled neuron).
  static const char kOp[] = "aten::convolution_overrideable";
  const c10::DeviceIndex device =
      check_device((input.device().type() == kNeuron ? input : weight).device().index());
  at::Tensor input_cpu = operand_alias(input, device, "input", kOp);
  at::Tensor weight_cpu = operand_alias(weight, device, "weight", kOp);
  std::optional<at::Tensor> bias_cpu;
  if (bias.has_value() && bias->defined()) {
    bias_cpu = operand_alias(*bias, device, "bias", kOp);
  }
  // Operands that are both NCHW-contiguous get NCHW strides for the CPU kernel.
  // A 1x1 channels_last weight (or an input with one channel or a 1x1 image) is
  // contiguous too, only its strides of size-1 dimensions differ, and the CPU
  // kernel takes such strides for channels_last and returns a channels_last
  // result. PyTorch's fake tensors predict an NCHW result for a PrivateUse1
  // convolution whose operands are contiguous, and a compiled graph hands this
  // kernel such operands unchanged and asserts that prediction; the same bytes
  // with canonical strides give the same values in the predicted layout.
  if (input_cpu.is_contiguous() && weight_cpu.is_contiguous()) {
    for (at::Tensor* operand : {&input_cpu, &weight_cpu}) {
      const auto strides = c10::contiguous_strides(operand->sizes());
      if (!operand->strides().equals(strides)) {
        *operand = operand->as_strided(operand->sizes(), strides);
      }
    }
  }
  at::Tensor out;
  {
    RouteAllocationsTo route(device);
    out = at::convolution(
        input_cpu, weight_cpu, bias_cpu, stride, padding, dilation, transposed, output_padding,
        groups);
  }
  return to_neuron_result(out, device);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output,
    const at::Tensor& input,
    const at::Tensor& weight,
    c10::IntArrayRef stride,
    c10::IntArrayRef padding,
    c10::IntArrayRef dilation,
    bool transposed,
    c10::IntArrayRef output_padding,
    int64_t groups,
    std::array<bool, 3> output_mask) {
  adaptive::flush_pending();
  TORCH_NEURONX_TRACK("aten::convolution_backward_overrideable");
  static const char kOp[] = "aten::convolution_backward_overrideable";
  const c10::DeviceIndex device =
      check_device((input.device().type() == kNeuron ? input : weight).device().index());
  const at::Tensor grad_output_cpu = operand_alias(grad_output, device, "grad_output", kOp);
  const at::Tensor input_cpu = operand_alias(input, device, "input", kOp);
  const at::Tensor weight_cpu = operand_alias(weight, device, "weight", kOp);
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  std::vector<int64_t> bias_sizes{out_channels};
  std::tuple<at::Tensor, at::Tensor, at::Tensor> grads;
  {
    RouteAllocationsTo route(device);
    grads = at::convolution_backward(
        grad_output_cpu, input_cpu, weight_cpu, bias_sizes, stride, padding, dilation, transposed,
        output_padding, groups, output_mask);
    // The gradients come back in the layout PyTorch's fake tensors give a PrivateUse1
    // convolution's backward (its Overrideable backend: contiguous), not the CPU kernel's
    // (channels_last when the input or weight is): a compiled backward graph runs this op as
    // a fallback whose output strides Inductor asserts and then reads by. Leaf gradients
    // still follow their parameter's layout (autograd's layout contract).
    for (at::Tensor* grad : {&std::get<0>(grads), &std::get<1>(grads)}) {
      if (grad->defined()) {
        *grad = grad->contiguous();
      }
    }
  }
  return {
      to_neuron_result(std::get<0>(grads), device),
      to_neuron_result(std::get<1>(grads), device),
      to_neuron_result(std::get<2>(grads), device)};
}

std::tuple<at::Tensor, at::Tensor> native_dropout(
    const at::Tensor& input,
    double p,
    std::optional<bool> train) {
  adaptive::flush_pending();
  // Composite so the mask is drawn by the neuron generator (the CPU kernel
  // would draw from the CPU generator and ignore torch.neuron.manual_seed).
  if (input.numel() == 0 || !train.value_or(true) || p == 0) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(at::kBool))};
  }
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  mask.bernoulli_(1 - p);
  at::Tensor output = at::mul(at::mul(input, mask), 1.0 / (1 - p));
  return {output, mask};
}

// Dense neuron and CPU tensors share one TensorImpl layout, so one can take the other's
// metadata (`param.data = param.to("neuron")`). c10's built-in rule lists only in-tree
// dense backends; without this, nn.Module.to("neuron") replaces every Parameter with a new
// object — which unties tied weights (embeddings / lm_head) and breaks FSDP1's set_data.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) {
    return true;
  }
  auto dense = [](const at::Tensor& t) {
    const auto device = t.device().type();
    return t.layout() == at::kStrided && !t.is_nested() &&
        (device == c10::DeviceType::CPU || device == c10::DeviceType::PrivateUse1);
  };
  return dense(self) && dense(from);
}

void record_stream(at::Tensor& /*self*/, c10::Stream /*stream*/) {
  // Execution is synchronous on the software NeuronCore: nothing to extend.
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_efficientzerotensor", efficientzerotensor);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("unfold", unfold);
  m.impl("view_as_real", view_as_real);
  m.impl("view_as_complex", view_as_complex);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("resize_", resize_);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("convolution_overrideable", convolution_overrideable);
  m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
  m.impl("native_dropout", native_dropout);
  m.impl("record_stream", record_stream);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

// A conjugate or negative-bit copy would otherwise recurse between these keys
// and the device copy until the stack overflows (torch.fft.hfft crashed that way).
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace torch_neuronx
