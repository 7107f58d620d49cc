// The neuron random-number generator. Its state is the 16-byte (uint64 seed,
// uint64 offset) pair of a Philox-style counter generator, which is what
// DTensor's OffsetBasedRNGTracker reads and rewrites per shard. Each random op
// runs the CPU kernel with a CPU engine derived from (seed, offset) and then
// advances the offset by the number of values it drew (rounded up to 4).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_neuronx {

struct NeuronGeneratorImpl : public c10::GeneratorImpl {
  explicit NeuronGeneratorImpl(c10::DeviceIndex device_index);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type();

  // A CPU generator whose stream is a pure function of (seed, offset); the
  // offset then advances by `consumed` rounded up to a multiple of 4.
  at::Generator derive_cpu_generator();
  void advance(uint64_t consumed);

 private:
  NeuronGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device_index);
at::Generator new_generator(c10::DeviceIndex device_index);

} // namespace torch_neuronx
