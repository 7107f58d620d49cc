// Unboxed kernels for the ops that dominate small-op eager work. Each does
// what the boxed fallback (Fallback.cpp) does for a plain call — the CPU
// kernel on zero-copy aliases (read-only ones from Alias.h's cache: these ops
// write none of their operands), its fresh result relabelled as accounted
// device memory of the operands' core, the op counted — but takes its
// arguments as C++ values: no IValue stack, no walk over the schema's
// arguments, no boxing for the CPU kernel. Every call that is not plain (an
// operand on the CPU or on another core, an fp64/complex operand, an undefined
// tensor, adaptive eager execution on, more operands than the fast path holds)
// runs the boxed fallback itself, so its checks, errors and counts stay the
// only ones.
#include "aten/FastPath.h"

#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/Fallback.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/cat_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <c10/util/SmallVector.h>

#include <string>

namespace torch_neuronx {
namespace {

// Tensor operands one fast call aliases (a cat of more tensors takes the
// boxed fallback).
constexpr size_t kMaxOperands = 8;

// One call's operands and their aliases.
class FastCall {
 public:
  FastCall() = default;
  FastCall(const FastCall&) = delete;
  FastCall& operator=(const FastCall&) = delete;

  // First pass, over every argument: true when the call is plain (each tensor
  // a defined neuron tensor of a device-computable dtype, all on one core, or
  // a 0-dim CPU tensor such as the wrapped Python number of `x * 2.0`, which
  // every device takes as a scalar).
  template <typename T>
  bool accepts(const T& /*value*/) {
    return true;
  }
  bool accepts(const at::Tensor& t) {
    if (!t.defined()) {
      return false;
    }
    const c10::DeviceType type = t.device().type();
    if (type != kNeuron) {
      return type == c10::kCPU && t.dim() == 0;
    }
    if (is_host_fallback_dtype(t.scalar_type())) {
      return false;
    }
    const c10::DeviceIndex index = t.device().index();
    if (device_ < 0) {
      device_ = index;
    } else if (index != device_) {
      return false;
    }
    return ++count_ <= kMaxOperands;
  }
  bool accepts(const std::optional<at::Tensor>& t) {
    return !t.has_value() || !t->defined() || accepts(*t);
  }
  bool accepts(const at::ITensorListRef& list) {
    for (const at::Tensor& t : list) {
      if (!accepts(t) || t.device().type() != kNeuron) {
        return false;
      }
    }
    return true;
  }

  c10::DeviceIndex device() const {
    return device_;
  }

  // Second pass: each argument as the CPU kernel takes it. The aliases live in
  // this call until it ends (inline storage: no reallocation, so the
  // references handed out stay valid).
  template <typename T>
  const T& to_cpu(const T& value) {
    return value;
  }
  const at::Tensor& to_cpu(const at::Tensor& t) {
    return t.device().type() == kNeuron ? alias(t) : t;
  }
  std::optional<at::Tensor> to_cpu(const std::optional<at::Tensor>& t) {
    if (!t.has_value() || !t->defined()) {
      return t;
    }
    return to_cpu(*t);
  }
  at::ITensorListRef to_cpu(const at::ITensorListRef& list) {
    const size_t first = aliases_.size();
    for (const at::Tensor& t : list) {
      alias(t); // (accepts() took only neuron tensors in lists)
    }
    return at::ITensorListRef(c10::ArrayRef<at::Tensor>(aliases_.data() + first, aliases_.size() - first));
  }

  // The CPU kernel's result as a neuron tensor (as the boxed fallback's
  // Call::unwrap: an operand returned as is, a view of an operand, or a fresh
  // result relabelled in place).
  at::Tensor to_neuron(at::Tensor out, c10::DeviceIndex device) {
    if (!out.defined() || out.device().type() == kNeuron) {
      return out;
    }
    for (size_t i = 0; i < aliases_.size(); ++i) {
      if (out.unsafeGetTensorImpl() == aliases_[i].unsafeGetTensorImpl()) {
        return *originals_[i];
      }
    }
    if (out.has_storage()) {
      const c10::StorageImpl* si = out.storage().unsafeGetStorageImpl();
      for (size_t i = 0; i < aliases_.size(); ++i) {
        if (aliases_[i].unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl() == si) {
          return neuron_view(out, originals_[i]->storage());
        }
      }
    }
    if (relabel_fresh_result(out, device)) {
      return out;
    }
    return to_neuron_result(out, device);
  }

 private:
  const at::Tensor& alias(const at::Tensor& t) {
    originals_.push_back(&t);
    aliases_.push_back(cached_read_alias(t));
    return aliases_.back();
  }

  c10::DeviceIndex device_ = -1;
  size_t count_ = 0;
  // The caller's operands (alive for the whole call).
  c10::SmallVector<const at::Tensor*, kMaxOperands> originals_;
  c10::SmallVector<at::Tensor, kMaxOperands> aliases_;
};

const c10::BoxedKernel& boxed_fallback() {
  static const c10::BoxedKernel kernel = c10::BoxedKernel::makeFromFunction<&neuron_fallback>();
  return kernel;
}

// The unboxed kernel of the ATen op `Op` (a struct of ATen/Operators.h), for
// ops returning one tensor.
template <typename Op, typename Schema = typename Op::schema>
struct FastKernel;

template <typename Op, typename... Args>
struct FastKernel<Op, at::Tensor(Args...)> {
  static const c10::OperatorHandle& handle() {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    return op;
  }

  static at::Tensor boxed(c10::DispatchKeySet keys, Args... args) {
    return c10::impl::BoxedKernelWrapper<at::Tensor(Args...)>::call(
        boxed_fallback(), handle(), keys, args...);
  }

  static at::Tensor run(c10::DispatchKeySet keys, Args... args) {
    if (C10_UNLIKELY(adaptive::on())) {
      return boxed(keys, args...);
    }
    FastCall call;
    if (!(call.accepts(args) && ...) || call.device() < 0) {
      return boxed(keys, args...);
    }
    const c10::DeviceIndex device = check_device(call.device());
    at::Tensor out;
    {
      RouteAllocationsTo route(device);
      out = Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), call.to_cpu(args)...);
    }
    out = call.to_neuron(std::move(out), device);
    // A result of a host-only dtype (fp64, complex) marks the op as the boxed
    // fallback does.
    const bool host_fallback = out.defined() && is_host_fallback_dtype(out.scalar_type());
    const c10::OperatorHandle& op = handle();
    track_op(&op.schema(), op.operator_name(), host_fallback);
    if (C10_UNLIKELY(host_fallback)) {
      warn_host_fallback_dtype(at::kDouble, op.operator_name().name.c_str());
    }
    return out;
  }
};

template <typename Op>
void add(torch::Library& lib) {
  const auto handle = c10::Dispatcher::singleton().findOp(c10::OperatorName(Op::name, Op::overload_name));
  // Only ops whose PrivateUse1 kernel would be the boxed fallback (the
  // structured ops Fallback.cpp's RegisterCpuKernelOps takes over from
  // PyTorch's composite kernel), so the fast kernel changes no op's semantics.
  if (!handle.has_value() || handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
      !handle->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
      !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
    return;
  }
  std::string name = std::string(Op::name).substr(6);
  if (Op::overload_name[0] != '\0') {
    name += std::string(".") + Op::overload_name;
  }
  lib.impl(name.c_str(), TORCH_FN(FastKernel<Op>::run));
}

// fill_.Scalar, the one in-place op of a decode step's hot list (the factories
// `full`, `scalar_tensor` and `where` with a Python number make an empty
// tensor and fill it): the CPU kernel writes the bytes of `self` through a
// cached alias and changes none of its metadata. Anything but a plain neuron
// `self` runs the boxed fallback.
at::Tensor& fill_scalar(c10::DispatchKeySet keys, at::Tensor& self, const at::Scalar& value) {
  using Op = at::_ops::fill__Scalar;
  static const c10::OperatorHandle handle =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
  if (C10_UNLIKELY(adaptive::on()) || !self.defined() || self.device().type() != kNeuron ||
      is_host_fallback_dtype(self.scalar_type())) {
    return c10::impl::BoxedKernelWrapper<at::Tensor&(at::Tensor&, const at::Scalar&)>::call(
        boxed_fallback(), handle, keys, self, value);
  }
  const c10::DeviceIndex device = check_device(self.device().index());
  {
    at::Tensor alias = cached_read_alias(self);
    RouteAllocationsTo route(device);
    Op::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), alias, value);
  }
  track_op(&handle.schema(), handle.operator_name(), false);
  return self;
}

} // namespace

void register_fast_paths(torch::Library& lib) {
  // A decode step of a Llama (counted with torch_neuronx.get_executed_ops):
  // mul, mm, add, cat, then the RMSNorm ops (pow, mean, rsqrt), neg and silu
  // of rotary embeddings and the MLP; the rest are their common neighbours.
  add<at::_ops::mul_Tensor>(lib);
  add<at::_ops::mm>(lib);
  add<at::_ops::add_Tensor>(lib);
  add<at::_ops::cat>(lib);
  add<at::_ops::mean_dim>(lib);
  add<at::_ops::pow_Tensor_Scalar>(lib);
  add<at::_ops::rsqrt>(lib);
  add<at::_ops::neg>(lib);
  add<at::_ops::silu>(lib);
  add<at::_ops::sub_Tensor>(lib);
  add<at::_ops::div_Tensor>(lib);
  add<at::_ops::bmm>(lib);
  add<at::_ops::addmm>(lib);
  add<at::_ops::_softmax>(lib);
  add<at::_ops::exp>(lib);
  add<at::_ops::sum_dim_IntList>(lib);
  add<at::_ops::gelu>(lib);
  add<at::_ops::tanh>(lib);
  add<at::_ops::sigmoid>(lib);
  // Not a structured op (no composite kernel to take over): registered when
  // its neuron kernel would otherwise be the boxed fallback.
  const auto fill = c10::Dispatcher::singleton().findOp(c10::OperatorName("aten::fill_", "Scalar"));
  if (fill.has_value() && !fill->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) &&
      fill->hasKernelForDispatchKey(c10::DispatchKey::CPU)) {
    lib.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  }
}

} // namespace torch_neuronx
