// Adaptive Eager Execution (TORCH_NEURONX_ADAPTIVE_EAGER=1, off by default):
// eager ops on `neuron` are queued instead of run, and each run of queued ops
// is executed at the next cut as one compiled Inductor kernel, cached by the
// op sequence, its input metadata, its scalar arguments and which results are
// still alive. Output metadata comes from a trie of traces seen before (a
// sequence seen for the first time runs op by op while it is recorded). A
// kernel that cannot be compiled, or a trace not seen before, runs op by op.
//
// Cuts (everything queued is executed first): an op outside the allow-list
// (in-place ops, RNG, data-dependent shapes, CPU operands...) that touches a
// queued result or an input of a queued op (other ops run at once), a read
// of device memory outside the boxed fallback (copies, .item(), kernels of
// the device's own, _cpu_alias), torch.neuron.synchronize(), a device change,
// and deterministic mode (torch.use_deterministic_algorithms(True) turns
// recording off).
//
// Inputs: a queued op holds a snapshot of each input (its own TensorImpl on
// the same storage, sizes, strides, offset and dtype), never the caller's
// tensor, so re-pointing a tensor after the op was queued (`.data =`, `set_`,
// swap_tensors) does not change what the op reads.
//
// Observing memory a queued op writes (a pending result, which has no memory
// yet, or the out= tensor of a queued out= op, which holds its old values):
//  * ops: every neuron kernel cuts (the boxed fallback) or flushes (the
//    device's own kernels, copies) before it reads;
//  * write-path pointer access (data_ptr(), mutable_data(), DLPack, the
//    storage's data_ptr()): the storage carries a materializer that runs the
//    queue (StorageImpl::set_materializer);
//  * Python storage access (untyped_storage(), and through it storage(),
//    deepcopy, pickling, torch.save, safetensors): flush_if_queued, called
//    by torch_neuronx.adaptive's untyped_storage before the storage object
//    is made (PyTorch's storage methods refuse a storage without memory);
//  * read-only pointer access from C++ outside the dispatcher
//    (const_data_ptr(), StorageImpl::data()): NOT covered. PyTorch 2.13 has
//    no hook there: StorageImpl's materializer runs on mutable access only,
//    DataPtr::get() is inline, and the read-only check
//    (throw_on_immutable_data_ptr) can only throw, and throws before the
//    materializer runs, so it would break mutable access too. Such code sees
//    null for a pending result and the old values for an out= tensor until
//    torch.neuron.synchronize(). In this project the code that reads that
//    way (kernels, the _C functions handing out aliases or memory files)
//    runs the queue first.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace torch_neuronx {
namespace adaptive {

using RunFn = void (*)(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);

extern std::atomic<bool> g_enabled;
extern std::atomic<bool> g_pending;

// True when adaptive eager execution is on (checked first by the fallback).
inline bool on() {
  return g_enabled.load(std::memory_order_relaxed);
}

// Called first by the boxed fallback when on(): true when the op was queued
// (or recorded while run through `run`) and its results are on the stack;
// false when the fallback must run it now (everything queued was executed
// first).
bool intercept(
    const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack, RunFn run);

// Executes everything queued (cheap when nothing is). Called before anything
// reads or writes device memory outside the boxed fallback.
void flush();
inline void flush_pending() {
  if (C10_UNLIKELY(g_pending.load(std::memory_order_acquire))) {
    flush();
  }
}

// Executes everything queued when `t`'s storage is written by a queued op (a
// pending result or an out= tensor); nothing otherwise (cheap when nothing is
// queued). For paths that hand a tensor's storage to code reading it
// directly (Python storage objects).
void flush_if_queued(const at::Tensor& t);

// Turns recording on or off (off flushes first).
void set_enabled(bool enabled);

// A compiled graph's wrapper reads and writes device memory directly (raw
// pointers in its C++ kernels): enter_graph() runs what is queued and stops
// this thread from queueing until exit_graph(previous), so every op the
// wrapper dispatches (fallback ATen ops, out= calls) runs at once.
bool enter_graph();
void exit_graph(bool previous);

// Counters (name -> value); compile time in nanoseconds.
std::unordered_map<std::string, int64_t> stats();
void reset_stats();
// Forgets every recorded trace and compiled kernel.
void clear_cache();

// The Python side: compiles a trace description to a callable (installed by
// torch_neuronx.adaptive), and the text of the last compile error.
void set_compiler(void* py_callable);
std::string last_error();
// How many times a trace must end before its kernel is compiled (the ends
// before run op by op); at least 1. Initialised from
// TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER (default 8).
void set_compile_after(int n);
int compile_after();

} // namespace adaptive
} // namespace torch_neuronx
