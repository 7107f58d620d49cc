// Events of the software NeuronCore. Work is complete when it is issued, so an
// event is complete as soon as it is recorded; recording takes a host
// timestamp, and elapsed_time is the time between two such timestamps.
#pragma once

#include <c10/core/Device.h>

namespace torch_neuronx {

// Records the event behind `*event` (creating it when `*event` is null).
// `timing` is false for events created without enable_timing=True; `device`
// is the index of the core whose stream records it.
void record_event(void** event, bool timing, c10::DeviceIndex device);

// Frees an event created by record_event (null is allowed).
void destroy_event(void* event) noexcept;

// Milliseconds from event `start` to event `end`. Raises when either was not
// recorded, was created without timing, or when the two were recorded on
// different cores (ValueError).
double event_elapsed_ms(void* start, void* end);

} // namespace torch_neuronx
