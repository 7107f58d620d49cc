#include "distributed/AllreduceFastPath.h"

#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "distributed/AllreduceWork.h"
#include "runtime/Runtime.h"

#include <torch/csrc/PyInterpreter.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/utils/pybind.h>

namespace torch_neuronx {

bool gloo_reduces(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Char:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Bool:
    case c10::ScalarType::ComplexFloat:
    case c10::ScalarType::ComplexDouble:
      return true;
    default:
      return false;
  }
}

c10::intrusive_ptr<c10d::Work> allreduce_alias(
    const c10::intrusive_ptr<c10d::Backend>& gloo,
    const std::vector<at::Tensor>& tensors,
    const c10d::AllreduceOptions& opts,
    const pybind11::handle& explain) {
  if (tensors.size() != 1 || opts.reduceOp.op_ != c10d::ReduceOp::SUM || opts.sparseIndices.has_value()) {
    return {};
  }
  if (c10::impl::TorchDispatchModeTLS::any_modes_set()) {
    return {}; // a dispatch mode (CommDebugMode, ...) must see c10d::allreduce_: the general path dispatches it
  }
  const at::Tensor& t = tensors[0];
  if (!t.defined() || t.layout() != c10::kStrided || !gloo_reduces(t.scalar_type()) || !t.is_contiguous()) {
    return {};
  }
  std::vector<at::Tensor> aliases;
  if (t.device().type() == kNeuron) {
    adaptive::flush_pending();
    aliases.push_back(cpu_alias(t));
  } else if (t.is_cpu()) {
    aliases.push_back(t);
  } else {
    return {}; // another device: the general path names it
  }
  c10::SafePyObject diagnosis(explain.inc_ref().ptr(), getPyInterpreter());
  c10::intrusive_ptr<c10d::Work> transfer;
  {
    pybind11::gil_scoped_release no_gil; // as torch's own binding of Backend.allreduce
    transfer = gloo->allreduce(aliases, opts);
  }
  return c10::make_intrusive<AllreduceWork>(std::move(transfer), tensors, std::move(diagnosis));
}

} // namespace torch_neuronx
