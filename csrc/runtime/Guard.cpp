// DeviceGuardImpl for `neuron`, registered with C10_REGISTER_GUARD_IMPL: the
// interface through which PyTorch reaches a real per-thread current device (so
// torch.accelerator.set_device_index, torch.neuron.device(i) and neuron:i all
// work), streams (Stream.h) and events (Event.h). The software NeuronCore
// executes every op synchronously, so synchronisation has nothing to wait for.
#include "runtime/Event.h"
#include "runtime/Runtime.h"
#include "runtime/Stream.h"

#include <c10/core/DeviceCapability.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace torch_neuronx {
namespace {

class NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override {
    return kNeuron;
  }
  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNeuron, "expected a neuron device, got ", d);
    const c10::Device old = getDevice();
    if (d.index() != old.index()) {
      set_current_device(d.index());
    }
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kNeuron, current_device());
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNeuron, "expected a neuron device, got ", d);
    set_current_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index());
    } catch (...) {
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    const c10::DeviceIndex idx = d.has_index() ? d.index() : current_device();
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, idx), current_stream_id(idx));
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    const int idx = d.has_index() ? d.index() : current_device();
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kNeuron, idx));
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    const int idx = check_device(d.has_index() ? d.index() : current_device());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNeuron, idx), new_stream_id());
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    const c10::Stream old = getStream(s.device());
    exchange_stream_id(s.device_index(), s.id());
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return device_count();
  }
  // torch.accelerator.get_device_capability(): the dtypes a neuron tensor can hold and convert
  // to and from the others (dense tensors; fp64 and complex compute as host fallbacks).
  // Not listed: the quantized dtypes (quantized tensors are refused on the device), and the
  // bit-container and sub-byte dtypes (bits*, int1-int7, uint1-uint7, float4_e2m1fn_x2), which
  // can be allocated but which no copy kernel converts (as on the CPU): PyTorch's own
  // accelerator test takes "supported" to mean "round-trips through another supported dtype".
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    check_device(d.index());
    c10::DeviceCapability capability;
    auto& has = capability.capability_data.supported_scalar_types;
    has.has_QInt8 = has.has_QUInt8 = has.has_QInt32 = has.has_QUInt4x2 = has.has_QUInt2x4 = 0;
    has.has_Bits1x8 = has.has_Bits2x4 = has.has_Bits4x2 = has.has_Bits8 = has.has_Bits16 = 0;
    has.has_UInt1 = has.has_UInt2 = has.has_UInt3 = has.has_UInt4 = has.has_UInt5 = has.has_UInt6 =
        has.has_UInt7 = 0;
    has.has_Int1 = has.has_Int2 = has.has_Int3 = has.has_Int4 = has.has_Int5 = has.has_Int6 =
        has.has_Int7 = 0;
    has.has_Float4_e2m1fn_x2 = 0;
    return capability;
  }
  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex /*device_index*/,
      const c10::EventFlag flag) const override {
    record_event(event, flag == c10::EventFlag::BACKEND_DEFAULT, stream.device_index());
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override {
    return true;
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    destroy_event(event);
  }
  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override {}
  void recordDataPtrOnStream(const c10::DataPtr& /*data_ptr*/, const c10::Stream& /*stream*/)
      const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/)
      const override {
    return event_elapsed_ms(start, end);
  }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

} // namespace torch_neuronx
