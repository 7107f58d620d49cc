// The C++ c10d backend of a "neuron" process group, so that `dist.all_reduce` and DDP's bucket
// all-reduces reach gloo without running Python in the common case.
//
// The process group (torch_neuronx/distributed/process_group.py) is a Python subclass of
// c10d::ProcessGroup. It leaves `allreduce` to the C++ base class, whose method (called by
// `dist.all_reduce` through torch's binding, and by DDP's reducer directly) dispatches the op
// c10d::allreduce_; torch's kernel of that op for a neuron tensor (PrivateUse1) or a CPU tensor
// asks the group for its backend of that device and calls `allreduce` on it: this class, which
// the group registers for both devices (torch_neuronx._C._install_neuron_backend).
//
// allreduce runs the fast path (distributed/AllreduceFastPath.h: one contiguous tensor of a dtype
// gloo reduces, SUM, no dispatch mode) and hands everything else (other reductions, several or
// non-contiguous tensors, refusals, coalescing, torch_neuronx.estimate recording) to the group's
// Python general path, whose handle it returns as a PythonWork (distributed/PythonWork.h).
// The group's other collectives stay Python methods; this backend does not serve them.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SafePyObject.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <pybind11/pytypes.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace torch_neuronx {

class NeuronBackend : public c10d::Backend {
 public:
  // rank, size: the group's. gloo: its gloo transport. The Python callables (kept by strong
  // reference; they must not hold the group itself, or group and backend would keep each other
  // alive through C++, out of the garbage collector's sight):
  //   general(tensors: list[Tensor], opts: AllreduceOptions) -> torch.distributed.Work,
  //   explain(op: str, transport_error: BaseException) -> BaseException (the failure diagnosis).
  // estimate: the module torch_neuronx.estimate.active (its `current` is read on each call).
  // Call with the GIL held.
  NeuronBackend(
      int rank,
      int size,
      c10::intrusive_ptr<c10d::Backend> gloo,
      const pybind11::object& general,
      const pybind11::object& explain,
      const pybind11::object& estimate);

  const std::string getBackendName() const override;

  // all_reduce of `tensors` in place: the fast path's AllreduceWork, or the handle of the
  // group's general path (raises what it raises: TypeError, RuntimeError for PREMUL_SUM...).
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts)
      override;

  // What c10d asks a group's CPU backend besides its collectives, done by the gloo transport.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  void setTimeout(std::chrono::milliseconds timeout) override;

  // While on (between the group's _start_coalescing and _end_coalescing), every all_reduce
  // takes the general path, which records its handle for the coalesced one.
  void set_coalescing(bool on) {
    coalescing_.store(on, std::memory_order_relaxed);
  }

 private:
  bool estimating() const; // torch_neuronx.estimate is recording (GIL held)

  c10::intrusive_ptr<c10d::Backend> gloo_;
  c10::SafePyObject general_;
  c10::SafePyObject explain_;
  c10::SafePyObject estimate_dict_; // torch_neuronx.estimate.active.__dict__
  c10::SafePyObject current_; // the interned key "current"
  std::atomic<bool> coalescing_{false};
};

} // namespace torch_neuronx
