#include "runtime/Runtime.h"

#include <atomic>
#include <c10/util/Exception.h>
#include <mutex>

namespace torch_neuronx {
namespace {

std::atomic<int> g_device_count{0};
std::atomic<int64_t> g_hbm_bytes{0};
std::atomic<int> g_default_device{0};
std::mutex g_text_mutex;
std::string g_description = "software NeuronCore topology not initialised";
std::string g_error;
std::atomic<bool> g_has_error{false};

thread_local int t_current_device = -1;

// torch.neuron.set_per_process_memory_fraction: share of a core's HBM this
// process may use (1.0 = all of it).
std::atomic<double> g_fraction[256];
struct InitFractions {
  InitFractions() {
    for (auto& f : g_fraction) {
      f = 1.0;
    }
  }
} g_init_fractions;

} // namespace

void set_topology(
    int device_count,
    int64_t hbm_bytes_per_core,
    const std::string& description,
    const std::string& error,
    int default_device) {
  std::lock_guard<std::mutex> lock(g_text_mutex);
  g_description = description;
  g_error = error;
  g_has_error = !error.empty();
  g_device_count = error.empty() ? device_count : 0;
  g_hbm_bytes = hbm_bytes_per_core;
  g_default_device = default_device;
}

c10::DeviceIndex device_count() noexcept {
  return static_cast<c10::DeviceIndex>(g_device_count.load());
}

double memory_fraction(c10::DeviceIndex index) {
  return index >= 0 && index < 256 ? g_fraction[index].load() : 1.0;
}

int64_t hbm_bytes_per_core() {
  return g_hbm_bytes.load();
}

int64_t hbm_capacity(c10::DeviceIndex index) {
  return static_cast<int64_t>(static_cast<double>(g_hbm_bytes.load()) * memory_fraction(index));
}

void set_memory_fraction(c10::DeviceIndex index, double fraction) {
  index = check_device(index);
  TORCH_CHECK(
      fraction > 0.0 && fraction <= 1.0,
      "Invalid memory fraction ", fraction, ": it must be in (0, 1]");
  g_fraction[index] = fraction;
}

const std::string& topology_description() {
  return g_description;
}

c10::DeviceIndex check_device(c10::DeviceIndex index) {
  if (C10_UNLIKELY(g_has_error.load())) {
    std::lock_guard<std::mutex> lock(g_text_mutex);
    TORCH_CHECK(false, g_error);
  }
  if (index < 0) {
    index = current_device();
  }
  const int count = g_device_count.load();
  TORCH_CHECK(
      index >= 0 && index < count,
      "Invalid device neuron:",
      static_cast<int>(index),
      ": ",
      count,
      " logical NeuronCore(s) are visible (",
      g_description,
      "). Use an index in [0, ",
      count,
      "), or make more cores visible with NEURON_RT_VISIBLE_CORES / TORCH_NEURONX_CHIPS.");
  return index;
}

c10::DeviceIndex current_device() {
  const int d = t_current_device >= 0 ? t_current_device : g_default_device.load();
  return static_cast<c10::DeviceIndex>(d);
}

void set_current_device(c10::DeviceIndex index) {
  t_current_device = check_device(index);
}

} // namespace torch_neuronx
