// What the Python wrapper of a compiled graph (torch.compile(backend="neuron"))
// calls per run, without the eager device path: buffer allocation and the
// extern matmuls of Inductor's generated code. Bound as torch_neuronx._C
// functions (see CompiledGraph.cpp).
#pragma once

#include <torch/csrc/utils/pybind.h>

namespace torch_neuronx {

// Adds _empty_strided_neuron, _assert_input_layouts, _mm_out, _bmm_out, _addmm_out and
// _baddbmm_out to `m`.
void bind_compiled_graph(pybind11::module& m);

} // namespace torch_neuronx
