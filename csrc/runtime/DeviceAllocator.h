// Device memory of the software NeuronCore: shared host memory (SharedArena.h)
// owned by this allocator and accounted per logical core (allocated, reserved,
// peak), with the core's HBM capacity enforced (torch.OutOfMemoryError past it). Also the
// routing CPU allocator, through which CPU kernels running for a neuron op
// allocate accounted device memory, and storage resize.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <vector>

namespace torch_neuronx {

// The PrivateUse1 allocator (registered with REGISTER_ALLOCATOR). allocate()
// places memory on the calling thread's current neuron device.
c10::DeviceAllocator* neuron_allocator();

// Allocates `nbytes` accounted to logical core `device`, returning a DataPtr
// whose device is `ptr_device` (kCPU while a CPU kernel is running inside the
// fallback, the neuron device otherwise). Raises c10::OutOfMemoryError when
// the core's capacity would be exceeded.
c10::DataPtr allocate_accounted(
    size_t nbytes,
    c10::DeviceIndex device,
    c10::Device ptr_device);

// True when `deleter` is the deleter of accounted neuron memory.
bool is_accounted_deleter(c10::DeleterFnPtr deleter);

// Device (neuron:i) that owns `ptr`, or CPU if `ptr` is not device memory.
c10::Device device_of_ptr(const void* ptr);

// While alive, CPU allocations made on this thread are accounted to `device`
// (used by the boxed fallback so CPU kernels' results are device memory).
class RouteAllocationsTo {
 public:
  explicit RouteAllocationsTo(c10::DeviceIndex device);
  ~RouteAllocationsTo();
  RouteAllocationsTo(const RouteAllocationsTo&) = delete;
  RouteAllocationsTo& operator=(const RouteAllocationsTo&) = delete;

 private:
  c10::DeviceIndex previous_;
};

// The CPU allocator installed by this extension (it routes to accounted memory
// inside the fallback and to the original CPU allocator otherwise).
c10::Allocator* routing_cpu_allocator();

// Resizes a neuron storage to `new_nbytes` (used by resize_ and by
// UntypedStorage.resize_, which FSDP2 uses to free unsharded parameters).
void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes);
// A function that runs the device's deferred work, or nullptr. Adaptive eager
// execution (aten/AdaptiveEager.cpp, a layer above) sets it to run its queued
// ops. It is called before every storage resize (resize_storage_bytes: a queued
// op may read the storage that UntypedStorage.resize_, FSDP2's reshard/unshard,
// frees or replaces) and before the allocator's statistics are read or reset
// (torch.accelerator.memory_stats / memory_allocated / get_memory_info and the
// resets: queued ops hold their inputs, and their results are not allocated
// yet, so the counters agree with op-by-op execution only after the queue ran).
void set_run_deferred_work(void (*fn)());

// The memory file (memfd) holding neuron storage `storage`, for sending the
// storage to another process: a storage not yet in a file of its own moves into
// one first (one copy; same accounting; its data pointer changes, as CPU's
// share_memory_() does). The fd stays owned by the storage.
int share_storage_fd(const c10::Storage& storage);

// A neuron storage of `nbytes` on `device` backed by the memory file `fd`
// (received from another process; this takes ownership of fd). It is accounted
// to the core like an allocation and shares its memory with the sender.
c10::Storage import_shared_storage(int fd, size_t nbytes, c10::DeviceIndex device);

// Per-device counters in bytes.
struct MemoryCounters {
  int64_t allocated = 0;
  int64_t peak_allocated = 0;
  int64_t reserved = 0;
  int64_t peak_reserved = 0;
  int64_t num_allocs = 0;
  int64_t num_frees = 0;
  int64_t num_ooms = 0;
  int64_t capacity = 0;
};
MemoryCounters memory_counters(c10::DeviceIndex device);

// A live block of device memory: its address, the bytes asked for and the
// bytes it takes on its core (rounded up to the 64-byte granule).
struct LiveBlock {
  uintptr_t address;
  size_t nbytes;
  size_t reserved;
  c10::DeviceIndex device;
};
// Every live block of every core, by address (the memory snapshot's segments).
std::vector<LiveBlock> live_blocks();

} // namespace torch_neuronx
