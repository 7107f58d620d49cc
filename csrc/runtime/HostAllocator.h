// Pinned host memory for `neuron` (tensor.pin_memory(), DataLoader(pin_memory=True)): page-locked
// staging memory for DMA on real hardware; on the software NeuronCore, host memory whose
// pointers are remembered so that is_pinned() can answer.
#pragma once

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/Allocator.h>

namespace torch_neuronx {

// The allocator PrivateUse1 hooks hand out for pinned host memory.
c10::Allocator* pinned_host_allocator();

// True when `ptr` points into a live block of pinned_host_allocator(): its start, or any byte
// inside it (a storage sliced from pinned memory, untyped_storage()[k:], is pinned too, as on CUDA).
bool is_pinned_ptr(const void* ptr);

// Statistics of pinned_host_allocator() (torch.neuron.host_memory_stats()): blocks and bytes
// live, allocated and freed, and the time spent in host allocation and free calls (µs).
at::HostStats pinned_host_stats();

// Resets the peak values (peak_only) or the peak and the accumulated ones.
void reset_pinned_host_stats(bool peak_only);

} // namespace torch_neuronx
