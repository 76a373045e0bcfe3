// weft's warnings (weft/warnings.h) as Python warnings: the module's
// handler queues each one, and FlushWarnings hands the queue to Python's
// `warnings.warn` with a category from weft._warnings (ThreadingWarning,
// ConfigurationWarning, PerformanceWarning, all WeftWarning), so that
// filters, `-W error` and Jupyter see them. Queued rather than raised where
// they happen: a warning may come from a worker thread, or while the GIL is
// released.
#ifndef WEFT_PYTHON_SRC_WARNINGS_BRIDGE_H_
#define WEFT_PYTHON_SRC_WARNINGS_BRIDGE_H_

namespace weft::python {

// Installs the queueing handler (once, at import).
void InstallWarningBridge();

// Raises the queued warnings through `warnings.warn`, oldest first. Needs
// the GIL (does nothing without it); an exception from a filter set to
// "error" propagates as py::error_already_set.
void FlushWarnings();

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_WARNINGS_BRIDGE_H_
