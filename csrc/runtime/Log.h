// Log records of the C++ core, sent to Python's `torch_neuronx` loggers.
//
// The C++ core knows of events the Python layer never sees (an op's first run
// as a host fallback, a core running out of memory). It hands each one to a
// Python callable, the sink, that torch_neuronx's autoload sets
// (torch_neuronx/_logging.py: install_cxx_sink) and its exit handler removes.
// Without a sink (before the autoload, after exit) a record is dropped.
#pragma once

#include <string>

namespace torch_neuronx {

// Python's logging levels.
enum class LogLevel : int { Debug = 10, Info = 20, Warning = 30, Error = 40 };

// Sends one record to the Python logger named `logger` ("torch_neuronx.ops.tracking").
// Takes the GIL (from any thread); an exception raised by the sink is discarded.
// Rare events only (it costs a Python call), and never with a lock held that a
// thread holding the GIL may be waiting for.
void log_record(LogLevel level, const char* logger, const std::string& message);

// Sets the sink, a Python callable (level: int, logger: str, message: str) -> None,
// or removes it (nullptr). Called with the GIL held.
void set_log_sink(void* py_callable);

} // namespace torch_neuronx
