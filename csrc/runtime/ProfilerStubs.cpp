// The device side of PyTorch's autograd profiler for `neuron`
// (torch.autograd.profiler.profile(use_device="neuron"), and torch.profiler's
// PrivateUse1 fallback state): PrivateUse1's registered ProfilerStubs. Without
// them every op recorded under that profiler raises "PrivateUse1 used in profiler
// but not enabled" inside the RecordFunction callback, and the events keep
// unset device times (huge negative totals in key_averages()).
//
// The software NeuronCore runs each op to completion before it returns, so a
// device event is a host timestamp taken when it is recorded (as runtime/Event
// does for torch.Event), and the time between two of them is the device time.
#include "runtime/Runtime.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <chrono>
#include <memory>

namespace torch_neuronx {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct NeuronProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  // `device`: the current core; `event`: the device timestamp (ns);
  // `cpu_ns`: the profiler's CPU clock at the same moment.
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns)
      const override {
    if (device != nullptr) {
      *device = current_device();
    }
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
    *event = std::make_shared<int64_t>(steady_ns());
  }
  // Microseconds from `event` to `event2` (CUDA's stubs report µs too).
  float elapsed(const ProfilerVoidEventStub* event, const ProfilerVoidEventStub* event2)
      const override {
    TORCH_CHECK(
        event != nullptr && event2 != nullptr && *event && *event2,
        "neuron profiler: both events must be recorded before measuring the time between them");
    const int64_t start = *static_cast<const int64_t*>(event->get());
    const int64_t end = *static_cast<const int64_t*>(event2->get());
    return static_cast<float>(end - start) / 1000.0f;
  }
  // No range or marker API to forward to: the trace is the profiler's own.
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override {
    return true;
  }
  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex count = device_count();
    for (c10::DeviceIndex i = 0; i < count; ++i) {
      c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, i));
      op(i);
    }
  }
  // Execution is synchronous: nothing is ever pending.
  void synchronize() const override {}
};

struct RegisterProfilerStubs {
  RegisterProfilerStubs() {
    static NeuronProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
};
static RegisterProfilerStubs g_register_profiler_stubs;

} // namespace
} // namespace torch_neuronx
