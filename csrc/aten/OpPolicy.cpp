#include "aten/OpPolicy.h"

#include <c10/util/Exception.h>

#include <array>
#include <cstring>
#include <string>
#include <unordered_set>

namespace torch_neuronx {
namespace {

// Tables keyed by op name without overload ("aten::index_put_"): an entry
// covers every overload of the op (functional, in-place and out=). They are
// function-local statics because the fallback registration reads them during
// static initialisation, whose order across files is unspecified.
using OpNameTable = std::unordered_set<std::string>;

// Ops that accept CPU index tensors beside device tensors. PyTorch's advanced
// indexing moves index tensors to self's device (make_info calls
// expandTensors(..., ensure_same_device=true) in
// aten/src/ATen/native/TensorAdvancedIndexingUtils.h), so CUDA accepts
// `cuda_tensor[cpu_index]` and `cuda_tensor[cpu_index] = value`; neuron
// accepts what CUDA does: the `Tensor?[] indices` argument only (a CPU `self`
// or non-0-dim `values` raises, as on CUDA).
const OpNameTable& ops_accepting_cpu_indices() {
  static const OpNameTable table = {
      "aten::index", // x[idx]
      "aten::index_put_", // x[idx] = v
      "aten::index_put", // functional x[idx] = v (functionalization, torch.compile)
      "aten::_index_put_impl_", // what index_put_ calls (accumulate=True, deterministic mode)
      "aten::_unsafe_index", // index without bounds checks, used by Inductor's decompositions
      "aten::_unsafe_index_put", // likewise for index_put
  };
  return table;
}

// Ops whose `scalars` argument is a 1-d tensor of per-tensor scalars that
// PyTorch reads on the host: the Tensor overloads of the pointwise _foreach ops
// (CUDA's kernels require it on the CPU: "Expected scalars to be on CPU, got
// cuda:0 instead"). A CPU `scalars` beside neuron tensor lists is the intended
// placement, not a mixed-device mistake.
const OpNameTable& ops_reading_host_scalars() {
  static const OpNameTable table = {
      "aten::_foreach_addcdiv",
      "aten::_foreach_addcdiv_",
      "aten::_foreach_addcmul",
      "aten::_foreach_addcmul_",
  };
  return table;
}

// Ops that run PyTorch's CPU kernel through the boxed fallback. PyTorch
// registers a CompositeExplicitAutograd(NonFunctional) kernel for each of
// them as well, and that composite kernel fills the PrivateUse1 slot, so
// without an entry here a neuron tensor would take it instead of the CPU
// kernel the same op runs on CPU. Reasons were measured against the CPU
// kernel (tests/test_opinfo.py with the entry removed, and get_executed_ops).
const OpNameTable& ops_needing_cpu_kernel() {
  static const OpNameTable table = {
      // Composite is native_batch_norm on a reshaped view, then addcmul: other
      // rounding (1.2e-4 off the CPU result on a one-element fp32 row), and
      // fp32 mean/rstd for an empty bf16 input where the CPU kernel gives bf16.
      "aten::native_layer_norm",
      // Composite is var_mean, rsqrt, sub, mul and add as separate ops: bf16
      // rounds between them (0.013 off the CPU result, past OpInfo's bf16
      // tolerance).
      "aten::native_group_norm",
      // Composite is three muls and an add as separate ops: bf16 rounds
      // between them (0.03 off the CPU result).
      "aten::addr",
      // Composite is abs, pow and sum, each allocating its result (six
      // dispatched ops), and differs in the last bits from the CPU kernel; DTensor's
      // distributed vector norm (clip_grad_norm_ of sharded gradients) uses it.
      "aten::linalg__powsum",
      // Same values, but the composite is empty + the out= kernel: two
      // dispatched ops where the CPU kernel is one.
      "aten::_stack",
      "aten::all",
      "aten::any",
      // The composite is a 0-dim out tensor + the out= kernel, and the CPU
      // out= kernel computes the element-wise loss into `out` before reducing
      // it: resizing [] to the input's shape prints PyTorch's "An output with
      // one or more elements was resized" deprecation warning (CPU does not).
      "aten::mse_loss",
      "aten::smooth_l1_loss",
      // The composite (a structured kernel's functional wrapper) sizes its
      // outputs from A's options and asserts they are on the current device:
      // A on the CPU beside a neuron B was an INTERNAL ASSERT (linalg.solve,
      // solve_ex, tensorsolve) instead of the device-mismatch error the boxed
      // fallback raises.
      "aten::_linalg_solve_ex",
      // Its only kernel is CompositeExplicitAutograd, which calls
      // conj_physical_stub directly: on a neuron tensor that stub has no kernel
      // (DispatchStub's INTERNAL ASSERT, "missing kernel for neuron"). Found by
      // PyTorch's TestMathBits.test_conj_view; a sweep of every OpInfo op's
      // function, method and in-place variants (float32, complex64) found no
      // other op calling a stub from a composite kernel.
      "aten::conj_physical_",
      // Its only kernel is CompositeExplicitAutograd: on neuron inputs it built
      // a nested tensor on neuron, which every later op refuses, and when an
      // input requires grad autograd's graph recording (noexcept) asks that
      // tensor for its nested sizes: the refusal then aborted the process
      // (torch.nested.nested_tensor / as_nested_tensor with device="neuron";
      // PyTorch's test_autograd). Through the fallback the CPU kernel builds
      // the nested tensor on the CPU and to_neuron_result refuses it with the
      // nested-tensor error before autograd sees it. The other nested
      // factories (_nested_tensor_from_mask, _nested_from_padded,
      // _nested_view_from_buffer) have CPU kernels, so they reach the
      // fallback already.
      "aten::_nested_tensor_from_tensor_list",
  };
  return table;
}

// PyTorch registers the _foreach_* ops as CompositeExplicitAutograd loops,
// which on a PrivateUse1 device run one dispatched op per tensor, and the
// optimizers pick the foreach path on every device but the CPU. The fallback
// instead runs the whole list inside one CPU kernel call.
constexpr char kForeachPrefix[] = "aten::_foreach_";

// Dtypes that NeuronCore engines cannot compute in: no fp64 and no complex
// arithmetic on NeuronCore-v2/v3 (AWS Neuron documentation, "Data Types",
// awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-features/data-types.html).
// Trainium runs such ops on the host.
constexpr c10::ScalarType kHostFallbackDtypes[] = {
    c10::ScalarType::Double,
    c10::ScalarType::ComplexHalf,
    c10::ScalarType::ComplexFloat,
    c10::ScalarType::ComplexDouble,
};

// kHostFallbackDtypes as a lookup table indexed by ScalarType (the check runs
// for every operand of every op).
constexpr size_t kNumScalarTypes = static_cast<size_t>(c10::ScalarType::NumOptions);
constexpr std::array<bool, kNumScalarTypes> kIsHostFallbackDtype = [] {
  std::array<bool, kNumScalarTypes> table{};
  for (c10::ScalarType t : kHostFallbackDtypes) {
    table[static_cast<size_t>(t)] = true;
  }
  return table;
}();

} // namespace

bool accepts_cpu_indices(const c10::OperatorName& op) {
  return ops_accepting_cpu_indices().count(op.name) > 0;
}

bool accepts_cpu_scalars(const c10::OperatorName& op) {
  return ops_reading_host_scalars().count(op.name) > 0;
}

// `cpu_tensor[neuron_indices] = v`: PyTorch's index_put kernel moves the indices
// to the indexed tensor's device (make_info in TensorAdvancedIndexing.cpp), so
// on CUDA a CPU tensor indexed by CUDA indices is written on the CPU (Diffusers'
// MiniMax H3 pipeline builds its per-row timesteps this way). Reading
// (`aten::index`) has no such rule: CUDA refuses it, and so do we.
const OpNameTable& ops_writing_through_cpu_indices() {
  static const OpNameTable table = {
      "aten::index_put_",
      "aten::index_put",
      "aten::_index_put_impl_",
      "aten::_unsafe_index_put",
  };
  return table;
}

bool writes_through_cpu_indices(const c10::OperatorName& op) {
  return ops_writing_through_cpu_indices().count(op.name) > 0;
}

bool needs_cpu_kernel(const c10::OperatorName& op) {
  return ops_needing_cpu_kernel().count(op.name) > 0;
}

bool is_foreach_op(const c10::OperatorName& op) {
  return op.name.compare(0, sizeof(kForeachPrefix) - 1, kForeachPrefix) == 0;
}

bool is_host_fallback_dtype(c10::ScalarType t) {
  const auto index = static_cast<size_t>(t);
  return index < kNumScalarTypes && kIsHostFallbackDtype[index];
}

void warn_host_fallback_dtype(c10::ScalarType /*t*/, const char* where) {
  TORCH_WARN_ONCE(
      "neuron: float64/complex work on the device (first seen in ", where,
      "). NeuronCore engines have no fp64 or complex arithmetic: such ops run as host (CPU) "
      "fallbacks on Trainium and are counted in torch_neuronx.get_fallback_ops(). Use float32 "
      "or bfloat16 on the device. (Warned once per process; printing a neuron tensor also "
      "formats it in float64, as PyTorch does for CUDA.)");
}

} // namespace torch_neuronx
