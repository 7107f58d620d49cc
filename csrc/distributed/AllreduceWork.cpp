#include "distributed/AllreduceWork.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/PyInterpreter.h>
#include <torch/csrc/utils/pybind.h>

#include <string>
#include <utility>

namespace torch_neuronx {

AllreduceWork::AllreduceWork(
    c10::intrusive_ptr<c10d::Work> transfer,
    std::vector<at::Tensor> result,
    c10::SafePyObject explain)
    : c10d::Work(-1, c10d::OpType::ALLREDUCE),
      transfer_(std::move(transfer)),
      result_(std::move(result)),
      explain_(std::move(explain)) {}

std::exception_ptr AllreduceWork::diagnose(const std::exception_ptr& err) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) {
      return error_;
    }
  }
  std::exception_ptr diagnosed;
  {
    pybind11::gil_scoped_acquire gil;
    try {
      // The transport error as Python code sees it (torch's own translation), then the diagnosis.
      try {
        std::rethrow_exception(err);
      } catch (...) {
        torch::translate_exception_to_python(std::current_exception());
      }
      pybind11::error_already_set transport;
      pybind11::handle explain(explain_.ptr(getPyInterpreter()));
      pybind11::object rewritten = explain(pybind11::str("all_reduce"), transport.value());
      std::string message = pybind11::str(rewritten);
      diagnosed = std::make_exception_ptr(c10::DistBackendError(message));
    } catch (const pybind11::error_already_set& e) {
      // The diagnosis itself failed (interpreter shutting down, store gone...): the transport error,
      // with what went wrong in the diagnosis added.
      std::string message = "all_reduce failed and its diagnosis raised " + std::string(e.what());
      try {
        std::rethrow_exception(err);
      } catch (const std::exception& original) {
        message += "; transport error: " + std::string(original.what());
      } catch (...) {
      }
      diagnosed = std::make_exception_ptr(c10::DistBackendError(message));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_) {
    error_ = diagnosed;
  }
  return error_;
}

bool AllreduceWork::isCompleted() {
  return transfer_->isCompleted();
}

bool AllreduceWork::isSuccess() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) {
      return false;
    }
  }
  return transfer_->isSuccess();
}

std::exception_ptr AllreduceWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

int AllreduceWork::sourceRank() const {
  return transfer_->sourceRank();
}

std::vector<at::Tensor> AllreduceWork::result() {
  return result_;
}

void AllreduceWork::synchronize() {
  wait(kNoTimeout);
}

bool AllreduceWork::wait(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) {
      std::rethrow_exception(error_);
    }
  }
  try {
    transfer_->wait(timeout);
  } catch (...) {
    std::rethrow_exception(diagnose(std::current_exception()));
  }
  return true;
}

void AllreduceWork::abort() {
  transfer_->abort();
}

c10::intrusive_ptr<c10::ivalue::Future> AllreduceWork::getFuture() {
  auto done = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  auto self = c10::intrusive_ptr<AllreduceWork>::reclaim_copy(this);
  transfer_->getFuture()->addCallback([self, done](c10::ivalue::Future& gloo) {
    if (gloo.hasError()) {
      done->setError(self->diagnose(gloo.exception_ptr()));
    } else {
      done->markCompleted(c10::IValue(self->result_));
    }
  });
  return done;
}

float AllreduceWork::getDuration() const {
  return transfer_->getDuration();
}

uint64_t AllreduceWork::getSequencenumber() const {
  return transfer_->getSequencenumber();
}

} // namespace torch_neuronx
