// A c10d::Work over a Python handle (torch_neuronx.distributed.work.NeuronWork), for the
// collectives NeuronBackend (distributed/NeuronBackend.h) hands to the process group's Python
// general path.
//
// torch's own wrapper for a Python work (PyProcessGroup::PyWorkHolder) forwards wait() and the
// future only; a Python caller of `dist.all_reduce(..., async_op=True)` also asks the handle
// is_completed(), is_success(), result()... which the Python handle answers. This class
// forwards each of them to the Python object (taking the GIL), and keeps that object alive as
// long as the C++ work is (DDP's reducer holds the work, not the Python object).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SafePyObject.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <pybind11/pytypes.h>

#include <chrono>
#include <exception>
#include <vector>

namespace torch_neuronx {

class PythonWork : public c10d::Work {
 public:
  // `work`: a Python object of a torch.distributed.Work subclass. Call with the GIL held.
  explicit PythonWork(const pybind11::object& work);

  // Blocks until the collective completed (the Python handle's wait(timeout); 0: the group's).
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  bool isCompleted() override;
  bool isSuccess() const override;
  // The Python handle's exception() (None: no error) as a c10::DistBackendError with its message.
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  int sourceRank() const override;
  void synchronize() override;

 private:
  pybind11::object call(const char* method) const; // work.<method>() with the GIL

  c10::intrusive_ptr<c10d::Work> inner_; // the C++ part of the Python object (torch's PyWork)
  c10::SafePyObject work_;
};

} // namespace torch_neuronx
