#include "aten/Tracking.h"

#include "runtime/Log.h"

#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

namespace torch_neuronx {
namespace {

// One op's counters. Entries are created once per key and never freed, so a
// pointer to one stays valid; the counts are atomics, so counting needs no lock.
struct Entry {
  std::string name;
  std::atomic<uint64_t> executed{0};
  std::atomic<uint64_t> fallback{0};
  // Set by the first host-fallback run, which is logged (once per op per process).
  std::atomic<bool> fallback_logged{false};
};

// key -> entry. The mutex guards the map only (adding an op, listing, clearing).
std::mutex g_mutex;
ska::flat_hash_map<const void*, std::unique_ptr<Entry>>& table() {
  static auto* t = new ska::flat_hash_map<const void*, std::unique_ptr<Entry>>();
  return *t;
}

std::string name_of(const char* name) {
  return name;
}
std::string name_of(const std::string& name) {
  return name;
}
std::string name_of(const c10::OperatorName& name) {
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// A direct-mapped cache of key -> entry per thread: an op seen before is
// counted without the lock or the map (every eager op runs this).
constexpr size_t kCacheSlots = 256;
struct CacheSlot {
  const void* key = nullptr;
  Entry* entry = nullptr;
};
thread_local CacheSlot t_cache[kCacheSlots];

size_t slot_of(const void* key) {
  const auto bits = reinterpret_cast<uintptr_t>(key);
  return ((bits >> 4) ^ (bits >> 12)) & (kCacheSlots - 1);
}

template <typename Name>
Entry* find_or_add(const void* key, const Name& name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& t = table();
  auto it = t.find(key);
  if (it == t.end()) {
    auto entry = std::make_unique<Entry>();
    entry->name = name_of(name);
    it = t.emplace(key, std::move(entry)).first;
  }
  return it->second.get();
}

// The INFO record of an op's first host-fallback run (no lock of this file is held).
C10_NOINLINE void log_first_fallback(const std::string& name) {
  log_record(
      LogLevel::Info, "torch_neuronx.ops.tracking",
      name + " ran as a host fallback (float64/complex work: NeuronCore engines have neither, so "
             "Trainium runs it on the host CPU); logged at its first run, every run is counted in "
             "torch_neuronx.get_fallback_ops()");
}

template <typename Name>
void track(const void* key, const Name& name, bool host_fallback) {
  CacheSlot& slot = t_cache[slot_of(key)];
  Entry* entry = slot.entry;
  if (C10_UNLIKELY(slot.key != key)) {
    entry = find_or_add(key, name);
    slot.key = key;
    slot.entry = entry;
  }
  entry->executed.fetch_add(1, std::memory_order_relaxed);
  if (host_fallback) {
    entry->fallback.fetch_add(1, std::memory_order_relaxed);
    if (C10_UNLIKELY(!entry->fallback_logged.load(std::memory_order_relaxed)) &&
        !entry->fallback_logged.exchange(true)) {
      log_first_fallback(entry->name);
    }
  }
}

} // namespace

void track_op(const void* key, const char* name, bool host_fallback) {
  track(key, name, host_fallback);
}

void track_op(const void* key, const std::string& name, bool host_fallback) {
  track(key, name, host_fallback);
}

void track_op(const void* key, const c10::OperatorName& name, bool host_fallback) {
  track(key, name, host_fallback);
}

std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> op_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> out;
  for (const auto& kv : table()) {
    const uint64_t executed = kv.second->executed.load(std::memory_order_relaxed);
    if (executed == 0) {
      continue;
    }
    auto& slot = out[kv.second->name];
    slot.first += executed;
    slot.second += kv.second->fallback.load(std::memory_order_relaxed);
  }
  return out;
}

void clear_op_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& kv : table()) {
    kv.second->executed.store(0, std::memory_order_relaxed);
    kv.second->fallback.store(0, std::memory_order_relaxed);
  }
}

} // namespace torch_neuronx
