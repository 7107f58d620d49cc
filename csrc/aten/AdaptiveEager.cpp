// Adaptive Eager Execution: the recorder, the trie of traces, and the flush.
// See AdaptiveEager.h for what it does; the kernels themselves are compiled
// by torch_neuronx/adaptive/ (Inductor, CPU code generation) and run on CPU
// aliases of the device memory.
//
// Correctness rules (when in doubt, cut):
//  * only ops of an allow-list are queued: functional ATen ops whose result
//    metadata is a function of their inputs' metadata and scalar arguments;
//  * a queued op's result metadata comes from the trie node recorded when the
//    same op, with the same input metadata and arguments, at the same
//    position of the same trace, last ran for real (and was checked then);
//  * results are storages without memory until the flush fills them; every
//    path that reads device memory outside the fallback flushes first;
//  * a kernel that fails to compile or to run is never tried again for that
//    trace: it runs op by op (the ops are functional, so running them again
//    after a failed kernel is safe).
#include "aten/AdaptiveEager.h"

#include "aten/Alias.h"
#include "aten/OpPolicy.h"
#include "aten/Tracking.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Runtime.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/as_strided.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/utils/tensor_memoryformats.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace py = pybind11;

namespace torch_neuronx {
namespace adaptive {
namespace {

bool read_env() {
  const char* v = std::getenv("TORCH_NEURONX_ADAPTIVE_EAGER");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// Functional ATen ops whose results' sizes, strides and dtype depend only on
// their inputs' metadata and scalar arguments (never on values), that return
// fresh tensors (no views, nothing in place) and draw no random numbers.
const char* const kAllowed[] = {
    // pointwise
    "aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar",
    "aten::rsub.Tensor", "aten::rsub.Scalar", "aten::mul.Tensor", "aten::mul.Scalar",
    "aten::div.Tensor", "aten::div.Scalar", "aten::neg", "aten::exp",
    "aten::log", "aten::log1p", "aten::expm1", "aten::rsqrt", "aten::sqrt", "aten::reciprocal",
    "aten::pow.Tensor_Scalar", "aten::tanh", "aten::sigmoid",
    "aten::silu", "aten::gelu", "aten::relu", "aten::abs", "aten::sin", "aten::cos", "aten::erf",
    "aten::clamp", "aten::clamp_min", "aten::clamp_max", "aten::where.self", "aten::eq.Tensor",
    "aten::eq.Scalar", "aten::ne.Tensor", "aten::ne.Scalar", "aten::lt.Tensor", "aten::lt.Scalar",
    "aten::le.Tensor", "aten::le.Scalar", "aten::gt.Tensor", "aten::gt.Scalar", "aten::ge.Tensor",
    "aten::ge.Scalar", "aten::logical_not", "aten::logical_and", "aten::logical_or",
    "aten::bitwise_not", "aten::maximum", "aten::minimum", "aten::masked_fill.Scalar",
    "aten::clone", "aten::lerp.Scalar", "aten::addcmul", "aten::addcdiv",
    // matmuls
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
    // reductions and normalisations
    "aten::sum.dim_IntList", "aten::sum", "aten::mean.dim", "aten::mean", "aten::amax",
    "aten::amin", "aten::argmax", "aten::_softmax", "aten::_log_softmax", "aten::cumsum",
    "aten::native_layer_norm",
    // data movement with metadata-determined shapes
    "aten::cat",
    // backward formulas
    "aten::_softmax_backward_data", "aten::_log_softmax_backward_data", "aten::silu_backward",
    "aten::gelu_backward", "aten::tanh_backward", "aten::sigmoid_backward",
    "aten::threshold_backward", "aten::native_layer_norm_backward",
};

constexpr int kMaxVariants = 8;      // children of one node with the same op before it cuts there
constexpr size_t kMaxNodes = 200000;  // trie size bound
constexpr size_t kMaxTraceOps = 512;  // ops per merge
constexpr size_t kMinCompileOps = 3;  // shorter traces run op by op

// A trace's kernel is compiled when the trace ends for the compile_after-th
// time (TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER, default 8, at least 1); until
// then it runs op by op. A compile costs seconds and a merged run saves
// microseconds, so only what repeats is worth compiling: decode and training
// repeat each segment every layer and every token or step and reach the count
// within their first steps, while a sweep of distinct ops and shapes (OpInfo)
// repeats a trace a few times and compiles almost nothing.
constexpr int kDefaultCompileAfter = 8;
int read_compile_after() {
  const char* v = std::getenv("TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER");
  if (v == nullptr || *v == '\0') {
    return kDefaultCompileAfter;
  }
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == nullptr || *end != '\0' || n < 1) {
    std::fprintf(stderr,
                 "torch_neuronx: TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER=%s is not an integer >= 1; "
                 "using %d (set it to the number of times a trace must end before it is compiled)\n",
                 v, kDefaultCompileAfter);
    return kDefaultCompileAfter;
  }
  return static_cast<int>(std::min<long>(n, 1 << 30));
}
std::atomic<int> g_compile_after{read_compile_after()};

enum Tag : int64_t {
  kTagNone = 1, kTagBool, kTagInt, kTagDouble, kTagIntList, kTagDoubleList, kTagBoolList,
  kTagString, kTagDevice, kTagExt, kTagOut, kTagList, kTagOptList, kTagUndefined, kTagEnd,
  kTagOutArg, kTagWrapped,
};

struct OutMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  size_t nbytes = 0;
  bool operator==(const OutMeta& o) const {
    return sizes == o.sizes && strides == o.strides && offset == o.offset && dtype == o.dtype &&
        nbytes == o.nbytes;
  }
};

struct Kernel {
  PyObject* fn = nullptr;  // owned reference (released under the GIL by clear_cache)
  bool failed = false;
  int checked = 0;  // runs compared with op by op
};

struct Node {
  std::vector<int64_t> sig;
  uint64_t hash = 0;      // of sig
  Node* last = nullptr;   // the child found last (a trace mostly repeats): tried first
  std::vector<OutMeta> outs;
  std::unordered_multimap<uint64_t, Node*> children;
  std::unordered_map<const void*, int> variants;
  int ends = 0;
  std::unordered_map<std::string, Kernel> kernels;
};

// The recorder runs for every queued op, so its per-op state allocates
// nothing once warm: small inline vectors, and containers that are cleared
// (keeping their capacity) instead of rebuilt at each flush.

// A map from addresses (StorageImpl*, TensorImpl*) to ints: open addressing
// with linear probing in power-of-two arrays. clear() empties only the slots
// used since the last clear, so a trace of n ops costs O(n) to forget.
class PtrMap {
 public:
  // The value of `key`, or nullptr.
  const int64_t* find(const void* key) const {
    if (keys_.empty()) {
      return nullptr;
    }
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        return &values_[i];
      }
      if (keys_[i] == nullptr) {
        return nullptr;
      }
    }
  }
  bool contains(const void* key) const {
    return find(key) != nullptr;
  }
  // Sets the value of `key` (inserting it when absent).
  void put(const void* key, int64_t value) {
    if ((used_.size() + 1) * 2 > keys_.size()) {
      grow();
    }
    size_t i = slot(key);
    for (; keys_[i] != nullptr && keys_[i] != key; i = (i + 1) & mask_) {
    }
    if (keys_[i] == nullptr) {
      keys_[i] = key;
      used_.push_back(static_cast<uint32_t>(i));
    }
    values_[i] = value;
  }
  void clear() {
    for (uint32_t i : used_) {
      keys_[i] = nullptr;
    }
    used_.clear();
  }

 private:
  size_t slot(const void* key) const {
    uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(h >> 32) & mask_;
  }
  void grow() {
    std::vector<const void*> keys;
    std::vector<int64_t> values;
    keys.swap(keys_);
    values.swap(values_);
    const size_t size = std::max<size_t>(64, keys.size() * 2);
    keys_.assign(size, nullptr);
    values_.assign(size, 0);
    mask_ = size - 1;
    used_.clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != nullptr) {
        put(keys[i], values[i]);
      }
    }
  }
  std::vector<const void*> keys_;
  std::vector<int64_t> values_;
  std::vector<uint32_t> used_;
  size_t mask_ = 0;
};

// A tensor operand of a queued op: an external input (index into Trace::ext)
// or a result of an earlier op of the trace, possibly seen through a view.
struct Ref {
  int ext = -1;
  int node = -1;
  int out = -1;
  bool view = false;
  c10::SmallVector<int64_t, 5> sizes;
  c10::SmallVector<int64_t, 5> strides;
  int64_t offset = 0;
};

enum ArgKind : int { kPlain = 0, kTensor = 1, kTensorList = 2, kOptTensorList = 3, kOutArg = 4 };

struct Arg {
  int kind = kPlain;
  c10::IValue plain;
  c10::SmallVector<int, 2> refs;  // -1: None / undefined
};

using Args = c10::SmallVector<Arg, 6>;

struct Node;
struct Queued {
  c10::OperatorHandle op;
  Node* node;
  Args args;
  // Weak references: they also keep the addresses of produced storages from
  // being reused by other storages while the trace lives (ext holds the
  // storages of its snapshots strongly), so the address maps below stay right.
  c10::SmallVector<c10::weak_intrusive_ptr<c10::StorageImpl>, 2> outs;
};

enum class Mode { Empty, Hit, Record };

struct Trace {
  Mode mode = Mode::Empty;
  c10::DeviceIndex device = -1;
  Node* at = nullptr;
  std::vector<Queued> ops;
  // The external inputs as they were when the op that reads them was queued:
  // a tensor of its own on the same storage, sizes, strides and offset, so
  // that re-pointing the caller's tensor (`.data =`, set_, swap_tensors)
  // after queuing does not change what the queued op reads.
  // The callers' tensors themselves are not held (swap_tensors checks their
  // use counts): ext_index is keyed by their addresses, and an address found
  // there is taken as that input only when its storage and layout are still
  // those of the snapshot (then reading either reads the same bytes).
  std::vector<at::Tensor> ext;
  PtrMap ext_index;     // TensorImpl* -> index into ext
  PtrMap ext_storages;  // StorageImpl* read by queued ops -> 1
  std::vector<Ref> refs;
  PtrMap produced;      // StorageImpl* -> node << 32 | result

  // Empties the trace, keeping the containers' memory for the next one.
  void clear() {
    mode = Mode::Empty;
    device = -1;
    at = nullptr;
    ops.clear();
    ext.clear();
    ext_index.clear();
    ext_storages.clear();
    refs.clear();
    produced.clear();
  }
};

int64_t pack(int node, int out) {
  return (static_cast<int64_t>(node) << 32) | static_cast<uint32_t>(out);
}

// A tensor operand classified before the trace is changed.
struct PendingRef {
  Ref ref;
  const c10::TensorImpl* new_ext = nullptr;  // set when ref.ext is a new external input
  at::Tensor tensor;
};

using StorageSet = c10::SmallVector<const c10::StorageImpl*, 8>;

bool contains(const StorageSet& set, const c10::StorageImpl* s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// One op classified against the trace. One instance is reused for every op
// (under the recorder's lock), so its vectors keep their memory.
struct Prepared {
  std::vector<int64_t> sig;
  uint64_t hash = 0;
  Args args;  // refs index into `refs` until committed
  std::vector<PendingRef> refs;
  StorageSet input_storages;
  c10::SmallVector<at::Tensor, 2> out_args;  // out= tensors of an out variant, in order
  c10::DeviceIndex device = -1;

  void clear() {
    sig.clear();
    hash = 0;
    args.clear();
    refs.clear();
    input_storages.clear();
    out_args.clear();
    device = -1;
  }
};

struct Stats {
  int64_t queued_ops = 0, recorded_ops = 0, cut_ops = 0, flushes = 0, kernel_hits = 0,
          kernel_misses = 0, merged_ops = 0, replayed_ops = 0, compiles = 0,
          compile_failures = 0, kernel_failures = 0, compile_time_ns = 0, dead_flushes = 0,
          waiting_flushes = 0;
};

std::mutex g_mutex;
Trace g_trace;
Node g_root;
std::vector<std::unique_ptr<Node>> g_nodes;
Stats g_stats;
PyObject* g_compiler = nullptr;
std::string g_last_error;
RunFn g_run = nullptr;
std::unordered_map<const void*, int8_t> g_allowed;  // schema -> Policy
thread_local bool t_bypass = false;

struct Bypass {
  bool previous;
  Bypass() : previous(t_bypass) {
    t_bypass = true;
  }
  ~Bypass() {
    t_bypass = previous;
  }
};

// Locks the recorder. A thread holding the GIL releases it while it waits, so
// that the holder of the lock can take the GIL to compile or run a kernel.
std::unique_lock<std::mutex> lock_state() {
  std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      lock.lock();
    } else {
      lock.lock();
    }
  }
  return lock;
}

// Ops whose out= variant is not queued although their base name is listed.
const char* const kDenied[] = {
    "aten::pow.Tensor_Tensor_out", "aten::pow.Scalar_out", "aten::div.out_mode",
};

enum Policy : int8_t { kNo = 0, kFunctional = 1, kOutVariant = 2 };

// kFunctional for a listed op; kOutVariant for an out= overload of a listed
// op (PyTorch's structured kernels reach a device as `empty` + `op.out`):
// its only writes are keyword-only tensors, which it returns.
Policy allowed(const c10::OperatorHandle& op) {
  const void* key = &op.schema();
  auto it = g_allowed.find(key);
  if (it != g_allowed.end()) {
    return static_cast<Policy>(it->second);
  }
  const auto& n = op.operator_name();
  const std::string name = n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
  bool listed = false;
  bool base_listed = false;
  for (const char* a : kAllowed) {
    const std::string entry(a);
    listed = listed || name == entry;
    base_listed = base_listed || entry.substr(0, entry.find('.')) == n.name;
  }
  for (const char* d : kDenied) {
    base_listed = base_listed && name != d;
  }
  const auto& schema = op.schema();
  Policy policy = kNo;
  if (listed) {
    bool ok = true;
    for (const auto& ret : schema.returns()) {
      ok = ok && ret.type()->kind() == c10::TypeKind::TensorType && ret.alias_info() == nullptr;
    }
    for (const auto& arg : schema.arguments()) {
      ok = ok && (arg.alias_info() == nullptr || !arg.alias_info()->isWrite());
    }
    policy = ok ? kFunctional : kNo;
  } else if (base_listed) {
    size_t writes = 0;
    bool ok = true;
    for (const auto& arg : schema.arguments()) {
      if (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) {
        ok = ok && arg.kwarg_only() && arg.type()->kind() == c10::TypeKind::TensorType;
        writes++;
      }
    }
    for (const auto& ret : schema.returns()) {
      ok = ok && ret.type()->kind() == c10::TypeKind::TensorType && ret.alias_info() != nullptr &&
          ret.alias_info()->isWrite();
    }
    policy = ok && writes > 0 && writes == schema.returns().size() ? kOutVariant : kNo;
  }
  g_allowed.emplace(key, policy);
  return policy;
}

void forbid(const c10::OperatorHandle& op) {
  g_allowed[&op.schema()] = 0;
}

uint64_t hash_sig(const std::vector<int64_t>& sig) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t v : sig) {
    h ^= static_cast<uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

void push_meta(std::vector<int64_t>& sig, const at::Tensor& t) {
  sig.push_back(static_cast<int64_t>(t.scalar_type()));
  sig.push_back(t.dim());
  for (int64_t s : t.sizes()) {
    sig.push_back(s);
  }
  for (int64_t s : t.strides()) {
    sig.push_back(s);
  }
}

bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "0") == 0;
}

// Views of queued results inside a trace (as_strided in the kernel's graph)
// and operands requiring grad are queued; TORCH_NEURONX_ADAPTIVE_VIEWS=0 and
// TORCH_NEURONX_ADAPTIVE_GRAD=0 cut at them instead (for debugging).
const bool g_views = !env_off("TORCH_NEURONX_ADAPTIVE_VIEWS");
const bool g_grad = !env_off("TORCH_NEURONX_ADAPTIVE_GRAD");

// Inductor assumes that an input whose example was aligned to this many bytes
// is aligned at every call (it copies misaligned ones only where it was told
// to): the alignment of an external input is part of a trace's key.
constexpr int64_t kInputAlignment = 16;

// The storage offset a kernel's example input gets for an input at `offset`
// whose first element is (or is not) aligned: 0 stays 0, an aligned offset
// becomes the smallest aligned one, a misaligned one 1. -1: an element size
// for which a misaligned input has no such example (not queued).
int64_t example_offset(int64_t offset, bool aligned, int64_t itemsize) {
  if (offset == 0) {
    return aligned ? 0 : -1;
  }
  if (aligned) {
    return std::max<int64_t>(1, kInputAlignment / itemsize);
  }
  return itemsize < kInputAlignment && kInputAlignment % itemsize == 0 ? 1 : -1;
}

int64_t example_offset(const at::Tensor& t) {
  const bool aligned = reinterpret_cast<uintptr_t>(t.const_data_ptr()) % kInputAlignment == 0;
  return example_offset(t.storage_offset(), aligned, static_cast<int64_t>(t.element_size()));
}

bool contiguous(const OutMeta& m) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(m.sizes.size()) - 1; d >= 0; --d) {
    if (m.sizes[d] != 1 && m.strides[d] != expected) {
      return false;
    }
    expected *= m.sizes[d];
  }
  return true;
}

// A tensor of its own with `t`'s storage, dtype, sizes, strides and offset.
at::Tensor snapshot(const at::Tensor& t) {
  auto s = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(t.storage()), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), t.dtype());
  s.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return s;
}

bool same_snapshot(const at::Tensor& s, const at::Tensor& t) {
  return t.has_storage() && s.storage().unsafeGetStorageImpl() == t.storage().unsafeGetStorageImpl() &&
      s.dtype() == t.dtype() && s.storage_offset() == t.storage_offset() && s.sizes() == t.sizes() &&
      s.strides() == t.strides();
}

// Classifies one tensor operand; false when it makes the op unqueueable.
bool describe_tensor(const at::Tensor& t, Prepared& p, int& ref_out) {
  if (!t.defined()) {
    p.sig.push_back(kTagUndefined);
    ref_out = -1;
    return true;
  }
  // Operands that require grad (a training forward) are queued: the op runs
  // below autograd, which keeps the pending results for backward.
  if (!g_grad && t.requires_grad() && c10::GradMode::is_enabled()) {
    return false;
  }
  if (t.device().type() != kNeuron || t.layout() != c10::kStrided || t.is_conj() || t.is_neg() ||
      !t.has_storage() || t._is_zerotensor() || is_host_fallback_dtype(t.scalar_type())) {
    return false;
  }
  const c10::DeviceIndex index = t.device().index();
  if (p.device < 0) {
    p.device = index;
  } else if (p.device != index) {
    return false;
  }
  const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
  if (!contains(p.input_storages, si)) {
    p.input_storages.push_back(si);
  }
  PendingRef pr;
  if (const int64_t* produced = g_trace.produced.find(si)) {
    pr.ref.node = static_cast<int>(*produced >> 32);
    pr.ref.out = static_cast<int>(*produced & 0xffffffff);
    pr.ref.offset = t.storage_offset();
    const OutMeta& om = g_trace.ops[pr.ref.node].node->outs[pr.ref.out];
    if (om.dtype != t.scalar_type()) {
      return false;  // a dtype view of a queued result
    }
    pr.ref.view = !(c10::IntArrayRef(om.sizes) == t.sizes() && c10::IntArrayRef(om.strides) == t.strides() &&
                    om.offset == pr.ref.offset);
    if (pr.ref.view && (om.offset != 0 || !contiguous(om) || !g_views)) {
      return false;  // a view of a non-contiguous result: its layout inside a kernel may differ
    }
    if (pr.ref.view) {
      pr.ref.sizes.assign(t.sizes().begin(), t.sizes().end());
      pr.ref.strides.assign(t.strides().begin(), t.strides().end());
    }
    p.sig.push_back(kTagOut);
    p.sig.push_back(pr.ref.node);
    p.sig.push_back(pr.ref.out);
    push_meta(p.sig, t);
    p.sig.push_back(t.storage_offset());
  } else {
    if (t.storage().data() == nullptr && t.storage().nbytes() > 0) {
      return false;  // memory that no flush will fill: never read it
    }
    const int64_t* found = g_trace.ext_index.find(t.unsafeGetTensorImpl());
    if (found != nullptr && !same_snapshot(g_trace.ext[static_cast<int>(*found)], t)) {
      // Re-pointed or resized since it was queued (or a new tensor at a dead
      // one's address): a new input; the queued ops keep reading the old one.
      found = nullptr;
    }
    int index_ext = -1;
    if (found != nullptr) {
      index_ext = static_cast<int>(*found);
    } else {
      int fresh = static_cast<int>(g_trace.ext.size());
      for (const auto& other : p.refs) {
        if (other.new_ext != nullptr) {
          if (other.new_ext == t.unsafeGetTensorImpl()) {
            index_ext = other.ref.ext;
            break;
          }
          fresh = std::max(fresh, other.ref.ext + 1);
        }
      }
      if (index_ext < 0) {
        index_ext = fresh;
        pr.new_ext = t.unsafeGetTensorImpl();
        pr.tensor = t;
      }
    }
    pr.ref.ext = index_ext;
    p.sig.push_back(kTagExt);
    p.sig.push_back(index_ext);
    push_meta(p.sig, t);
    // Inputs are passed by their data pointers: what changes a kernel's
    // meaning is the input's sizes, strides and dtype (above), which input it
    // is (the index: one tensor read twice is one input), and its alignment.
    const int64_t example = example_offset(t);
    if (example < 0) {
      return false;
    }
    p.sig.push_back(example);
  }
  ref_out = static_cast<int>(p.refs.size());
  p.refs.push_back(std::move(pr));
  return true;
}

bool describe_plain(const c10::IValue& v, std::vector<int64_t>& sig, c10::DeviceIndex& device) {
  if (v.isNone()) {
    sig.push_back(kTagNone);
  } else if (v.isBool()) {
    sig.push_back(kTagBool);
    sig.push_back(v.toBool());
  } else if (v.isInt()) {
    sig.push_back(kTagInt);
    sig.push_back(v.toInt());
  } else if (v.isDouble()) {
    sig.push_back(kTagDouble);
    double d = v.toDouble();
    int64_t bits = 0;
    std::memcpy(&bits, &d, sizeof(bits));
    sig.push_back(bits);
  } else if (v.isIntList()) {
    sig.push_back(kTagIntList);
    auto list = v.toIntList();
    sig.push_back(static_cast<int64_t>(list.size()));
    for (int64_t x : list) {
      sig.push_back(x);
    }
  } else if (v.isBoolList()) {
    sig.push_back(kTagBoolList);
    auto list = v.toBoolList();
    sig.push_back(static_cast<int64_t>(list.size()));
    for (bool x : list) {
      sig.push_back(x);
    }
  } else if (v.isDoubleList()) {
    sig.push_back(kTagDoubleList);
    auto list = v.toDoubleList();
    sig.push_back(static_cast<int64_t>(list.size()));
    for (double d : list) {
      int64_t bits = 0;
      std::memcpy(&bits, &d, sizeof(bits));
      sig.push_back(bits);
    }
  } else if (v.isString()) {
    sig.push_back(kTagString);
    const std::string& s = v.toStringRef();
    sig.push_back(static_cast<int64_t>(s.size()));
    for (char c : s) {
      sig.push_back(static_cast<unsigned char>(c));
    }
  } else if (v.isDevice()) {
    const c10::Device d = v.toDevice();
    if (d.type() != kNeuron) {
      return false;
    }
    const c10::DeviceIndex index = d.has_index() ? d.index() : current_device();
    if (device >= 0 && device != index) {
      return false;
    }
    device = index;
    sig.push_back(kTagDevice);
  } else {
    return false;  // generators, complex scalars, anything else: not queued
  }
  return true;
}

// Describes the op and its operands against the current trace.
// An out= tensor that the op may write later (at the flush): nothing else
// may see its memory, and it must not be read by the op itself.
bool describe_out_arg(const at::Tensor& t, Prepared& p) {
  if (!t.defined() || t.device().type() != kNeuron || t.device().index() != p.device ||
      t.layout() != c10::kStrided || t.is_conj() || t.is_neg() || !t.has_storage() ||
      t._is_zerotensor() || is_host_fallback_dtype(t.scalar_type()) || t.storage_offset() != 0 ||
      t.storage().use_count() != 1) {
    return false;
  }
  const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
  if (contains(p.input_storages, si) || g_trace.produced.contains(si) ||
      (t.storage().data() == nullptr && t.storage().nbytes() > 0) || si->has_materializer()) {
    return false;  // (a storage with a materializer of its own: ours could not be installed)
  }
  for (const at::Tensor& other : p.out_args) {
    if (other.storage().unsafeGetStorageImpl() == si) {
      return false;
    }
  }
  p.sig.push_back(kTagOutArg);
  push_meta(p.sig, t);
  p.sig.push_back(static_cast<int64_t>(t.storage().nbytes()));
  p.out_args.push_back(t);
  return true;
}

bool prepare(const c10::OperatorHandle& op, const torch::jit::Stack& stack, Prepared& p, Policy policy) {
  const auto& args = op.schema().arguments();
  const size_t begin = stack.size() - args.size();
  p.sig.push_back(reinterpret_cast<int64_t>(&op.schema()));
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = stack[begin + i];
    Arg a;
    if (policy == kOutVariant && args[i].alias_info() != nullptr && args[i].alias_info()->isWrite()) {
      a.kind = kOutArg;
      if (!v.isTensor() || p.device < 0 || !describe_out_arg(v.toTensor(), p)) {
        return false;
      }
    } else if (v.isTensor() && v.toTensor().defined() && v.toTensor().device().is_cpu() &&
               v.toTensor().dim() == 0 && v.toTensor().unsafeGetTensorImpl()->is_wrapped_number()) {
      // A Python number PyTorch wrapped into a 0-dim CPU tensor: its value is in the key.
      const at::Tensor& t = v.toTensor();
      p.sig.push_back(kTagWrapped);
      p.sig.push_back(static_cast<int64_t>(t.scalar_type()));
      const c10::Scalar value = t.item();
      if (value.isFloatingPoint()) {
        const double d = value.toDouble();
        int64_t bits = 0;
        std::memcpy(&bits, &d, sizeof(bits));
        p.sig.push_back(bits);
      } else if (value.isIntegral(/*includeBool=*/true)) {
        p.sig.push_back(value.toLong());
      } else {
        return false;
      }
      a.plain = v;
    } else if (v.isTensor()) {
      a.kind = kTensor;
      int r = -1;
      if (!describe_tensor(v.toTensor(), p, r)) {
        return false;
      }
      a.refs.push_back(r);
    } else if (v.isTensorList()) {
      a.kind = kTensorList;
      auto list = v.toTensorList();
      p.sig.push_back(kTagList);
      p.sig.push_back(static_cast<int64_t>(list.size()));
      for (const at::Tensor& t : list) {
        int r = -1;
        if (!describe_tensor(t, p, r)) {
          return false;
        }
        a.refs.push_back(r);
      }
    } else if (v.isOptionalTensorList()) {
      a.kind = kOptTensorList;
      auto list = v.toOptionalTensorList();
      p.sig.push_back(kTagOptList);
      p.sig.push_back(static_cast<int64_t>(list.size()));
      for (const std::optional<at::Tensor> t : list) {
        int r = -1;
        if (t.has_value() && !describe_tensor(*t, p, r)) {
          return false;
        }
        if (!t.has_value()) {
          p.sig.push_back(kTagUndefined);
        }
        a.refs.push_back(r);
      }
    } else {
      if (!describe_plain(v, p.sig, p.device)) {
        return false;
      }
      a.plain = v;
    }
    p.sig.push_back(kTagEnd);
    p.args.push_back(std::move(a));
  }
  if (p.device < 0) {
    return false;  // no neuron operand: factories and the like run as they are
  }
  p.hash = hash_sig(p.sig);
  return true;
}

Node* find_child(Node* parent, const Prepared& p) {
  Node* last = parent->last;
  if (last != nullptr && last->hash == p.hash && last->sig == p.sig) {
    return last;
  }
  auto range = parent->children.equal_range(p.hash);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second->sig == p.sig) {
      parent->last = it->second;
      return it->second;
    }
  }
  return nullptr;
}

// Moves a Prepared's new external inputs and refs into the trace.
void commit(Prepared& p, Args& args_out) {
  // The refs of p are appended in order, so ref i of p becomes ref first + i.
  const int first = static_cast<int>(g_trace.refs.size());
  for (PendingRef& pr : p.refs) {
    // The first ref of a new input appends it (a later ref of the same op has its index).
    if (pr.new_ext != nullptr && pr.ref.ext == static_cast<int>(g_trace.ext.size())) {
      g_trace.ext_index.put(pr.new_ext, pr.ref.ext);
      g_trace.ext_storages.put(pr.tensor.storage().unsafeGetStorageImpl(), 1);
      g_trace.ext.push_back(snapshot(pr.tensor));
    }
    g_trace.refs.push_back(std::move(pr.ref));
  }
  for (Arg& a : p.args) {
    for (int& r : a.refs) {
      if (r >= 0) {
        r += first;
      }
    }
  }
  args_out = std::move(p.args);
}

OutMeta meta_of(const at::Tensor& t) {
  OutMeta m;
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.offset = t.storage_offset();
  m.dtype = t.scalar_type();
  m.nbytes = t.storage().nbytes();
  return m;
}

// A pending result's storage has no memory until the flush fills it, and an
// out= tensor of a queued op holds its old values until then. Their
// materializer (PyTorch calls it on the first write-path access to the
// memory: data_ptr(), untyped_storage().data_ptr(), DLPack, ctypes through
// them) runs what is queued, so such an access gets the real pointer and
// values, as with the flag off. fill() removes it. PyTorch has no such hook
// for read-only access (const_data_ptr(), StorageImpl::data()): see
// flush_if_queued for the Python paths, AdaptiveEager.h for what remains.
void materialize_pending(c10::StorageImpl* /*storage*/) {
  flush();
}

at::Tensor make_pending(const OutMeta& m, c10::DeviceIndex device) {
  c10::Storage storage(
      c10::Storage::use_byte_size_t(),
      m.nbytes,
      c10::DataPtr(nullptr, c10::Device(kNeuron, device)),
      neuron_allocator(),
      /*resizable=*/true);
  storage.unsafeGetStorageImpl()->set_materializer(&materialize_pending);
  auto t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::scalarTypeToTypeMeta(m.dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes, m.strides, m.offset);
  return t;
}

template <typename Tensors>
void register_outputs(int node_index, const Tensors& outs, Queued& q) {
  for (size_t j = 0; j < outs.size(); ++j) {
    const c10::Storage& s = outs[j].storage();
    g_trace.produced.put(s.unsafeGetStorageImpl(), pack(node_index, static_cast<int>(j)));
    q.outs.push_back(s.getWeakStorageImpl());
  }
}

// ---- flush ----------------------------------------------------------------

// A CPU tensor with `m`'s metadata on the bytes of `storage`.
at::Tensor cpu_view_of(const c10::Storage& storage, const OutMeta& m) {
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      cpu_alias_storage(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
      c10::scalarTypeToTypeMeta(m.dtype));
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes, m.strides, m.offset);
  return alias;
}

// Gives the pending storage `target` the values of `result` (a CPU tensor
// from a kernel or a neuron tensor from a replay), taking its memory when
// nothing else uses it and its layout is the recorded one.
void fill(c10::StorageImpl* target, const OutMeta& m, const at::Tensor& result, bool shared,
          c10::DeviceIndex device) {
  TORCH_CHECK(
      result.sizes() == c10::IntArrayRef(m.sizes) && result.scalar_type() == m.dtype,
      "neuron adaptive eager: a merged kernel returned a result of sizes ", result.sizes(), " and ",
      result.scalar_type(), " where the op gives ", c10::IntArrayRef(m.sizes), " and ", m.dtype,
      ". Set TORCH_NEURONX_ADAPTIVE_EAGER=0 and report this.");
  target->clear_materializer();  // filled here: accesses below must not flush again
  c10::StorageImpl* rs = result.storage().unsafeGetStorageImpl();
  const c10::DataPtr& rdp = rs->data_ptr();
  const bool steal = !shared && result.strides() == c10::IntArrayRef(m.strides) &&
      result.storage_offset() == m.offset && result.storage().use_count() == 1 &&
      is_accounted_deleter(rdp.get_deleter()) && rs->nbytes() >= m.nbytes && rdp.get() != nullptr;
  if (steal) {
    c10::DataPtr moved = std::move(rs->_mutable_data_ptr_no_checks());
    moved.unsafe_set_device(c10::Device(kNeuron, device));
    const size_t nbytes = rs->nbytes();
    rs->set_nbytes(0);
    target->set_data_ptr_noswap(std::move(moved));
    target->set_nbytes(nbytes);
    return;
  }
  if (target->data() == nullptr || target->nbytes() < m.nbytes) {
    target->set_data_ptr_noswap(allocate_accounted(m.nbytes, device, c10::Device(kNeuron, device)));
    target->set_nbytes(m.nbytes);
  }
  c10::Storage holder(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(target));
  at::Tensor dst = cpu_view_of(holder, m);
  dst.copy_(result.device().type() == kNeuron ? cpu_alias(result) : result);
}

struct Live {
  int node;
  int out;
  c10::intrusive_ptr<c10::StorageImpl> storage;
};

void fill_all(const std::vector<Live>& live, const std::vector<at::Tensor>& results) {
  std::vector<const c10::StorageImpl*> storages;
  storages.reserve(results.size());
  for (const at::Tensor& r : results) {
    storages.push_back(r.storage().unsafeGetStorageImpl());
  }
  std::sort(storages.begin(), storages.end());
  for (size_t i = 0; i < live.size(); ++i) {
    const OutMeta& m = g_trace.ops[live[i].node].node->outs[live[i].out];
    const auto range = std::equal_range(storages.begin(), storages.end(), results[i].storage().unsafeGetStorageImpl());
    const bool shared = range.second - range.first > 1;
    fill(live[i].storage.get(), m, results[i], shared, g_trace.device);
  }
}

py::object plain_to_py(const c10::IValue& v, const c10::Argument& arg) {
  c10::TypePtr type = arg.type();
  if (type->kind() == c10::TypeKind::OptionalType) {
    type = type->castRaw<c10::OptionalType>()->getElementType();
  }
  if (v.isInt()) {
    switch (type->kind()) {
      case c10::TypeKind::ScalarTypeType:
        return py::reinterpret_borrow<py::object>(
            reinterpret_cast<PyObject*>(torch::getTHPDtype(static_cast<c10::ScalarType>(v.toInt()))));
      case c10::TypeKind::LayoutType:
        return py::reinterpret_borrow<py::object>(
            reinterpret_cast<PyObject*>(torch::getTHPLayout(static_cast<c10::Layout>(v.toInt()))));
      case c10::TypeKind::MemoryFormatType:
        return py::reinterpret_borrow<py::object>(
            torch::utils::getTHPMemoryFormat(static_cast<c10::MemoryFormat>(v.toInt())));
      default:
        break;
    }
  }
  if (v.isDevice()) {
    return py::module_::import("torch").attr("device")("cpu");
  }
  if (v.isTensor()) {
    return torch::jit::toPyObject(c10::IValue(v.toTensor().item()));  // a wrapped number
  }
  return torch::jit::toPyObject(v);
}

// (nodes, refs, external inputs, outputs): what torch_neuronx.adaptive
// compiles. nodes: (op name, overload, [(kind, value)], number of results);
// kind 0 plain value, 1 tensor ref (int or None), 2 list of refs, 3 list of
// refs or None. refs: ("ext", i) or ("out", node, result, view, sizes,
// strides, storage offset). inputs: (sizes, strides, dtype, storage offset).
py::tuple describe_trace(const std::vector<Live>& live) {
  py::list nodes;
  for (const Queued& q : g_trace.ops) {
    const auto& schema = q.op.schema();
    py::list args;
    for (size_t i = 0; i < q.args.size(); ++i) {
      const Arg& a = q.args[i];
      auto ref = [](int r) -> py::object {
        return r < 0 ? py::none() : py::object(py::int_(r));
      };
      if (a.kind == kOutArg) {
        args.append(py::make_tuple(4, py::none()));
      } else if (a.kind == kPlain) {
        args.append(py::make_tuple(0, plain_to_py(a.plain, schema.arguments()[i])));
      } else if (a.kind == kTensor) {
        args.append(py::make_tuple(1, ref(a.refs[0])));
      } else {
        py::list refs;
        for (int r : a.refs) {
          refs.append(ref(r));
        }
        args.append(py::make_tuple(a.kind, refs));
      }
    }
    nodes.append(py::make_tuple(schema.name(), schema.overload_name(), args, schema.returns().size()));
  }
  py::list refs;
  for (const Ref& r : g_trace.refs) {
    if (r.ext >= 0) {
      refs.append(py::make_tuple("ext", r.ext));
    } else {
      refs.append(py::make_tuple("out", r.node, r.out, r.view, std::vector<int64_t>(r.sizes.begin(), r.sizes.end()),
                                 std::vector<int64_t>(r.strides.begin(), r.strides.end()), r.offset));
    }
  }
  py::list inputs;
  for (const at::Tensor& t : g_trace.ext) {
    inputs.append(py::make_tuple(
        t.sizes().vec(), t.strides().vec(),
        py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(t.scalar_type()))),
        example_offset(t)));
  }
  py::list outputs;
  for (const Live& l : live) {
    outputs.append(py::make_tuple(l.node, l.out));
  }
  return py::make_tuple(nodes, refs, inputs, outputs);
}

// The dispatch state of a fresh thread (the default included and excluded
// keys) while a kernel is compiled or run. A flush happens wherever a cut
// does, e.g. inside torch.tensor(), which excludes the Python dispatch key:
// make_fx would then not see the ops (they would run on its example inputs
// and enter the graph as constants), and Inductor's fake tensors refuse to
// work. A named variable, so that it is not a function declaration.
struct CleanDispatchState {
  c10::impl::ForceDispatchKeyGuard guard{
      c10::impl::LocalDispatchKeySet(c10::impl::PODLocalDispatchKeySet{})};
};

bool python_usable() {
  return Py_IsInitialized() && !_Py_IsFinalizing();
}

void compile(Kernel& kernel, const std::vector<Live>& live) {
  if (g_compiler == nullptr || !python_usable()) {
    kernel.failed = true;
    g_last_error = "no kernel compiler installed (torch_neuronx.adaptive was not imported)";
    g_stats.compile_failures++;
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  py::gil_scoped_acquire gil;
  // Compile and run outside whatever dispatch state the cut happened in (a
  // flush inside torch.tensor() runs with Python dispatch excluded, which
  // Inductor's fake tensors refuse).
  CleanDispatchState clean_dispatch;
  try {
    py::object fn = py::reinterpret_borrow<py::object>(g_compiler)(describe_trace(live));
    kernel.fn = fn.release().ptr();
    g_stats.compiles++;
  } catch (py::error_already_set& e) {
    g_last_error = e.what();
    kernel.failed = true;
    g_stats.compile_failures++;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    kernel.failed = true;
    g_stats.compile_failures++;
  }
  g_stats.compile_time_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
}

bool run_kernel(Kernel& kernel, const std::vector<Live>& live) {
  if (!python_usable()) {
    return false;
  }
  std::vector<at::Tensor> results;
  {
    py::gil_scoped_acquire gil;
    CleanDispatchState clean_dispatch;
    try {
      py::list inputs;
      for (const at::Tensor& t : g_trace.ext) {
        // The read-alias cache's alias (the same weights every decode step):
        // its Python object is kept with it, so neither is made again. The
        // generated code reads and writes the bytes, never the metadata.
        inputs.append(py::cast(cached_read_alias(t)));
      }
      RouteAllocationsTo route(g_trace.device);
      py::object out = py::reinterpret_borrow<py::object>(kernel.fn)(inputs);
      for (py::handle item : out) {
        results.push_back(py::cast<at::Tensor>(item));
      }
    } catch (py::error_already_set& e) {
      g_last_error = e.what();
      return false;
    } catch (const std::exception& e) {
      g_last_error = e.what();
      return false;
    }
  }
  if (results.size() != live.size()) {
    g_last_error = "a merged kernel returned the wrong number of results";
    return false;
  }
  try {
    fill_all(live, results);
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return false;
  }
  return true;
}

void replay(const std::vector<Live>& live) {
  std::vector<std::vector<at::Tensor>> values(g_trace.ops.size());
  auto resolve = [&](int r) -> at::Tensor {
    if (r < 0) {
      return at::Tensor();
    }
    const Ref& ref = g_trace.refs[r];
    if (ref.ext >= 0) {
      return g_trace.ext[ref.ext];
    }
    const at::Tensor& v = values[ref.node][ref.out];
    return ref.view ? at::as_strided(v, ref.sizes, ref.strides, ref.offset) : v;
  };
  for (size_t k = 0; k < g_trace.ops.size(); ++k) {
    const Queued& q = g_trace.ops[k];
    torch::jit::Stack stack;
    stack.reserve(q.args.size());
    size_t out_index = 0;
    for (const Arg& a : q.args) {
      if (a.kind == kPlain) {
        stack.push_back(a.plain);
      } else if (a.kind == kOutArg) {
        const OutMeta& m = q.node->outs[out_index++];
        stack.push_back(at::empty_strided(
            m.sizes, m.strides, at::TensorOptions().dtype(m.dtype).device(kNeuron, g_trace.device)));
      } else if (a.kind == kTensor) {
        stack.push_back(resolve(a.refs[0]));
      } else if (a.kind == kTensorList) {
        c10::List<at::Tensor> list;
        for (int r : a.refs) {
          list.push_back(resolve(r));
        }
        stack.push_back(std::move(list));
      } else {
        c10::List<std::optional<at::Tensor>> list;
        for (int r : a.refs) {
          list.push_back(r < 0 ? std::optional<at::Tensor>() : std::optional<at::Tensor>(resolve(r)));
        }
        stack.push_back(std::move(list));
      }
    }
    g_run(q.op, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), &stack);
    for (const c10::IValue& v : stack) {
      values[k].push_back(v.toTensor());
    }
  }
  std::vector<at::Tensor> results;
  results.reserve(live.size());
  for (const Live& l : live) {
    results.push_back(values[l.node][l.out]);
  }
  values.clear();
  fill_all(live, results);
}

const bool g_verify = std::getenv("TORCH_NEURONX_ADAPTIVE_VERIFY") != nullptr;

// Runs the trace op by op after its kernel ran and compares: true when every
// live result agrees within 1e-6 + 1e-5 * |value| (the op-by-op values are
// the ones kept either way). A new kernel is checked this way on its first
// runs, and always with TORCH_NEURONX_ADAPTIVE_VERIFY=1, which also prints
// each result that differs.
bool verify(const std::vector<Live>& live) {
  std::vector<at::Tensor> merged;
  for (const Live& l : live) {
    const OutMeta& m = g_trace.ops[l.node].node->outs[l.out];
    merged.push_back(cpu_view_of(c10::Storage(l.storage), m).clone());
  }
  replay(live);
  bool same = true;
  for (size_t i = 0; i < live.size(); ++i) {
    const OutMeta& m = g_trace.ops[live[i].node].node->outs[live[i].out];
    at::Tensor ref = cpu_view_of(c10::Storage(live[i].storage), m).to(at::kFloat);
    at::Tensor got = merged[i].to(at::kFloat);
    if (ref.numel() == 0) {
      continue;
    }
    const bool close = at::allclose(got, ref, /*rtol=*/1e-5, /*atol=*/1e-6, /*equal_nan=*/true);
    if (!close && g_verify) {
      const double diff = (ref - got).abs().max().item<double>();
      std::fprintf(stderr, "[adaptive eager verify] op %d/%zu %s result %d differs by %g\n", live[i].node,
                   g_trace.ops.size(), g_trace.ops[live[i].node].op.schema().name().c_str(), live[i].out, diff);
    }
    same = same && close;
  }
  return same;
}

// The first run of each new kernel is checked against op by op (its
// op-by-op values are the ones kept); later runs are not.
// TORCH_NEURONX_ADAPTIVE_CHECK_RUNS=N checks the first N runs of each kernel
// instead, and TORCH_NEURONX_ADAPTIVE_VERIFY=1 every run (for debugging: a
// checked run costs the kernel plus the op-by-op replay).
int read_check_runs() {
  constexpr int kDefault = 1;
  const char* v = std::getenv("TORCH_NEURONX_ADAPTIVE_CHECK_RUNS");
  if (v == nullptr || *v == '\0') {
    return kDefault;
  }
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != nullptr && *end == '\0' && n >= 0 ? static_cast<int>(std::min<long>(n, 1 << 30)) : kDefault;
}
const int kValidatedRuns = read_check_runs();

// Op counts (get_executed_ops) of ops that ran inside a kernel, or not at all
// because nothing used their results; a replay counts through the fallback.
void track_all() {
  for (const Queued& q : g_trace.ops) {
    track_op(&q.op.schema(), q.op.operator_name(), false);
  }
}

void execute_queued(Node* end) {
  std::vector<Live> live;
  std::string mask;
  for (size_t k = 0; k < g_trace.ops.size(); ++k) {
    const Queued& q = g_trace.ops[k];
    for (size_t j = 0; j < q.outs.size(); ++j) {
      c10::intrusive_ptr<c10::StorageImpl> s = q.outs[j].lock();
      mask.push_back(s ? '1' : '0');
      if (s) {
        live.push_back(Live{static_cast<int>(k), static_cast<int>(j), std::move(s)});
      }
    }
  }
  if (live.empty()) {
    track_all();
    g_stats.dead_flushes++;
    return;
  }
  const size_t n = g_trace.ops.size();
  Kernel& kernel = end->kernels[mask];
  if (kernel.fn == nullptr && !kernel.failed && n >= kMinCompileOps) {
    if (end->ends >= g_compile_after.load(std::memory_order_relaxed)) {
      compile(kernel, live);
    } else {
      g_stats.waiting_flushes++;
    }
  }
  if (kernel.fn != nullptr && !kernel.failed) {
    if (run_kernel(kernel, live)) {
      if (C10_UNLIKELY(g_verify) || kernel.checked < kValidatedRuns) {
        kernel.checked = std::min(kernel.checked + 1, std::numeric_limits<int>::max() - 1);
        if (!verify(live)) {
          // A kernel that disagrees with op by op is never used again.
          kernel.failed = true;
          g_stats.kernel_failures++;
          g_last_error = "a merged kernel disagreed with the op-by-op results; its trace runs op by op";
          g_stats.kernel_misses++;
          g_stats.replayed_ops += static_cast<int64_t>(n);
          return;
        }
      }
      track_all();
      g_stats.kernel_hits++;
      g_stats.merged_ops += static_cast<int64_t>(n);
      return;
    }
    kernel.failed = true;
    g_stats.kernel_failures++;
  }
  replay(live);
  g_stats.kernel_misses++;
  g_stats.replayed_ops += static_cast<int64_t>(n);
}

void flush_locked() {
  if (g_trace.mode == Mode::Empty) {
    return;
  }
  Bypass bypass;
  struct Reset {
    ~Reset() {
      g_trace.clear();
      g_pending.store(false, std::memory_order_release);
    }
  } reset;
  Node* end = g_trace.at;
  end->ends++;
  g_stats.flushes++;
  if (g_trace.mode == Mode::Hit) {
    execute_queued(end);
  }
}

const bool g_debug = std::getenv("TORCH_NEURONX_ADAPTIVE_DEBUG") != nullptr;

// Ends the current merge because of `op` (`why` is printed with
// TORCH_NEURONX_ADAPTIVE_DEBUG set).
void cut(const c10::OperatorHandle* op = nullptr, const char* why = "") {
  if (C10_UNLIKELY(g_debug) && op != nullptr) {
    std::fprintf(stderr, "[adaptive eager] cut at %s: %s\n", op->schema().name().c_str(), why);
  }
  if (g_trace.mode != Mode::Empty) {
    g_stats.cut_ops++;
    flush_locked();
  }
}

bool valid_result(const c10::IValue& v, const Prepared& p, StorageSet& seen) {
  if (!v.isTensor()) {
    return false;
  }
  const at::Tensor& t = v.toTensor();
  if (!t.defined() || t.device().type() != kNeuron || t.device().index() != p.device ||
      t.layout() != c10::kStrided || !t.has_storage() || is_host_fallback_dtype(t.scalar_type()) ||
      t.is_conj() || t.is_neg()) {
    return false;
  }
  const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
  if (t.storage().data() == nullptr && t.storage().nbytes() > 0) {
    return false;
  }
  if (contains(p.input_storages, si) || contains(seen, si)) {
    return false;  // a result sharing memory with an operand or another result
  }
  seen.push_back(si);
  return true;
}

// True when an operand of `op` on the stack is memory of the current trace: a
// queued result (pending until the flush) or an input a queued op reads. An
// op that is not queued but touches none of it runs at once without a cut
// (factories such as arange, ops on unrelated tensors): the queued ops
// neither read what it writes nor write what it reads.
bool touches_trace(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const size_t n = op.schema().arguments().size();
  bool touches = false;
  auto check = [&](const at::Tensor& t) {
    if (t.defined() && t.device().type() == kNeuron && t.has_storage()) {
      const c10::StorageImpl* si = t.storage().unsafeGetStorageImpl();
      touches = touches || g_trace.produced.contains(si) || g_trace.ext_storages.contains(si);
    } else if (t.defined() && t.device().type() == kNeuron) {
      touches = true;  // no storage to compare: assume it does
    }
  };
  for (size_t i = stack.size() - n; i < stack.size() && !touches; ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      check(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) {
        check(t);
      }
    } else if (v.isOptionalTensorList()) {
      for (const std::optional<at::Tensor> t : v.toOptionalTensorList()) {
        if (t.has_value()) {
          check(*t);
        }
      }
    } else if (v.isList() || v.isTuple() || v.isGenericDict() || v.isObject() || v.isCapsule()) {
      touches = true;  // tensors in containers the checks above do not open
    }
  }
  return touches;
}

} // namespace

std::atomic<bool> g_enabled{read_env()};
std::atomic<bool> g_pending{false};

namespace {
// A storage resize (UntypedStorage.resize_: FSDP2 frees a parameter's
// unsharded storage after use and gives it new memory before the next) may
// free or replace memory a queued op reads: what is queued runs first.
const bool g_run_by_allocator = (set_run_deferred_work(&flush_pending), true);
} // namespace

bool intercept(
    const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack, RunFn run) {
  if (t_bypass) {
    return false;
  }
  auto lock = lock_state();
  g_run = run;
  const Policy policy = allowed(op);
  if (!g_enabled.load(std::memory_order_relaxed) || at::globalContext().deterministicAlgorithms()) {
    cut(&op, "off");
    return false;
  }
  if (policy == kNo) {
    if (g_trace.mode != Mode::Empty && touches_trace(op, *stack)) {
      cut(&op, "not queueable");
    }
    return false;
  }
  static Prepared prepared;  // reused under the lock: its vectors keep their memory
  Prepared& p = prepared;
  p.clear();
  struct Release {  // drops the operands p holds when the op is done (not at the next op)
    Prepared& p;
    ~Release() {
      p.clear();
    }
  } release{p};
  if (!prepare(op, *stack, p, policy)) {
    if (g_trace.mode != Mode::Empty && touches_trace(op, *stack)) {
      cut(&op, "operands");
    }
    return false;
  }
  if (g_trace.mode != Mode::Empty &&
      (p.device != g_trace.device || g_trace.ops.size() >= kMaxTraceOps)) {
    flush_locked();
    p.clear();
    if (!prepare(op, *stack, p, policy)) {
      return false;
    }
  }
  Node* parent = g_trace.mode == Mode::Empty ? &g_root : g_trace.at;
  Node* child = find_child(parent, p);
  if (g_trace.mode == Mode::Hit && child == nullptr) {
    // A sequence not seen before: run what is queued, start again from here.
    flush_locked();
    p.clear();
    if (!prepare(op, *stack, p, policy)) {
      return false;
    }
    parent = &g_root;
    child = find_child(parent, p);
  }
  const size_t num_args = op.schema().arguments().size();
  if (g_trace.mode != Mode::Record && child != nullptr) {
    // Seen before: queue it, with results whose memory the flush provides.
    Args args;
    commit(p, args);
    g_trace.mode = Mode::Hit;
    g_trace.device = p.device;
    g_trace.at = child;
    const int index = static_cast<int>(g_trace.ops.size());
    g_trace.ops.push_back(Queued{op, child, std::move(args), {}});
    c10::SmallVector<at::Tensor, 2> outs;
    if (policy == kOutVariant) {
      // Written at the flush. Until then the memory holds the old values, so
      // a write-path access to it (data_ptr(), DLPack, storage data_ptr())
      // runs the queue first, as for a pending result; fill() removes it.
      outs = p.out_args;
      for (const at::Tensor& t : outs) {
        t.storage().unsafeGetStorageImpl()->set_materializer(&materialize_pending);
      }
    } else {
      for (const OutMeta& m : child->outs) {
        outs.push_back(make_pending(m, p.device));
      }
    }
    register_outputs(index, outs, g_trace.ops.back());
    torch::jit::drop(*stack, num_args);
    for (at::Tensor& t : outs) {
      stack->push_back(std::move(t));
    }
    g_pending.store(true, std::memory_order_release);
    g_stats.queued_ops++;
    return true;
  }
  if (child == nullptr) {
    auto it = parent->variants.find(&op.schema());
    if ((it != parent->variants.end() && it->second >= kMaxVariants) || g_nodes.size() >= kMaxNodes) {
      // Its metadata changes every time here (a growing KV cache): not merged.
      cut(&op, "too many variants");
      return false;
    }
  }
  // Not seen before here: run it now and record it.
  std::vector<OutMeta> out_args_before;
  for (const at::Tensor& t : p.out_args) {
    out_args_before.push_back(meta_of(t));
  }
  {
    Bypass bypass;
    run(op, keys, stack);
  }
  const size_t num_returns = op.schema().returns().size();
  std::vector<at::Tensor> outs;
  std::vector<OutMeta> metas;
  StorageSet seen;
  bool ok = stack->size() >= num_returns;
  for (size_t i = 0; ok && i < num_returns; ++i) {
    const c10::IValue& v = (*stack)[stack->size() - num_returns + i];
    ok = valid_result(v, p, seen);
    if (ok) {
      outs.push_back(v.toTensor());
      metas.push_back(meta_of(outs.back()));
    }
  }
  if (ok && policy == kOutVariant) {
    // An out= result must be the out= tensor, unresized (its metadata is in the key).
    for (size_t i = 0; ok && i < outs.size(); ++i) {
      ok = i < p.out_args.size() &&
          outs[i].unsafeGetTensorImpl() == p.out_args[i].unsafeGetTensorImpl() &&
          metas[i] == out_args_before[i];
    }
    if (!ok) {
      cut(&op, "out= tensor resized");
      return true;
    }
  }
  if (ok && child != nullptr && child->outs != metas) {
    ok = false;  // results not determined by the key: never queue this op
  }
  if (!ok) {
    forbid(op);
    cut(&op, "results alias operands or metadata not determined by the key");
    return true;
  }
  if (child == nullptr) {
    auto node = std::make_unique<Node>();
    node->sig = p.sig;
    node->hash = p.hash;
    node->outs = std::move(metas);
    child = node.get();
    parent->children.emplace(p.hash, child);
    parent->variants[&op.schema()]++;
    g_nodes.push_back(std::move(node));
  }
  Args args;
  commit(p, args);
  g_trace.mode = Mode::Record;
  g_trace.device = p.device;
  g_trace.at = child;
  const int index = static_cast<int>(g_trace.ops.size());
  g_trace.ops.push_back(Queued{op, child, {}, {}});
  register_outputs(index, outs, g_trace.ops.back());
  g_pending.store(true, std::memory_order_release);
  g_stats.recorded_ops++;
  return true;
}

void flush() {
  if (t_bypass) {
    return;
  }
  auto lock = lock_state();
  flush_locked();
}

void flush_if_queued(const at::Tensor& t) {
  if (!g_pending.load(std::memory_order_acquire) || t_bypass || !t.defined()) {
    return;
  }
  // unsafe_storage: a tensor whose storage access throws (a functional or
  // wrapper subclass) has none of ours. Every storage a queued op writes has
  // our materializer until the flush fills it: others (fake tensors' meta
  // storages during a compile included) return without taking the lock.
  const c10::StorageImpl* si = t.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl();
  if (si == nullptr || si->device_type() != kNeuron || !si->has_materializer()) {
    return;
  }
  auto lock = lock_state();
  if (g_trace.mode != Mode::Empty && g_trace.produced.contains(si)) {
    flush_locked();
  }
}

bool enter_graph() {
  flush();
  const bool previous = t_bypass;
  t_bypass = true;
  return previous;
}

void exit_graph(bool previous) {
  t_bypass = previous;
}

void set_enabled(bool enabled) {
  auto lock = lock_state();
  if (!enabled) {
    flush_locked();
  }
  g_enabled.store(enabled, std::memory_order_relaxed);
}

std::unordered_map<std::string, int64_t> stats() {
  auto lock = lock_state();
  int64_t kernels = 0;
  for (const auto& node : g_nodes) {
    for (const auto& entry : node->kernels) {
      kernels += entry.second.fn != nullptr ? 1 : 0;
    }
  }
  return {
      {"queued_ops", g_stats.queued_ops},
      {"recorded_ops", g_stats.recorded_ops},
      {"cut_ops", g_stats.cut_ops},
      {"flushes", g_stats.flushes},
      {"kernel_hits", g_stats.kernel_hits},
      {"kernel_misses", g_stats.kernel_misses},
      {"merged_ops", g_stats.merged_ops},
      {"replayed_ops", g_stats.replayed_ops},
      {"compiles", g_stats.compiles},
      {"compile_failures", g_stats.compile_failures},
      {"kernel_failures", g_stats.kernel_failures},
      {"compile_time_ns", g_stats.compile_time_ns},
      {"dead_flushes", g_stats.dead_flushes},
      {"waiting_flushes", g_stats.waiting_flushes},
      {"cached_kernels", kernels},
      {"trie_nodes", static_cast<int64_t>(g_nodes.size())},
  };
}

void reset_stats() {
  auto lock = lock_state();
  g_stats = Stats();
}

void clear_cache() {
  auto lock = lock_state();
  flush_locked();
  {
    py::gil_scoped_acquire gil;
    for (auto& node : g_nodes) {
      for (auto& entry : node->kernels) {
        Py_XDECREF(entry.second.fn);
        entry.second.fn = nullptr;
      }
    }
  }
  g_root.children.clear();
  g_root.last = nullptr;
  g_root.variants.clear();
  g_root.ends = 0;
  g_nodes.clear();
  g_allowed.clear();
}

void set_compiler(void* py_callable) {
  auto lock = lock_state();
  PyObject* fn = static_cast<PyObject*>(py_callable);
  Py_XINCREF(fn);
  Py_XDECREF(g_compiler);
  g_compiler = fn;
}

void set_compile_after(int n) {
  g_compile_after.store(std::max(n, 1), std::memory_order_relaxed);
}

int compile_after() {
  return g_compile_after.load(std::memory_order_relaxed);
}

std::string last_error() {
  auto lock = lock_state();
  return g_last_error;
}

} // namespace adaptive
} // namespace torch_neuronx
