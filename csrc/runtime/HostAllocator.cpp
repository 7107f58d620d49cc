#include "runtime/HostAllocator.h"

#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/flat_hash_map.h>

#include <cstring>
#include <mutex>

namespace torch_neuronx {
namespace {

std::mutex g_pinned_mutex;
ska::flat_hash_set<void*>& pinned_set() {
  static auto* s = new ska::flat_hash_set<void*>();
  return *s;
}

void free_pinned(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    pinned_set().erase(ptr);
  }
  c10::free_cpu(ptr);
}

class PinnedHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    if (ptr) {
      std::lock_guard<std::mutex> lock(g_pinned_mutex);
      pinned_set().insert(ptr);
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedHostAllocator g_pinned_allocator;

} // namespace

c10::Allocator* pinned_host_allocator() {
  return &g_pinned_allocator;
}

bool is_pinned_ptr(const void* ptr) {
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  return pinned_set().count(const_cast<void*>(ptr)) > 0;
}

} // namespace torch_neuronx
