#include "runtime/AutogradThreads.h"

#include "runtime/Runtime.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/autograd.h>

#include <exception>
#include <thread>

namespace torch_neuronx {

void flush_autograd_device_threads(c10::DeviceIndex count) {
  std::exception_ptr error;
  // A fresh thread: its thread-local state (grad mode, saved-tensor hooks,
  // Python modes, stashed Python objects) is empty, so the GraphTask built
  // below captures no Python object that its release would need the GIL for.
  std::thread worker([count, &error]() {
    try {
      for (c10::DeviceIndex d = 0; d < count; ++d) {
        const at::Tensor x =
            at::zeros({}, at::TensorOptions().device(c10::Device(kNeuron, d))).requires_grad_(true);
        const at::Tensor y = at::mul(x, 2.0);
        torch::autograd::backward({y});
      }
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) {
    std::rethrow_exception(error);
  }
}

} // namespace torch_neuronx
