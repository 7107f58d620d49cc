#include "runtime/Stream.h"

#include <atomic>
#include <unordered_map>

namespace torch_neuronx {
namespace {

thread_local std::unordered_map<int, c10::StreamId> t_current_stream;
std::atomic<c10::StreamId> g_next_stream{1};

} // namespace

c10::StreamId current_stream_id(c10::DeviceIndex index) {
  auto it = t_current_stream.find(index);
  return it == t_current_stream.end() ? 0 : it->second;
}

c10::StreamId exchange_stream_id(c10::DeviceIndex index, c10::StreamId id) {
  c10::StreamId& slot = t_current_stream[index];
  const c10::StreamId previous = slot;
  slot = id;
  return previous;
}

c10::StreamId new_stream_id() {
  return g_next_stream++;
}

} // namespace torch_neuronx
