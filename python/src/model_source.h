// Models as Python gives them (a path to a .json graph or an .onnx model,
// or an ONNX model's bytes), and their declared inputs and outputs as
// ONNX Runtime describes them.
#ifndef WEFT_PYTHON_SRC_MODEL_SOURCE_H_
#define WEFT_PYTHON_SRC_MODEL_SOURCE_H_

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "weft/weft.h"

namespace weft::python {

namespace py = pybind11;

// One declared input or output: name, shape (ints, symbolic names as
// strings, None for unknown), ONNX Runtime's type name, and the tensor of
// the graph it stands for.
struct ValueInfo {
  std::string name;
  py::list shape;
  std::string type;
  std::string tensor;
  std::optional<DataType> dtype;
};

// Loads `source` with the GIL released; a weft JSON graph comes back as an
// OnnxModel with no declared inputs or outputs. Errors raise (Check).
OnnxModel LoadModelSource(py::object source);

ValueInfo Describe(const OnnxValueInfo& value);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_MODEL_SOURCE_H_
