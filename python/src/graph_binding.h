// weft.Graph's core: a GraphFile built from Python (placeholders,
// constants, any registered op by its ONNX name and attributes, Python
// functions as py_function nodes), loaded from JSON or ONNX, saved as JSON.
#ifndef WEFT_PYTHON_SRC_GRAPH_BINDING_H_
#define WEFT_PYTHON_SRC_GRAPH_BINDING_H_

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::python {

namespace py = pybind11;

class PyGraph {
 public:
  PyGraph() = default;
  explicit PyGraph(GraphFile file) : file_(std::move(file)) {}

  // Each returns the name of what it made: "node" for one output, a list
  // of "node", "node:1", ... for several. `name` None picks "<Op>", "<Op>_1",
  // ... Errors are ValueError naming the node.
  std::string Placeholder(const std::string& name, py::handle dtype,
                          py::handle shape);
  std::string Constant(py::handle value, py::handle name);
  py::object Op(const std::string& op_type, py::handle inputs, py::handle name,
                const py::kwargs& attrs);
  // TensorFlow's tf.py_function(func, inp, Tout): a blocking,
  // inter_op_bound CustomOp whose kernel takes the GIL and calls `func`
  // with the inputs as read-only NumPy arrays. Tout a dtype: one output,
  // returned as a name; a list: that many, returned as a list.
  py::object PyFunction(py::function func, py::handle inputs, py::handle tout,
                        py::handle name);

  // The tensors a session's run(None, ...) fetches: as set, else every
  // output nothing in the graph reads.
  std::vector<std::string> outputs() const;
  void set_outputs(std::vector<std::string> outputs) {
    file_.outputs = std::move(outputs);
  }
  std::vector<std::string> node_names() const;

  // The graph as a GraphFile whose outputs are outputs().
  GraphFile file() const;

 private:
  std::string UniqueName(py::handle name, const std::string& base);
  // Adds the node; ValueError naming it on error.
  void Add(NodeDef node);

  GraphFile file_;
};

// weft.load(path): a JSON graph or an ONNX model (its outputs as listed).
PyGraph LoadGraphFile(const std::string& path);

void BindGraph(py::module_& m);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_GRAPH_BINDING_H_
