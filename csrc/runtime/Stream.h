// Streams of the software NeuronCore: stream ids and each thread's current
// stream per device. Every op runs to completion when it is issued, so a
// stream orders nothing; ids keep torch.neuron.Stream objects distinct and
// comparable, as CUDA's are.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace torch_neuronx {

// The calling thread's current stream id on device `index` (0, the default
// stream, until exchange_stream_id sets another).
c10::StreamId current_stream_id(c10::DeviceIndex index);

// Makes `id` the calling thread's current stream on device `index` and
// returns the previous current stream id.
c10::StreamId exchange_stream_id(c10::DeviceIndex index, c10::StreamId id);

// A stream id never handed out before in this process (from 1 on).
c10::StreamId new_stream_id();

} // namespace torch_neuronx
