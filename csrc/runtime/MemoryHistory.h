// The allocation history of the software NeuronCore's device memory, recorded
// only while it is switched on (torch.neuron.memory._record_memory_history,
// torch_neuronx.memory_snapshot_start): every allocation and free of accounted
// device memory, with the Python stack that made it when stacks are on. The
// Python layer turns it, with the live blocks (DeviceAllocator.h), into
// PyTorch's memory snapshot format (torch_neuronx/device/snapshot.py).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Allocator.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace torch_neuronx {

// What happened to a block, in the order PyTorch's snapshot format names the
// caching allocator's actions. Each block of the software NeuronCore is its own
// segment, so an allocation is a segment_alloc followed by an alloc, and a free
// is free_requested, free_completed (execution is synchronous: the same
// instant) and segment_free.
enum class MemoryAction : uint8_t {
  SegmentAlloc,
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentFree,
};

struct MemoryTraceEntry {
  MemoryAction action;
  uintptr_t address;
  size_t size; // bytes of the block (the request rounded to 64 bytes)
  size_t requested; // bytes asked for
  c10::DeviceIndex device;
  int64_t time_us; // microseconds since the Unix epoch
  std::shared_ptr<c10::GatheredContext> context; // Python stack, or null
};

namespace detail {
extern std::atomic<bool> g_memory_history_on;
extern std::atomic<bool> g_memory_contexts_kept;
}

// True while the history is recorded.
inline bool memory_history_enabled() {
  return detail::g_memory_history_on.load(std::memory_order_relaxed);
}

// True when the allocator must report its allocations and frees: while the
// history is recorded, and afterwards while live blocks still have a recorded
// allocation stack (their address may be reused). Two relaxed loads: the
// allocator's hot path.
inline bool memory_history_touched() {
  return memory_history_enabled() ||
      detail::g_memory_contexts_kept.load(std::memory_order_relaxed);
}

// Switches the history on or off. `stacks`: capture the Python stack of every
// event. `max_entries`: events kept per device (the oldest are dropped).
// `clear`: drop what was recorded so far. Switching it off keeps the events
// recorded (a snapshot taken afterwards still shows them).
void set_memory_history(bool enabled, bool stacks, size_t max_entries, bool clear);

// The Python stack of the calling thread, or null when stacks are off. Called
// by the allocator before it takes its lock (gathering may take the GIL).
std::shared_ptr<c10::GatheredContext> gather_memory_context();

// Records an allocation / a free of `size` bytes (`requested` asked for) at
// `address` on core `device`.
void record_allocation(
    uintptr_t address, size_t size, size_t requested, c10::DeviceIndex device,
    std::shared_ptr<c10::GatheredContext> context);
void record_free(
    uintptr_t address, size_t size, size_t requested, c10::DeviceIndex device,
    std::shared_ptr<c10::GatheredContext> context);

// A copy of the events recorded, oldest first, every device.
std::vector<MemoryTraceEntry> memory_trace();

// The stack of the allocation that made the live block at `address`, or null.
std::shared_ptr<c10::GatheredContext> allocation_context(uintptr_t address);

} // namespace torch_neuronx
