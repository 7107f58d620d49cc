#include "aten/Tracking.h"

#include <c10/util/flat_hash_map.h>

#include <mutex>

namespace torch_neuronx {
namespace {

struct Entry {
  std::string name;
  uint64_t executed = 0;
  uint64_t fallback = 0;
};

std::mutex g_mutex;
ska::flat_hash_map<const void*, Entry>& table() {
  static auto* t = new ska::flat_hash_map<const void*, Entry>();
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

template <typename Name>
void track(const void* key, const Name& name, bool host_fallback) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& t = table();
  auto it = t.find(key);
  if (it == t.end()) {
    it = t.emplace(key, Entry{name_of(name), 0, 0}).first;
  }
  it->second.executed += 1;
  if (host_fallback) {
    it->second.fallback += 1;
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
    if (kv.second.executed == 0) {
      continue;
    }
    auto& slot = out[kv.second.name];
    slot.first += kv.second.executed;
    slot.second += kv.second.fallback;
  }
  return out;
}

void clear_op_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& kv : table()) {
    kv.second.executed = 0;
    kv.second.fallback = 0;
  }
}

} // namespace torch_neuronx
