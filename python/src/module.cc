// weft._weft: the CPython extension under the pure-Python package in
// python/weft/. It holds graphs and sessions and converts tensors; the
// Python layer gives them ONNX Runtime's, TensorFlow's and PyTorch's names.
//
// The GIL is released for the whole of every load, compile and Run. Feeds
// that are C-contiguous arrays of the input's dtype are used in place;
// outputs are NumPy arrays that own weft's buffer (no copy either way).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "convert.h"
#include "graph_binding.h"
#include "interrupt.h"
#include "warnings_bridge.h"
#include "weft/weft.h"

PYBIND11_MODULE(_weft, m) {
  namespace py = pybind11;
  using namespace weft;
  using namespace weft::python;
  m.doc() = "weft's C++ core; use the weft package, not this module.";
  m.attr("__version__") = WEFT_VERSION_STRING;
  RememberMainThread();
  InstallWarningBridge();
  InstallMessageTranslator();
  BindSession(m);
  BindGraph(m);
  BindTune(m);
  BindData(m);
  BindPredict(m);

  // What "auto" means in this process (weft/threading.h): weft.dask splits
  // it among a host's workers.
  m.def("_cpu_budget", [] {
    const CpuBudget& budget = AutoCpuBudget();
    py::dict out;
    out["threads"] = budget.threads;
    out["physical_cores"] = budget.physical_cores;
    out["cgroup_quota_cpus"] = budget.cgroup_quota_cpus;
    out["derivation"] = budget.derivation;
    return out;
  });
  // An uninitialised array in a weft tensor buffer: from 128 KiB up, one a
  // freed tensor left in weft's buffer cache, its pages already mapped
  // (weft.dask fills a task's result in one; a NumPy array of that size
  // would be a fresh mmap in a Dask worker, every page faulting).
  m.def("_empty", [](const std::vector<int64_t>& shape, py::handle dtype) {
    const DataType type = DtypeFromPython(dtype, "_empty");
    if (type == DataType::kString) {
      throw py::value_error("_empty: strings are Python objects, not bytes");
    }
    StatusOr<Tensor> tensor = Tensor::CreateUninitialized(type, Shape(shape));
    Check(tensor.status());
    return ToNumpy(*tensor);
  });
  m.def("set_inter_op_parallelism_threads",
        [](int n) { Check(threading::SetInterOpParallelismThreads(n)); });
  m.def("set_intra_op_parallelism_threads",
        [](int n) { Check(threading::SetIntraOpParallelismThreads(n)); });
  m.def("get_inter_op_parallelism_threads",
        [] { return threading::GetInterOpParallelismThreads(); });
  m.def("get_intra_op_parallelism_threads",
        [] { return threading::GetIntraOpParallelismThreads(); });
}
