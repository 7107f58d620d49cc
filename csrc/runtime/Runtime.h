// The software NeuronCore runtime state the C++ glue needs: how many logical
// NeuronCores are visible, each core's HBM capacity, and the current device of
// each thread. The topology itself (platform, chips, LNC, visible cores) is
// parsed in Python (torch_neuronx/runtime/topology.py) and handed over once
// through set_topology().
#pragma once

#include <c10/core/Device.h>
#include <cstdint>
#include <string>

namespace torch_neuronx {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

// Installs the topology. `error` non-empty means the environment was invalid:
// every later device use raises it (import torch itself must not fail).
void set_topology(
    int device_count,
    int64_t hbm_bytes_per_core,
    const std::string& description,
    const std::string& error,
    int default_device);

// Number of visible logical NeuronCores (0 when the topology is invalid).
c10::DeviceIndex device_count() noexcept;

// HBM capacity of one logical core available to this process, in bytes: the
// core's HBM times the fraction set by set_memory_fraction.
int64_t hbm_capacity(c10::DeviceIndex index);

// Limits this process to `fraction` (0, 1] of core `index`'s HBM.
void set_memory_fraction(c10::DeviceIndex index, double fraction);
// The fraction last set for core `index` (1.0 when none was set).
double memory_fraction(c10::DeviceIndex index);
// HBM of one logical core, in bytes, whatever fraction this process may use.
int64_t hbm_bytes_per_core();

// One line describing the topology, used in error messages.
const std::string& topology_description();

// Raises a clear error if `index` is not a visible neuron device (or the
// topology is invalid). Returns the resolved index (-1 means current device).
c10::DeviceIndex check_device(c10::DeviceIndex index);

// The calling thread's current device (defaults to the process default,
// which is LOCAL_RANK when set).
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);

} // namespace torch_neuronx
