#include "runtime/Log.h"

#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <mutex>

namespace py = pybind11;

namespace torch_neuronx {
namespace {

// The sink (a strong reference) and whether one is set: the flag lets a record
// be dropped without the GIL when there is none.
std::mutex g_mutex;
PyObject* g_sink = nullptr;
std::atomic<bool> g_has_sink{false};

} // namespace

void set_log_sink(void* py_callable) {
  PyObject* fn = static_cast<PyObject*>(py_callable);
  Py_XINCREF(fn);
  PyObject* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    old = g_sink;
    g_sink = fn;
    g_has_sink.store(fn != nullptr, std::memory_order_release);
  }
  Py_XDECREF(old);
}

void log_record(LogLevel level, const char* logger, const std::string& message) {
  if (!g_has_sink.load(std::memory_order_acquire) || !Py_IsInitialized()) {
    return;
  }
  py::gil_scoped_acquire gil;
  PyObject* fn = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    fn = g_sink;
    Py_XINCREF(fn);
  }
  if (fn == nullptr) {
    return;
  }
  try {
    py::reinterpret_steal<py::object>(fn)(static_cast<int>(level), logger, message);
  } catch (const std::exception&) {
    // A log record must never turn into an error of the op that produced it.
  }
}

} // namespace torch_neuronx
