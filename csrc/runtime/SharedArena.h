// Host memory behind the software NeuronCore's device memory: shared memory,
// so that a neuron tensor can be shared between processes for real.
//
// * Allocations come from shared anonymous mappings (MAP_SHARED): a process
//   forked after a neuron tensor was created shares that tensor's memory with
//   its parent, so in-place updates in the child reach the parent (Hogwild
//   training with `fork`, DataLoader fork workers), and PyTorch's constant
//   `is_shared() == True` for device storages is true.
// * Small and medium allocations are sub-allocated (best fit, coalescing) from
//   64 MiB segments; allocations of 32 MiB or more get their own mapping
//   (freed ones are kept for reuse up to 128 MiB, then unmapped).
// * Freed memory stays resident for reuse until the arena would grow past the
//   largest host footprint it had so far (live chunks + resident free memory):
//   then it first gives back cached mappings and the pages of free segment
//   ranges of 1 MiB or more (madvise(MADV_REMOVE)), so the process's peak RSS
//   follows the peak of live device memory, as glibc's for CPU tensors does.
// * A fork child never allocates from, nor returns memory to, the segments and
//   cached mappings it inherited (they are the parent's memory): it maps its own.
// * To send a tensor to an unrelated process (`spawn`), its storage moves to a
//   memory file of its own (memfd) whose descriptor the receiver maps: both
//   processes then see one memory, as CUDA IPC gives for CUDA tensors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torch_neuronx {

// A piece of shared host memory. `segment` is the arena segment it was cut
// from, or -1 when the piece is a mapping of its own (`map_bytes` long; `fd`
// is its memory file, or -1 for an anonymous mapping).
struct HostChunk {
  void* ptr = nullptr;
  size_t size = 0;       // bytes reserved in the segment (multiple of 64)
  int64_t segment = -1;
  size_t map_bytes = 0;  // length of the own mapping (segment == -1)
  int fd = -1;           // memory file of the own mapping, or -1
  uint64_t generation = 0; // process generation (fork count) that mapped it
};

// Allocates `nbytes` (> 0) of shared host memory, 64-byte aligned. Raises
// c10::Error when the host cannot map more memory.
HostChunk shared_alloc(size_t nbytes);

// Returns a chunk from shared_alloc / memfd_chunk / map_memfd. A chunk of a
// segment inherited from a parent process is never reused here.
void shared_free(const HostChunk& chunk);

// A new memory file of `nbytes` (> 0), mapped shared; the chunk owns the fd.
HostChunk memfd_chunk(size_t nbytes);

// Maps the memory file `fd` (at least `nbytes` long) shared; the chunk takes
// ownership of `fd`. Raises c10::Error naming the failure.
HostChunk map_memfd(int fd, size_t nbytes);

// Gives the host memory kept for reuse back (cached own mappings, the empty
// segment, the pages of free segment ranges of 1 MiB or more);
// torch.neuron.empty_cache() calls it.
void shared_arena_release_cached();

// Fork handlers (called by the device allocator's pthread_atfork handlers,
// after it locked its own state): prepare locks the arena, parent unlocks it,
// child marks every segment inherited and unlocks it.
void shared_arena_fork_prepare();
void shared_arena_fork_parent();
void shared_arena_fork_child();

} // namespace torch_neuronx
