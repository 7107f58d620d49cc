#include "distributed/AllreduceMethod.h"

#include "distributed/NeuronBackend.h"

#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/utils/pybind.h>

#include <vector>

namespace torch_neuronx {

namespace {

// The backend's all_reduce for the common form, or a null object when the call is another form.
pybind11::object allreduce_directly(const pybind11::handle& self, const pybind11::args& args) {
  if (args.size() != 2 || !PyList_CheckExact(args[0].ptr()) ||
      c10::impl::TorchDispatchModeTLS::any_modes_set() || c10d::allow_inflight_collective_as_graph_input()) {
    return pybind11::object();
  }
  pybind11::detail::make_caster<std::vector<at::Tensor>> tensors;
  pybind11::detail::make_caster<c10d::AllreduceOptions> opts;
  if (!tensors.load(args[0], false) || !opts.load(args[1], false)) {
    return pybind11::object();
  }
  auto& group = pybind11::cast<c10d::ProcessGroup&>(self);
  auto* backend = dynamic_cast<NeuronBackend*>(group.getBackend(c10::DeviceType::PrivateUse1).get());
  if (backend == nullptr) {
    return pybind11::object();
  }
  std::vector<at::Tensor>& list = pybind11::detail::cast_op<std::vector<at::Tensor>&>(tensors);
  return pybind11::cast(backend->allreduce(list, pybind11::detail::cast_op<c10d::AllreduceOptions&>(opts)));
}

} // namespace

void install_allreduce_method(const pybind11::object& cls, const pybind11::object& binding) {
  pybind11::cpp_function method(
      [binding](const pybind11::object& self, const pybind11::args& args, const pybind11::kwargs& kwargs) {
        if (kwargs.empty()) {
          pybind11::object work = allreduce_directly(self, args);
          if (work) {
            return work;
          }
        }
        return binding(self, *args, **kwargs);
      },
      pybind11::name("allreduce"),
      pybind11::is_method(cls),
      pybind11::doc(
          "All-reduce the tensors in place (torch.distributed.ProcessGroup.allreduce's forms). The common "
          "form, allreduce(tensors, AllreduceOptions), goes to the group's C++ backend directly "
          "(csrc/distributed/AllreduceMethod.h); the others through torch's binding."));
  pybind11::setattr(cls, "allreduce", method);
}

} // namespace torch_neuronx
