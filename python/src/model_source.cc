#include "model_source.h"

#include "convert.h"

namespace weft::python {

OnnxModel LoadModelSource(py::object source) {
  StatusOr<OnnxModel> model = InvalidArgumentError("not loaded");
  if (py::isinstance<py::bytes>(source)) {
    const std::string bytes = source.cast<std::string>();
    py::gil_scoped_release release;
    model = ParseOnnxModel(bytes, ".");
  } else {
    const std::string path = py::str(source).cast<std::string>();
    py::gil_scoped_release release;
    model = LoadModel(path);  // The format from the content (weft/model.h).
  }
  Check(model.status());
  return *std::move(model);
}

ValueInfo Describe(const OnnxValueInfo& value) {
  ValueInfo info{value.name, py::list(), value.type_name, value.tensor,
                 value.dtype};
  for (const OnnxDim& d : value.dims) {
    if (d.fixed()) {
      info.shape.append(d.size);
    } else if (!d.symbol.empty()) {
      info.shape.append(d.symbol);
    } else {
      info.shape.append(py::none());
    }
  }
  return info;
}

}  // namespace weft::python
