#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "graph_binding.h"
#include "model_source.h"
#include "weft/tune.h"

namespace weft::python {
namespace {

// weft.tune(): TuneGraph on a graph, a path or ONNX bytes, with feeds by
// input name; the result as `weft tune --json` prints it.
std::string Tune(py::object source, py::dict feeds, std::optional<int> cores,
                 int64_t timeout_ms) {
  GraphFile file;
  std::vector<ValueInfo> inputs;
  if (py::isinstance<PyGraph>(source)) {
    file = source.cast<const PyGraph&>().file();
  } else {
    OnnxModel model = LoadModelSource(source);
    file = std::move(model.file);
    for (const OnnxValueInfo& v : model.inputs) {
      inputs.push_back(Describe(v));
    }
  }
  NamedTensors named;
  for (auto [key, value] : feeds) {
    const std::string name = py::str(key);
    std::string tensor = name;
    std::optional<DataType> dtype;
    for (const ValueInfo& v : inputs) {
      if (v.name == name) {
        tensor = v.tensor;
        dtype = v.dtype;
      }
    }
    named.emplace_back(tensor, FromNumpy("input '" + name + "'", value, dtype));
  }
  tune::TuneOptions options;
  options.cores = cores;
  options.timeout_ms = timeout_ms;
  StatusOr<tune::TuneResult> result = InvalidArgumentError("not run");
  {
    py::gil_scoped_release release;
    result = tune::TuneGraph(file, named, options);
  }
  Check(result.status());
  return tune::TuneResultJson("", *result, -1);
}

}  // namespace

void BindTune(py::module_& m) {
  m.def("_tune", &Tune, py::arg("source"), py::arg("feeds"),
        py::arg("cores") = std::nullopt, py::arg("timeout_ms") = 60000);
}

}  // namespace weft::python
