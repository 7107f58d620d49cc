// Op tracking: how many times each ATen op ran on neuron, and how many of
// those ran as a host fallback (work a NeuronCore cannot do, e.g. fp64).
// Read from Python by torch_neuronx.get_executed_ops() / get_fallback_ops().
#pragma once

#include <ATen/core/operator_name.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

namespace torch_neuronx {

// Records one execution of an op (`key` is any address stable for the op's
// lifetime; `name` is read the first time only). `host_fallback` marks ops
// that a NeuronCore could not run (fp64/complex) and that ran on the host.
void track_op(const void* key, const char* name, bool host_fallback);
void track_op(const void* key, const std::string& name, bool host_fallback);
void track_op(const void* key, const c10::OperatorName& name, bool host_fallback);

// Records one device execution (not a host fallback) of the op named by the
// string literal NAME ("aten::batch_norm_stats"), keyed by that call site's
// own static copy of the name: what every hand-written kernel calls first.
#define TORCH_NEURONX_TRACK(NAME)                                                  \
  do {                                                                            \
    static const char kTrackedName[] = NAME;                                      \
    ::torch_neuronx::track_op(static_cast<const void*>(kTrackedName), kTrackedName, false); \
  } while (0)

// Op name ("aten::add.Tensor") -> (executions, host-fallback executions)
// since start or the last clear_op_counts().
std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> op_counts();
void clear_op_counts();

} // namespace torch_neuronx
