#include "runtime/DeviceAllocator.h"
#include "runtime/Log.h"
#include "runtime/MemoryHistory.h"

#include "runtime/Runtime.h"
#include "runtime/SharedArena.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iomanip>
#include <mutex>
#include <pthread.h>
#include <unistd.h>
#include <sstream>
#include <vector>

namespace torch_neuronx {
namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingAllocator::StatType;

constexpr size_t kAgg = static_cast<size_t>(StatType::AGGREGATE);
// The pool statistics (memory_stats' small_pool / large_pool): Trainium's
// caching segment allocator serves requests below 1 MB from its small pool and
// the others from its large pool (AWS Neuron documentation, "Guidelines for
// memory management"; the same split as CUDA's). The software NeuronCore gives
// every block its own memory, so the split only classifies what is counted.
constexpr size_t kSmallPoolLimit = size_t(1) << 20;
inline size_t pool_of(size_t nbytes) {
  return static_cast<size_t>(nbytes < kSmallPoolLimit ? StatType::SMALL_POOL : StatType::LARGE_POOL);
}

// Adds a block to (made) or removes it from its core's counters, in the aggregate and in its
// pool; every device block is its own segment, allocation and active block.
template <typename Stats, typename BlockT>
void count_block(Stats& st, const BlockT& block, bool made) {
  const auto apply = [made](auto& stat, size_t amount) {
    made ? stat.increase(amount) : stat.decrease(amount);
  };
  for (const size_t i : {kAgg, pool_of(block.nbytes)}) {
    apply(st.allocated_bytes[i], block.nbytes);
    apply(st.requested_bytes[i], block.nbytes);
    apply(st.active_bytes[i], block.nbytes);
    apply(st.reserved_bytes[i], block.reserved);
    apply(st.allocation[i], 1);
    apply(st.active[i], 1);
    apply(st.segment[i], 1);
  }
}
// Granularity in which memory is reserved: the host allocation alignment
// (c10::alloc_cpu aligns to 64 bytes).
constexpr size_t kGranularity = 64;
constexpr int kMaxDevices = 256;
// Freed blocks of at most this many bytes are kept for reuse by the next
// allocation of the same size (see State::reuse), up to kReuseBytes in all.
constexpr size_t kReuseMaxBlock = size_t(128) << 10;
constexpr size_t kReuseBytes = size_t(4) << 20;

struct Block {
  size_t nbytes;
  size_t reserved;
  c10::DeviceIndex device;
  HostChunk chunk; // the shared host memory behind it (runtime/SharedArena.h)
  uint64_t generation = 0; // State::generation when its memory was taken from the arena
  bool kept = false; // freed and kept for reuse (State::reuse): not device memory
};

struct State {
  std::mutex mutex;
  // Live blocks and the freed ones kept for reuse (Block::kept), by pointer.
  ska::flat_hash_map<void*, Block> blocks;
  std::vector<DeviceStats> stats = std::vector<DeviceStats>(kMaxDevices);
  // stats[d].reserved_bytes current, readable without the mutex (written with
  // it held): allocate_accounted's early capacity check.
  std::atomic<int64_t> reserved_now[kMaxDevices] = {};
  // Freed arena blocks kept for reuse, by reserved size / kGranularity: eager
  // ops free and allocate the same small sizes over and over (a decode step
  // runs hundreds of them), and taking a block from here costs a vector pop
  // under the one lock the accounting takes anyway, where the arena costs its
  // own lock and a best-fit search in its trees. A kept block is free memory
  // for the accounting (allocated, reserved, the capacity check): only the
  // host keeps it. At most kReuseBytes are kept; past that all of them go back
  // to the arena, as they do on empty_cache() and in a fork child.
  std::vector<std::vector<void*>> reuse =
      std::vector<std::vector<void*>>(kReuseMaxBlock / kGranularity + 1);
  size_t reuse_bytes = 0;
  uint64_t generation = 0; // +1 in every fork child: older blocks are the parent's memory
};

State& state() {
  static State* s = new State(); // leaked on purpose: used until exit
  return *s;
}

std::string format_bytes(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t(1) << 30)) {
    os << b / double(1 << 30) << " GiB";
  } else if (bytes >= (int64_t(1) << 20)) {
    os << b / double(1 << 20) << " MiB";
  } else if (bytes >= (int64_t(1) << 10)) {
    os << b / double(1 << 10) << " KiB";
  } else {
    os << bytes << " bytes";
  }
  return os.str();
}

// Takes every kept block out of State::reuse and the block table (state
// mutex held); the caller gives their chunks back to the arena after unlocking.
std::vector<HostChunk> take_reuse_locked(State& s) {
  std::vector<HostChunk> chunks;
  if (s.reuse_bytes == 0) {
    return chunks;
  }
  for (auto& list : s.reuse) {
    for (void* ptr : list) {
      auto it = s.blocks.find(ptr);
      TORCH_INTERNAL_ASSERT(it != s.blocks.end() && it->second.kept);
      chunks.push_back(it->second.chunk);
      s.blocks.erase(it);
    }
    list.clear();
  }
  s.reuse_bytes = 0;
  return chunks;
}

void free_chunks(const std::vector<HostChunk>& chunks) {
  for (const HostChunk& chunk : chunks) {
    shared_free(chunk);
  }
}

// One allocation or free for torch.profiler's memory view (profile_memory=True), as CUDA's
// caching allocator reports it: the size (negative for a free) and the core's totals after
// it. Filled under the state mutex, sent after it is released; nothing is sent unless a
// profiler with memory profiling is active on this thread.
struct ProfilerReport {
  bool active = c10::memoryProfilingEnabled();
  int64_t size = 0;
  size_t allocated = 0;
  size_t reserved = 0;
  c10::DeviceIndex device = 0;

  // Records a change of `delta` bytes on `st` (before `st` is updated).
  void take(const DeviceStats& st, int64_t delta, c10::DeviceIndex dev) {
    if (C10_LIKELY(!active)) {
      return;
    }
    size = delta;
    allocated = static_cast<size_t>(st.allocated_bytes[kAgg].current + delta);
    reserved = static_cast<size_t>(st.reserved_bytes[kAgg].current);
    device = dev;
  }
  void send(void* ptr) const {
    if (C10_UNLIKELY(active && size != 0)) {
      c10::reportMemoryUsageToProfiler(
          ptr, size, allocated, reserved, c10::Device(kNeuron, device));
    }
  }
};

void free_accounted(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  HostChunk chunk;
  std::vector<HostChunk> flushed;
  ProfilerReport report;
  // The memory history (MemoryHistory.h): the stack is gathered before the lock
  // (it may take the GIL), the free recorded after it.
  const bool history = memory_history_touched();
  std::shared_ptr<c10::GatheredContext> context;
  if (C10_UNLIKELY(history && memory_history_enabled())) {
    context = gather_memory_context();
  }
  LiveBlock freed{reinterpret_cast<uintptr_t>(ptr), 0, 0, 0};
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(ptr);
    TORCH_INTERNAL_ASSERT(
        it != s.blocks.end() && !it->second.kept, "neuron: freeing unknown pointer");
    const Block& block = it->second;
    freed = {freed.address, block.nbytes, block.reserved, block.device};
    DeviceStats& st = s.stats[block.device];
    report.take(st, -static_cast<int64_t>(block.nbytes), block.device);
    count_block(st, block, /*made=*/false);
    st.num_device_free += 1;
    s.reserved_now[block.device].store(
        st.reserved_bytes[kAgg].current, std::memory_order_relaxed);
    // Kept for reuse: a small block of an arena segment (not an own mapping
    // or a memory file) that this process took from the arena.
    if (block.reserved <= kReuseMaxBlock && block.chunk.segment >= 0 && block.chunk.fd < 0 &&
        block.chunk.size == block.reserved && block.generation == s.generation) {
      const size_t reserved = block.reserved;
      if (C10_UNLIKELY(s.reuse_bytes + reserved > kReuseBytes)) {
        flushed = take_reuse_locked(s); // (this block is not kept yet: it stays)
        it = s.blocks.find(ptr);
      }
      it->second.kept = true;
      s.reuse[reserved / kGranularity].push_back(ptr);
      s.reuse_bytes += reserved;
    } else {
      chunk = block.chunk;
      s.blocks.erase(it);
    }
  }
  free_chunks(flushed);
  if (chunk.ptr != nullptr) {
    shared_free(chunk);
  }
  report.send(ptr);
  if (C10_UNLIKELY(history)) {
    record_free(freed.address, freed.reserved, freed.nbytes, freed.device, std::move(context));
  }
}

template <typename Fn>
void for_each_stat(DeviceStats& st, Fn fn) {
  for (auto* arr : {&st.allocation, &st.segment, &st.active, &st.inactive_split,
                    &st.allocated_bytes, &st.reserved_bytes, &st.active_bytes,
                    &st.inactive_split_bytes, &st.requested_bytes}) {
    for (auto& stat : *arr) {
      fn(stat);
    }
  }
}

thread_local c10::DeviceIndex t_route_device = -1;

// ---------------------------------------------------------------- neuron
std::atomic<void (*)()> g_run_deferred_work{nullptr};

// Runs the work set by set_run_deferred_work (adaptive eager's queue), if any.
void run_deferred_work() {
  if (auto* run = g_run_deferred_work.load(std::memory_order_acquire)) {
    run();
  }
}

class NeuronAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = check_device(current_device());
    return allocate_accounted(nbytes, device, c10::Device(kNeuron, device));
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_accounted;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  bool initialized() override {
    return true;
  }
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    // Nothing is accounted as cached; the host memory kept for reuse (the freed
    // blocks of State::reuse, then what the arena keeps) goes back.
    std::vector<HostChunk> kept;
    {
      State& s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      kept = take_reuse_locked(s);
    }
    free_chunks(kept);
    shared_arena_release_cached();
  }
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {
    // Execution is synchronous: no cross-stream lifetime to extend.
  }
  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    run_deferred_work();
    device = check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    DeviceStats stats = s.stats[device];
    // Blocks are never split: no size limit applies, which CUDA's allocator
    // reports as -1 (its max_split_size when unset).
    stats.max_split_size = -1;
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    run_deferred_work();
    device = check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    DeviceStats& st = s.stats[device];
    for_each_stat(st, [](c10::CachingAllocator::Stat& stat) { stat.reset_accumulated(); });
    st.num_alloc_retries = 0;
    st.num_ooms = 0;
    st.num_device_alloc = 0;
    st.num_device_free = 0;
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    run_deferred_work();
    device = check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for_each_stat(s.stats[device], [](c10::CachingAllocator::Stat& stat) { stat.reset_peak(); });
  }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    run_deferred_work();
    device = check_device(device);
    const int64_t cap = hbm_capacity(device);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const int64_t used = s.stats[device].reserved_bytes[kAgg].current;
    return {static_cast<size_t>(std::max<int64_t>(cap - used, 0)), static_cast<size_t>(cap)};
  }
};

NeuronAllocator g_neuron_allocator;

// ---------------------------------------------------------------- CPU routing
c10::Allocator* g_base_cpu_allocator = nullptr;
c10::DeleterFnPtr g_base_raw_deleter = nullptr;

void routing_raw_delete(void* ptr) {
  bool ours = false;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(ptr);
    ours = it != s.blocks.end() && !it->second.kept;
  }
  if (ours) {
    free_accounted(ptr);
  } else {
    g_base_raw_deleter(ptr);
  }
}

class RoutingCPUAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    if (t_route_device >= 0) {
      return allocate_accounted(nbytes, t_route_device, c10::Device(c10::kCPU));
    }
    return g_base_cpu_allocator->allocate(nbytes);
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &routing_raw_delete;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

RoutingCPUAllocator g_routing_allocator;

struct InstallCPUAllocator {
  InstallCPUAllocator() {
    g_base_cpu_allocator = c10::GetCPUAllocator();
    g_base_raw_deleter = g_base_cpu_allocator->raw_deleter();
    c10::SetCPUAllocator(&g_routing_allocator, /*priority=*/1);
  }
};

} // namespace

namespace {

// Raises OutOfMemoryError when core `device` cannot take `reserved` more bytes (state mutex held).
void check_capacity_locked(State& s, size_t nbytes, size_t reserved, c10::DeviceIndex device) {
  const int64_t capacity = hbm_capacity(device);
  DeviceStats& st = s.stats[device];
  const int64_t in_use = st.reserved_bytes[kAgg].current;
  if (C10_UNLIKELY(in_use + static_cast<int64_t>(reserved) > capacity)) {
    st.num_ooms += 1;
    const int64_t allocated = st.allocated_bytes[kAgg].current;
    // Under torch.neuron.set_per_process_memory_fraction the limit is a share
    // of the core: say so (as CUDA's message names the allowed amount).
    const double fraction = memory_fraction(device);
    std::ostringstream limit;
    if (fraction < 1.0) {
      limit << ", of which this process may use " << format_bytes(capacity)
            << " (torch.neuron.set_per_process_memory_fraction(" << fraction << "))";
    }
    TORCH_CHECK_WITH(
        OutOfMemoryError,
        false,
        "neuron:", static_cast<int>(device), " out of memory. Tried to allocate ",
        format_bytes(static_cast<int64_t>(nbytes)), " on neuron:", static_cast<int>(device),
        ", which has a total capacity of ", format_bytes(fraction < 1.0 ? hbm_bytes_per_core() : capacity),
        " of HBM (", topology_description(), ")", limit.str(), "; ",
        format_bytes(std::max<int64_t>(capacity - in_use, 0)), " of that is free; ", format_bytes(allocated),
        " is allocated by live tensors (", format_bytes(in_use), " reserved). Free tensors you no longer "
        "need (del x), reduce the batch size or sequence length, shard the model across more NeuronCores, ",
        fraction < 1.0 ? "raise the fraction given to torch.neuron.set_per_process_memory_fraction, " : "",
        "or raise the software NeuronCore's capacity with TORCH_NEURONX_HBM_PER_CORE.");
  }
}

// Records a live block accounted to its core (state mutex held).
void account_block_locked(State& s, const Block& block) {
  DeviceStats& st = s.stats[block.device];
  count_block(st, block, /*made=*/true);
  st.num_device_alloc += 1;
  s.reserved_now[block.device].store(st.reserved_bytes[kAgg].current, std::memory_order_relaxed);
}

// Records a live block taken from the arena (or a memory file) and accounts it
// to its core (state mutex held).
void record_block_locked(State& s, void* ptr, Block block) {
  block.generation = s.generation;
  account_block_locked(s, s.blocks.emplace(ptr, block).first->second);
}

size_t reserved_bytes(size_t nbytes) {
  return (nbytes + kGranularity - 1) / kGranularity * kGranularity;
}

// A process forked after neuron tensors were created shares their memory with
// its parent (SharedArena); these handlers keep the allocator's state and the
// arena consistent across fork (no lock held by another thread is copied).
void fork_prepare() {
  state().mutex.lock();
  shared_arena_fork_prepare();
}
void fork_parent() {
  shared_arena_fork_parent();
  state().mutex.unlock();
}
void fork_child() {
  State& s = state();
  // The kept blocks are the parent's memory now: they leave the table and go
  // back to their (inherited) arena segments, which never hand them out here.
  const std::vector<HostChunk> kept = take_reuse_locked(s);
  s.generation += 1;
  shared_arena_fork_child();
  free_chunks(kept);
  s.mutex.unlock();
}

struct InstallForkHandlers {
  InstallForkHandlers() {
    pthread_atfork(&fork_prepare, &fork_parent, &fork_child);
  }
};

} // namespace

namespace {

c10::DataPtr allocate_accounted_unlogged(
    size_t nbytes,
    c10::DeviceIndex device,
    c10::Device ptr_device) {
  if (nbytes == 0) {
    return {nullptr, nullptr, &free_accounted, ptr_device};
  }
  const size_t reserved = reserved_bytes(nbytes);
  State& s = state();
  ProfilerReport report;
  void* reused = nullptr;
  if (reserved <= kReuseMaxBlock) {
    // A kept block of this size (State::reuse), under the lock that accounts it.
    std::lock_guard<std::mutex> lock(s.mutex);
    std::vector<void*>& kept = s.reuse[reserved / kGranularity];
    if (!kept.empty()) {
      check_capacity_locked(s, nbytes, reserved, device);
      void* ptr = kept.back();
      kept.pop_back();
      s.reuse_bytes -= reserved;
      Block& block = s.blocks.find(ptr)->second;
      block.kept = false;
      block.nbytes = nbytes;
      block.device = device;
      report.take(s.stats[device], static_cast<int64_t>(nbytes), device);
      account_block_locked(s, block);
      reused = ptr;
    }
  }
  if (reused != nullptr) {
    report.send(reused);
    return {reused, reused, &free_accounted, ptr_device};
  }
  // The capacity is checked before the host memory is taken (a request past it
  // must raise the core's OOM, not try to map that much), and again with the
  // memory in hand under the one lock that records it: another thread may
  // have allocated in between. The early check reads the mirror without the
  // lock and takes the lock only when the request may not fit.
  if (C10_UNLIKELY(
          s.reserved_now[device].load(std::memory_order_relaxed) + static_cast<int64_t>(reserved) >
          hbm_capacity(device))) {
    std::lock_guard<std::mutex> lock(s.mutex);
    check_capacity_locked(s, nbytes, reserved, device);
  }
  const HostChunk chunk = shared_alloc(nbytes);
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    try {
      check_capacity_locked(s, nbytes, reserved, device);
    } catch (...) {
      lock.unlock();
      shared_free(chunk);
      throw;
    }
    report.take(s.stats[device], static_cast<int64_t>(nbytes), device);
    record_block_locked(s, chunk.ptr, Block{nbytes, reserved, device, chunk});
  }
  report.send(chunk.ptr);
  return {chunk.ptr, chunk.ptr, &free_accounted, ptr_device};
}

// The ERROR record of an out-of-memory error, sent once the allocator's locks are released.
C10_NOINLINE void log_out_of_memory(const c10::OutOfMemoryError& err) {
  log_record(LogLevel::Error, "torch_neuronx.device.memory", err.what_without_backtrace());
}

} // namespace

c10::DataPtr allocate_accounted(
    size_t nbytes,
    c10::DeviceIndex device,
    c10::Device ptr_device) {
  // The memory history (MemoryHistory.h): the stack is gathered before the
  // allocator's lock (it may take the GIL), the allocation recorded after it.
  const bool history = memory_history_touched() && nbytes > 0;
  std::shared_ptr<c10::GatheredContext> context;
  if (C10_UNLIKELY(history && memory_history_enabled())) {
    context = gather_memory_context();
  }
  try {
    c10::DataPtr data = allocate_accounted_unlogged(nbytes, device, ptr_device);
    if (C10_UNLIKELY(history)) {
      record_allocation(
          reinterpret_cast<uintptr_t>(data.get()), reserved_bytes(nbytes), nbytes, device,
          std::move(context));
    }
    return data;
  } catch (const c10::OutOfMemoryError& err) {
    log_out_of_memory(err);
    throw;
  }
}

int share_storage_fd(const c10::Storage& storage) {
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  const size_t nbytes = impl->nbytes();
  TORCH_CHECK(nbytes > 0, "neuron: an empty storage has no memory to share");
  TORCH_CHECK(impl->device().type() == kNeuron, "neuron: share_storage_fd needs a neuron storage");
  void* data = const_cast<void*>(impl->data());
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(data);
    if (it != s.blocks.end() && it->second.chunk.fd >= 0) {
      return it->second.chunk.fd; // already in a memory file of its own
    }
  }
  // Move the storage into a memory file of its own (as CPU's share_memory_() moves a storage
  // into shared memory): one copy, then every process that maps the file shares it.
  const c10::DeviceIndex index = check_device(impl->device().has_index() ? impl->device().index() : current_device());
  const HostChunk file = memfd_chunk(nbytes);
  std::memcpy(file.ptr, data, nbytes);
  HostChunk old_chunk;
  bool ours = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(data);
    if (it != s.blocks.end()) {
      // Same accounting, new memory: the block moves.
      Block moved = it->second;
      old_chunk = moved.chunk;
      moved.chunk = file;
      s.blocks.erase(it);
      s.blocks.emplace(file.ptr, moved);
      ours = true;
    } else {
      const size_t reserved = reserved_bytes(nbytes);
      try {
        check_capacity_locked(s, nbytes, reserved, index);
      } catch (...) {
        shared_free(file);
        throw;
      }
      record_block_locked(s, file.ptr, Block{nbytes, reserved, index, file});
    }
  }
  c10::DataPtr old = impl->set_data_ptr(c10::DataPtr(file.ptr, file.ptr, &free_accounted, c10::Device(kNeuron, index)));
  if (ours) {
    old.release_context(); // its block moved above; its memory goes back here
    shared_free(old_chunk);
  }
  return file.fd;
}

c10::Storage import_shared_storage(int fd, size_t nbytes, c10::DeviceIndex device) {
  try {
    device = check_device(device);
  } catch (...) {
    close(fd); // owned from here on
    throw;
  }
  const HostChunk chunk = map_memfd(fd, nbytes);
  const size_t reserved = reserved_bytes(nbytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    try {
      check_capacity_locked(s, nbytes, reserved, device);
    } catch (...) {
      shared_free(chunk);
      throw;
    }
    record_block_locked(s, chunk.ptr, Block{nbytes, reserved, device, chunk});
  }
  return c10::Storage(
      c10::Storage::use_byte_size_t(),
      nbytes,
      c10::DataPtr(chunk.ptr, chunk.ptr, &free_accounted, c10::Device(kNeuron, device)),
      &g_neuron_allocator,
      /*resizable=*/true);
}

bool is_accounted_deleter(c10::DeleterFnPtr deleter) {
  return deleter == &free_accounted;
}

c10::Device device_of_ptr(const void* ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.blocks.find(const_cast<void*>(ptr));
  if (it == s.blocks.end() || it->second.kept) {
    return c10::Device(c10::kCPU);
  }
  return c10::Device(kNeuron, it->second.device);
}

RouteAllocationsTo::RouteAllocationsTo(c10::DeviceIndex device)
    : previous_(t_route_device) {
  t_route_device = device;
}

RouteAllocationsTo::~RouteAllocationsTo() {
  t_route_device = previous_;
}

c10::DeviceAllocator* neuron_allocator() {
  return &g_neuron_allocator;
}

c10::Allocator* routing_cpu_allocator() {
  return &g_routing_allocator;
}

void set_run_deferred_work(void (*fn)()) {
  g_run_deferred_work.store(fn, std::memory_order_release);
}

void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes) {
  run_deferred_work();
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(
      impl->resizable(),
      "Trying to resize storage that is not resizable (neuron storage of ",
      impl->nbytes(), " bytes)");
  const c10::Device device = impl->device();
  const c10::DeviceIndex index =
      check_device(device.has_index() ? device.index() : current_device());
  c10::DataPtr fresh = allocate_accounted(new_nbytes, index, c10::Device(kNeuron, index));
  const size_t keep = std::min(new_nbytes, impl->nbytes());
  if (keep > 0 && impl->data() != nullptr) {
    std::memcpy(fresh.get(), impl->data(), keep);
  }
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(new_nbytes);
}

MemoryCounters memory_counters(c10::DeviceIndex device) {
  device = check_device(device);
  MemoryCounters c;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const DeviceStats& st = s.stats[device];
  c.allocated = st.allocated_bytes[kAgg].current;
  c.peak_allocated = st.allocated_bytes[kAgg].peak;
  c.reserved = st.reserved_bytes[kAgg].current;
  c.peak_reserved = st.reserved_bytes[kAgg].peak;
  c.num_allocs = st.num_device_alloc;
  c.num_frees = st.num_device_free;
  c.num_ooms = st.num_ooms;
  c.capacity = hbm_capacity(device);
  return c;
}

std::vector<LiveBlock> live_blocks() {
  std::vector<LiveBlock> out;
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    out.reserve(s.blocks.size());
    for (const auto& [ptr, block] : s.blocks) {
      if (!block.kept) {
        out.push_back({reinterpret_cast<uintptr_t>(ptr), block.nbytes, block.reserved, block.device});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const LiveBlock& a, const LiveBlock& b) {
    return a.address < b.address;
  });
  return out;
}

// Registration: the PrivateUse1 allocator and the routing CPU allocator.
REGISTER_ALLOCATOR(kNeuron, &g_neuron_allocator);
static InstallCPUAllocator g_install_cpu_allocator;
static InstallForkHandlers g_install_fork_handlers;

} // namespace torch_neuronx
