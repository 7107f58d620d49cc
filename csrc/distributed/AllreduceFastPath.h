// The commonest collective of the "neuron" c10d backend in one C++ call:
// all_reduce (SUM) of one contiguous tensor, handed to the group's gloo
// backend on the tensor's zero-copy CPU alias.
//
// Called by the group's C++ backend (distributed/NeuronBackend.h) before anything else.
// Why C++: the Python process group (torch_neuronx/distributed/process_group.py)
// made this decision with five Python-to-C++ calls per collective (dtype,
// contiguity, reduction op, alias, gloo) before gloo's own. Warm, that is ~3 µs;
// but a benchmark or a training step runs other code between two collectives,
// so each call runs with cold caches, where every one of those binding calls
// costs 4-20 µs (measured, bench/RESULTS.md "coll2"): together ~50 µs of CPU per
// rank per call, more than gloo's whole issue path. One call does it all here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <pybind11/pytypes.h>

#include <vector>

namespace torch_neuronx {

// True for the dtypes gloo reduces as they are (the C++ twin of
// torch_neuronx.distributed.aliases.GLOO_DTYPES, which a test keeps equal).
bool gloo_reduces(c10::ScalarType dtype);

// Starts `gloo->allreduce` on the CPU alias of `tensors[0]` and returns its
// work when the call is the plain case: exactly one tensor, contiguous, on a
// neuron device (or the CPU, passed as is), of a dtype gloo reduces, with
// ReduceOp::SUM, and no TorchDispatchMode is active (a mode must see the
// c10d::allreduce_ op that the general path then dispatches). Returns a null
// pointer otherwise, having done nothing: the
// caller's general path then checks, refuses or stages the call. Runs any
// queued Adaptive Eager work first (gloo reads the bytes). Call with the GIL
// held; it is released while gloo enqueues the transfer. The work returned is
// an AllreduceWork (distributed/AllreduceWork.h) over gloo's: its result and
// future are `tensors`, and on failure it raises what the Python callable
// `explain(op, transport_error)` returns (the process group's diagnosis).
c10::intrusive_ptr<c10d::Work> allreduce_alias(
    const c10::intrusive_ptr<c10d::Backend>& gloo,
    const std::vector<at::Tensor>& tensors,
    const c10d::AllreduceOptions& opts,
    const pybind11::handle& explain);

} // namespace torch_neuronx
