#include "aten/Alias.h"

#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <cstring>
#include <typeinfo>
#include <vector>

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

// A plain CPU tensor that nobody else holds can become a neuron tensor in
// place: not a subclass, no backend metadata, no conj/neg bit, not a wrapped
// number, no Python key.
bool relabelable(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  return t.use_count() == 1 && t.weak_use_count() == 1 &&
      typeid(*impl) == typeid(c10::TensorImpl) && !impl->is_wrapped_number() &&
      impl->get_backend_meta() == nullptr && !t.is_conj() && !t.is_neg() &&
      !impl->key_set().has(c10::DispatchKey::Python) && impl->allow_tensor_metadata_change();
}

// The same result as neuron_view(t, t.storage()) once the storage is
// relabelled, without a second TensorImpl: the device and the backend dispatch
// keys of `t` itself change.
void relabel_tensor(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const c10::Device device = impl->storage().device();
  impl->set_storage_keep_dtype(impl->storage()); // device_opt_ from the relabelled storage
  impl->_change_backend_component_keys(device);
}

// Aliasing a CPU tensor would run the kernel on CPU memory and label the
// result neuron: CUDA's device-mismatch error instead.
void check_is_neuron(const at::Tensor& t) {
  TORCH_CHECK(
      t.device().type() == kNeuron,
      "Expected all tensors to be on the same device, but found a tensor on ", t.device(),
      " where a neuron tensor was expected. Move it to the NeuronCore with .to('neuron') (or the "
      "neuron tensors to the CPU with .cpu()).");
}

// Per-thread pool of alias objects (pooled_alias_storage, pooled_cpu_alias).
// An op has a few operands; _foreach ops have many, and those beyond the cap
// are simply freed.
constexpr size_t kPoolCap = 32;

struct AliasPool {
  std::vector<c10::intrusive_ptr<c10::TensorImpl>> tensors;
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> storages;
  // What a recycled TensorImpl points to while it waits (no neuron memory).
  c10::Storage idle = c10::Storage(
      c10::Storage::use_byte_size_t(), 0, c10::DataPtr(nullptr, c10::Device(c10::kCPU)),
      routing_cpu_allocator(), /*resizable=*/true);
  AliasPool() {
    tensors.reserve(kPoolCap);
    storages.reserve(kPoolCap);
  }
};

AliasPool& alias_pool() {
  thread_local AliasPool pool;
  return pool;
}

c10::DataPtr alias_data_ptr(c10::StorageImpl* neuron) {
  c10::raw::intrusive_ptr::incref(neuron);
  return c10::DataPtr(
      const_cast<void*>(neuron->data()), neuron, &release_storage_ref, c10::Device(c10::kCPU));
}

// The dispatch keys of a fresh CPU alias outside / inside inference mode
// (inference tensors have no autograd keys): a recycled alias must have them.
c10::DispatchKeySet fresh_alias_keys(bool inference) {
  auto make = [] {
    return at::detail::make_tensor<c10::TensorImpl>(
               c10::Storage(alias_pool().idle), c10::DispatchKeySet(c10::DispatchKey::CPU),
               caffe2::TypeMeta::Make<float>())
        .key_set();
  };
  static const c10::DispatchKeySet normal = [&] {
    c10::InferenceMode off(false);
    return make();
  }();
  static const c10::DispatchKeySet in_inference = [&] {
    c10::InferenceMode on(true);
    return make();
  }();
  return inference ? in_inference : normal;
}

} // namespace

c10::Storage pooled_alias_storage(const c10::Storage& neuron_storage) {
  AliasPool& pool = alias_pool();
  if (pool.storages.empty()) {
    return cpu_alias_storage(neuron_storage);
  }
  c10::intrusive_ptr<c10::StorageImpl> impl = std::move(pool.storages.back());
  pool.storages.pop_back();
  c10::StorageImpl* neuron = neuron_storage.unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(alias_data_ptr(neuron));
  impl->set_nbytes(neuron->nbytes());
  return c10::Storage(std::move(impl));
}

at::Tensor pooled_cpu_alias(const at::Tensor& t, const c10::Storage& storage) {
  AliasPool& pool = alias_pool();
  if (pool.tensors.empty()) {
    return cpu_alias(t, storage);
  }
  c10::intrusive_ptr<c10::TensorImpl> impl = std::move(pool.tensors.back());
  pool.tensors.pop_back();
  if (impl->is_inference() != c10::InferenceMode::is_enabled()) {
    return cpu_alias(t, storage); // made in the other mode: its keys differ
  }
  impl->set_storage_and_dtype(storage, t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  impl->_set_conj(t.is_conj());
  impl->_set_neg(t.is_neg());
  return at::Tensor(std::move(impl));
}

void recycle_aliases(c10::ArrayRef<at::Tensor*> tensors, c10::ArrayRef<c10::Storage*> storages) {
  AliasPool& pool = alias_pool();
  for (at::Tensor* t : tensors) {
    if (!t->defined()) {
      continue;
    }
    c10::intrusive_ptr<c10::TensorImpl> impl = t->unsafeReleaseIntrusivePtr();
    if (impl.use_count() != 1 || impl.weak_use_count() != 1 || pool.tensors.size() >= kPoolCap ||
        typeid(*impl) != typeid(c10::TensorImpl) || !impl->allow_tensor_metadata_change() ||
        impl->is_wrapped_number() ||
        impl->get_backend_meta() != nullptr) {
      continue; // dropped: still referenced, or not as a fresh alias would be
    }
    impl->_set_conj(false);
    impl->_set_neg(false);
    if (impl->key_set() != fresh_alias_keys(impl->is_inference())) {
      continue;
    }
    impl->set_storage_keep_dtype(pool.idle);
    pool.tensors.push_back(std::move(impl));
  }
  for (c10::Storage* s : storages) {
    if (!*s) {
      continue;
    }
    c10::intrusive_ptr<c10::StorageImpl> impl =
        c10::intrusive_ptr<c10::StorageImpl>::reclaim(s->unsafeReleaseStorageImpl());
    if (impl.use_count() != 1 || impl.weak_use_count() != 1 || pool.storages.size() >= kPoolCap ||
        impl->allocator() != routing_cpu_allocator() || !impl->resizable()) {
      continue;
    }
    impl->set_data_ptr_noswap(c10::DataPtr(nullptr, c10::Device(c10::kCPU))); // frees the neuron ref
    impl->set_nbytes(0);
    pool.storages.push_back(std::move(impl));
  }
}

namespace {

// The read-alias cache (cached_read_alias), per thread: 4-way set-associative,
// least recently used way replaced. The set is chosen from the address and the
// layout, so one address seen with several layouts (the allocator hands the
// same block out for a (1, 1, 256) activation and a (1, 4, 1, 64) one in one
// decode step) takes several ways instead of evicting itself. A decode step of
// a small Llama reads ~530 distinct (address, layout) keys over its ~6,600
// lookups; with 512 entries nearly every repeat is a hit (a direct-mapped
// cache of 128 entries missed 44% of the lookups).
constexpr size_t kReadSets = 128;
constexpr size_t kReadWays = 4;

struct ReadSlot {
  const void* data = nullptr;
  size_t nbytes = 0;
  uint32_t used = 0; // the cache's clock at the last hit or fill (0: never)
  at::Tensor alias; // undefined while the slot is empty
};

struct ReadAliasCache {
  ReadSlot sets[kReadSets][kReadWays];
  uint32_t clock = 0;
};

ReadAliasCache& read_cache() {
  thread_local ReadAliasCache cache;
  return cache;
}

ReadSlot* read_set(ReadAliasCache& cache, const void* data, const at::Tensor& t) {
  uintptr_t h = reinterpret_cast<uintptr_t>(data);
  h = (h >> 6) ^ (h >> 13) ^ static_cast<uintptr_t>(t.storage_offset());
  for (const int64_t s : t.sizes()) {
    h = h * 31 + static_cast<uintptr_t>(s);
  }
  for (const int64_t s : t.strides()) {
    h = h * 17 + static_cast<uintptr_t>(s);
  }
  h ^= h >> 11;
  return cache.sets[h & (kReadSets - 1)];
}

bool same_layout(const c10::TensorImpl& alias, const at::Tensor& t) {
  return alias.dtype() == t.dtype() && alias.storage_offset() == t.storage_offset() &&
      alias.sizes() == t.sizes() && alias.strides() == t.strides() &&
      alias.is_conj() == t.is_conj() && alias.is_neg() == t.is_neg();
}

// The least recently used way of `set` (an empty one first).
ReadSlot& victim(ReadSlot* set) {
  size_t oldest = 0;
  for (size_t w = 1; w < kReadWays; ++w) {
    if (set[w].used < set[oldest].used) {
      oldest = w;
    }
  }
  return set[oldest];
}

} // namespace

at::Tensor cached_read_alias(const at::Tensor& t) {
  check_is_neuron(t);
  const c10::StorageImpl* neuron = t.storage().unsafeGetStorageImpl();
  const void* data = neuron->data();
  const size_t nbytes = neuron->nbytes();
  ReadAliasCache& cache = read_cache();
  ReadSlot* set = read_set(cache, data, t);
  const bool inference = c10::InferenceMode::is_enabled();
  for (size_t w = 0; w < kReadWays; ++w) {
    ReadSlot& slot = set[w];
    if (slot.data == data && slot.nbytes == nbytes && slot.alias.defined()) {
      c10::TensorImpl* impl = slot.alias.unsafeGetTensorImpl();
      if (impl->is_inference() == inference && same_layout(*impl, t)) {
        slot.used = ++cache.clock;
        return slot.alias;
      }
    }
  }
  // A miss: the least recently used way is refilled, in place when nobody else
  // holds its alias or the alias's storage (a view the kernel made of it, kept
  // by someone), else with a new alias.
  ReadSlot& slot = victim(set);
  slot.used = ++cache.clock;
  c10::TensorImpl* impl = slot.alias.defined() ? slot.alias.unsafeGetTensorImpl() : nullptr;
  if (impl != nullptr && slot.alias.use_count() == 1 && slot.alias.weak_use_count() == 1 &&
      impl->is_inference() == inference && impl->unsafe_storage().use_count() == 1) {
    c10::StorageImpl* storage = impl->unsafe_storage().unsafeGetStorageImpl();
    storage->set_data_ptr_noswap(c10::DataPtr(const_cast<void*>(data), c10::Device(c10::kCPU)));
    storage->set_nbytes(nbytes);
    if (impl->dtype() != t.dtype()) {
      impl->set_storage_and_dtype(impl->unsafe_storage(), t.dtype());
    }
    impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    impl->_set_conj(t.is_conj());
    impl->_set_neg(t.is_neg());
  } else {
    // Not owning: the neuron tensor it is handed out for keeps the bytes alive.
    c10::Storage storage(
        c10::Storage::use_byte_size_t(), nbytes,
        c10::DataPtr(const_cast<void*>(data), c10::Device(c10::kCPU)),
        /*allocator=*/nullptr, /*resizable=*/false);
    slot.alias = cpu_alias(t, storage);
  }
  slot.data = data;
  slot.nbytes = nbytes;
  return slot.alias;
}

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
  c10::DataPtr ptr = alias_data_ptr(impl);
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
  check_is_neuron(t);
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

bool relabel_fresh_result(const at::Tensor& cpu_result, c10::DeviceIndex device) {
  if (!cpu_result.defined() || !cpu_result.device().is_cpu() ||
      cpu_result.layout() != c10::kStrided || cpu_result.is_nested() || cpu_result.is_quantized() ||
      !cpu_result.has_storage() || !relabelable(cpu_result)) {
    return false;
  }
  c10::StorageImpl* storage = cpu_result.storage().unsafeGetStorageImpl();
  c10::DataPtr& ptr = storage->_mutable_data_ptr_no_checks();
  if (!is_accounted_deleter(ptr.get_deleter())) {
    return false;
  }
  ptr.unsafe_set_device(c10::Device(kNeuron, device));
  storage->set_allocator(neuron_allocator());
  relabel_tensor(cpu_result);
  return true;
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
  TORCH_CHECK_NOT_IMPLEMENTED(
      cpu_result.layout() == c10::kStrided,
      "neuron supports only dense (strided) tensors, but this op produced a ", cpu_result.layout(),
      " tensor. NeuronCores have no sparse tensor support: keep sparse tensors on the CPU "
      "(or call .to_dense() before moving to neuron). A sparse gradient (nn.Embedding / "
      "nn.EmbeddingBag with sparse=True) is one: construct them with sparse=False on neuron.");
  TORCH_CHECK_NOT_IMPLEMENTED(
      !cpu_result.is_nested(),
      "neuron supports only dense (strided) tensors, but this op produced a nested tensor. "
      "NeuronCores have no nested tensor support. PyTorch makes one by itself in the inference "
      "fast path of nn.TransformerEncoder (eval mode, no grad, a src_key_padding_mask): build "
      "the encoder with enable_nested_tensor=False (same results), or keep nested tensors on "
      "the CPU and call .to_padded_tensor() before moving to neuron.");
  TORCH_CHECK_NOT_IMPLEMENTED(
      !cpu_result.is_quantized(),
      "neuron supports only dense (strided) tensors, but this op produced a quantized tensor (",
      cpu_result.scalar_type(), "). NeuronCores have no quantized tensor type: quantize on the CPU "
      "(torch.quantize_per_tensor(x.cpu(), ...)), or keep the values in a plain dtype on neuron "
      "(int8 / fp8 with a separate scale tensor).");
  c10::StorageImpl* storage = cpu_result.storage().unsafeGetStorageImpl();
  const c10::Device target(kNeuron, device);
  c10::DataPtr& ptr = storage->_mutable_data_ptr_no_checks();
  if (is_accounted_deleter(ptr.get_deleter())) {
    // Fresh device memory allocated by the CPU kernel: relabel it.
    ptr.unsafe_set_device(target);
    storage->set_allocator(neuron_allocator());
    if (relabelable(cpu_result)) {
      relabel_tensor(cpu_result);
      return cpu_result;
    }
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
