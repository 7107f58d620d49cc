// The handle the all_reduce fast path returns (csrc/distributed/AllreduceFastPath.h):
// a c10d::Work in C++, so the commonest collective of the "neuron" c10d backend
// creates no Python object of ours per call.
//
// It wraps gloo's work on the tensor's CPU alias (which keeps the alias, and so
// the neuron storage, alive until the transfer is done) and answers as the
// Python handle torch_neuronx.distributed.work.NeuronWork does for the same
// call: result() and the future's value are the caller's neuron tensors, not
// the aliases (DDP's reducer reads them); a failed transfer raises the error the
// process group's Python diagnosis (NeuronProcessGroup._explain) builds, which
// names the rank that stopped, as a DistBackendError, from wait() and from the
// future alike. The diagnosis runs on failure only, with the GIL taken then.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SafePyObject.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <exception>
#include <vector>

namespace torch_neuronx {

class AllreduceWork : public c10d::Work {
 public:
  // `transfer`: gloo's work doing the all_reduce. `result`: the caller's tensors
  // (what result() and the future return). `explain`: a Python callable
  // explain(op: str, transport_error: BaseException) -> BaseException.
  AllreduceWork(
      c10::intrusive_ptr<c10d::Work> transfer,
      std::vector<at::Tensor> result,
      c10::SafePyObject explain);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  // Blocks until the transfer completed (`timeout` 0: the group's own).
  // Throws c10::DistBackendError with the diagnosis's message on failure.
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;
  // A future of the result tensors; on failure it holds the diagnosed error.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  float getDuration() const override;
  uint64_t getSequencenumber() const override;

  // The gloo work (for tests: its result() is the CPU alias).
  const c10::intrusive_ptr<c10d::Work>& transfer() const {
    return transfer_;
  }

 private:
  // The diagnosed error for transport error `err` (computed once, then reused).
  std::exception_ptr diagnose(const std::exception_ptr& err);

  c10::intrusive_ptr<c10d::Work> transfer_;
  std::vector<at::Tensor> result_;
  c10::SafePyObject explain_;
  std::exception_ptr error_; // guarded by mutex_ (the base class's)
};

} // namespace torch_neuronx
