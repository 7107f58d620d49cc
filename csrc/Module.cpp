// Python bindings of the C++ core: torch_neuronx._C. Everything PyTorch
// itself calls is registered statically by the other files; this module only
// exposes what torch_neuronx's Python layer reads (topology hand-over, memory
// counters, default generators, op counts, the log sink).
#include "aten/AdaptiveEager.h"
#include "aten/Alias.h"
#include "aten/CompiledGraph.h"
#include "aten/Tracking.h"
#include "distributed/AllreduceFastPath.h"
#include "distributed/AllreduceMethod.h"
#include "distributed/AllreduceWork.h"
#include "distributed/NeuronBackend.h"
#include "runtime/AutogradThreads.h"
#include "runtime/DeviceAllocator.h"
#include "runtime/Generator.h"
#include "runtime/HostAllocator.h"
#include "runtime/Log.h"
#include "runtime/MemoryHistory.h"
#include "runtime/Runtime.h"

#include <ATen/ATen.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

// From libtorch_python (torch/csrc/profiler/python/combined_traceback.h, whose header needs
// nlohmann/json, which torch's wheel does not ship): what CUDA's memory history uses to record
// Python stacks and turn them into frame dicts ({"filename", "line", "name"}).
namespace torch {
std::vector<py::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
void installCapturedTracebackPython();
} // namespace torch

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_neuronx C++ core (runtime: allocators, guard, hooks, generator; aten: boxed fallback, op policy, kernels)";
  m.def(
      "_set_topology",
      &torch_neuronx::set_topology,
      py::arg("device_count"),
      py::arg("hbm_bytes_per_core"),
      py::arg("description"),
      py::arg("error"),
      py::arg("default_device"));
  m.def("_device_count", []() { return static_cast<int>(torch_neuronx::device_count()); });
  m.def("_current_device", []() { return static_cast<int>(torch_neuronx::current_device()); });
  m.def("_set_device", [](int index) {
    torch_neuronx::set_current_device(static_cast<c10::DeviceIndex>(index));
  });
  m.def("_check_device", [](int index) {
    return static_cast<int>(torch_neuronx::check_device(static_cast<c10::DeviceIndex>(index)));
  });
  m.def("_memory_counters", [](int index) {
    torch_neuronx::adaptive::flush_pending();
    const auto c = torch_neuronx::memory_counters(static_cast<c10::DeviceIndex>(index));
    py::dict d;
    d["allocated"] = c.allocated;
    d["peak_allocated"] = c.peak_allocated;
    d["reserved"] = c.reserved;
    d["peak_reserved"] = c.peak_reserved;
    d["num_allocs"] = c.num_allocs;
    d["num_frees"] = c.num_frees;
    d["num_ooms"] = c.num_ooms;
    d["capacity"] = c.capacity;
    return d;
  });
  m.def(
      "_record_memory_history",
      [](bool enabled, bool stacks, size_t max_entries, bool clear) {
        if (enabled && stacks) {
          torch::installCapturedTracebackPython(); // once per interpreter, as CUDA's does
        }
        torch_neuronx::set_memory_history(enabled, stacks, max_entries, clear);
      },
      py::arg("enabled"),
      py::arg("stacks"),
      py::arg("max_entries"),
      py::arg("clear"));
  m.def("_memory_history_enabled", []() { return torch_neuronx::memory_history_enabled(); });
  // The raw material of a memory snapshot (torch_neuronx/device/snapshot.py builds PyTorch's
  // format from it): (live blocks, trace events). A block is (device, address, requested
  // bytes, reserved bytes, frames); an event is (device, action, address, size, requested,
  // time_us, frames). Frames are PyTorch's symbolized Python frames (filename, line, name).
  m.def("_memory_snapshot_raw", []() {
    torch_neuronx::adaptive::flush_pending();
    const std::vector<torch_neuronx::LiveBlock> blocks = torch_neuronx::live_blocks();
    const std::vector<torch_neuronx::MemoryTraceEntry> trace = torch_neuronx::memory_trace();
    std::vector<std::shared_ptr<c10::GatheredContext>> keep;
    std::vector<torch::CapturedTraceback*> to_symbolize;
    auto add = [&](const std::shared_ptr<c10::GatheredContext>& ctx) -> int64_t {
      if (!ctx) {
        return -1;
      }
      keep.push_back(ctx);
      to_symbolize.push_back(static_cast<torch::CapturedTraceback*>(ctx.get()));
      return static_cast<int64_t>(to_symbolize.size()) - 1;
    };
    std::vector<int64_t> block_frames;
    for (const auto& b : blocks) {
      block_frames.push_back(add(torch_neuronx::allocation_context(b.address)));
    }
    std::vector<int64_t> event_frames;
    for (const auto& e : trace) {
      event_frames.push_back(add(e.context));
    }
    std::vector<py::object> symbolized = torch::py_symbolize(to_symbolize);
    auto frames = [&](int64_t i) -> py::object {
      return i < 0 ? py::object(py::list()) : symbolized[static_cast<size_t>(i)];
    };
    static const char* kActions[] = {
        "segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"};
    py::list py_blocks;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto& b = blocks[i];
      py_blocks.append(py::make_tuple(
          static_cast<int>(b.device), b.address, b.nbytes, b.reserved, frames(block_frames[i])));
    }
    py::list py_events;
    for (size_t i = 0; i < trace.size(); ++i) {
      const auto& e = trace[i];
      py_events.append(py::make_tuple(
          static_cast<int>(e.device), kActions[static_cast<int>(e.action)], e.address, e.size,
          e.requested, e.time_us, frames(event_frames[i])));
    }
    return py::make_tuple(py_blocks, py_events);
  });
  m.def("_host_memory_stats", []() {
    const at::HostStats s = torch_neuronx::pinned_host_stats();
    // One dict per statistic: its named int64 fields.
    auto fields = [](std::initializer_list<std::pair<const char*, int64_t>> items) {
      py::dict d;
      for (const auto& [name, value] : items) {
        d[name] = value;
      }
      return d;
    };
    auto stat = [&](const c10::CachingAllocator::Stat& v) {
      return fields({{"current", v.current}, {"peak", v.peak}, {"allocated", v.allocated}, {"freed", v.freed}});
    };
    auto duration = [&](const c10::CachingAllocator::DurationStat& v) {
      return fields({{"total", v.total}, {"max", v.max}, {"min", v.min}, {"count", v.count},
                     {"avg", v.count ? v.total / v.count : 0}});
    };
    py::dict d;
    d["allocations"] = stat(s.allocations);
    d["allocated_bytes"] = stat(s.allocated_bytes);
    d["active_requests"] = stat(s.active_requests);
    d["active_bytes"] = stat(s.active_bytes);
    d["num_host_alloc"] = s.num_host_alloc;
    d["num_host_free"] = s.num_host_free;
    d["host_alloc_time"] = duration(s.host_alloc_time);
    d["host_free_time"] = duration(s.host_free_time);
    return d;
  });
  m.def("_reset_host_memory_stats", [](bool peak_only) { torch_neuronx::reset_pinned_host_stats(peak_only); });
  m.def("_set_memory_fraction", [](int index, double fraction) {
    torch_neuronx::set_memory_fraction(static_cast<c10::DeviceIndex>(index), fraction);
  });
  m.def("_memory_allocated", [](int index) {
    torch_neuronx::adaptive::flush_pending();
    return torch_neuronx::memory_counters(static_cast<c10::DeviceIndex>(index)).allocated;
  });
  m.def("_default_generator", [](int index) {
    const at::Generator& gen = torch_neuronx::default_generator(static_cast<c10::DeviceIndex>(index));
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(gen));
  });
  m.def(
      "_cpu_alias",
      [](const at::Tensor& t) {
        TORCH_CHECK(
            t.device().type() == torch_neuronx::kNeuron,
            "_cpu_alias expects a neuron tensor, got one on ", t.device());
        torch_neuronx::adaptive::flush_pending();
        return torch_neuronx::cpu_alias(t);
      },
      "A CPU tensor on the same bytes as a neuron tensor (zero-copy; keeps it alive).");
  m.def(
      "_allreduce_alias",
      [](const c10::intrusive_ptr<c10d::Backend>& gloo,
         const std::vector<at::Tensor>& tensors,
         const c10d::AllreduceOptions& opts,
         const py::object& explain) -> py::object {
        c10::intrusive_ptr<c10d::Work> work = torch_neuronx::allreduce_alias(gloo, tensors, opts, explain);
        if (!work) {
          return py::none();
        }
        return py::cast(work);
      },
      py::arg("gloo"),
      py::arg("tensors"),
      py::arg("opts"),
      py::arg("explain"),
      "gloo.allreduce on the CPU alias of tensors[0] when the call is one contiguous neuron (or CPU) tensor "
      "of a dtype gloo reduces with ReduceOp.SUM; returns a Work over gloo's (result and future: `tensors`; "
      "a failure raises DistBackendError with the message of explain('all_reduce', transport_error)), "
      "or None (nothing done) otherwise.");
  m.def(
      "_allreduce_transfer",
      [](const c10::intrusive_ptr<c10d::Work>& work) -> c10::intrusive_ptr<c10d::Work> {
        auto* fast = dynamic_cast<torch_neuronx::AllreduceWork*>(work.get());
        TORCH_CHECK(fast != nullptr, "_allreduce_transfer expects a work returned by _allreduce_alias");
        return fast->transfer();
      },
      "The gloo work inside a work of _allreduce_alias (its result() is the CPU alias gloo reduced).");
  m.def(
      "_install_neuron_backend",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& group,
         const c10::intrusive_ptr<c10d::Backend>& gloo,
         int rank,
         int size,
         const py::object& general,
         const py::object& explain,
         const py::object& estimate) {
        auto backend = c10::make_intrusive<torch_neuronx::NeuronBackend>(rank, size, gloo, general, explain, estimate);
        // One backend for both devices (torch's c10d::allreduce_ kernels of PrivateUse1 and CPU ask for it).
        group->setBackend(c10::DeviceType::PrivateUse1, c10d::ProcessGroup::BackendType::CUSTOM, backend);
        group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::CUSTOM, backend);
      },
      py::arg("group"),
      py::arg("gloo"),
      py::arg("rank"),
      py::arg("size"),
      py::arg("general"),
      py::arg("explain"),
      py::arg("estimate"),
      "Registers on `group` (a NeuronProcessGroup) its C++ backend for devices neuron and cpu "
      "(csrc/distributed/NeuronBackend.h): all_reduce through the fast path on `gloo`, else "
      "general(tensors, opts); failures diagnosed by explain(op, error); `estimate`: the module "
      "torch_neuronx.estimate.active.");
  m.def(
      "_install_allreduce_method",
      &torch_neuronx::install_allreduce_method,
      py::arg("cls"),
      py::arg("binding"),
      "Sets cls.allreduce to the C++ method of csrc/distributed/AllreduceMethod.h (binding: torch's "
      "ProcessGroup.allreduce, for the forms it does not take itself).");
  m.def(
      "_neuron_backend_coalescing",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& group, bool on) {
        auto* backend =
            dynamic_cast<torch_neuronx::NeuronBackend*>(group->getBackend(c10::DeviceType::PrivateUse1).get());
        TORCH_CHECK(backend != nullptr, "_neuron_backend_coalescing expects a group with a NeuronBackend");
        backend->set_coalescing(on);
      },
      py::arg("group"),
      py::arg("on"),
      "While on, every all_reduce of `group`'s NeuronBackend takes the Python general path.");
  m.def(
      "_boxed_reduce_op",
      [](const c10d::ReduceOp& op) -> py::object {
        return torch::jit::toPyObject(c10::IValue(c10::make_intrusive<c10d::ReduceOp>(op)));
      },
      py::arg("op"),
      "The TorchScript object (__torch__.torch.classes.c10d.ReduceOp) of a ReduceOp, as the c10d::* ops take "
      "it: what ProcessGroup's C++ methods pass when they dispatch a collective (Python cannot build one).");
  m.def("_gloo_reduces", [](const at::ScalarType& dtype) { return torch_neuronx::gloo_reduces(dtype); });
  m.def("_share_storage_fd", [](const at::Tensor& t) {
    // (fd, nbytes) of the memory file holding t's storage (moved into one if needed).
    torch_neuronx::adaptive::flush_pending();
    return py::make_tuple(torch_neuronx::share_storage_fd(t.storage()), t.storage().nbytes());
  });
  m.def("_import_shared_storage", [](int fd, size_t nbytes, int index) {
    // A uint8 neuron tensor over the memory file `fd` received from another process.
    c10::Storage storage = torch_neuronx::import_shared_storage(fd, nbytes, static_cast<c10::DeviceIndex>(index));
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(torch_neuronx::kNeuron, storage.device().index()));
    t.set_(storage, 0, {static_cast<int64_t>(nbytes)}, {1});
    return t;
  });
  m.def("_op_counts", []() {
    torch_neuronx::adaptive::flush_pending();
    return torch_neuronx::op_counts();
  });
  m.def("_clear_op_counts", []() { torch_neuronx::clear_op_counts(); });
  m.def(
      "_flush_autograd_device_threads",
      [](int count) {
        torch_neuronx::flush_autograd_device_threads(static_cast<c10::DeviceIndex>(count));
      },
      py::arg("count"),
      py::call_guard<py::gil_scoped_release>(),
      "Runs one C++-only backward on the autograd worker thread of each of the first `count` neuron "
      "devices and waits for it, so none of them still holds a Python object (called at exit).");
  torch_neuronx::bind_compiled_graph(m);
  // Adaptive eager execution (csrc/aten/AdaptiveEager.h; Python side: torch_neuronx.adaptive).
  m.def("_adaptive_flush", []() { torch_neuronx::adaptive::flush(); });
  m.def("_adaptive_flush_if_queued", [](const at::Tensor& t) { torch_neuronx::adaptive::flush_if_queued(t); });
  m.def("_adaptive_enabled", []() { return torch_neuronx::adaptive::on(); });
  m.def("_adaptive_set_enabled", [](bool enabled) { torch_neuronx::adaptive::set_enabled(enabled); });
  m.def("_adaptive_enter_graph", []() { return torch_neuronx::adaptive::enter_graph(); });
  m.def("_adaptive_exit_graph", [](bool previous) { torch_neuronx::adaptive::exit_graph(previous); });
  m.def("_adaptive_stats", []() { return torch_neuronx::adaptive::stats(); });
  m.def("_adaptive_reset_stats", []() { torch_neuronx::adaptive::reset_stats(); });
  m.def("_adaptive_clear_cache", []() { torch_neuronx::adaptive::clear_cache(); });
  m.def("_adaptive_set_compiler", [](py::object fn) {
    torch_neuronx::adaptive::set_compiler(fn.is_none() ? nullptr : fn.ptr());
  });
  m.def("_adaptive_set_compile_after", [](int n) { torch_neuronx::adaptive::set_compile_after(n); });
  m.def("_adaptive_compile_after", []() { return torch_neuronx::adaptive::compile_after(); });
  m.def("_adaptive_last_error", []() { return torch_neuronx::adaptive::last_error(); });
  m.def("_set_log_sink", [](py::object fn) {
    torch_neuronx::set_log_sink(fn.is_none() ? nullptr : fn.ptr());
  });
}
