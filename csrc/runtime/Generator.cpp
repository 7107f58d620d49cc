#include "runtime/Generator.h"

#include "runtime/Runtime.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/Utils.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <random>

namespace torch_neuronx {
namespace {

// Same default seed as CUDA's generators (c10::default_rng_seed_val).
constexpr uint64_t kDefaultSeed = 67280421310721ULL;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

} // namespace

NeuronGeneratorImpl::NeuronGeneratorImpl(c10::DeviceIndex device_index)
    : c10::GeneratorImpl(
          c10::Device(kNeuron, device_index),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(kDefaultSeed) {}

void NeuronGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void NeuronGeneratorImpl::set_offset(uint64_t offset) {
  offset_ = offset;
}

uint64_t NeuronGeneratorImpl::get_offset() const {
  return offset_;
}

uint64_t NeuronGeneratorImpl::current_seed() const {
  return seed_;
}

uint64_t NeuronGeneratorImpl::seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  set_current_seed(s);
  return s;
}

void NeuronGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(
      new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == 16,
      "neuron generator state must be a uint8 tensor of 16 bytes (uint64 seed, uint64 offset), "
      "got ", new_state.numel(), " elements of ", new_state.dtype().name(),
      ". Pass the value returned by torch.neuron.get_rng_state().");
  TORCH_CHECK(
      new_state.device().is_cpu(),
      "neuron generator state must be a CPU tensor, got one on ", new_state.device());
  // A FakeTensor or other data-less tensor (e.g. the state converted by an op
  // under FakeTensorMode) has sizes but no bytes to read.
  TORCH_CHECK(
      new_state.has_storage() && new_state.storage().data() != nullptr,
      "neuron generator state has no data (a FakeTensor, meta or other data-less tensor): "
      "pass the real uint8 CPU tensor returned by torch.neuron.get_rng_state(), created outside "
      "FakeTensorMode.");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  uint64_t seed = 0;
  uint64_t offset = 0;
  std::memcpy(&seed, bytes, 8);
  std::memcpy(&offset, bytes + 8, 8);
  seed_ = seed;
  offset_ = offset;
}

c10::intrusive_ptr<c10::TensorImpl> NeuronGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({16}, at::kByte, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  auto* bytes = static_cast<uint8_t*>(state.mutable_data_ptr());
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

c10::DeviceType NeuronGeneratorImpl::device_type() {
  return kNeuron;
}

at::Generator NeuronGeneratorImpl::derive_cpu_generator() {
  const uint64_t key = splitmix64(seed_ ^ splitmix64(offset_ + 0x632BE59BD9B4E019ULL));
  return at::make_generator<at::CPUGeneratorImpl>(key);
}

void NeuronGeneratorImpl::advance(uint64_t consumed) {
  const uint64_t step = consumed == 0 ? 4 : (consumed + 3) / 4 * 4;
  offset_ += step;
}

NeuronGeneratorImpl* NeuronGeneratorImpl::clone_impl() const {
  auto* gen = new NeuronGeneratorImpl(device().index());
  gen->seed_ = seed_;
  gen->offset_ = offset_;
  return gen;
}

const at::Generator& default_generator(c10::DeviceIndex device_index) {
  static std::mutex mutex;
  static std::deque<at::Generator> generators; // stable addresses
  const c10::DeviceIndex idx = check_device(device_index);
  std::lock_guard<std::mutex> lock(mutex);
  while (static_cast<int>(generators.size()) <= idx) {
    generators.emplace_back(
        at::make_generator<NeuronGeneratorImpl>(static_cast<c10::DeviceIndex>(generators.size())));
  }
  return generators[idx];
}

at::Generator new_generator(c10::DeviceIndex device_index) {
  const c10::DeviceIndex idx = check_device(device_index);
  return at::make_generator<NeuronGeneratorImpl>(idx);
}

} // namespace torch_neuronx
