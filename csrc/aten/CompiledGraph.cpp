// Fast paths for the Python wrapper Inductor generates for a neuron graph.
//
// The wrapper allocates every buffer and calls the extern BLAS kernels
// (extern_kernels.mm/bmm/addmm/baddbmm with out=) once per run. Through
// torch.empty_strided and torch.mm(out=) each of those parses Python
// arguments, dispatches to PrivateUse1 and (for the matmuls) goes through the
// boxed fallback, which inspects the schema and every argument. Here the same
// work is done directly: accounted allocation on the current NeuronCore, and
// the CPU kernel (at::cpu::*_out, no dispatcher) on zero-copy aliases of the
// operands taken from the per-thread alias pool. Observable behaviour is the
// same as the eager path: memory is accounted to the core, the op counts
// (get_executed_ops) name the same ATen ops, operands on another device raise
// the eager device-mismatch error, and host-only dtypes (fp64, complex) and
// non-unit alpha/beta take the eager path unchanged.
//
// Two more per-run costs of Inductor's wrapper are cut here: a matmul operand
// that is a view of a buffer may come described, (base, sizes, strides,
// offset), instead of as a tensor made by reinterpret_tensor for the one call
// (its CPU alias takes the geometry); and the wrapper's per-input layout
// checks (Inductor's assert_size_stride) are one call over all inputs.
//
// The functions are plain CPython vectorcall functions (METH_FASTCALL), not
// pybind11 ones: a decode step of a small Llama calls them ~60 times per
// token, and pybind11's argument conversion (keyword matching, a std::vector
// per int list) cost more than the allocation itself.
#include "aten/CompiledGraph.h"

#include "aten/Alias.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace torch_neuronx {
namespace {

// ---- Python arguments --------------------------------------------------------

// Raises Python's TypeError with a printf-formatted message.
[[noreturn]] void raise_type_error(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  throw torch::TypeError(std::string(message));
}

// Matches positional and keyword arguments of a vectorcall to the parameter
// names `names` (the first `positional` may be given by position, all by
// keyword); `slots[i]` is the object for names[i] or nullptr. Raises
// TypeError (as Python would) for too many positional arguments, an unknown
// keyword, or a parameter given twice.
template <size_t N>
void match_arguments(
    const char* fn,
    const std::array<const char*, N>& names,
    size_t positional,
    PyObject* const* args,
    Py_ssize_t nargs,
    PyObject* kwnames,
    std::array<PyObject*, N>& slots) {
  slots.fill(nullptr);
  if (static_cast<size_t>(nargs) > positional) {
    raise_type_error(
        "%s() takes %zu positional arguments but %zd were given", fn, positional, nargs);
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    slots[i] = args[i];
  }
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    if (key == nullptr) {
      throw python_error();
    }
    size_t i = 0;
    while (i < N && std::strcmp(key, names[i]) != 0) {
      ++i;
    }
    if (i == N) {
      raise_type_error("%s() got an unexpected keyword argument '%s'", fn, key);
    }
    if (slots[i] != nullptr) {
      raise_type_error("%s() got multiple values for argument '%s'", fn, key);
    }
    slots[i] = args[nargs + k];
  }
}

// The tensor in `obj` (alive as long as obj), or TypeError naming the argument.
const at::Tensor& tensor_argument(PyObject* obj, const char* fn, const char* name) {
  if (obj == nullptr) {
    raise_type_error("%s() missing required argument '%s'", fn, name);
  }
  if (!THPVariable_Check(obj)) {
    raise_type_error(
        "%s(): argument '%s' must be a Tensor, not %s", fn, name, Py_TYPE(obj)->tp_name);
  }
  return THPVariable_Unpack(obj);
}

// An operand of an extern product: a tensor, or the view a generated wrapper
// describes instead of materializing it (`reinterpret_tensor(base, size,
// stride, offset)` becomes the tuple `(base, size, stride, offset)`: sizes and
// strides in elements, offset in elements from base's own storage offset).
// A described view needs no neuron TensorImpl: its CPU alias takes the geometry.
struct Operand {
  const at::Tensor* base = nullptr;
  bool is_view = false;
  c10::SmallVector<int64_t, 6> size, stride;
  int64_t offset = 0; // absolute storage offset of the view
  at::Tensor materialized; // the view as a neuron tensor, made only for the eager path

  // The operand as a neuron tensor (the described view made, as Inductor's
  // reinterpret_tensor makes it: base's storage, keys and dtype, new geometry).
  const at::Tensor& tensor() {
    if (!is_view) {
      return *base;
    }
    if (!materialized.defined()) {
      materialized = at::detail::make_tensor<c10::TensorImpl>(
          c10::Storage(base->storage()), base->key_set(), base->dtype());
      materialized.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
    }
    return materialized;
  }
};

void int_list_argument(
    PyObject* obj, const char* fn, const char* name, c10::SmallVector<int64_t, 8>& out);

Operand operand_argument(PyObject* obj, const char* fn, const char* name) {
  Operand op;
  if (obj != nullptr && PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 4) {
    op.base = &tensor_argument(PyTuple_GET_ITEM(obj, 0), fn, name);
    c10::SmallVector<int64_t, 8> size, stride;
    int_list_argument(PyTuple_GET_ITEM(obj, 1), fn, name, size);
    int_list_argument(PyTuple_GET_ITEM(obj, 2), fn, name, stride);
    if (size.size() != stride.size()) {
      raise_type_error("%s(): view of argument '%s' has %zu sizes but %zu strides", fn, name,
                       size.size(), stride.size());
    }
    PyObject* off = PyTuple_GET_ITEM(obj, 3);
    const int64_t offset = PyLong_Check(off) ? PyLong_AsLongLong(off) : -1;
    if (!PyLong_Check(off) || (offset == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      raise_type_error("%s(): view of argument '%s' needs an int offset, not %s", fn, name,
                       Py_TYPE(off)->tp_name);
    }
    op.is_view = true;
    op.size.assign(size.begin(), size.end());
    op.stride.assign(stride.begin(), stride.end());
    op.offset = op.base->storage_offset() + offset;
    return op;
  }
  op.base = &tensor_argument(obj, fn, name);
  return op;
}

// A tuple or list of ints (a shape or strides, in elements) into `out`.
void int_list_argument(
    PyObject* obj, const char* fn, const char* name, c10::SmallVector<int64_t, 8>& out) {
  if (obj == nullptr) {
    raise_type_error("%s() missing required argument '%s'", fn, name);
  }
  const bool tuple = PyTuple_Check(obj);
  if (!tuple && !PyList_Check(obj)) {
    raise_type_error(
        "%s(): argument '%s' must be a tuple of ints, not %s", fn, name, Py_TYPE(obj)->tp_name);
  }
  const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(obj) : PyList_GET_SIZE(obj);
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = tuple ? PyTuple_GET_ITEM(obj, i) : PyList_GET_ITEM(obj, i);
    int64_t value = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
    if (!PyLong_Check(item)) {
      PyObject* index = PyNumber_Index(item); // numpy ints and other __index__ types
      if (index == nullptr) {
        PyErr_Clear();
        raise_type_error(
            "%s(): argument '%s' must be a tuple of ints, but element %zd is %s", fn, name, i,
            Py_TYPE(item)->tp_name);
      }
      value = PyLong_AsLongLong(index);
      Py_DECREF(index);
    }
    if (value == -1 && PyErr_Occurred()) {
      throw python_error();
    }
    out[i] = value;
  }
}

// alpha/beta arrive as Python numbers (int or float, as Inductor writes them);
// only the common alpha == beta == 1 takes the fast path.
bool is_one(PyObject* x) {
  if (x == nullptr) {
    return true; // defaulted
  }
  if (PyBool_Check(x)) {
    return false;
  }
  if (PyLong_Check(x)) {
    int overflow = 0;
    return PyLong_AsLongLongAndOverflow(x, &overflow) == 1 && overflow == 0;
  }
  return PyFloat_Check(x) && PyFloat_AS_DOUBLE(x) == 1.0;
}

c10::Scalar scalar_argument(PyObject* x, const char* fn, const char* name) {
  if (x == nullptr) {
    return c10::Scalar(1);
  }
  if (PyBool_Check(x)) {
    return c10::Scalar(x == Py_True);
  }
  if (PyLong_Check(x)) {
    const int64_t v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred()) {
      throw python_error();
    }
    return c10::Scalar(v);
  }
  if (PyFloat_Check(x)) {
    return c10::Scalar(PyFloat_AS_DOUBLE(x));
  }
  raise_type_error(
      "%s(): argument '%s' must be a number, not %s", fn, name, Py_TYPE(x)->tp_name);
}

// ---- the work ----------------------------------------------------------------

// True when the eager path must run the op: an operand that is not a neuron
// tensor on out's core (it raises the eager error there), or a host-only dtype
// (it is counted and warned as a host fallback there).
// (A described view has its base's device and dtype.)
template <size_t N>
bool needs_eager_path(const std::array<Operand, N>& operands, const at::Tensor& out) {
  if (out.device().type() != kNeuron || is_host_fallback_dtype(out.scalar_type())) {
    return true;
  }
  for (const Operand& op : operands) {
    if (op.base->device() != out.device() || is_host_fallback_dtype(op.base->scalar_type())) {
      return true;
    }
  }
  return false;
}

// Runs `kernel(out_alias, operand_aliases)` on pooled CPU aliases, without the
// GIL (as torch's own bindings do), with CPU allocations (workspaces) accounted
// to out's core; checks that out kept its memory; gives the aliases back. The
// alias of a described view is its base's alias with the view's geometry.
template <size_t N, typename Kernel>
void run_on_aliases(
    const at::Tensor& out, const std::array<Operand, N>& operands, Kernel&& kernel) {
  std::array<c10::Storage, N + 1> storages;
  std::array<at::Tensor, N + 1> aliases;
  for (size_t i = 0; i < N; ++i) {
    const Operand& op = operands[i];
    storages[i] = pooled_alias_storage(op.base->storage());
    aliases[i] = pooled_cpu_alias(*op.base, storages[i]);
    if (op.is_view) {
      aliases[i].unsafeGetTensorImpl()->set_sizes_and_strides(op.size, op.stride, op.offset);
    }
  }
  storages[N] = pooled_alias_storage(out.storage());
  aliases[N] = pooled_cpu_alias(out, storages[N]);
  const void* before = aliases[N].const_data_ptr();
  {
    RouteAllocationsTo route(out.device().index());
    pybind11::gil_scoped_release no_gil;
    kernel(aliases);
  }
  TORCH_CHECK(
      aliases[N].const_data_ptr() == before && aliases[N].sizes() == out.sizes(),
      "neuron: a compiled graph's extern kernel resized its preallocated output (sizes ",
      out.sizes(), " -> ", aliases[N].sizes(), "); this is a bug in the compiled graph's buffer plan");
  std::array<at::Tensor*, N + 1> tensor_ptrs;
  std::array<c10::Storage*, N + 1> storage_ptrs;
  for (size_t i = 0; i <= N; ++i) {
    tensor_ptrs[i] = &aliases[i];
    storage_ptrs[i] = &storages[i];
  }
  recycle_aliases(tensor_ptrs, storage_ptrs);
}

// out (the Python object) with a new reference: what torch.mm(..., out=out) returns.
PyObject* return_out(PyObject* out) {
  Py_INCREF(out);
  return out;
}

// ---- the functions -----------------------------------------------------------

PyObject* empty_strided_neuron(
    PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  static constexpr const char* kFn = "_empty_strided_neuron";
  std::array<PyObject*, 3> slots;
  match_arguments(kFn, std::array<const char*, 3>{"size", "stride", "dtype"}, 3, args, nargs,
                  kwnames, slots);
  c10::SmallVector<int64_t, 8> size, stride;
  int_list_argument(slots[0], kFn, "size", size);
  int_list_argument(slots[1], kFn, "stride", stride);
  if (slots[2] == nullptr || !THPDtype_Check(slots[2])) {
    raise_type_error(
        "%s(): argument 'dtype' must be a torch.dtype, not %s", kFn,
        slots[2] == nullptr ? "nothing" : Py_TYPE(slots[2])->tp_name);
  }
  const c10::ScalarType dtype = reinterpret_cast<THPDtype*>(slots[2])->scalar_type;
  TORCH_NEURONX_TRACK("aten::empty_strided");
  // The neuron allocator places memory on the calling thread's current core.
  return THPVariable_Wrap(at::detail::empty_strided_generic(
      size, stride, neuron_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype));
  END_HANDLE_TH_ERRORS
}

// The extern products a wrapper calls. Each is Inductor's `extern_kernels.<op>(..., out=buf)`:
// on operands the CPU kernel can read in place it runs on aliases (at::cpu::<op>_out, no
// dispatcher), otherwise the eager device path with its errors; either way it returns `out`.
using ProductFn = at::Tensor& (*)(at::Tensor&, const at::Tensor&, const at::Tensor&);
using BiasedProductFn = at::Tensor& (*)(at::Tensor&, const at::Tensor&, const at::Tensor&,
                                        const at::Tensor&, const c10::Scalar&, const c10::Scalar&);
using CpuBiasedProductFn = at::Tensor& (*)(at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, const c10::Scalar&, const c10::Scalar&);

constexpr char kMmOut[] = "aten::mm.out";
constexpr char kBmmOut[] = "aten::bmm.out";
constexpr char kAddmmOut[] = "aten::addmm.out";
constexpr char kBaddbmmOut[] = "aten::baddbmm.out";

// out = self @ mat2 (mm, bmm); arguments (self, mat2, *, out).
template <const char* Fn, const char* Tracked, ProductFn Eager, ProductFn Cpu>
PyObject* product_out(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  std::array<PyObject*, 3> s;
  match_arguments(Fn, std::array<const char*, 3>{"self", "mat2", "out"}, 2, args, nargs, kwnames, s);
  std::array<Operand, 2> operands{operand_argument(s[0], Fn, "self"),
                                  operand_argument(s[1], Fn, "mat2")};
  const at::Tensor& out = tensor_argument(s[2], Fn, "out");
  if (needs_eager_path(operands, out)) {
    const at::Tensor& self = operands[0].tensor();
    const at::Tensor& mat2 = operands[1].tensor();
    pybind11::gil_scoped_release no_gil;
    at::Tensor o = out;
    Eager(o, self, mat2);
    return return_out(s[2]);
  }
  run_on_aliases(out, operands, [](std::array<at::Tensor, 3>& a) { Cpu(a[2], a[0], a[1]); });
  track_op(static_cast<const void*>(Tracked), Tracked, false);
  return return_out(s[2]);
  END_HANDLE_TH_ERRORS
}

// out = beta * self + alpha * (m1 @ m2) (addmm, baddbmm); arguments (self, m1, m2, beta, alpha, *,
// out) with the names of `Names`; beta or alpha other than 1 takes the eager path.
template <const char* Fn, const char* Tracked, const char* const* Names, BiasedProductFn Eager,
          CpuBiasedProductFn Cpu>
PyObject* biased_product_out(
    PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  std::array<PyObject*, 6> s;
  match_arguments(Fn, std::array<const char*, 6>{"self", Names[0], Names[1], "beta", "alpha", "out"}, 3,
                  args, nargs, kwnames, s);
  std::array<Operand, 3> operands{operand_argument(s[0], Fn, "self"),
                                  operand_argument(s[1], Fn, Names[0]),
                                  operand_argument(s[2], Fn, Names[1])};
  const at::Tensor& out = tensor_argument(s[5], Fn, "out");
  if (!is_one(s[3]) || !is_one(s[4]) || needs_eager_path(operands, out)) {
    const c10::Scalar beta = scalar_argument(s[3], Fn, "beta");
    const c10::Scalar alpha = scalar_argument(s[4], Fn, "alpha");
    const at::Tensor& self = operands[0].tensor();
    const at::Tensor& m1 = operands[1].tensor();
    const at::Tensor& m2 = operands[2].tensor();
    pybind11::gil_scoped_release no_gil;
    at::Tensor o = out;
    Eager(o, self, m1, m2, beta, alpha);
    return return_out(s[5]);
  }
  run_on_aliases(out, operands, [](std::array<at::Tensor, 4>& a) { Cpu(a[3], a[0], a[1], a[2], 1, 1); });
  track_op(static_cast<const void*>(Tracked), Tracked, false);
  return return_out(s[5]);
  END_HANDLE_TH_ERRORS
}

// True when the tuple `expected` holds exactly the ints of `actual`.
bool equals_ints(PyObject* expected, c10::IntArrayRef actual) {
  if (!PyTuple_Check(expected) || PyTuple_GET_SIZE(expected) != static_cast<Py_ssize_t>(actual.size())) {
    return false;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    PyObject* item = PyTuple_GET_ITEM(expected, i);
    if (!PyLong_CheckExact(item)) {
      return false;
    }
    int overflow = 0;
    if (PyLong_AsLongLongAndOverflow(item, &overflow) != actual[i] || overflow != 0) {
      return false;
    }
  }
  return true;
}

// _assert_input_layouts(inputs, layouts): Inductor's input checks of one graph
// run, `assert_size_stride(inputs[i], *layouts[i], 'input')` for every i, in
// one call. An input whose sizes and strides equal the expected ones exactly
// passes (as it does Inductor's check); any other goes to Inductor's own
// assert_size_stride, which raises its error or lets it pass as before.
PyObject* assert_input_layouts(
    PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  static constexpr const char* kFn = "_assert_input_layouts";
  std::array<PyObject*, 2> s;
  match_arguments(kFn, std::array<const char*, 2>{"inputs", "layouts"}, 2, args, nargs, kwnames, s);
  if (s[0] == nullptr || s[1] == nullptr || !PyTuple_Check(s[0]) || !PyTuple_Check(s[1]) ||
      PyTuple_GET_SIZE(s[0]) != PyTuple_GET_SIZE(s[1])) {
    raise_type_error("%s() takes two tuples of equal length (inputs, their (size, stride) pairs)", kFn);
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s[0]); ++i) {
    PyObject* input = PyTuple_GET_ITEM(s[0], i);
    PyObject* layout = PyTuple_GET_ITEM(s[1], i);
    if (!PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != 2) {
      raise_type_error("%s(): layouts[%zd] must be a (size, stride) pair", kFn, i);
    }
    if (THPVariable_Check(input)) {
      const at::Tensor& t = THPVariable_Unpack(input);
      if (equals_ints(PyTuple_GET_ITEM(layout, 0), t.sizes()) &&
          equals_ints(PyTuple_GET_ITEM(layout, 1), t.strides())) {
        continue;
      }
    }
    static PyObject* inductor_assert = nullptr; // torch._C._dynamo.guards.assert_size_stride
    if (inductor_assert == nullptr) {
      PyObject* guards = PyImport_ImportModule("torch._C._dynamo.guards");
      if (guards == nullptr) {
        throw python_error();
      }
      inductor_assert = PyObject_GetAttrString(guards, "assert_size_stride");
      Py_DECREF(guards);
      if (inductor_assert == nullptr) {
        throw python_error();
      }
    }
    PyObject* result = PyObject_CallFunction(
        inductor_assert, "OOOs", input, PyTuple_GET_ITEM(layout, 0), PyTuple_GET_ITEM(layout, 1),
        "input");
    if (result == nullptr) {
      throw python_error();
    }
    Py_DECREF(result);
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

constexpr char kMmFn[] = "_mm_out";
constexpr char kBmmFn[] = "_bmm_out";
constexpr char kAddmmFn[] = "_addmm_out";
constexpr char kBaddbmmFn[] = "_baddbmm_out";
constexpr const char* kMatNames[] = {"mat1", "mat2"};
constexpr const char* kBatchNames[] = {"batch1", "batch2"};

constexpr auto mm_out = &product_out<kMmFn, kMmOut, &at::mm_out, &at::cpu::mm_out>;
constexpr auto bmm_out = &product_out<kBmmFn, kBmmOut, &at::bmm_out, &at::cpu::bmm_out>;
constexpr auto addmm_out =
    &biased_product_out<kAddmmFn, kAddmmOut, kMatNames, &at::addmm_out, &at::cpu::addmm_out>;
constexpr auto baddbmm_out =
    &biased_product_out<kBaddbmmFn, kBaddbmmOut, kBatchNames, &at::baddbmm_out, &at::cpu::baddbmm_out>;

#define FASTCALL(FN) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FN))

PyMethodDef g_methods[] = {
    {"_empty_strided_neuron", FASTCALL(empty_strided_neuron), METH_FASTCALL | METH_KEYWORDS,
     "_empty_strided_neuron(size, stride, dtype) -> Tensor: torch.empty_strided(size, stride, "
     "dtype=dtype, device='neuron') on the current core (accounted), for compiled graphs' buffers."},
    {"_assert_input_layouts", FASTCALL(assert_input_layouts), METH_FASTCALL | METH_KEYWORDS,
     "_assert_input_layouts(inputs, layouts) -> None: Inductor's assert_size_stride(inputs[i], "
     "*layouts[i], 'input') for every input of a compiled graph, in one call."},
    {"_mm_out", FASTCALL(mm_out), METH_FASTCALL | METH_KEYWORDS,
     "_mm_out(self, mat2, *, out) -> out: torch.mm(self, mat2, out=out) for neuron tensors of a "
     "compiled graph."},
    {"_bmm_out", FASTCALL(bmm_out), METH_FASTCALL | METH_KEYWORDS,
     "_bmm_out(self, mat2, *, out) -> out: torch.bmm(self, mat2, out=out) for neuron tensors of a "
     "compiled graph."},
    {"_addmm_out", FASTCALL(addmm_out), METH_FASTCALL | METH_KEYWORDS,
     "_addmm_out(self, mat1, mat2, *, beta=1, alpha=1, out) -> out: torch.addmm(self, mat1, mat2, "
     "beta=beta, alpha=alpha, out=out) for a compiled graph."},
    {"_baddbmm_out", FASTCALL(baddbmm_out), METH_FASTCALL | METH_KEYWORDS,
     "_baddbmm_out(self, batch1, batch2, *, beta=1, alpha=1, out) -> out: torch.baddbmm(self, "
     "batch1, batch2, beta=beta, alpha=alpha, out=out) for a compiled graph."},
};

#undef FASTCALL

} // namespace

void bind_compiled_graph(pybind11::module& m) {
  for (PyMethodDef& def : g_methods) {
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, m.attr("__name__").ptr());
    if (fn == nullptr) {
      throw pybind11::error_already_set();
    }
    m.attr(def.ml_name) = pybind11::reinterpret_steal<pybind11::object>(fn);
  }
}

} // namespace torch_neuronx
