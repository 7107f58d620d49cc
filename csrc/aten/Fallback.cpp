// The boxed fallback: every ATen op without a neuron kernel of its own runs
// its CPU kernel on zero-copy CPU aliases of the neuron operands, and its
// results come back as neuron tensors (views of the inputs where the op
// returned a view, the inputs themselves for in-place ops, and fresh results
// relabelled as accounted device memory). Which ops it also takes over from
// PyTorch's composite kernels, and which CPU operands it accepts, is decided by
// the tables in OpPolicy.cpp.
#include "aten/Fallback.h"

#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/FastPath.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Generator.h"
#include "runtime/Runtime.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_efficientzerotensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/core/op_registration/op_registration.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>

namespace torch_neuronx {
namespace {

bool is_optional_generator(const c10::Argument& arg) {
  const auto& type = arg.type();
  if (type->kind() != c10::TypeKind::OptionalType) {
    return false;
  }
  return type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
      c10::TypeKind::GeneratorType;
}

// The `indices` argument of the indexing ops (length first: this runs for
// every tensor operand of every op).
bool is_indices(const c10::Argument& arg) {
  const std::string& name = arg.name();
  return name.size() == 7 && name == "indices";
}

// The `scalars` argument of the pointwise _foreach ops' Tensor overloads
// (length first, as above).
bool is_scalars(const c10::Argument& arg) {
  const std::string& name = arg.name();
  return name.size() == 7 && name == "scalars";
}

struct AliasedTensor {
  at::Tensor original;
  at::Tensor alias;
  bool written;
  // From cached_read_alias (owned by that cache, never recycled here).
  bool cached;
};

class Call {
 public:
  explicit Call(const c10::OperatorHandle& op) : op_(op) {}
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The aliases go back to this thread's pool (Alias.h) once the op is done.
  ~Call() {
    c10::SmallVector<at::Tensor*, 6> aliases;
    for (auto& entry : tensors_) {
      if (!entry.cached) {
        aliases.push_back(&entry.alias);
      }
    }
    c10::SmallVector<c10::Storage*, 4> storages;
    for (auto& storage : alias_storages_) {
      storages.push_back(&storage);
    }
    recycle_aliases(aliases, storages);
  }

  c10::DeviceIndex device = -1;
  bool host_fallback = false;
  int64_t max_numel = 0;

  // `arg`: the operand's schema argument (nullptr for a device argument).
  void note_device(c10::DeviceIndex index, const c10::Argument* arg) {
    if (index < 0) {
      index = current_device();
    }
    if (device < 0) {
      device = check_device(index);
    } else if (device != index) {
      // An index tensor on another core than the indexed tensor: PyTorch's own
      // message for indices on a third device (check_indices_on_cpu_or_selfdevice),
      // as CUDA raises it for cuda:1 indices into a cuda:0 tensor.
      TORCH_CHECK(
          !(arg != nullptr && is_indices(*arg) && accepts_cpu_indices(op_.operator_name())),
          "indices should be either on cpu or on the same device as the indexed tensor (neuron:",
          static_cast<int>(device), ") (in ", name(), "; an index is on neuron:",
          static_cast<int>(index), "). Move the indices with .to(tensor.device), or to the CPU "
          "with .cpu().");
      TORCH_CHECK(
          false,
          "Expected all tensors to be on the same device, but found at least two devices, neuron:",
          static_cast<int>(device), " and neuron:", static_cast<int>(index),
          "! (when checking ",
          arg != nullptr ? "argument '" + arg->name() + "'" : std::string("the device argument"),
          " in ", name(),
          "). Each logical NeuronCore has its own HBM: move one operand with "
          ".to(other.device) first.");
    }
  }

  // `t` by value: the caller moves the stack's operand in, so keeping the
  // original costs no reference count.
  // `in_list`: an element of a tensor list (those keep the pooled aliases: a
  // _foreach op's lists would fill the read-alias cache).
  at::Tensor alias(at::Tensor t, const c10::Argument& arg, bool in_list = false) {
    if (!t.defined()) {
      return t;
    }
    const c10::DeviceType type = t.device().type();
    if (type == kNeuron) {
      // The same tensor passed twice (ldexp_'s mul.out(self, other, out=self))
      // gets one alias: TensorIterator recognises an output that is also an
      // input by identity, and refuses to resize it, as for CPU tensors.
      // (Not for list elements: a _foreach op's lists would make this quadratic.)
      for (auto& entry : tensors_) {
        if (in_list) {
          break;
        }
        if (entry.original.unsafeGetTensorImpl() == t.unsafeGetTensorImpl() && !entry.cached) {
          entry.written = entry.written ||
              (arg.alias_info() != nullptr && arg.alias_info()->isWrite());
          return entry.alias;
        }
      }
      note_device(t.device().index(), &arg);
      const bool indices = is_indices(arg);
      neuron_indices_ = neuron_indices_ || indices;
      neuron_operand_ = neuron_operand_ || (!indices && t.dim() != 0);
      if (is_host_fallback_dtype(t.scalar_type())) {
        host_fallback = true;
      }
      max_numel = std::max<int64_t>(max_numel, t.numel());
      const bool written = arg.alias_info() != nullptr && arg.alias_info()->isWrite();
      // A ZeroTensor (PyTorch's efficient zeros, no memory) keeps its bit on
      // the alias: the ops PyTorch lets a ZeroTensor through to the backend
      // kernel (ZeroTensor fallthroughs: dot, vdot) test the bit in the CPU
      // kernel; without it they would read the null memory. (Its alias, a CPU
      // ZeroTensor, is never cached or recycled: its key set is not a fresh
      // alias's.)
      const bool zero = t._is_zerotensor();
      // An operand the schema neither writes nor lets a result alias takes a
      // cached read alias (Alias.h), unless it shares memory with a written
      // operand: PyTorch's overlap checks between an out=/in-place operand
      // and the others need their aliases on one storage (storage_for).
      if (!in_list && arg.alias_info() == nullptr && !zero && !shares_written_storage(t)) {
        at::Tensor a = cached_read_alias(t);
        tensors_.push_back(AliasedTensor{std::move(t), a, false, true});
        return a;
      }
      if (C10_UNLIKELY(zero)) {
        // A CPU ZeroTensor of the same sizes and dtype (no memory to alias).
        at::Tensor a = at::_efficientzerotensor(t.sizes(), t.options().device(c10::kCPU));
        tensors_.push_back(AliasedTensor{std::move(t), a, false, false});
        return a;
      }
      at::Tensor a = pooled_cpu_alias(t, storage_for(t.storage()));
      tensors_.push_back(AliasedTensor{std::move(t), a, written, false});
      return a;
    }
    if (type == c10::kCPU) {
      // 0-dim CPU tensors are scalars on every device, but only as inputs: a
      // 0-dim CPU `out=` or in-place `self` beside neuron operands is wrong
      // placement, as on CUDA (TensorIterator exempts CPU scalars that are not
      // outputs). CPU index tensors are accepted where CUDA accepts them (only
      // the `indices` argument: a CPU `self` or `values` is wrong placement),
      // and so is the host `scalars` tensor of the pointwise _foreach ops.
      const bool written = arg.alias_info() != nullptr && arg.alias_info()->isWrite();
      if ((t.dim() == 0 && !written) ||
          (is_indices(arg) && accepts_cpu_indices(op_.operator_name())) ||
          (is_scalars(arg) && accepts_cpu_scalars(op_.operator_name()))) {
        return t;
      }
      if (mixed_argument_.empty()) {
        mixed_argument_ = arg.name();
      }
      return t;
    }
    TORCH_CHECK(
        false,
        "Expected all tensors to be on the same device, but found a tensor on ", t.device(),
        " (argument '", arg.name(), "' of ", name(), ") beside neuron tensors.");
  }

  // Records the storage of an operand the schema writes (before any operand is
  // aliased).
  void note_written(const at::Tensor& t) {
    if (t.defined() && t.device().type() == kNeuron && t.has_storage()) {
      written_storages_.push_back(t.storage().unsafeGetStorageImpl());
    }
  }

  // True when the kernel runs for a CPU tensor: index_put_ on a CPU `self` with
  // neuron indices (and at most a 0-dim neuron value). CUDA's kernel moves the
  // indices to the indexed tensor's device (make_info) and the result stays on
  // the CPU; so does ours.
  bool cpu_result() const {
    return cpu_result_;
  }

  void check_mixed() {
    if (mixed_argument_.empty()) {
      return; // (every check below is about a CPU operand)
    }
    if (mixed_argument_ == "self" && neuron_indices_ && !neuron_operand_ &&
        writes_through_cpu_indices(op_.operator_name())) {
      cpu_result_ = true;
      return;
    }
    // CUDA's message when the indexed tensor is on the CPU and an index is not.
    TORCH_CHECK(
        !(mixed_argument_ == "self" && neuron_indices_ && accepts_cpu_indices(op_.operator_name())),
        "indices should be either on cpu or on the same device as the indexed tensor (cpu) (in ",
        name(), "). Move the indexed tensor to the NeuronCore with .to('neuron'), or the "
        "indices to the CPU with .cpu().");
    if (!mixed_argument_.empty()) {
      TORCH_CHECK(
          false,
          "Expected all tensors to be on the same device, but found at least two devices, neuron:",
          static_cast<int>(device < 0 ? 0 : device), " and cpu! (when checking argument for argument '",
          mixed_argument_, "' in ", name(),
          "). Move the CPU tensor to the NeuronCore with .to('neuron') (or the neuron tensor to "
          "the CPU with .cpu()).");
    }
  }

  // A result of the CPU kernel, as a neuron tensor (`out` moved in from the
  // stack: a fresh result then becomes the neuron tensor in place).
  at::Tensor unwrap(at::Tensor out) {
    if (!out.defined() || out.device().type() == kNeuron) {
      return out;
    }
    if (cpu_result_) {
      return out;
    }
    for (const auto& entry : tensors_) {
      if (out.unsafeGetTensorImpl() == entry.alias.unsafeGetTensorImpl()) {
        return entry.original;
      }
    }
    if (C10_UNLIKELY(out._is_zerotensor())) {
      // The CPU kernel answered a ZeroTensor operand with a ZeroTensor (dot
      // of a zero tangent): the same memory-less zeros on this core.
      const c10::DeviceIndex target = device < 0 ? current_device() : device;
      return at::_efficientzerotensor(
          out.sizes(), out.options().device(c10::Device(kNeuron, target)));
    }
    if (out.has_storage()) {
      const c10::StorageImpl* si = out.storage().unsafeGetStorageImpl();
      for (const auto& entry : tensors_) {
        if (entry.cached &&
            entry.alias.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl() == si) {
          return neuron_view(out, entry.original.storage());
        }
      }
      for (size_t i = 0; i < alias_storages_.size(); ++i) {
        if (alias_storages_[i].unsafeGetStorageImpl() == si) {
          return neuron_view(
              out,
              c10::Storage(
                  c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(original_storages_[i])));
        }
      }
    }
    if (out.device().is_cpu() && out.dim() == 0 && device < 0) {
      return out;
    }
    const c10::DeviceIndex target = device < 0 ? current_device() : device;
    if (relabel_fresh_result(out, target)) {
      return out;
    }
    return to_neuron_result(out, target);
  }

  // Brings back what an in-place / out= CPU kernel changed on an alias:
  // sizes, strides, offset, and new memory if it resized the storage.
  void write_back() {
    for (auto& entry : tensors_) {
      if (!entry.written) {
        continue;
      }
      c10::TensorImpl* oi = entry.original.unsafeGetTensorImpl();
      c10::TensorImpl* ai = entry.alias.unsafeGetTensorImpl();
      c10::StorageImpl* osi = oi->storage().unsafeGetStorageImpl();
      c10::StorageImpl* asi = ai->storage().unsafeGetStorageImpl();
      if (asi->data() != osi->data() || asi->nbytes() != osi->nbytes()) {
        c10::DataPtr& dp = asi->_mutable_data_ptr_no_checks();
        const c10::Device target(kNeuron, device);
        if (is_accounted_deleter(dp.get_deleter())) {
          c10::DataPtr moved = std::move(dp);
          moved.unsafe_set_device(target);
          const size_t nbytes = asi->nbytes();
          // Leave the alias a non-owning view of the new memory.
          asi->set_data_ptr_noswap(c10::DataPtr(moved.get(), target));
          osi->set_data_ptr_noswap(std::move(moved));
          osi->set_nbytes(nbytes);
        } else if (asi->data() != osi->data()) {
          const size_t nbytes = asi->nbytes();
          check_has_memory(*asi, "an in-place or out= result");
          c10::DataPtr fresh = allocate_accounted(nbytes, device, target);
          if (nbytes > 0) {
            std::memcpy(fresh.get(), asi->data(), nbytes);
          }
          osi->set_data_ptr_noswap(std::move(fresh));
          osi->set_nbytes(nbytes);
        }
      }
      if (oi->sizes() != ai->sizes() || oi->strides() != ai->strides() ||
          oi->storage_offset() != ai->storage_offset()) {
        oi->set_sizes_and_strides(ai->sizes(), ai->strides(), ai->storage_offset());
      }
    }
  }

  std::string name() const {
    const auto& n = op_.operator_name();
    return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
  }

 private:
  bool shares_written_storage(const at::Tensor& t) const {
    if (written_storages_.empty()) {
      return false;
    }
    const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
    for (const c10::StorageImpl* w : written_storages_) {
      if (w == si) {
        return true;
      }
    }
    return false;
  }

  const c10::Storage& storage_for(const c10::Storage& original) {
    c10::StorageImpl* si = original.unsafeGetStorageImpl();
    for (size_t i = 0; i < original_storages_.size(); ++i) {
      if (original_storages_[i] == si) {
        return alias_storages_[i];
      }
    }
    original_storages_.push_back(si);
    alias_storages_.push_back(pooled_alias_storage(original));
    return alias_storages_.back();
  }

  const c10::OperatorHandle& op_;
  // The operands' storages (kept alive by tensors_[i].original).
  c10::SmallVector<c10::StorageImpl*, 4> original_storages_;
  c10::SmallVector<c10::Storage, 4> alias_storages_;
  c10::SmallVector<AliasedTensor, 6> tensors_;
  // Storages of the operands the schema writes (note_written).
  c10::SmallVector<const c10::StorageImpl*, 2> written_storages_;
  std::string mixed_argument_;
  bool neuron_indices_ = false;
  bool neuron_operand_ = false;
  bool cpu_result_ = false;
};

// True when `out` shares memory with a tensor argument that is not an out=
// operand (the stack holds the CPU aliases, which share one storage per
// device storage, so the overlap check sees device aliasing).
bool overlaps_an_input(
    const at::Tensor& out,
    const std::vector<c10::Argument>& arguments,
    const torch::jit::Stack& stack,
    size_t begin) {
  // Conservative: any two tensors whose storages' byte ranges intersect count as
  // overlapping (at::get_overlap_status answers TooHard for every strided view,
  // i.e. for exactly the outputs this is about).
  const auto* out_begin = static_cast<const char*>(out.storage().data());
  const auto* out_end = out_begin + out.storage().nbytes();
  auto overlaps = [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) {
      return false;
    }
    const auto* begin = static_cast<const char*>(t.storage().data());
    const auto* end = begin + t.storage().nbytes();
    return begin < out_end && out_begin < end;
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].is_out()) {
      continue;
    }
    const c10::IValue& value = stack[begin + i];
    if (value.isTensor()) {
      if (overlaps(value.toTensor())) {
        return true;
      }
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) {
        if (overlaps(t)) {
          return true;
        }
      }
    } else if (value.isOptionalTensorList()) {
      for (const std::optional<at::Tensor> t : value.toOptionalTensorList()) {
        if (t.has_value() && overlaps(*t)) {
          return true;
        }
      }
    }
  }
  return false;
}

} // namespace

void neuron_fallback(
    const c10::OperatorHandle& op,
    c10::DispatchKeySet keys,
    torch::jit::Stack* stack) {
  if (C10_UNLIKELY(adaptive::on()) && adaptive::intercept(op, keys, stack, &neuron_fallback)) {
    return;
  }
  const auto& schema = op.schema();
  const auto& arguments = schema.arguments();
  const size_t num_args = arguments.size();
  const size_t begin = stack->size() - num_args;
  Call call(op);

  c10::SmallVector<size_t, 2> generator_slots;
  c10::SmallVector<NeuronGeneratorImpl*, 2> generators;

  // The written operands' storages first, so that no read operand sharing one
  // of them takes a cached alias.
  for (size_t i = 0; i < num_args; ++i) {
    const c10::AliasInfo* info = arguments[i].alias_info();
    if (info == nullptr || !info->isWrite()) {
      continue;
    }
    const c10::IValue& value = (*stack)[begin + i];
    if (value.isTensor()) {
      call.note_written(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) {
        call.note_written(t);
      }
    }
  }

  for (size_t i = 0; i < num_args; ++i) {
    c10::IValue& value = (*stack)[begin + i];
    const c10::Argument& arg = arguments[i];
    if (value.isTensor()) {
      value = call.alias(std::move(value).toTensor(), arg);
    } else if (value.isTensorList()) {
      auto in = value.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(in.size());
      for (const at::Tensor& t : in) {
        out.push_back(call.alias(t, arg, /*in_list=*/true));
      }
      value = std::move(out);
    } else if (value.isOptionalTensorList()) {
      auto in = value.toOptionalTensorList();
      c10::List<std::optional<at::Tensor>> out;
      out.reserve(in.size());
      for (const std::optional<at::Tensor> t : in) {
        if (t.has_value() && t->defined()) {
          out.push_back(call.alias(*t, arg, /*in_list=*/true));
        } else {
          out.push_back(t);
        }
      }
      value = std::move(out);
    } else if (value.isDevice()) {
      const c10::Device d = value.toDevice();
      if (d.type() == kNeuron) {
        call.note_device(d.index(), nullptr);
        value = c10::Device(c10::kCPU);
      }
    } else if (value.isGenerator()) {
      generator_slots.push_back(begin + i);
    } else if (value.isNone() && is_optional_generator(arg)) {
      generator_slots.push_back(begin + i);
    }
  }
  if (call.device < 0) {
    for (size_t slot : generator_slots) {
      const c10::IValue& value = (*stack)[slot];
      TORCH_CHECK(
          !value.isGenerator() || value.toGenerator().device().type() != kNeuron,
          "Expected a 'cpu' device type for generator but found 'neuron' (in ", call.name(),
          "): use torch.Generator(device='cpu') for CPU tensors, or create the tensor on neuron.");
    }
  }
  call.check_mixed();

  // Non-contiguous out= operands get a contiguous buffer, copied into the
  // operand's alias after the kernel ran (resized first if the kernel resized
  // the buffer). Several CPU out= kernels mishandle a strided `out`, where
  // CUDA's kernels respect the strides: avg_pool3d, avg_pool3d_backward,
  // adaptive_avg_pool3d, adaptive_max_pool3d and im2col write as if `out`
  // were contiguous; gelu, _softmax and _log_softmax (oneDNN
  // paths) leave it unwritten. Found by PyTorch's TestCommon.test_out and a
  // sweep of nn out= kernels with every-other-element views; the buffer covers
  // the whole kind, whatever op. An `out` overlapping an input keeps its alias,
  // so the kernel's own overlap checks still see it.
  c10::SmallVector<std::pair<at::Tensor, at::Tensor>, 2> strided_outs; // (buffer, alias)
  for (size_t i = 0; i < num_args; ++i) {
    c10::IValue& value = (*stack)[begin + i];
    if (!arguments[i].is_out() || !value.isTensor()) {
      continue;
    }
    const at::Tensor& alias = value.toTensor();
    if (!alias.defined() || alias.is_contiguous() || alias.numel() == 0 ||
        overlaps_an_input(alias, arguments, *stack, begin)) {
      continue;
    }
    at::Tensor buffer = at::empty_like(alias, at::MemoryFormat::Contiguous);
    strided_outs.emplace_back(buffer, alias);
    value = std::move(buffer);
  }

  const c10::DeviceIndex device = call.device >= 0 ? call.device : current_device();
  for (size_t slot : generator_slots) {
    c10::IValue& value = (*stack)[slot];
    at::Generator gen = value.isGenerator() ? value.toGenerator() : default_generator(device);
    if (gen.device().type() != kNeuron) {
      TORCH_CHECK(
          gen.device().is_cpu() && call.device < 0,
          "Expected a 'neuron' device type for generator but found '", gen.device().type(),
          "' (in ", call.name(),
          "): the op makes a neuron tensor, so it needs a neuron generator: pass "
          "torch.Generator(device='neuron'), or create the tensor with device='cpu'. Under "
          "torch.set_default_device('neuron'), torch.utils.data's samplers (DataLoader(shuffle=True), "
          "RandomSampler) make this call with a CPU generator: give the DataLoader "
          "generator=torch.Generator(device='neuron'), or set the default device only around model "
          "creation (with torch.device('neuron'): ...).");
      continue;
    }
    TORCH_CHECK(
        call.device >= 0 || !value.isGenerator(),
        "Expected a 'cpu' device type for generator but found 'neuron' (in ", call.name(),
        "): create the generator with torch.Generator(device='cpu') for CPU tensors.");
    auto* impl = gen.get<NeuronGeneratorImpl>();
    std::lock_guard<std::mutex> lock(gen.mutex());
    value = impl->derive_cpu_generator();
    impl->advance(static_cast<uint64_t>(call.max_numel));
  }


  try {
    if (call.cpu_result()) {
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    } else {
      RouteAllocationsTo route(device);
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    }
  } catch (const c10::NotImplementedError&) {
    if (op.hasComputedKernelForDispatchKey(c10::DispatchKey::CPU)) {
      throw;  // the CPU kernel itself refused: its message stands
    }
    // No CPU kernel at all: an op PyTorch implements for CUDA only but also sends
    // PrivateUse1 inputs to. The dispatcher's message would blame a "CPU backend".
    TORCH_CHECK_NOT_IMPLEMENTED(
        false, "neuron: ", call.name(), " has no kernel on this device: PyTorch implements it "
        "for CUDA only (there is no CPU kernel to run it with) but calls it for neuron tensors. "
        "Run this part of the model on the CPU (move its module and inputs with .cpu()) and "
        "report the op to torch-neuronx.");
  }

  for (auto& [buffer, alias] : strided_outs) {
    if (alias.sizes() != buffer.sizes()) {
      alias.resize_(buffer.sizes());
    }
    alias.copy_(buffer);
  }
  call.write_back();
  const size_t num_returns = schema.returns().size();
  const size_t out_begin = stack->size() - num_returns;
  for (size_t i = 0; i < num_returns; ++i) {
    c10::IValue& value = (*stack)[out_begin + i];
    for (const auto& [buffer, alias] : strided_outs) {
      if (value.isTensor() && value.toTensor().unsafeGetTensorImpl() == buffer.unsafeGetTensorImpl()) {
        value = alias;
      }
    }
    if (value.isTensor()) {
      value = call.unwrap(std::move(value).toTensor());
    } else if (value.isTensorList()) {
      auto in = value.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(in.size());
      for (const at::Tensor& t : in) {
        out.push_back(call.unwrap(t));
      }
      value = std::move(out);
    }
    // Results of a host-only dtype (e.g. fft's complex output) mark it too.
    if (value.isTensor() && value.toTensor().defined() &&
        is_host_fallback_dtype(value.toTensor().scalar_type())) {
      call.host_fallback = true;
    }
  }
  track_op(&op.schema(), op.operator_name(), call.host_fallback);
  if (C10_UNLIKELY(call.host_fallback)) {
    warn_host_fallback_dtype(at::kDouble, op.operator_name().name.c_str());
  }
}

namespace {

// Sparse, nested and quantized tensors: NeuronCores have none, and the
// dispatcher's own message ("Could not run ... 'Sparseneuron' backend ...
// Facebook employee") does not say so.
//
// The exception: a nested tensor's metadata queries. The boxed fallback
// refuses to build nested tensors on neuron, but PyTorch's own composite can
// still make one (_nested_tensor_from_tensor_list of CPU tensors with
// device="neuron" runs under the CPU key), and autograd records such a result
// by asking it for its nested sizes inside a noexcept function: a refusal
// there aborted the process. These three ops only read the NestedTensorImpl's
// metadata (CPU tensors, as for CUDA nested tensors), so they run the
// NestedTensorCPU kernel; every op that computes still gets the error below.
bool is_nested_metadata_query(const c10::OperatorName& n) {
  return n.overload_name.empty() &&
      (n.name == "aten::_nested_tensor_size" || n.name == "aten::_nested_tensor_strides" ||
       n.name == "aten::_nested_tensor_storage_offsets");
}

void unsupported_layout(
    const c10::OperatorHandle& op,
    c10::DispatchKeySet keys,
    torch::jit::Stack* stack) {
  const auto& n = op.operator_name();
  if (keys.has(c10::DispatchKey::NestedTensorPrivateUse1) && is_nested_metadata_query(n)) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), stack);
    return;
  }
  const char* kind = keys.has(c10::DispatchKey::NestedTensorPrivateUse1) ? "nested"
      : keys.has(c10::DispatchKey::QuantizedPrivateUse1)                 ? "quantized"
                                                                         : "sparse";
  // A sparse CPU tensor combined with dense neuron tensors also dispatches
  // here (the key set's highest backend is PrivateUse1): that is a device mix,
  // not a sparse tensor on the device, and the error must say which.
  if (!keys.has(c10::DispatchKey::NestedTensorPrivateUse1) &&
      !keys.has(c10::DispatchKey::QuantizedPrivateUse1)) {
    const size_t n_args = op.schema().arguments().size();
    bool sparse_on_neuron = false;
    bool sparse_elsewhere = false;
    auto visit = [&](const at::Tensor& t) {
      if (t.defined() && t.layout() != c10::kStrided) {
        (t.device().type() == c10::DeviceType::PrivateUse1 ? sparse_on_neuron : sparse_elsewhere) = true;
      }
    };
    for (size_t i = stack->size() - std::min(n_args, stack->size()); i < stack->size(); ++i) {
      const c10::IValue& v = (*stack)[i];
      if (v.isTensor()) {
        visit(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorVector()) {
          visit(t);
        }
      }
    }
    TORCH_CHECK(
        sparse_on_neuron || !sparse_elsewhere,
        "Expected all tensors to be on the same device: ", n.name,
        n.overload_name.empty() ? "" : ".", n.overload_name,
        " was called with a sparse CPU tensor and neuron tensors. NeuronCores have no sparse "
        "tensor support: compute on the CPU (move the neuron tensors there with .cpu()), or "
        "densify the sparse tensor first (.to_dense().to(\"neuron\")).");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(
      false,
      "neuron supports only dense (strided) tensors: ", n.name,
      n.overload_name.empty() ? "" : ".", n.overload_name, " was called with a ", kind,
      " tensor on neuron. NeuronCores have no sparse, nested or quantized tensor support: keep "
      "such tensors on the CPU, or convert them (.to_dense(), .to_padded_tensor(), .dequantize()) "
      "before moving to neuron. A sparse gradient (nn.Embedding / nn.EmbeddingBag with "
      "sparse=True) is one: construct them with sparse=False on neuron.");
}

// Registers the boxed fallback as the PrivateUse1 kernel of the ops that
// would otherwise get PyTorch's composite kernel there, unless the device
// already has a kernel of its own for them: the _foreach_* ops, the ops of
// OpPolicy's needs_cpu_kernel table, and every op with a
// CompositeExplicitAutogradNonFunctional kernel (the functional and in-place
// forms of structured ops: add, mul, exp, mm, where, ...), the last two only
// where a CPU kernel exists. For those structured ops the composite kernel is
// the meta function, an output allocated through the dispatcher and then the
// out= kernel through the dispatcher again (two shape computations, three
// dispatched ops); the CPU kernel is the same computation in one op, exactly
// what the op runs on the CPU.
struct RegisterCpuKernelOps {
  RegisterCpuKernelOps() {
    static torch::Library lib(
        torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
    // The hottest of these ops first get unboxed kernels of their own
    // (FastPath.h); the loop below then skips them.
    register_fast_paths(lib);
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      const bool foreach = is_foreach_op(name);
      const auto handle = c10::Dispatcher::singleton().findOp(name);
      if (!handle.has_value() || handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) {
        continue;
      }
      if (!foreach && !needs_cpu_kernel(name) &&
          !handle->hasKernelForDispatchKey(
              c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
        continue;
      }
      // A table entry may have no CPU kernel of its own: its composite kernel
      // then runs under the CPU key on the aliases, where its stubs exist.
      if (!foreach &&
          !(needs_cpu_kernel(name)
                ? handle->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU)
                : handle->hasKernelForDispatchKey(c10::DispatchKey::CPU))) {
        continue;
      }
      std::string op = name.name.substr(6);
      if (!name.overload_name.empty()) {
        op += "." + name.overload_name;
      }
      lib.impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&neuron_fallback>());
    }
  }
};

} // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&neuron_fallback>());
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&unsupported_layout>());
}
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&unsupported_layout>());
}
TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&unsupported_layout>());
}
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&unsupported_layout>());
}

static RegisterCpuKernelOps g_register_cpu_kernel_ops;

} // namespace torch_neuronx
