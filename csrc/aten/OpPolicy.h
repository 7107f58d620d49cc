// Op and dtype policy of the `neuron` device: which ops may take CPU tensors
// beside neuron ones, which ops run PyTorch's CPU kernel instead of its
// generic composite kernel, and which dtypes a NeuronCore cannot compute in.
// The tables themselves, each entry with its reason, are in OpPolicy.cpp.
// (The autocast cast lists are PyTorch's own shared lists: see Autocast.cpp.)
#pragma once

#include <ATen/core/operator_name.h>
#include <c10/core/ScalarType.h>

namespace torch_neuronx {

// True when `op` (any overload) accepts CPU index tensors beside neuron
// tensors, as CUDA does; the boxed fallback then passes its `indices`
// argument through (never a CPU `self` or `values`).
bool accepts_cpu_indices(const c10::OperatorName& op);
// True when `op` (any overload) takes its `scalars` argument, a 1-d tensor of
// per-tensor scalars, on the CPU beside neuron tensor lists, as CUDA requires
// (the Tensor overloads of _foreach_addcdiv / _foreach_addcmul).
bool accepts_cpu_scalars(const c10::OperatorName& op);
// index_put_ family: a CPU `self` with neuron indices runs on the CPU, as CUDA's
// kernel moves the indices to the indexed tensor's device.
bool writes_through_cpu_indices(const c10::OperatorName& op);

// True when `op` (any overload) must run PyTorch's CPU kernel through the
// boxed fallback although PyTorch also registers a composite kernel that a
// PrivateUse1 device would otherwise get.
bool needs_cpu_kernel(const c10::OperatorName& op);

// True for the _foreach_* ops, which the boxed fallback runs whole, as one
// CPU kernel call over every tensor of the list.
bool is_foreach_op(const c10::OperatorName& op);

// True for dtypes NeuronCore engines cannot compute in (fp64, complex): ops
// on them count as host fallbacks in torch_neuronx.get_fallback_ops().
bool is_host_fallback_dtype(c10::ScalarType t);

// Warns once per process that fp64/complex data was placed on the device;
// `where` names the first op or copy that did it.
void warn_host_fallback_dtype(c10::ScalarType t, const char* where);

} // namespace torch_neuronx
