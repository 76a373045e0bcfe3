#include "graph_binding.h"

#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "convert.h"
#include "model_source.h"
#include "weft/suggest.h"

namespace weft::python {
namespace {

// A PartialShape from None (unknown rank) or a sequence whose entries are
// ints, or None or a string (a symbolic name) for an unknown dimension.
PartialShape ShapeFromPython(py::handle shape, const std::string& what) {
  if (shape.is_none()) return PartialShape::UnknownRank();
  if (!py::isinstance<py::sequence>(shape) || py::isinstance<py::str>(shape)) {
    throw py::value_error(what +
                          ": a shape is None or a list of dimensions, not " +
                          py::repr(shape).cast<std::string>());
  }
  std::vector<int64_t> dims;
  for (py::handle d : shape) {
    if (d.is_none() || py::isinstance<py::str>(d)) {
      dims.push_back(-1);
    } else if (py::isinstance<py::int_>(d) && d.cast<int64_t>() >= 0) {
      dims.push_back(d.cast<int64_t>());
    } else {
      throw py::value_error(what + ": dimension " +
                            py::repr(d).cast<std::string>() +
                            " is not a size >= 0, None or a name");
    }
  }
  return PartialShape(std::move(dims));
}

// An owned copy of an array (constants must not change when the caller's
// array does).
Tensor CopyFromNumpy(const std::string& what, py::handle value,
                     std::optional<DataType> dtype) {
  const Tensor view = FromNumpy(what, value, dtype, /*cast=*/dtype.has_value());
  StatusOr<Tensor> copy =
      Tensor::CreateUninitialized(view.dtype(), view.shape());
  if (!copy.ok()) throw py::value_error(what + ": " + copy.status().message());
  if (view.size_bytes() > 0) {
    std::memcpy(copy->raw_data(), view.raw_data(), view.size_bytes());
  }
  return *std::move(copy);
}

template <class T>
std::vector<T> ListOf(py::handle value, const std::string& what,
                      T (*convert)(py::handle, const std::string&)) {
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value)) {
    throw py::value_error(what + ": expected a list, got " +
                          py::repr(value).cast<std::string>());
  }
  std::vector<T> out;
  for (py::handle item : value) out.push_back(convert(item, what));
  return out;
}

template <class T>
T Scalar(py::handle value, const std::string& what) {
  try {
    if constexpr (std::is_same_v<T, int64_t>) {
      if (!py::isinstance<py::int_>(value) &&
          !py::hasattr(value, "__index__")) {
        throw py::cast_error();
      }
      return py::int_(py::reinterpret_borrow<py::object>(value))
          .cast<int64_t>();
    } else {
      return value.cast<T>();
    }
  } catch (py::cast_error&) {
    throw py::value_error(what + ": " + py::repr(value).cast<std::string>() +
                          " is not " +
                          (std::is_same_v<T, int64_t>  ? "an int"
                           : std::is_same_v<T, double> ? "a number"
                           : std::is_same_v<T, bool>   ? "a bool"
                                                       : "a string"));
  }
}

DataType TypeOf(py::handle value, const std::string& what) {
  return DtypeFromPython(value, what);
}
PartialShape ShapeOf(py::handle value, const std::string& what) {
  return ShapeFromPython(value, what);
}
Tensor TensorOf(py::handle value, const std::string& what) {
  return CopyFromNumpy(what, value, std::nullopt);
}

// A Python value as the attribute type the op declares.
AttrValue AttrFromPython(AttrType type, py::handle value,
                         const std::string& what) {
  switch (type) {
    case AttrType::kInt:
      return Scalar<int64_t>(value, what);
    case AttrType::kFloat:
      return Scalar<double>(value, what);
    case AttrType::kBool:
      return Scalar<bool>(value, what);
    case AttrType::kString:
      return Scalar<std::string>(value, what);
    case AttrType::kType:
      return DtypeFromPython(value, what);
    case AttrType::kShape:
      return ShapeFromPython(value, what);
    case AttrType::kTensor:
      return CopyFromNumpy(what, value, std::nullopt);
    case AttrType::kGraph:
      throw py::value_error(what +
                            ": a subgraph comes from an ONNX model or a JSON "
                            "graph file, not from a Python value");
    case AttrType::kListInt:
      return ListOf<int64_t>(value, what, &Scalar<int64_t>);
    case AttrType::kListFloat:
      return ListOf<double>(value, what, &Scalar<double>);
    case AttrType::kListBool:
      return ListOf<bool>(value, what, &Scalar<bool>);
    case AttrType::kListString:
      return ListOf<std::string>(value, what, &Scalar<std::string>);
    case AttrType::kListType:
      return ListOf<DataType>(value, what, &TypeOf);
    case AttrType::kListShape:
      return ListOf<PartialShape>(value, what, &ShapeOf);
    case AttrType::kListTensor:
      return ListOf<Tensor>(value, what, &TensorOf);
  }
  throw py::value_error(what + ": unsupported attribute type");
}

// How many outputs a node of `def` with `attrs` has.
int CountOutputs(const OpDef& def, const AttrMap& attrs) {
  int count = 0;
  for (const ArgDef& arg : def.outputs) {
    switch (arg.kind) {
      case ArgDef::Kind::kRepeated: {
        auto it = attrs.find(arg.number_attr);
        const int64_t* n =
            it == attrs.end() ? nullptr : it->second.get_if<int64_t>();
        count += n != nullptr ? static_cast<int>(*n) : 0;
        break;
      }
      case ArgDef::Kind::kTypeListAttr: {
        auto it = attrs.find(arg.type_attr);
        const auto* list = it == attrs.end()
                               ? nullptr
                               : it->second.get_if<std::vector<DataType>>();
        count += list != nullptr ? static_cast<int>(list->size()) : 0;
        break;
      }
      default:
        ++count;
    }
  }
  return count;
}

py::list NameList(const std::string& node, int count) {
  py::list names;
  for (int k = 0; k < count; ++k) {
    names.append(k == 0 ? node : node + ":" + std::to_string(k));
  }
  return names;
}

// One output: its name; any other count: the list of names.
py::object OutputNames(const std::string& node, int count) {
  if (count == 1) return py::str(node);
  return NameList(node, count);
}

std::vector<std::string> InputNames(py::handle inputs,
                                    const std::string& node) {
  if (inputs.is_none()) return {};
  if (py::isinstance<py::str>(inputs)) return {inputs.cast<std::string>()};
  if (!py::isinstance<py::sequence>(inputs)) {
    throw py::value_error("node '" + node +
                          "': inputs are a list of tensor names, not " +
                          py::repr(inputs).cast<std::string>());
  }
  std::vector<std::string> names;
  for (py::handle input : inputs) {
    if (!py::isinstance<py::str>(input)) {
      throw py::value_error("node '" + node + "': input " +
                            py::repr(input).cast<std::string>() +
                            " is not a tensor name");
    }
    names.push_back(input.cast<std::string>());
  }
  return names;
}

// The Python callable behind a py_function node, called with the GIL held
// on the blocking-pool thread that runs the node. The function object is
// kept for the life of the process, as registered custom functions are.
struct PythonBody {
  PyObject* func;  // A strong reference, never dropped.
  std::vector<DataType> tout;
  bool single_output;
};

// "Traceback (most recent call last): ..." for the error being handled.
std::string FormatTraceback(py::error_already_set& error) {
  try {
    py::object lines = py::module_::import("traceback")
                           .attr("format_exception")(
                               error.type(), error.value(), error.trace());
    return py::str("").attr("join")(lines).cast<std::string>();
  } catch (...) {
    return error.what();
  }
}

Status CallPython(const PythonBody& body, KernelContext& ctx) {
  py::gil_scoped_acquire gil;
  const std::string node = "py_function '" + ctx.node_name() + "'";
  try {
    py::tuple args(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i)
      args[i] = ToNumpy(ctx.input(i), /*read_only=*/true);
    py::object result = py::reinterpret_borrow<py::object>(body.func)(*args);
    std::vector<py::object> values;
    if (body.single_output) {
      values.push_back(result);
    } else if (body.tout.empty() && result.is_none()) {
      // No outputs declared and none returned: nothing to set.
    } else if (py::isinstance<py::sequence>(result) &&
               !py::isinstance<py::str>(result) &&
               static_cast<size_t>(py::len(result)) == body.tout.size()) {
      for (py::handle v : result) {
        values.push_back(py::reinterpret_borrow<py::object>(v));
      }
    } else {
      return InvalidArgumentError(
          node + " returned " +
          py::repr(py::type::of(result)).cast<std::string>() +
          " but Tout lists " + std::to_string(body.tout.size()) +
          " outputs: return a list or tuple of that many arrays");
    }
    for (size_t k = 0; k < values.size(); ++k) {
      Tensor tensor = FromNumpy(node + " output " + std::to_string(k),
                                values[k], body.tout[k], /*cast=*/true);
      WEFT_RETURN_IF_ERROR(ctx.SetOutput(static_cast<int>(k), tensor));
    }
    return Status::OK();
  } catch (py::error_already_set& error) {
    // The caller of the run gets this exception back (Raise, convert.h);
    // the message still holds the traceback for C++ callers and logs.
    const std::string traceback = FormatTraceback(error);
    return UnknownError(node + " raised an exception:\n" + traceback + "\n" +
                        StashPythonException(error));
  } catch (const std::exception& error) {  // A conversion's ValueError.
    return InvalidArgumentError(error.what());
  }
}

std::string RegisterPythonBody(PythonBody body) {
  static std::atomic<int64_t> next{0};
  std::string name = "python.py_function." + std::to_string(next++);
  auto shared = std::make_shared<const PythonBody>(std::move(body));
  Check(RegisterCustomFunction(
      name, [shared](KernelContext& ctx) { return CallPython(*shared, ctx); }));
  return name;
}

}  // namespace

std::string PyGraph::UniqueName(py::handle name, const std::string& base) {
  if (!name.is_none()) return py::str(name).cast<std::string>();
  std::string candidate = base;
  for (int i = 1; file_.graph.FindNode(candidate) != nullptr; ++i) {
    candidate = base + "_" + std::to_string(i);
  }
  return candidate;
}

void PyGraph::Add(NodeDef node) {
  // Checked here first: Graph keeps the first error of AddNode and fails
  // compilation with it, but a builder that raised should stay usable.
  if (file_.graph.FindNode(node.name) != nullptr) {
    throw py::value_error("duplicate node name '" + node.name + "'");
  }
  if (node.name.empty() ||
      node.name.find_first_of(":^ \t\n") != std::string::npos) {
    throw py::value_error("node name '" + node.name +
                          "' is empty or contains ':', '^' or white space");
  }
  Status status = file_.graph.AddNode(std::move(node));
  if (!status.ok()) throw py::value_error(status.message());
}

std::string PyGraph::Placeholder(const std::string& name, py::handle dtype,
                                 py::handle shape) {
  const std::string what = "placeholder '" + name + "'";
  AttrMap attrs;
  attrs["dtype"] = DtypeFromPython(dtype, what);
  attrs["shape"] = ShapeFromPython(shape, what);
  Add({name, "Placeholder", {}, std::move(attrs), ""});
  return name;
}

std::string PyGraph::Constant(py::handle value, py::handle name) {
  std::string node = UniqueName(name, "Const");
  Tensor tensor = CopyFromNumpy("constant '" + node + "'", value, std::nullopt);
  const DataType dtype = tensor.dtype();
  Add({node,
       "Const",
       {},
       {{"value", std::move(tensor)}, {"dtype", dtype}},
       ""});
  return node;
}

py::object PyGraph::Op(const std::string& op_type, py::handle inputs,
                       py::handle name, const py::kwargs& kwargs) {
  const OpDef* def = FindOpDef(op_type);
  if (def == nullptr) {
    throw py::value_error("no op named '" + op_type + "'" + SuggestOp(op_type) +
                          " (weft ops lists them)");
  }
  const std::string node = UniqueName(name, op_type);
  AttrMap attrs;
  for (auto [key, value] : kwargs) {
    const std::string attr = py::str(key).cast<std::string>();
    const AttrDef* attr_def = nullptr;
    for (const AttrDef& candidate : def->attrs) {
      if (candidate.name == attr) attr_def = &candidate;
    }
    if (attr_def == nullptr) {
      throw py::value_error("node '" + node + "': " + op_type +
                            " has no attribute '" + attr + "'" +
                            SuggestAttr(attr, *def));
    }
    attrs[attr] = AttrFromPython(
        attr_def->type, value, "node '" + node + "' attribute '" + attr + "'");
  }
  AttrMap with_defaults = attrs;
  for (const AttrDef& attr : def->attrs) {
    if (!with_defaults.count(attr.name) && attr.default_value) {
      with_defaults[attr.name] = *attr.default_value;
    }
  }
  const int outputs = CountOutputs(*def, with_defaults);
  Add({node, op_type, InputNames(inputs, node), std::move(attrs), ""});
  return OutputNames(node, outputs);
}

py::object PyGraph::PyFunction(py::function func, py::handle inputs,
                               py::handle tout, py::handle name) {
  const std::string node = UniqueName(name, "py_function");
  PythonBody body;
  body.single_output =
      !py::isinstance<py::list>(tout) && !py::isinstance<py::tuple>(tout);
  const std::string what = "py_function '" + node + "' Tout";
  if (body.single_output) {
    body.tout.push_back(DtypeFromPython(tout, what));
  } else {
    for (py::handle dtype : tout)
      body.tout.push_back(DtypeFromPython(dtype, what));
  }
  std::vector<DataType> dtypes = body.tout;
  const bool single = body.single_output;
  body.func = func.inc_ref().ptr();
  const std::string function = RegisterPythonBody(std::move(body));
  Add({node,
       "CustomOp",
       InputNames(inputs, node),
       {{"function", function},
        {"Tout", dtypes},
        {"blocking", true},
        {"inter_op_bound", true}},
       ""});
  if (single) return py::str(node);
  return NameList(node, static_cast<int>(dtypes.size()));
}

std::vector<std::string> PyGraph::outputs() const {
  if (!file_.outputs.empty()) return file_.outputs;
  // Every output of a node that nothing reads.
  std::set<std::string> read;
  for (const NodeDef& node : file_.graph.nodes()) {
    for (const std::string& input : node.inputs) {
      if (input.empty() || input[0] == '^') continue;
      read.insert(input.find(':') == std::string::npos ? input + ":0" : input);
    }
  }
  std::vector<std::string> out;
  for (const NodeDef& node : file_.graph.nodes()) {
    const OpDef* def = FindOpDef(node.op);
    if (def == nullptr) continue;
    AttrMap attrs = node.attrs;
    for (const AttrDef& attr : def->attrs) {
      if (!attrs.count(attr.name) && attr.default_value) {
        attrs[attr.name] = *attr.default_value;
      }
    }
    const int count = CountOutputs(*def, attrs);
    for (int k = 0; k < count; ++k) {
      if (read.count(node.name + ":" + std::to_string(k))) continue;
      out.push_back(k == 0 ? node.name : node.name + ":" + std::to_string(k));
    }
  }
  return out;
}

std::vector<std::string> PyGraph::node_names() const {
  std::vector<std::string> names;
  for (const NodeDef& node : file_.graph.nodes()) names.push_back(node.name);
  return names;
}

GraphFile PyGraph::file() const {
  GraphFile copy = file_;
  copy.outputs = outputs();
  return copy;
}

PyGraph LoadGraphFile(const std::string& path) {
  return PyGraph(LoadModelSource(py::str(path)).file);
}

void BindGraph(py::module_& m) {
  py::class_<PyGraph>(m, "_Graph")
      .def(py::init<>())
      .def("placeholder", &PyGraph::Placeholder)
      .def("constant", &PyGraph::Constant)
      .def("op", &PyGraph::Op)
      .def("py_function", &PyGraph::PyFunction)
      .def_property("outputs", &PyGraph::outputs, &PyGraph::set_outputs)
      .def("node_names", &PyGraph::node_names)
      .def("placeholders",
           [](const PyGraph& g) {
             // In the order they were added: what weft.data.map feeds.
             std::vector<std::string> names;
             const GraphFile file = g.file();
             for (const NodeDef& node : file.graph.nodes()) {
               if (node.op == "Placeholder") names.push_back(node.name);
             }
             return names;
           })
      .def("to_json",
           [](const PyGraph& g) { return SerializeGraph(g.file()); });
  m.def("_load_graph", &LoadGraphFile);
}

}  // namespace weft::python
