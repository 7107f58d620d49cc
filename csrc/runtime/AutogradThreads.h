// PyTorch's autograd engine runs every neuron backward on a per-device worker
// thread ("pt_autograd_<i>"). Since PyTorch 2.12 each backward stashes the
// caller's contextvars.Context in the GraphTask's thread-local state, and the
// device thread often drops the last reference to that GraphTask after
// backward() has returned. If the interpreter is already finalizing then, the
// decref takes the GIL, CPython ends the thread with pthread_exit, the forced
// unwind crosses a noexcept destructor and std::terminate aborts the process
// (SIGABRT at exit, "terminate called without an active exception"; upstream
// pytorch/pytorch#117762). CUDA has the same race; every neuron backward hits it.
#pragma once

#include <c10/core/Device.h>

namespace torch_neuronx {

// Makes the autograd worker thread of each of the first `count` neuron
// devices run one more (tiny, C++-only) backward, and waits for it. A device
// thread pops its tasks in order, so once it ran this one it has released
// every earlier GraphTask, including the last user one with its Python
// context; releasing this task's GraphTask later needs no GIL (it holds no
// Python object: it runs on a fresh thread with empty thread-local state).
// Call it with the GIL released, while the interpreter is fully alive (atexit).
void flush_autograd_device_threads(c10::DeviceIndex count);

} // namespace torch_neuronx
