// The boxed fallback (Fallback.cpp): the PrivateUse1 kernel of every ATen op
// without a neuron kernel of its own. It runs the op's CPU kernel on zero-copy
// CPU aliases of the neuron operands and returns the results as neuron
// tensors; see Fallback.cpp for what it checks and keeps.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_neuronx {

// Runs `op` (its arguments on `stack`, replaced by its results) on `neuron`.
void neuron_fallback(
    const c10::OperatorHandle& op,
    c10::DispatchKeySet keys,
    torch::jit::Stack* stack);

} // namespace torch_neuronx
