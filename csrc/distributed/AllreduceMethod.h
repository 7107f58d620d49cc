// `NeuronProcessGroup.allreduce` as a C++ method, for the Python callers (`dist.all_reduce`,
// `pg.allreduce(...)`).
//
// Without it, a Python caller reaches the group's C++ backend (distributed/NeuronBackend.h) through
// torch's binding of ProcessGroup.allreduce: the binding releases the GIL, torch's trampoline for
// Python groups (PyProcessGroup) takes it back to look for a Python override, and the C++ base
// method dispatches c10d::allreduce_, whose kernel finds the backend. With cold caches that chain
// cost more CPU per call than the Python method it replaced (bench/RESULTS.md, coll4). This method
// takes the common form, allreduce(list of tensors, AllreduceOptions), outside any dispatch mode,
// straight to the backend; every other form, and any call while a TorchDispatchMode is active (the
// mode must see c10d::allreduce_) or while in-flight collectives are registered as graph inputs,
// goes to torch's binding, as before. A C++ method is not a Python override for the trampoline, so
// C++ callers (DDP's reducer) keep taking the dispatcher route to the same backend.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_neuronx {

// Sets `cls.allreduce` (cls: the Python class NeuronProcessGroup) to the method above; `binding`
// is torch's ProcessGroup.allreduce, called for the other forms. Call once, with the GIL held.
void install_allreduce_method(const pybind11::object& cls, const pybind11::object& binding);

} // namespace torch_neuronx
