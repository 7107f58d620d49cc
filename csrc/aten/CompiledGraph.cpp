// Fast paths for the Python wrapper Inductor generates for a neuron graph.
//
// The wrapper allocates every buffer and calls the extern BLAS kernels
// (extern_kernels.mm/bmm/addmm/baddbmm with out=) once per run. Through
// torch.empty_strided and torch.mm(out=) each of those parses Python
// arguments, dispatches to PrivateUse1 and (for the matmuls) goes through the
// boxed fallback, which inspects the schema and every argument. Here the same
// work is done directly: accounted allocation on the current NeuronCore, and
// the CPU kernel on zero-copy aliases of the operands. Observable behaviour is
// the same as the eager path: memory is accounted to the core, the op counts
// (get_executed_ops) name the same ATen ops, operands on another device raise
// the eager device-mismatch error, and host-only dtypes (fp64, complex) and
// non-unit alpha/beta take the eager path unchanged.
#include "aten/CompiledGraph.h"

#include "aten/Alias.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>

namespace torch_neuronx {
namespace {

#define TRACK_COMPILED(NAME)                                  \
  do {                                                        \
    static const char kName[] = NAME;                         \
    track_op(static_cast<const void*>(kName), kName, false);  \
  } while (0)

at::Tensor empty_strided_neuron(
    std::vector<int64_t> size,
    std::vector<int64_t> stride,
    c10::ScalarType dtype) {
  TRACK_COMPILED("aten::empty_strided");
  const c10::DeviceIndex index = current_device();
  c10::DeviceGuard guard(c10::Device(kNeuron, index));
  return at::detail::empty_strided_generic(
      size, stride, neuron_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
}

// True when the eager path must run the op: an operand that is not a neuron
// tensor on out's core (it raises the eager error there), or a host-only dtype
// (it is counted and warned as a host fallback there).
bool needs_eager_path(std::initializer_list<const at::Tensor*> operands, const at::Tensor& out) {
  if (out.device().type() != kNeuron || is_host_fallback_dtype(out.scalar_type())) {
    return true;
  }
  for (const at::Tensor* t : operands) {
    if (t->device() != out.device() || is_host_fallback_dtype(t->scalar_type())) {
      return true;
    }
  }
  return false;
}

// Runs `kernel(out_alias, aliases...)` on CPU aliases with CPU allocations
// (workspaces) accounted to out's core, and checks that out kept its memory.
template <typename Kernel>
void run_on_aliases(const at::Tensor& out, Kernel&& kernel) {
  at::Tensor out_alias = cpu_alias(out);
  const void* before = out_alias.const_data_ptr();
  {
    RouteAllocationsTo route(out.device().index());
    kernel(out_alias);
  }
  TORCH_CHECK(
      out_alias.const_data_ptr() == before && out_alias.sizes() == out.sizes(),
      "neuron: a compiled graph's extern kernel resized its preallocated output (sizes ",
      out.sizes(), " -> ", out_alias.sizes(), "); this is a bug in the compiled graph's buffer plan");
}

at::Tensor mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor out) {
  if (needs_eager_path({&self, &mat2}, out)) {
    return at::mm_out(out, self, mat2);
  }
  at::Tensor a = cpu_alias(self), b = cpu_alias(mat2);
  run_on_aliases(out, [&](at::Tensor& o) { at::mm_out(o, a, b); });
  TRACK_COMPILED("aten::mm.out");
  return out;
}

at::Tensor bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor out) {
  if (needs_eager_path({&self, &mat2}, out)) {
    return at::bmm_out(out, self, mat2);
  }
  at::Tensor a = cpu_alias(self), b = cpu_alias(mat2);
  run_on_aliases(out, [&](at::Tensor& o) { at::bmm_out(o, a, b); });
  TRACK_COMPILED("aten::bmm.out");
  return out;
}

// alpha/beta arrive as Python objects (int or float, as Inductor writes them);
// only the common alpha == beta == 1 takes the fast path.
bool is_one(const pybind11::object& x) {
  if (pybind11::isinstance<pybind11::bool_>(x)) {
    return false;
  }
  if (pybind11::isinstance<pybind11::int_>(x) || pybind11::isinstance<pybind11::float_>(x)) {
    return x.cast<double>() == 1.0;
  }
  return false;
}

c10::Scalar to_scalar(const pybind11::object& x) {
  if (pybind11::isinstance<pybind11::bool_>(x)) {
    return c10::Scalar(x.cast<bool>());
  }
  if (pybind11::isinstance<pybind11::int_>(x)) {
    return c10::Scalar(x.cast<int64_t>());
  }
  return c10::Scalar(x.cast<double>());
}

at::Tensor addmm_out(
    const at::Tensor& self,
    const at::Tensor& mat1,
    const at::Tensor& mat2,
    const pybind11::object& beta,
    const pybind11::object& alpha,
    at::Tensor out) {
  if (!is_one(alpha) || !is_one(beta) || needs_eager_path({&self, &mat1, &mat2}, out)) {
    return at::addmm_out(out, self, mat1, mat2, to_scalar(beta), to_scalar(alpha));
  }
  at::Tensor s = cpu_alias(self), a = cpu_alias(mat1), b = cpu_alias(mat2);
  run_on_aliases(out, [&](at::Tensor& o) { at::addmm_out(o, s, a, b); });
  TRACK_COMPILED("aten::addmm.out");
  return out;
}

at::Tensor baddbmm_out(
    const at::Tensor& self,
    const at::Tensor& batch1,
    const at::Tensor& batch2,
    const pybind11::object& beta,
    const pybind11::object& alpha,
    at::Tensor out) {
  if (!is_one(alpha) || !is_one(beta) || needs_eager_path({&self, &batch1, &batch2}, out)) {
    return at::baddbmm_out(out, self, batch1, batch2, to_scalar(beta), to_scalar(alpha));
  }
  at::Tensor s = cpu_alias(self), a = cpu_alias(batch1), b = cpu_alias(batch2);
  run_on_aliases(out, [&](at::Tensor& o) { at::baddbmm_out(o, s, a, b); });
  TRACK_COMPILED("aten::baddbmm.out");
  return out;
}

} // namespace

void bind_compiled_graph(pybind11::module& m) {
  namespace py = pybind11;
  m.def("_empty_strided_neuron", &empty_strided_neuron, py::arg("size"), py::arg("stride"),
        py::arg("dtype"),
        "torch.empty_strided(size, stride, dtype=dtype, device='neuron') on the current core "
        "(accounted), for compiled graphs' buffers.");
  m.def("_mm_out", &mm_out, py::arg("self"), py::arg("mat2"), py::kw_only(), py::arg("out"),
        "torch.mm(self, mat2, out=out) for neuron tensors of a compiled graph.");
  m.def("_bmm_out", &bmm_out, py::arg("self"), py::arg("mat2"), py::kw_only(), py::arg("out"),
        "torch.bmm(self, mat2, out=out) for neuron tensors of a compiled graph.");
  m.def("_addmm_out", &addmm_out, py::arg("self"), py::arg("mat1"), py::arg("mat2"),
        py::kw_only(), py::arg("beta") = 1, py::arg("alpha") = 1, py::arg("out"),
        "torch.addmm(self, mat1, mat2, beta=beta, alpha=alpha, out=out) for a compiled graph.");
  m.def("_baddbmm_out", &baddbmm_out, py::arg("self"), py::arg("batch1"), py::arg("batch2"),
        py::kw_only(), py::arg("beta") = 1, py::arg("alpha") = 1, py::arg("out"),
        "torch.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha, out=out) for a compiled graph.");
}

} // namespace torch_neuronx
