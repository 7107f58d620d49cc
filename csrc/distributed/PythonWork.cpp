#include "distributed/PythonWork.h"

#include <c10/util/Exception.h>
#include <torch/csrc/PyInterpreter.h>
#include <torch/csrc/utils/pybind.h>

#include <string>

namespace torch_neuronx {

PythonWork::PythonWork(const pybind11::object& work)
    : c10d::Work(-1, c10d::OpType::ALLREDUCE),
      inner_(work.cast<c10::intrusive_ptr<c10d::Work>>()),
      work_(work.inc_ref().ptr(), getPyInterpreter()) {}

pybind11::object PythonWork::call(const char* method) const {
  pybind11::gil_scoped_acquire gil;
  pybind11::handle work(work_.ptr(getPyInterpreter()));
  return work.attr(method)();
}

bool PythonWork::wait(std::chrono::milliseconds timeout) {
  // torch's trampoline (PyWork) calls the Python object's wait(timeout), which work_ keeps alive.
  return inner_->wait(timeout);
}

c10::intrusive_ptr<c10::ivalue::Future> PythonWork::getFuture() {
  return inner_->getFuture(); // the Python object's get_future(), through the same trampoline
}

bool PythonWork::isCompleted() {
  pybind11::gil_scoped_acquire gil;
  return call("is_completed").cast<bool>();
}

bool PythonWork::isSuccess() const {
  pybind11::gil_scoped_acquire gil;
  return call("is_success").cast<bool>();
}

std::exception_ptr PythonWork::exception() const {
  pybind11::gil_scoped_acquire gil;
  pybind11::object err = call("exception");
  if (err.is_none()) {
    return nullptr;
  }
  return std::make_exception_ptr(c10::DistBackendError(std::string(pybind11::str(err))));
}

std::vector<at::Tensor> PythonWork::result() {
  pybind11::gil_scoped_acquire gil;
  return call("result").cast<std::vector<at::Tensor>>();
}

int PythonWork::sourceRank() const {
  pybind11::gil_scoped_acquire gil;
  return call("source_rank").cast<int>();
}

void PythonWork::synchronize() {
  wait(kNoTimeout);
}

} // namespace torch_neuronx
