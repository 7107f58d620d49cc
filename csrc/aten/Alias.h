// Zero-copy CPU aliases of neuron tensors, and the way back: a CPU kernel's
// result becomes a neuron tensor without a copy. Every eager op of the
// software NeuronCore goes through these two functions.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace torch_neuronx {

// A CPU storage on the same bytes as `neuron_storage`, keeping it alive.
c10::Storage cpu_alias_storage(const c10::Storage& neuron_storage);

// A CPU tensor on the same bytes, sizes, strides, offset and conj/neg bits as
// the neuron tensor `t`, using `storage` (from cpu_alias_storage) if given.
// The one-argument form raises CUDA's device-mismatch error if `t` is not a
// neuron tensor (aliasing a CPU tensor would run the kernel on CPU memory and
// label the result neuron: a silent acceptance of wrong placement).
at::Tensor cpu_alias(const at::Tensor& t, const c10::Storage& storage);
at::Tensor cpu_alias(const at::Tensor& t);

// The same aliases, recycled: the boxed fallback runs for every op, so it takes
// its alias StorageImpls and TensorImpls from a small pool of the calling
// thread instead of allocating (and freeing) two objects per operand.
// recycle_aliases() gives them back when the op is done: a recycled storage
// lets go of the neuron memory at once, and an alias the CPU kernel still holds
// a reference to (or changed in a way a fresh alias would not be) is left alone
// and never reused. `tensors` are recycled before `storages`.
c10::Storage pooled_alias_storage(const c10::Storage& neuron_storage);
at::Tensor pooled_cpu_alias(const at::Tensor& t, const c10::Storage& storage);
void recycle_aliases(c10::ArrayRef<at::Tensor*> tensors, c10::ArrayRef<c10::Storage*> storages);

// Aliases of operands whose metadata a kernel leaves alone (the operands of
// FastPath.h's unboxed kernels, the boxed fallback's operands that the schema
// neither writes nor lets a result alias, both sides of a copy), from a
// per-thread cache keyed by what an alias is made of: data address, bytes,
// dtype, sizes, strides, offset, conj/neg bits and inference mode. The next
// op's operands — weights, and tensors whose memory the allocator hands out
// again at the same address with the same layout (every step of a decode) —
// then reuse an alias instead of filling one in. A cached alias does not own
// neuron memory (it keeps no storage alive, so memory accounting is unchanged);
// it is handed out only for a live neuron tensor with the same bytes and
// layout, and the caller keeps the returned reference only while that tensor
// is alive and the op runs. Its bytes may be written (they are the tensor's);
// its metadata (sizes, strides, offset, storage) must not change.
at::Tensor cached_read_alias(const at::Tensor& t);

// Raises CUDA's device-mismatch error ("Expected all tensors to be on the same
// device ... neuron:0 and cpu! (when checking argument for argument 'weight'
// in aten::convolution_overrideable)") unless `t` is a neuron tensor on
// `device`; used by the device's own kernels for each tensor operand.
void check_operand_device(
    const at::Tensor& t, c10::DeviceIndex device, const char* argument, const char* op);

// check_operand_device, then cpu_alias.
at::Tensor operand_alias(
    const at::Tensor& t, c10::DeviceIndex device, const char* argument, const char* op);

// A neuron tensor with the same metadata as `cpu_view` on `neuron_storage`.
at::Tensor neuron_view(const at::Tensor& cpu_view, const c10::Storage& neuron_storage);

// Raises a clear error if `storage` reports bytes but has no memory (the
// storage of a ZeroTensor); `what` names it in the message.
void check_has_memory(const c10::StorageImpl& storage, const char* what);

// The fast form of to_neuron_result for a kernel's fresh result: when its bytes
// were allocated through the accounting allocator and nobody else holds the
// tensor, relabels storage and tensor as neuron memory on `device` in place
// and returns true; otherwise changes nothing and returns false.
bool relabel_fresh_result(const at::Tensor& cpu_result, c10::DeviceIndex device);

// Turns a CPU result into neuron memory on `device`: zero-copy when its bytes
// were allocated through the accounting allocator (inside RouteAllocationsTo),
// otherwise copied into freshly accounted memory.
at::Tensor to_neuron_result(const at::Tensor& cpu_result, c10::DeviceIndex device);

} // namespace torch_neuronx
