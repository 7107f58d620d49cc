// Op tracking: how many times each ATen op ran on neuron, and how many of
// those ran as a host fallback (work a NeuronCore cannot do, e.g. fp64).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

namespace torch_neuronx {

// name -> (executed, host_fallback)
std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> op_counts();
void clear_op_counts();

} // namespace torch_neuronx
