#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "graph_binding.h"
#include "interrupt.h"
#include "model_source.h"
#include "weft/chrome_trace.h"
#include "weft/option_fields.h"

namespace weft::python {
namespace {

// ONNX Runtime's RunOptions.terminate: setting it cancels the runs using
// these options and refuses later ones until it is cleared.
class RunControl {
 public:
  bool terminate() const {
    std::lock_guard<std::mutex> lock(mu_);
    return terminate_;
  }
  void set_terminate(bool terminate) {
    std::lock_guard<std::mutex> lock(mu_);
    terminate_ = terminate;
    if (terminate) {
      for (const auto& run : runs_) run->Cancel();
    }
  }

  // Registers a run for the lifetime of the scope.
  class Scope {
   public:
    Scope(RunControl* control, std::shared_ptr<RunCancellation> run)
        : control_(control), run_(std::move(run)) {
      if (control_ == nullptr) return;
      std::lock_guard<std::mutex> lock(control_->mu_);
      if (control_->terminate_) run_->Cancel();
      control_->runs_.push_back(run_);
    }
    ~Scope() {
      if (control_ == nullptr) return;
      std::lock_guard<std::mutex> lock(control_->mu_);
      auto& runs = control_->runs_;
      runs.erase(std::find(runs.begin(), runs.end(), run_));
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RunControl* control_;
    std::shared_ptr<RunCancellation> run_;
  };

 private:
  mutable std::mutex mu_;
  bool terminate_ = false;
  std::vector<std::shared_ptr<RunCancellation>> runs_;
};

class PySession {
 public:
  // source: a weft.Graph, a path (.onnx or .json) or an ONNX model's bytes.
  PySession(py::object source, const SessionOptions& options) {
    GraphFile file;
    if (py::isinstance<PyGraph>(source)) {
      file = source.cast<const PyGraph&>().file();
      DescribeGraph(file);
    } else {
      OnnxModel model = LoadModelSource(source);
      file = std::move(model.file);
      producer_name_ = model.producer_name;
      metadata_ = model.metadata;
      if (!model.inputs.empty() || !model.outputs.empty()) {
        for (const OnnxValueInfo& v : model.inputs) {
          inputs_.push_back(Describe(v));
        }
        for (const OnnxValueInfo& v : model.outputs) {
          outputs_.push_back(Describe(v));
        }
        for (const OnnxValueInfo& v : model.overridable_initializers) {
          overridable_.push_back(Describe(v));
        }
      } else {
        DescribeGraph(file);
      }
    }
    StatusOr<std::unique_ptr<Session>> session =
        InvalidArgumentError("not created");
    {
      py::gil_scoped_release release;
      session = Session::Create(std::move(file.graph), options);
    }
    Check(session.status());
    session_ = std::move(session).value();
  }

  // ONNX Runtime's ModelMetadata fields, by its attribute names (empty for
  // a weft JSON graph or a weft.Graph, which carry none).
  py::dict ModelMeta() const {
    py::dict meta;
    meta["producer_name"] = producer_name_;
    meta["graph_name"] = metadata_.graph_name;
    meta["graph_description"] = metadata_.graph_description;
    meta["domain"] = metadata_.domain;
    meta["description"] = metadata_.description;
    meta["version"] = metadata_.model_version;
    py::dict custom;
    for (const auto& [key, value] : metadata_.custom)
      custom[key.c_str()] = value;
    meta["custom_metadata_map"] = custom;
    return meta;
  }

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  // ONNX graph inputs with an initializer (its default): feedable by name.
  const std::vector<ValueInfo>& overridable_initializers() const {
    return overridable_;
  }

  // fetches: output names (None: every output); feeds: {name: array}, used
  // in place when C-contiguous and of the input's dtype. With `by_tensor`
  // (TensorFlow's Session), names are the graph's own tensor names
  // ("node", "node:k") rather than the model's declared inputs and
  // outputs. `metadata`, when not null, receives the Run's statistics (per
  // node with `trace`); `control` carries ONNX Runtime's terminate flag.
  py::list Run(py::object fetch_names, py::dict feeds, int64_t timeout_ms,
               bool trace, int inter_op_thread_pool, RunMetadata* metadata,
               bool by_tensor, RunControl* control) {
    std::vector<std::string> fetches;
    if (fetch_names.is_none()) {
      for (const ValueInfo& v : outputs_) fetches.push_back(v.tensor);
    } else {
      for (py::handle name : fetch_names) {
        fetches.push_back(
            by_tensor ? NameFromPython(name)
                      : TensorOf(NameFromPython(name), outputs_, "output"));
      }
    }
    NamedTensors inputs;
    for (auto [key, value] : feeds) {
      const std::string name = NameFromPython(key);
      const ValueInfo* info = Find(name, inputs_);
      if (info == nullptr) info = Find(name, overridable_);
      if (info == nullptr && !by_tensor) {
        RaiseMessage(PyExc_KeyError, "no input named '" + name +
                                         "'; the inputs are " + Names(inputs_));
      }
      inputs.emplace_back(
          info != nullptr ? info->tensor : name,
          ValueFromPython("input '" + name + "'", value,
                          info != nullptr ? info->dtype : std::nullopt));
    }
    RunOptions options;
    options.timeout_ms = timeout_ms;
    options.inter_op_thread_pool = inter_op_thread_pool;
    if (trace) options.trace_level = RunOptions::TraceLevel::kFull;
    options.cancellation = std::make_shared<RunCancellation>();
    InterruptScope interrupt(options.cancellation);
    RunControl::Scope controlled(control, options.cancellation);
    std::vector<Tensor> outputs;
    Status status;
    {
      py::gil_scoped_release release;
      status = session_->Run(options, inputs, fetches, {}, &outputs, metadata);
    }
    if (interrupt.interrupted()) {
      // Ctrl-C: Python's handler has run; let it raise KeyboardInterrupt.
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
    if (status.code() == StatusCode::kNotFound) {
      // An unknown fetch or feed name (TensorFlow raises KeyError too).
      RaiseMessage(PyExc_KeyError, status.ToString());
    }
    Check(status);
    // While `inputs` still holds the feeds, so that a feed fetched back
    // comes out read-only (it is the caller's array).
    py::list out;
    for (const Tensor& t : outputs) out.append(ToPython(t));
    return out;
  }

  int inter_op_threads() const { return session_->inter_op_threads(); }
  int intra_op_threads() const { return session_->intra_op_threads(); }

 private:
  // A weft graph: its placeholders are the inputs, its listed outputs the
  // outputs.
  void DescribeGraph(const GraphFile& file) {
    for (const NodeDef& node : file.graph.nodes()) {
      if (node.op != "Placeholder") continue;
      ValueInfo info{node.name, py::list(), "tensor(float)", node.name,
                     std::nullopt};
      if (auto it = node.attrs.find("dtype"); it != node.attrs.end()) {
        if (const DataType* d = it->second.get_if<DataType>()) {
          info.dtype = *d;
          info.type = OnnxTypeName(*d);
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
    RaiseMessage(PyExc_KeyError, "no " + std::string(kind) + " named '" + name +
                                     "'; the " + kind + "s are " + Names(list));
  }

  std::unique_ptr<Session> session_;
  std::vector<ValueInfo> inputs_, outputs_, overridable_;
  std::string producer_name_;
  OnnxModelMetadata metadata_;
};

}  // namespace

namespace {

// _SessionOptions: a property per field of weft/option_fields.h's table,
// so that a field added there is settable from Python with no change here.
// The table's checks run in Session::Create, as in C++.
void BindSessionOptions(py::module_& m) {
  py::class_<SessionOptions> options(m, "_SessionOptions");
  options.def(py::init<>());
  for (const SessionOptionField& field : SessionOptionFields()) {
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(SessionOptions{}.*member)>;
          if constexpr (std::is_same_v<T, std::vector<ThreadPoolSpec>>) {
            // A list of (num_threads, global_name) pairs.
            options.def_property(
                std::string(field.name).c_str(),
                [member](const SessionOptions& o) {
                  py::list pools;
                  for (const ThreadPoolSpec& p : o.*member) {
                    pools.append(py::make_tuple(p.num_threads, p.global_name));
                  }
                  return pools;
                },
                [member](SessionOptions& o, const py::iterable& pools) {
                  std::vector<ThreadPoolSpec> specs;
                  for (py::handle p : pools) {
                    auto [n, name] = p.cast<std::pair<int, std::string>>();
                    specs.push_back({n, std::move(name)});
                  }
                  o.*member = std::move(specs);
                });
          } else {
            options.def_property(
                std::string(field.name).c_str(),
                [member](const SessionOptions& o) { return o.*member; },
                [member](SessionOptions& o, T value) {
                  o.*member = std::move(value);
                });
          }
        },
        field.member);
  }
  options.def("add_inter_op_pool",
              [](SessionOptions& o, int num_threads, std::string global_name) {
                o.session_inter_op_thread_pools.push_back(
                    {num_threads, std::move(global_name)});
              });
}

}  // namespace

void BindSession(py::module_& m) {
  BindSessionOptions(m);

  py::class_<RunControl>(m, "_RunControl")
      .def(py::init<>())
      .def_property("terminate", &RunControl::terminate,
                    &RunControl::set_terminate);

  py::class_<ValueInfo>(m, "_ValueInfo")
      .def_property_readonly(
          "name", [](const ValueInfo& v) { return NameToPython(v.name); })
      .def_readonly("shape", &ValueInfo::shape)
      .def_readonly("type", &ValueInfo::type);

  py::class_<RunMetadata>(m, "_RunMetadata")
      .def(py::init<>())
      .def_readonly("run_start_ns", &RunMetadata::run_start_ns)
      .def_readonly("run_end_ns", &RunMetadata::run_end_ns)
      .def_readonly("peak_bytes", &RunMetadata::peak_bytes)
      .def_readonly("heap_tensors", &RunMetadata::heap_tensors)
      .def_readonly("heap_tensor_bytes", &RunMetadata::heap_tensor_bytes)
      .def_readonly("arena_bytes", &RunMetadata::arena_bytes)
      .def("node_stats",
           [](const RunMetadata& md) {
             py::list out;
             for (const NodeExecStats& s : md.node_stats) {
               py::dict d;
               d["node_name"] = NameToPython(s.node_name);
               d["op"] = s.op;
               d["device"] = s.device;
               d["scheduled_ns"] = s.scheduled_ns;
               d["start_ns"] = s.start_ns;
               d["end_ns"] = s.end_ns;
               d["pool"] = s.pool;
               d["thread_index"] = s.thread_index;
               d["thread_name"] = s.thread_name;
               d["intra_op_shards"] = s.intra_op_shards;
               py::list inputs;
               for (const std::string& in : s.input_nodes) {
                 inputs.append(NameToPython(in));
               }
               d["input_nodes"] = inputs;
               out.append(d);
             }
             return out;
           })
      .def("to_chrome_trace",
           [](const RunMetadata& md) { return ChromeTraceJson(md); });

  py::class_<PySession>(m, "_Session")
      .def(py::init<py::object, const SessionOptions&>())
      .def("modelmeta", &PySession::ModelMeta)
      .def("inputs", &PySession::inputs, py::return_value_policy::copy)
      .def("outputs", &PySession::outputs, py::return_value_policy::copy)
      .def("overridable_initializers", &PySession::overridable_initializers,
           py::return_value_policy::copy)
      .def("run", &PySession::Run, py::arg("fetches"), py::arg("feeds"),
           py::arg("timeout_ms") = 0, py::arg("trace") = false,
           py::arg("inter_op_thread_pool") = 0,
           py::arg("metadata") = static_cast<RunMetadata*>(nullptr),
           py::arg("by_tensor") = false,
           py::arg("control") = static_cast<RunControl*>(nullptr))
      .def_property_readonly("inter_op_threads", &PySession::inter_op_threads)
      .def_property_readonly("intra_op_threads", &PySession::intra_op_threads);
}

}  // namespace weft::python
