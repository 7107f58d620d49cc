#include "runtime/HostAllocator.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/llvmMathExtras.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

namespace torch_neuronx {
namespace {

using Clock = std::chrono::steady_clock;

int64_t micros_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

// Live pinned blocks (start address -> bytes), ordered so that an address inside a block finds it,
// and the statistics torch.cuda.host_memory_stats() reports on CUDA, under one mutex. Nothing is cached: a freed block goes back to the host at once, so
// every allocation is a host allocation and empty_cache() has nothing to release.
struct PinnedState {
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;
  at::HostStats stats;
};

PinnedState& state() {
  static auto* s = new PinnedState();  // never destroyed: blocks may be freed at exit
  return *s;
}

void free_pinned(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  auto& st = state();
  {
    // Forget the block before the host may hand its address out again.
    std::lock_guard<std::mutex> lock(st.mutex);
    auto it = st.live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it != st.live.end()) {
      const size_t bytes = it->second;
      st.live.erase(it);
      st.stats.active_requests.decrease(1);
      st.stats.active_bytes.decrease(bytes);
      st.stats.allocations.decrease(1);
      st.stats.allocated_bytes.decrease(bytes);
      st.stats.num_host_free += 1;
    }
  }
  const auto start = Clock::now();
  c10::free_cpu(ptr);
  const int64_t took = micros_since(start);
  std::lock_guard<std::mutex> lock(st.mutex);
  st.stats.host_free_time.increase(took);
}

// at::HostAllocator for PrivateUse1: what tensor.pin_memory(), DataLoader(pin_memory=True) and
// torch.accelerator.empty_host_cache() reach. The device runs synchronously, so a pinned block
// never waits on a stream: record_event has nothing to record.
class PinnedHostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nullptr;
    if (nbytes) {
      const auto start = Clock::now();
      ptr = c10::alloc_cpu(nbytes);
      const int64_t took = micros_since(start);
      auto& st = state();
      std::lock_guard<std::mutex> lock(st.mutex);
      st.live.emplace(reinterpret_cast<uintptr_t>(ptr), nbytes);
      st.stats.active_requests.increase(1);
      st.stats.active_bytes.increase(nbytes);
      st.stats.allocations.increase(1);
      st.stats.allocated_bytes.increase(nbytes);
      st.stats.host_alloc_time.increase(took);
      st.stats.num_host_alloc += 1;
      const size_t bucket = c10::llvm::Log2_64_Ceil(nbytes);
      if (bucket < st.stats.bucket_allocation.size()) {
        st.stats.bucket_allocation[bucket] += 1;
      }
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  bool record_event(void* /*ptr*/, void* /*ctx*/, c10::Stream /*stream*/) override {
    return true;
  }
  void empty_cache() override {}
  at::HostStats get_stats() override {
    auto& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    return st.stats;
  }
  void reset_accumulated_stats() override {
    auto& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    each_stat(st.stats, [](auto& stat) { stat.reset_accumulated(); });
    st.stats.num_host_alloc = 0;
    st.stats.num_host_free = 0;
    std::fill(st.stats.bucket_allocation.begin(), st.stats.bucket_allocation.end(), 0);
  }
  void reset_peak_stats() override {
    auto& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    each_stat(st.stats, [](auto& stat) { stat.reset_peak(); });
  }

 private:
  // Calls `fn` on each Stat and DurationStat of `stats`.
  template <typename Fn>
  static void each_stat(at::HostStats& stats, Fn&& fn) {
    fn(stats.active_requests);
    fn(stats.active_bytes);
    fn(stats.allocations);
    fn(stats.allocated_bytes);
    fn(stats.host_alloc_time);
    fn(stats.host_free_time);
  }
};

PinnedHostAllocator g_pinned_allocator;

}  // namespace

// Registered as PrivateUse1's host allocator: without one, torch.accelerator.empty_host_cache()
// dereferences an empty registry slot (a segmentation fault in torch 2.13).
REGISTER_HOST_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_pinned_allocator)

c10::Allocator* pinned_host_allocator() {
  return &g_pinned_allocator;
}

bool is_pinned_ptr(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  // The last block starting at or before `ptr`, if `ptr` falls inside it.
  auto it = st.live.upper_bound(address);
  if (it == st.live.begin()) {
    return false;
  }
  --it;
  return address - it->first < it->second;
}

at::HostStats pinned_host_stats() {
  return g_pinned_allocator.get_stats();
}

void reset_pinned_host_stats(bool peak_only) {
  if (!peak_only) {
    g_pinned_allocator.reset_accumulated_stats();
  }
  g_pinned_allocator.reset_peak_stats();
}

}  // namespace torch_neuronx
