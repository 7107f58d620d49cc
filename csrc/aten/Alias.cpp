#include "aten/Alias.h"

#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <cstring>

namespace torch_neuronx {
namespace {

void release_storage_ref(void* ctx) {
  c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(ctx));
}

// Sizes, strides, offset and the conj/neg bits of `from` onto `to`.
void copy_view_metadata(const at::Tensor& to, const at::Tensor& from) {
  c10::TensorImpl* impl = to.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(from.sizes(), from.strides(), from.storage_offset());
  if (from.is_conj()) {
    impl->_set_conj(true);
  }
  if (from.is_neg()) {
    impl->_set_neg(true);
  }
}

} // namespace

void check_has_memory(const c10::StorageImpl& storage, const char* what) {
  // A ZeroTensor (PyTorch's efficient zeros) and other storage-less tensors
  // report a size but own no memory: copying from their null pointer would
  // crash the process.
  TORCH_CHECK(
      storage.nbytes() == 0 || storage.data() != nullptr,
      "neuron: ", what, " of a CPU kernel reports ", storage.nbytes(),
      " bytes but has no memory (a ZeroTensor or another storage-less tensor), so it cannot be "
      "copied to neuron memory. Materialize it first (e.g. torch.zeros_like) or run the op on "
      "CPU tensors.");
}

c10::Storage cpu_alias_storage(const c10::Storage& neuron_storage) {
  c10::StorageImpl* impl = neuron_storage.unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(impl);
  c10::DataPtr ptr(
      const_cast<void*>(impl->data()), impl, &release_storage_ref, c10::Device(c10::kCPU));
  return c10::Storage(
      c10::Storage::use_byte_size_t(),
      impl->nbytes(),
      std::move(ptr),
      routing_cpu_allocator(),
      /*resizable=*/true);
}

at::Tensor cpu_alias(const at::Tensor& t, const c10::Storage& storage) {
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copy_view_metadata(alias, t);
  return alias;
}

at::Tensor cpu_alias(const at::Tensor& t) {
  TORCH_CHECK(
      t.device().type() == kNeuron,
      "Expected all tensors to be on the same device, but found a tensor on ", t.device(),
      " where a neuron tensor was expected. Move it to the NeuronCore with .to('neuron') (or the "
      "neuron tensors to the CPU with .cpu()).");
  return cpu_alias(t, cpu_alias_storage(t.storage()));
}

void check_operand_device(
    const at::Tensor& t, c10::DeviceIndex device, const char* argument, const char* op) {
  if (t.device().type() == kNeuron && t.device().index() == device) {
    return;
  }
  TORCH_CHECK(
      false,
      "Expected all tensors to be on the same device, but found at least two devices, neuron:",
      static_cast<int>(device), " and ", t.device(), "! (when checking argument for argument '",
      argument, "' in ", op, "). ",
      t.device().type() == kNeuron
          ? "Each logical NeuronCore has its own HBM: move one operand with .to(other.device) first."
          : "Move the tensor to the NeuronCore with .to('neuron') (for a module: model.to('neuron')), "
            "or the neuron tensors to the CPU with .cpu().");
}

at::Tensor operand_alias(
    const at::Tensor& t, c10::DeviceIndex device, const char* argument, const char* op) {
  check_operand_device(t, device, argument, op);
  return cpu_alias(t);
}

at::Tensor neuron_view(const at::Tensor& cpu_view, const c10::Storage& neuron_storage) {
  // The non-VIEW constructor adds the autograd keys for the backend.
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(neuron_storage),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      cpu_view.dtype());
  copy_view_metadata(out, cpu_view);
  return out;
}

at::Tensor to_neuron_result(const at::Tensor& cpu_result, c10::DeviceIndex device) {
  if (!cpu_result.defined() || cpu_result.device().type() == kNeuron) {
    return cpu_result;
  }
  TORCH_CHECK(
      cpu_result.device().is_cpu(),
      "neuron: a CPU kernel run for a neuron op returned a tensor on ", cpu_result.device(),
      ", which cannot become neuron memory. Run this op on CPU tensors (.cpu()) and move the "
      "result with .to('neuron').");
  TORCH_CHECK(
      cpu_result.layout() == c10::kStrided,
      "neuron supports only dense (strided) tensors, but this op produced a ", cpu_result.layout(),
      " tensor. NeuronCores have no sparse tensor support: keep sparse tensors on the CPU "
      "(or call .to_dense() before moving to neuron).");
  c10::StorageImpl* storage = cpu_result.storage().unsafeGetStorageImpl();
  const c10::Device target(kNeuron, device);
  c10::DataPtr& ptr = storage->_mutable_data_ptr_no_checks();
  if (is_accounted_deleter(ptr.get_deleter())) {
    // Fresh device memory allocated by the CPU kernel: relabel it.
    ptr.unsafe_set_device(target);
    storage->set_allocator(neuron_allocator());
    return neuron_view(cpu_result, cpu_result.storage());
  }
  if (ptr.device().type() == kNeuron) {
    return neuron_view(cpu_result, cpu_result.storage());
  }
  // Memory that did not come from the device allocator (a cached host
  // tensor, or allocated on another thread): copy it into device memory.
  const size_t nbytes = storage->nbytes();
  check_has_memory(*storage, "the result");
  c10::Storage fresh(
      c10::Storage::use_byte_size_t(),
      nbytes,
      allocate_accounted(nbytes, device, target),
      neuron_allocator(),
      /*resizable=*/true);
  if (nbytes > 0) {
    std::memcpy(fresh.mutable_data(), storage->data(), nbytes);
  }
  return neuron_view(cpu_result, fresh);
}

} // namespace torch_neuronx
