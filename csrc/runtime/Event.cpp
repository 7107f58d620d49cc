#include "runtime/Event.h"

#include <c10/util/Exception.h>

#include <chrono>

namespace torch_neuronx {
namespace {

struct EventRecord {
  std::chrono::steady_clock::time_point when;
  bool recorded = false;
  bool timing = false;
  c10::DeviceIndex device = -1;
};

} // namespace

void record_event(void** event, bool timing, c10::DeviceIndex device) {
  auto* rec = static_cast<EventRecord*>(*event);
  if (rec == nullptr) {
    rec = new EventRecord();
    *event = rec;
  }
  rec->timing = timing;
  rec->device = device;
  rec->when = std::chrono::steady_clock::now();
  rec->recorded = true;
}

void destroy_event(void* event) noexcept {
  delete static_cast<EventRecord*>(event);
}

double event_elapsed_ms(void* start, void* end) {
  auto* a = static_cast<EventRecord*>(start);
  auto* b = static_cast<EventRecord*>(end);
  TORCH_CHECK(
      a != nullptr && b != nullptr && a->recorded && b->recorded,
      "elapsed_time: both events must be recorded before measuring the time between them");
  TORCH_CHECK(
      a->timing && b->timing,
      "elapsed_time: both events must be created with enable_timing=True");
  // Each NeuronCore (like each CUDA device) keeps its own time: an interval
  // between events of two cores is refused, as CUDA refuses it.
  TORCH_CHECK_VALUE(
      a->device == b->device,
      "elapsed_time: the events were recorded on different NeuronCores (neuron:",
      static_cast<int>(a->device),
      " and neuron:",
      static_cast<int>(b->device),
      "); time an interval with two events recorded on the same core, e.g. in a "
      "torch.neuron.device(i) block or on streams of one core");
  return std::chrono::duration<double, std::milli>(b->when - a->when).count();
}

} // namespace torch_neuronx
