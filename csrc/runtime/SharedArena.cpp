#include "runtime/SharedArena.h"

#include <c10/util/Exception.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace torch_neuronx {
namespace {

constexpr size_t kAlign = 64;                      // c10::alloc_cpu's alignment
constexpr size_t kSegmentBytes = size_t(64) << 20; // arena segment
constexpr size_t kOwnMappingBytes = size_t(32) << 20; // from here on: a mapping per allocation
// Freed own mappings kept for reuse, at most this many bytes: first-touch page faults of shared
// memory cost more than of private memory, and training steps allocate the same large sizes.
constexpr size_t kCachedMappingBytes = size_t(128) << 20;
// Free ranges smaller than this are never given back to the host (see release_resident).
constexpr size_t kMinReleaseBytes = size_t(1) << 20;

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

struct Segment {
  char* base = nullptr;
  size_t size = 0;
  size_t live = 0;        // allocated chunks
  bool inherited = false; // mapped by a parent process before fork: never reused here
  bool mapped = false;
};

struct FreeChunk {
  size_t size;
  int64_t segment;
  bool resident; // its pages may be in memory (it was allocated once since it was last released)
};

struct Arena {
  std::mutex mutex;
  std::vector<Segment> segments;
  std::map<uintptr_t, FreeChunk> free_by_addr;
  std::set<std::pair<size_t, uintptr_t>> free_by_size;
  int64_t empty_segment = -1; // one fully free segment kept for reuse
  std::multimap<size_t, void*> cached_mappings; // freed anonymous own mappings by length
  size_t cached_bytes = 0;
  uint64_t generation = 0; // +1 in every fork child: older own mappings are the parent's
  // The arena's footprint in host memory (what it adds to the process's RSS), in bytes:
  // live chunks of this process's segments and own mappings, plus the free memory it keeps
  // resident (free chunks marked resident, cached mappings). An upper bound: a resident free
  // chunk may have pages that were never touched.
  size_t live_bytes = 0;
  size_t resident_free = 0;
  size_t footprint_peak = 0;
  bool can_release = true; // madvise(MADV_REMOVE) works on these mappings
  size_t footprint() const {
    return live_bytes + resident_free + cached_bytes;
  }
};

Arena& arena() {
  static Arena* a = new Arena(); // leaked on purpose: used until exit
  return *a;
}

[[noreturn]] void map_failed(const char* what, size_t nbytes, int err) {
  TORCH_CHECK_WITH(
      OutOfMemoryError,
      err != ENOMEM,
      "neuron: the host cannot map ", nbytes, " more bytes of shared memory for device memory (",
      what, ": ", std::strerror(err), "); free neuron tensors you no longer need");
  TORCH_CHECK(false, "neuron: ", what, " failed for ", nbytes, " bytes of device memory: ", std::strerror(err));
}

void* map_shared_anonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    map_failed("mmap(MAP_SHARED)", bytes, errno);
  }
  return p;
}

void insert_free(Arena& a, uintptr_t addr, size_t size, int64_t segment, bool resident) {
  a.free_by_addr.emplace(addr, FreeChunk{size, segment, resident});
  a.free_by_size.emplace(size, addr);
  if (resident) {
    a.resident_free += size;
  }
}

void erase_free(Arena& a, std::map<uintptr_t, FreeChunk>::iterator it) {
  if (it->second.resident) {
    a.resident_free -= it->second.size;
  }
  a.free_by_size.erase({it->second.size, it->first});
  a.free_by_addr.erase(it);
}

// Gives up to `want` bytes of free but resident memory back to the host: cached own mappings
// first (unmapped, largest first), then the whole pages of free segment ranges of at least
// kMinReleaseBytes (largest first; madvise(MADV_REMOVE) frees a shared mapping's pages and
// keeps the range mapped, so it is reused later at the cost of first-touch faults).
void release_resident(Arena& a, size_t want) {
  size_t released = 0;
  while (released < want && !a.cached_mappings.empty()) {
    auto largest = std::prev(a.cached_mappings.end());
    munmap(largest->second, largest->first);
    a.cached_bytes -= largest->first;
    released += largest->first;
    a.cached_mappings.erase(largest);
  }
  if (!a.can_release) {
    return;
  }
  const size_t page = page_size();
  for (auto it = a.free_by_size.rbegin(); it != a.free_by_size.rend() && released < want; ++it) {
    if (it->first < kMinReleaseBytes) {
      break;
    }
    FreeChunk& chunk = a.free_by_addr.at(it->second);
    if (!chunk.resident) {
      continue;
    }
    const uintptr_t begin = round_up(it->second, page);
    const uintptr_t end = (it->second + it->first) / page * page;
    if (end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_REMOVE) != 0) {
      a.can_release = false; // not supported here: keep everything, as before
      return;
    }
    chunk.resident = false;
    a.resident_free -= it->first;
    released += it->first;
  }
}

// Called before the arena touches `bytes` of memory that is not resident (a fresh mapping, or
// a released range): when that would raise its footprint above its peak so far, free resident
// memory first, so that the process's peak RSS follows the peak of live device memory instead
// of adding what the arena keeps for reuse (a training step's first optimizer step, for
// instance, allocates its states while the backward's freed activations sit in the segments).
void before_growth(Arena& a, size_t bytes) {
  const size_t total = a.footprint() + bytes;
  if (total > a.footprint_peak && a.resident_free + a.cached_bytes > 0) {
    release_resident(a, total - a.footprint_peak);
  }
}

void note_footprint(Arena& a) {
  a.footprint_peak = std::max(a.footprint_peak, a.footprint());
}

void unmap_segment(Arena& a, int64_t id) {
  Segment& s = a.segments[id];
  munmap(s.base, s.size);
  s.mapped = false;
}

} // namespace

HostChunk shared_alloc(size_t nbytes) {
  TORCH_INTERNAL_ASSERT(nbytes > 0);
  const size_t size = round_up(nbytes, kAlign);
  Arena& a = arena();
  if (size >= kOwnMappingBytes) {
    const size_t bytes = round_up(size, page_size());
    HostChunk c;
    c.size = size;
    {
      std::lock_guard<std::mutex> lock(a.mutex);
      c.generation = a.generation;
      auto it = a.cached_mappings.lower_bound(bytes);
      if (it != a.cached_mappings.end() && it->first <= bytes + bytes / 4) {
        c.ptr = it->second;
        c.map_bytes = it->first;
        a.cached_bytes -= it->first;
        a.live_bytes += it->first;
        a.cached_mappings.erase(it);
        return c;
      }
      before_growth(a, bytes);
      a.live_bytes += bytes;
      note_footprint(a);
    }
    try {
      c.ptr = map_shared_anonymous(bytes);
    } catch (...) {
      std::lock_guard<std::mutex> lock(a.mutex);
      if (c.generation == a.generation) {
        a.live_bytes -= bytes;
      }
      throw;
    }
    c.map_bytes = bytes;
    return c;
  }
  std::lock_guard<std::mutex> lock(a.mutex);
  auto fit = a.free_by_size.lower_bound({size, 0});
  if (fit == a.free_by_size.end()) {
    Segment s;
    s.base = static_cast<char*>(map_shared_anonymous(kSegmentBytes));
    s.size = kSegmentBytes;
    s.mapped = true;
    a.segments.push_back(s);
    const auto id = static_cast<int64_t>(a.segments.size() - 1);
    insert_free(a, reinterpret_cast<uintptr_t>(s.base), s.size, id, /*resident=*/false);
    fit = a.free_by_size.lower_bound({size, 0});
  }
  const uintptr_t addr = fit->second;
  auto it = a.free_by_addr.find(addr);
  const FreeChunk chunk = it->second;
  erase_free(a, it);
  if (!chunk.resident) {
    before_growth(a, size); // (the chunk is out of the free lists: release leaves it alone)
  }
  if (chunk.size > size) {
    insert_free(a, addr + size, chunk.size - size, chunk.segment, chunk.resident);
  }
  a.live_bytes += size;
  note_footprint(a);
  a.segments[chunk.segment].live += 1;
  if (a.empty_segment == chunk.segment) {
    a.empty_segment = -1;
  }
  HostChunk c;
  c.ptr = reinterpret_cast<void*>(addr);
  c.size = size;
  c.segment = chunk.segment;
  return c;
}

void shared_free(const HostChunk& c) {
  if (c.ptr == nullptr) {
    return;
  }
  Arena& a = arena();
  if (c.segment < 0) {
    if (c.fd < 0) {
      std::lock_guard<std::mutex> lock(a.mutex);
      if (c.generation == a.generation) {
        a.live_bytes -= c.map_bytes;
      }
      // A mapping inherited from the parent is the parent's memory: only unmapped here.
      if (c.generation == a.generation && c.map_bytes <= kCachedMappingBytes) {
        // Keep the newest mappings within the budget (evict the largest first).
        while (a.cached_bytes + c.map_bytes > kCachedMappingBytes && !a.cached_mappings.empty()) {
          auto largest = std::prev(a.cached_mappings.end());
          munmap(largest->second, largest->first);
          a.cached_bytes -= largest->first;
          a.cached_mappings.erase(largest);
        }
        a.cached_mappings.emplace(c.map_bytes, c.ptr);
        a.cached_bytes += c.map_bytes;
        return;
      }
    }
    munmap(c.ptr, c.map_bytes);
    if (c.fd >= 0) {
      close(c.fd);
    }
    return;
  }
  std::lock_guard<std::mutex> lock(a.mutex);
  Segment& s = a.segments[c.segment];
  TORCH_INTERNAL_ASSERT(s.live > 0, "neuron: freeing a chunk of an empty segment");
  s.live -= 1;
  if (s.inherited) {
    // The parent's memory: this process only lets go of its mapping when it holds no
    // tensor there any more; the parent keeps using the rest.
    if (s.live == 0 && s.mapped) {
      unmap_segment(a, c.segment);
    }
    return;
  }
  a.live_bytes -= c.size;
  uintptr_t addr = reinterpret_cast<uintptr_t>(c.ptr);
  size_t size = c.size;
  auto next = a.free_by_addr.find(addr + size);
  if (next != a.free_by_addr.end() && next->second.segment == c.segment) {
    size += next->second.size;
    erase_free(a, next);
  }
  auto prev = a.free_by_addr.lower_bound(addr);
  if (prev != a.free_by_addr.begin()) {
    --prev;
    if (prev->second.segment == c.segment && prev->first + prev->second.size == addr) {
      addr = prev->first;
      size += prev->second.size;
      erase_free(a, prev);
    }
  }
  if (s.live == 0) {
    TORCH_INTERNAL_ASSERT(addr == reinterpret_cast<uintptr_t>(s.base) && size == s.size);
    if (a.empty_segment >= 0 && a.empty_segment != c.segment) {
      unmap_segment(a, c.segment); // keep a single empty segment
      return;
    }
    a.empty_segment = c.segment;
  }
  insert_free(a, addr, size, c.segment, /*resident=*/true);
}

// Maps `bytes` (a whole number of pages) of memory file `fd` shared and
// read-write, as a chunk of `nbytes` that owns `fd`; `what` names the mapping
// in the error (the fd is closed when mapping fails).
static HostChunk map_shared_fd(int fd, size_t nbytes, size_t bytes, const char* what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    map_failed(what, nbytes, err);
  }
  HostChunk c;
  c.ptr = p;
  c.size = nbytes;
  c.map_bytes = bytes;
  c.fd = fd;
  return c;
}

HostChunk memfd_chunk(size_t nbytes) {
  TORCH_INTERNAL_ASSERT(nbytes > 0);
  const int fd = memfd_create("neuron-tensor", MFD_CLOEXEC);
  if (fd < 0) {
    map_failed("memfd_create", nbytes, errno);
  }
  const size_t bytes = round_up(nbytes, page_size());
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    map_failed("ftruncate of a memory file", nbytes, err);
  }
  return map_shared_fd(fd, nbytes, bytes, "mmap of a memory file");
}

HostChunk map_memfd(int fd, size_t nbytes) {
  TORCH_INTERNAL_ASSERT(nbytes > 0);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < nbytes) {
    const int err = errno;
    close(fd);
    TORCH_CHECK(
        false, "neuron: the shared memory of a received neuron tensor is missing or too small (",
        static_cast<long long>(st.st_size), " bytes for ", nbytes, "): ", std::strerror(err),
        "; the sending process must keep the tensor alive until it is received");
  }
  const size_t bytes = round_up(nbytes, page_size());
  return map_shared_fd(fd, nbytes, bytes, "mmap of a received memory file");
}

void shared_arena_release_cached() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  // Cached mappings and the free pages of the segments go back to the host.
  release_resident(a, std::numeric_limits<size_t>::max());
  if (a.empty_segment >= 0) {
    auto it = a.free_by_addr.find(reinterpret_cast<uintptr_t>(a.segments[a.empty_segment].base));
    TORCH_INTERNAL_ASSERT(it != a.free_by_addr.end() && it->second.size == a.segments[a.empty_segment].size);
    erase_free(a, it);
    unmap_segment(a, a.empty_segment);
    a.empty_segment = -1;
  }
}

void shared_arena_fork_prepare() {
  arena().mutex.lock();
}

void shared_arena_fork_parent() {
  arena().mutex.unlock();
}

void shared_arena_fork_child() {
  Arena& a = arena();
  for (size_t id = 0; id < a.segments.size(); ++id) {
    Segment& s = a.segments[id];
    s.inherited = true;
    if (s.mapped && s.live == 0) {
      unmap_segment(a, static_cast<int64_t>(id));
    }
  }
  a.free_by_addr.clear();
  a.free_by_size.clear();
  a.empty_segment = -1;
  for (const auto& [bytes, ptr] : a.cached_mappings) {
    munmap(ptr, bytes); // the parent's memory: not ours to reuse
  }
  a.cached_mappings.clear();
  a.cached_bytes = 0;
  a.live_bytes = 0; // the parent's memory from here on
  a.resident_free = 0;
  a.footprint_peak = 0;
  a.generation += 1;
  a.mutex.unlock();
}

} // namespace torch_neuronx
