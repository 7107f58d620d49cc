// Unboxed kernels for the handful of ops that dominate small-op eager work
// (a decode step is mostly mul, mm, add, cat, the RMSNorm ops, silu): the same
// work as the boxed fallback, without boxing the arguments onto a stack and
// walking the op's schema. Calls they do not cover take the boxed fallback.
#pragma once

#include <torch/library.h>

namespace torch_neuronx {

// Registers the unboxed kernels in `lib` (the aten PrivateUse1 library of
// Fallback.cpp), each only for an op that would otherwise get the boxed
// fallback as its PrivateUse1 kernel.
void register_fast_paths(torch::Library& lib);

} // namespace torch_neuronx
