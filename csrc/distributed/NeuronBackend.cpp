#include "distributed/NeuronBackend.h"

#include "distributed/AllreduceFastPath.h"
#include "distributed/PythonWork.h"

#include <torch/csrc/PyInterpreter.h>
#include <torch/csrc/utils/pybind.h>

#include <utility>

namespace torch_neuronx {

namespace {

c10::SafePyObject keep(const pybind11::handle& obj) {
  return c10::SafePyObject(obj.inc_ref().ptr(), getPyInterpreter());
}

} // namespace

NeuronBackend::NeuronBackend(
    int rank,
    int size,
    c10::intrusive_ptr<c10d::Backend> gloo,
    const pybind11::object& general,
    const pybind11::object& explain,
    const pybind11::object& estimate)
    : c10d::Backend(rank, size),
      gloo_(std::move(gloo)),
      general_(keep(general)),
      explain_(keep(explain)),
      estimate_dict_(keep(estimate.attr("__dict__"))),
      current_(keep(pybind11::str("current"))) {}

const std::string NeuronBackend::getBackendName() const {
  return "neuron";
}

bool NeuronBackend::estimating() const {
  PyObject* session = PyDict_GetItem(estimate_dict_.ptr(getPyInterpreter()), current_.ptr(getPyInterpreter()));
  return session != nullptr && session != Py_None;
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::allreduce(
    std::vector<at::Tensor>& tensors,
    const c10d::AllreduceOptions& opts) {
  // Held already when the call comes through the Python group's C++ methods (torch's trampoline
  // takes it); taken here for a caller that dispatched c10d::allreduce_ without it.
  pybind11::gil_scoped_acquire gil;
  if (!coalescing_.load(std::memory_order_relaxed) && !estimating()) {
    c10::intrusive_ptr<c10d::Work> work =
        allreduce_alias(gloo_, tensors, opts, pybind11::handle(explain_.ptr(getPyInterpreter())));
    if (work) {
      return work;
    }
  }
  pybind11::handle general(general_.ptr(getPyInterpreter()));
  pybind11::object handle = general(tensors, opts);
  return c10::make_intrusive<PythonWork>(handle);
}

void NeuronBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  gloo_->monitoredBarrier(opts, waitAllRanks);
}

void NeuronBackend::setTimeout(std::chrono::milliseconds timeout) {
  gloo_->setTimeout(timeout);
}

} // namespace torch_neuronx
