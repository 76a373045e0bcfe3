// weft._weft: the CPython extension under the pure-Python package in
// python/weft/. It holds sessions and converts tensors; the Python layer
// gives them ONNX Runtime's, TensorFlow's and PyTorch's names.
//
// The GIL is released for the whole of every load, compile and Run.
// Outputs are NumPy arrays that own weft's buffer (no copy).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/chrome_trace.h"
#include "weft/weft.h"

namespace py = pybind11;

namespace weft::python {
namespace {

// Python exception types for a Status (docs/python.md).
[[noreturn]] void Raise(const Status& status) {
  const std::string message = status.ToString();
  switch (status.code()) {
    case StatusCode::kDeadlineExceeded:
      PyErr_SetString(PyExc_TimeoutError, message.c_str());
      break;
    case StatusCode::kResourceExhausted:
      PyErr_SetString(PyExc_MemoryError, message.c_str());
      break;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:  // An unknown op (a missing file is checked
                                 // first, in Python: FileNotFoundError).
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
    case StatusCode::kOutOfRange:
      PyErr_SetString(PyExc_ValueError, message.c_str());
      break;
    default:
      PyErr_SetString(PyExc_RuntimeError, message.c_str());
      break;
  }
  throw py::error_already_set();
}

void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

struct DtypeInfo {
  DataType dtype;
  const char* numpy;  // NumPy's dtype string.
  const char* onnx;   // ONNX Runtime's type name.
};

constexpr DtypeInfo kDtypes[] = {
    {DataType::kFloat32, "float32", "tensor(float)"},
    {DataType::kFloat64, "float64", "tensor(double)"},
    {DataType::kFloat16, "float16", "tensor(float16)"},
    {DataType::kInt8, "int8", "tensor(int8)"},
    {DataType::kUInt8, "uint8", "tensor(uint8)"},
    {DataType::kInt16, "int16", "tensor(int16)"},
    {DataType::kUInt16, "uint16", "tensor(uint16)"},
    {DataType::kInt32, "int32", "tensor(int32)"},
    {DataType::kUInt32, "uint32", "tensor(uint32)"},
    {DataType::kInt64, "int64", "tensor(int64)"},
    {DataType::kUInt64, "uint64", "tensor(uint64)"},
    {DataType::kBool, "bool", "tensor(bool)"},
};

const DtypeInfo& InfoOf(DataType dtype) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.dtype == dtype) return info;
  }
  return kDtypes[0];
}

// A NumPy array viewing a copy of the tensor handle: the array keeps weft's
// buffer alive through the capsule (no element is copied).
py::array ToNumpy(const Tensor& tensor) {
  auto* owned = new Tensor(tensor);
  py::capsule base(owned, [](void* p) { delete static_cast<Tensor*>(p); });
  const std::vector<int64_t> dims = tensor.shape().dims();
  const std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  return py::array(py::dtype(InfoOf(tensor.dtype()).numpy), shape,
                   owned->raw_data(), base);
}

// A feed: converted to the dtype the graph expects when `expected` is set,
// made C-contiguous, then copied once into a weft tensor. Errors name the
// input.
Tensor FromNumpy(const std::string& name, py::handle value,
                 std::optional<DataType> expected) {
  py::array array = py::array::ensure(value);
  if (!array) {
    throw py::value_error("input '" + name +
                          "': expected a NumPy array (or something "
                          "np.asarray takes)");
  }
  const std::string given = py::str(array.dtype()).cast<std::string>();
  const DtypeInfo* info = nullptr;
  for (const DtypeInfo& candidate : kDtypes) {
    if (given == candidate.numpy) info = &candidate;
  }
  if (expected && (info == nullptr || info->dtype != *expected)) {
    throw py::value_error("input '" + name + "': expected dtype " +
                          InfoOf(*expected).numpy + ", got " + given);
  }
  if (info == nullptr) {
    throw py::value_error("input '" + name + "': dtype " + given +
                          " is not one weft has");
  }
  py::array contiguous =
      py::array::ensure(array, py::array::c_style | py::array::forcecast);
  std::vector<int64_t> dims(contiguous.shape(),
                            contiguous.shape() + contiguous.ndim());
  StatusOr<Tensor> tensor =
      Tensor::CreateUninitialized(info->dtype, Shape(dims));
  if (!tensor.ok()) {
    throw py::value_error("input '" + name + "': " + tensor.status().message());
  }
  if (tensor->size_bytes() > 0) {
    std::memcpy(tensor->raw_data(), contiguous.data(), tensor->size_bytes());
  }
  return *std::move(tensor);
}

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

class PySession {
 public:
  // source: a path (.onnx or .json) or the bytes of an ONNX model.
  PySession(py::object source, const SessionOptions& options) {
    StatusOr<OnnxModel> onnx = InvalidArgumentError("");
    bool is_onnx = true;
    if (py::isinstance<py::bytes>(source)) {
      const std::string bytes = source.cast<std::string>();
      py::gil_scoped_release release;
      onnx = ParseOnnxModel(bytes, ".");
    } else {
      const std::string path = py::str(source).cast<std::string>();
      is_onnx = path.size() < 5 || path.substr(path.size() - 5) != ".json";
      py::gil_scoped_release release;
      if (is_onnx) {
        onnx = LoadOnnxModel(path);
      } else {
        StatusOr<GraphFile> file = LoadGraph(path);
        onnx = file.ok() ? StatusOr<OnnxModel>(OnnxModel{*std::move(file)})
                         : StatusOr<OnnxModel>(file.status());
      }
    }
    Check(onnx.status());
    if (is_onnx) {
      for (const OnnxValueInfo& v : onnx->inputs)
        inputs_.push_back(Describe(v));
      for (const OnnxValueInfo& v : onnx->outputs) {
        outputs_.push_back(Describe(v));
      }
    } else {
      DescribeGraph(onnx->file);
    }
    StatusOr<std::unique_ptr<Session>> session =
        InvalidArgumentError("not created");
    {
      py::gil_scoped_release release;
      session = Session::Create(onnx->file.graph, options);
    }
    Check(session.status());
    session_ = std::move(session).value();
  }

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }

  // fetches: output names (None: every output); feeds: {name: array}.
  // With `by_tensor` (TensorFlow's Session), names are the graph's own
  // tensor names ("node", "node:k") rather than the model's declared
  // inputs and outputs. `metadata`, when not null, receives the Run's
  // statistics (per node with `trace`).
  py::list Run(py::object fetch_names, py::dict feeds, int64_t timeout_ms,
               bool trace, int inter_op_thread_pool, RunMetadata* metadata,
               bool by_tensor) {
    std::vector<std::string> fetches;
    if (fetch_names.is_none()) {
      for (const ValueInfo& v : outputs_) fetches.push_back(v.tensor);
    } else {
      for (py::handle name : fetch_names) {
        fetches.push_back(by_tensor
                              ? py::str(name).cast<std::string>()
                              : TensorOf(py::str(name), outputs_, "output"));
      }
    }
    NamedTensors inputs;
    for (auto [key, value] : feeds) {
      const std::string name = py::str(key);
      const ValueInfo* info = Find(name, inputs_);
      if (info == nullptr && !by_tensor) {
        throw py::key_error("no input named '" + name + "'; the inputs are " +
                            Names(inputs_));
      }
      inputs.emplace_back(
          info != nullptr ? info->tensor : name,
          FromNumpy(name, value, info != nullptr ? info->dtype : std::nullopt));
    }
    RunOptions options;
    options.timeout_ms = timeout_ms;
    options.inter_op_thread_pool = inter_op_thread_pool;
    if (trace) options.trace_level = RunOptions::TraceLevel::kFull;
    std::vector<Tensor> outputs;
    Status status;
    {
      py::gil_scoped_release release;
      status = session_->Run(options, inputs, fetches, {}, &outputs, metadata);
    }
    if (status.code() == StatusCode::kNotFound ||
        (by_tensor && status.code() == StatusCode::kInvalidArgument &&
         status.message().find("does not exist") != std::string::npos)) {
      // An unknown fetch or feed name (TensorFlow raises KeyError too).
      throw py::key_error(status.ToString());
    }
    Check(status);
    py::list out;
    for (const Tensor& t : outputs) out.append(ToNumpy(t));
    return out;
  }

  int inter_op_threads() const { return session_->inter_op_threads(); }
  int intra_op_threads() const { return session_->intra_op_threads(); }

 private:
  static ValueInfo Describe(const OnnxValueInfo& v) {
    ValueInfo info{v.name, py::list(), v.type_name, v.tensor, std::nullopt};
    for (const OnnxDim& d : v.dims) {
      if (d.fixed()) {
        info.shape.append(d.size);
      } else if (!d.symbol.empty()) {
        info.shape.append(d.symbol);
      } else {
        info.shape.append(py::none());
      }
    }
    for (const DtypeInfo& candidate : kDtypes) {
      if (v.type_name == candidate.onnx) info.dtype = candidate.dtype;
    }
    return info;
  }

  // A weft JSON graph: its placeholders are the inputs, its listed outputs
  // the outputs.
  void DescribeGraph(const GraphFile& file) {
    for (const NodeDef& node : file.graph.nodes()) {
      if (node.op != "Placeholder") continue;
      ValueInfo info{node.name, py::list(), "tensor(float)", node.name,
                     std::nullopt};
      if (auto it = node.attrs.find("dtype"); it != node.attrs.end()) {
        if (const DataType* d = it->second.get_if<DataType>()) {
          info.dtype = *d;
          info.type = InfoOf(*d).onnx;
        }
      }
      if (auto it = node.attrs.find("shape"); it != node.attrs.end()) {
        if (const PartialShape* s = it->second.get_if<PartialShape>();
            s != nullptr && s->rank_known()) {
          for (int64_t d : s->dims()) {
            if (d >= 0) {
              info.shape.append(d);
            } else {
              info.shape.append(py::none());
            }
          }
        }
      }
      inputs_.push_back(std::move(info));
    }
    for (const std::string& out : file.outputs) {
      outputs_.push_back({out, py::list(), "", out, std::nullopt});
    }
  }

  static const ValueInfo* Find(const std::string& name,
                               const std::vector<ValueInfo>& list) {
    for (const ValueInfo& v : list) {
      if (v.name == name) return &v;
    }
    return nullptr;
  }

  static std::string Names(const std::vector<ValueInfo>& list) {
    std::string out;
    for (const ValueInfo& v : list) out += (out.empty() ? "" : ", ") + v.name;
    return out.empty() ? "(none)" : out;
  }

  static std::string TensorOf(const std::string& name,
                              const std::vector<ValueInfo>& list,
                              const char* kind) {
    if (const ValueInfo* v = Find(name, list)) return v->tensor;
    throw py::key_error("no " + std::string(kind) + " named '" + name +
                        "'; the " + kind + "s are " + Names(list));
  }

  std::unique_ptr<Session> session_;
  std::vector<ValueInfo> inputs_, outputs_;
};

}  // namespace
}  // namespace weft::python

PYBIND11_MODULE(_weft, m) {
  using namespace weft;
  using namespace weft::python;
  m.doc() = "weft's C++ core; use the weft package, not this module.";

  py::class_<SessionOptions>(m, "_SessionOptions")
      .def(py::init<>())
      .def_readwrite("inter_op_parallelism_threads",
                     &SessionOptions::inter_op_parallelism_threads)
      .def_readwrite("intra_op_parallelism_threads",
                     &SessionOptions::intra_op_parallelism_threads)
      .def_readwrite("use_per_session_threads",
                     &SessionOptions::use_per_session_threads)
      .def_readwrite("device_count", &SessionOptions::device_count)
      .def_readwrite("allow_soft_placement",
                     &SessionOptions::allow_soft_placement)
      .def_readwrite("log_device_placement",
                     &SessionOptions::log_device_placement)
      .def_readwrite("operation_timeout_ms",
                     &SessionOptions::operation_timeout_ms)
      .def_readwrite("memory_limit_bytes", &SessionOptions::memory_limit_bytes)
      .def_readwrite("inter_op_spin_us", &SessionOptions::inter_op_spin_us)
      .def_readwrite("intra_op_spin_us", &SessionOptions::intra_op_spin_us)
      .def("add_inter_op_pool",
           [](SessionOptions& o, int num_threads, std::string global_name) {
             o.session_inter_op_thread_pools.push_back(
                 {num_threads, std::move(global_name)});
           });

  py::class_<ValueInfo>(m, "_ValueInfo")
      .def_readonly("name", &ValueInfo::name)
      .def_readonly("shape", &ValueInfo::shape)
      .def_readonly("type", &ValueInfo::type);

  py::class_<RunMetadata>(m, "_RunMetadata")
      .def(py::init<>())
      .def_readonly("run_start_ns", &RunMetadata::run_start_ns)
      .def_readonly("run_end_ns", &RunMetadata::run_end_ns)
      .def("node_stats",
           [](const RunMetadata& md) {
             py::list out;
             for (const NodeExecStats& s : md.node_stats) {
               py::dict d;
               d["node_name"] = s.node_name;
               d["op"] = s.op;
               d["device"] = s.device;
               d["scheduled_ns"] = s.scheduled_ns;
               d["start_ns"] = s.start_ns;
               d["end_ns"] = s.end_ns;
               d["pool"] = s.pool;
               d["thread_index"] = s.thread_index;
               d["thread_name"] = s.thread_name;
               d["intra_op_shards"] = s.intra_op_shards;
               out.append(d);
             }
             return out;
           })
      .def("to_chrome_trace",
           [](const RunMetadata& md) { return internal::ChromeTraceJson(md); });

  py::class_<PySession>(m, "_Session")
      .def(py::init<py::object, const SessionOptions&>())
      .def("inputs", &PySession::inputs, py::return_value_policy::copy)
      .def("outputs", &PySession::outputs, py::return_value_policy::copy)
      .def("run", &PySession::Run, py::arg("fetches"), py::arg("feeds"),
           py::arg("timeout_ms") = 0, py::arg("trace") = false,
           py::arg("inter_op_thread_pool") = 0,
           py::arg("metadata") = static_cast<RunMetadata*>(nullptr),
           py::arg("by_tensor") = false)
      .def_property_readonly("inter_op_threads", &PySession::inter_op_threads)
      .def_property_readonly("intra_op_threads", &PySession::intra_op_threads);

  m.def("set_inter_op_parallelism_threads",
        [](int n) { Check(threading::SetInterOpParallelismThreads(n)); });
  m.def("set_intra_op_parallelism_threads",
        [](int n) { Check(threading::SetIntraOpParallelismThreads(n)); });
  m.def("get_inter_op_parallelism_threads",
        [] { return threading::GetInterOpParallelismThreads(); });
  m.def("get_intra_op_parallelism_threads",
        [] { return threading::GetIntraOpParallelismThreads(); });
}
