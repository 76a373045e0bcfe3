#include "warnings_bridge.h"

#include <pybind11/pybind11.h>

#include <deque>
#include <mutex>
#include <utility>

#include "weft/warnings.h"

namespace weft::python {
namespace {

namespace py = pybind11;

struct Pending {
  std::mutex mu;
  std::deque<Warning> queue;
};

Pending& Queue() {
  static Pending* pending = new Pending;  // Warnings may come at exit.
  return *pending;
}

}  // namespace

void InstallWarningBridge() {
  SetWarningHandler([](const Warning& warning) {
    Pending& pending = Queue();
    std::lock_guard<std::mutex> lock(pending.mu);
    pending.queue.push_back(warning);
  });
}

void FlushWarnings() {
  if (!PyGILState_Check()) return;
  std::deque<Warning> taken;
  {
    Pending& pending = Queue();
    std::lock_guard<std::mutex> lock(pending.mu);
    taken.swap(pending.queue);
  }
  if (taken.empty()) return;
  py::object warn = py::module_::import("warnings").attr("warn");
  py::object categories = py::module_::import("weft._warnings");
  while (!taken.empty()) {
    const Warning warning = std::move(taken.front());
    taken.pop_front();
    py::object category = categories.attr("category_named")(
        WarningCategoryName(warning.category));
    // stacklevel 2: the user's line that called into weft's Python layer.
    warn(warning.message, category, 2);
  }
}

}  // namespace weft::python
