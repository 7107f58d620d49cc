#include "runtime/Event.h"

#include <c10/util/Exception.h>

#include <chrono>

namespace torch_neuronx {
namespace {

struct EventRecord {
  std::chrono::steady_clock::time_point when;
  bool recorded = false;
  bool timing = false;
};

} // namespace

void record_event(void** event, bool timing) {
  auto* rec = static_cast<EventRecord*>(*event);
  if (rec == nullptr) {
    rec = new EventRecord();
    *event = rec;
  }
  rec->timing = timing;
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
  return std::chrono::duration<double, std::milli>(b->when - a->when).count();
}

} // namespace torch_neuronx
