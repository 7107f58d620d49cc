#include "runtime/MemoryHistory.h"

#include <torch/csrc/profiler/combined_traceback.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace torch_neuronx {
namespace detail {
std::atomic<bool> g_memory_history_on{false};
std::atomic<bool> g_memory_contexts_kept{false};
}

namespace {

struct History {
  std::mutex mutex;
  bool stacks = false;
  size_t max_entries = 0;
  // Per device, oldest first.
  std::unordered_map<c10::DeviceIndex, std::deque<MemoryTraceEntry>> events;
  // The allocation stack of each live block recorded while the history was on.
  std::unordered_map<uintptr_t, std::shared_ptr<c10::GatheredContext>> contexts;
};

History& history() {
  static History* h = new History(); // leaked on purpose: frees run until exit
  return *h;
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void update_kept_locked(History& h) {
  detail::g_memory_contexts_kept.store(!h.contexts.empty(), std::memory_order_relaxed);
}

void push_locked(History& h, MemoryTraceEntry entry) {
  std::deque<MemoryTraceEntry>& events = h.events[entry.device];
  events.push_back(std::move(entry));
  while (events.size() > h.max_entries) {
    events.pop_front();
  }
}

} // namespace

void set_memory_history(bool enabled, bool stacks, size_t max_entries, bool clear) {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (clear) {
    h.events.clear();
    h.contexts.clear();
    update_kept_locked(h);
  }
  h.stacks = enabled && stacks;
  h.max_entries = max_entries;
  detail::g_memory_history_on.store(enabled, std::memory_order_relaxed);
}

std::shared_ptr<c10::GatheredContext> gather_memory_context() {
  bool stacks = false;
  {
    History& h = history();
    std::lock_guard<std::mutex> lock(h.mutex);
    stacks = h.stacks;
  }
  if (!stacks) {
    return nullptr;
  }
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false);
}

namespace {

// The one recorder of both block events: the stack of a block made while the history is on is
// kept for snapshots (any other stack at its address is stale and dropped), and, while the
// history is on, the block's events are appended: SegmentAlloc + Alloc when it is made,
// FreeRequested + FreeCompleted + SegmentFree when it is freed (execution is synchronous, so a
// free completes when requested).
void record_block(
    bool made, uintptr_t address, size_t size, size_t requested, c10::DeviceIndex device,
    std::shared_ptr<c10::GatheredContext> context) {
  History& h = history();
  const int64_t t = now_us();
  std::lock_guard<std::mutex> lock(h.mutex);
  const bool enabled = memory_history_enabled();
  if (made && enabled && context) {
    h.contexts[address] = context;
  } else {
    h.contexts.erase(address);
  }
  update_kept_locked(h);
  if (!enabled) {
    return;
  }
  static constexpr MemoryAction kMade[] = {MemoryAction::SegmentAlloc, MemoryAction::Alloc};
  static constexpr MemoryAction kFreed[] = {
      MemoryAction::FreeRequested, MemoryAction::FreeCompleted, MemoryAction::SegmentFree};
  const auto push = [&](const auto& actions) {
    for (const MemoryAction action : actions) {
      push_locked(h, {action, address, size, requested, device, t, context});
    }
  };
  made ? push(kMade) : push(kFreed);
}

} // namespace

void record_allocation(
    uintptr_t address, size_t size, size_t requested, c10::DeviceIndex device,
    std::shared_ptr<c10::GatheredContext> context) {
  record_block(true, address, size, requested, device, std::move(context));
}

void record_free(
    uintptr_t address, size_t size, size_t requested, c10::DeviceIndex device,
    std::shared_ptr<c10::GatheredContext> context) {
  record_block(false, address, size, requested, device, std::move(context));
}

std::vector<MemoryTraceEntry> memory_trace() {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mutex);
  std::vector<MemoryTraceEntry> out;
  for (const auto& [device, events] : h.events) {
    out.insert(out.end(), events.begin(), events.end());
  }
  return out;
}

std::shared_ptr<c10::GatheredContext> allocation_context(uintptr_t address) {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.contexts.find(address);
  return it == h.contexts.end() ? nullptr : it->second;
}

} // namespace torch_neuronx
