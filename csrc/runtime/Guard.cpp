// DeviceGuardImpl for `neuron`: a real per-thread current device (so
// torch.accelerator.set_device_index, torch.neuron.device(i) and neuron:i all
// work), streams and events. The software NeuronCore executes every op
// synchronously, so streams order nothing and events record host timestamps.
#include "runtime/Runtime.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <unordered_map>

namespace torch_neuronx {
namespace {

struct EventRecord {
  std::chrono::steady_clock::time_point when;
  bool recorded = false;
  bool timing = false;
};

thread_local std::unordered_map<int, c10::StreamId> t_current_stream;
std::atomic<c10::StreamId> g_next_stream{1};

class NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override {
    return kNeuron;
  }
  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNeuron, "expected a neuron device, got ", d);
    const c10::Device old = getDevice();
    if (d.index() != old.index()) {
      set_current_device(d.index());
    }
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kNeuron, current_device());
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNeuron, "expected a neuron device, got ", d);
    set_current_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index());
    } catch (...) {
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    const int idx = d.has_index() ? d.index() : current_device();
    auto it = t_current_stream.find(idx);
    const c10::StreamId id = it == t_current_stream.end() ? 0 : it->second;
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, idx), id);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    const int idx = d.has_index() ? d.index() : current_device();
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kNeuron, idx));
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    const int idx = check_device(d.has_index() ? d.index() : current_device());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, idx), g_next_stream++);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    const c10::Stream old = getStream(s.device());
    t_current_stream[s.device_index()] = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }
  void record(
      void** event,
      const c10::Stream& /*stream*/,
      const c10::DeviceIndex /*device_index*/,
      const c10::EventFlag flag) const override {
    auto* rec = static_cast<EventRecord*>(*event);
    if (rec == nullptr) {
      rec = new EventRecord();
      *event = rec;
    }
    rec->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    rec->when = std::chrono::steady_clock::now();
    rec->recorded = true;
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<EventRecord*>(event);
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override {}
  void recordDataPtrOnStream(const c10::DataPtr& /*data_ptr*/, const c10::Stream& /*stream*/)
      const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/)
      const override {
    auto* a = static_cast<EventRecord*>(start);
    auto* b = static_cast<EventRecord*>(end);
    TORCH_CHECK(
        a != nullptr && b != nullptr && a->recorded && b->recorded,
        "elapsed_time: both events must be recorded before measuring the time between them");
    TORCH_CHECK(
        a->timing && b->timing,
        "elapsed_time: both events must be created with enable_timing=True");
    return std::chrono::duration<double, std::milli>(b->when - a->when).count();
  }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

} // namespace torch_neuronx
