// weft.data's core: _weft._Dataset over weft::data::Dataset (weft/data.h)
// and _weft._Iterator. Elements cross as tuples of NumPy arrays (tensors
// weft made are viewed without a copy); the Python layer (weft/data.py)
// adds dict and single-tensor elements, tracing and tf.data's spelling.
//
// Python callables (map, filter, interleave, generators) run with the GIL
// taken on the thread that calls them; their parallel calls run on the
// blocking pool, so no inter-op worker waits for the GIL. Iterating
// releases the GIL while it waits for the next element.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "graph_binding.h"
#include "weft/data.h"
#include "weft/machine.h"

namespace weft::python {
namespace {

using data::Dataset;
using data::Element;

// An element as the tuple a Python callable gets.
py::tuple ToTuple(const Element& element) {
  py::tuple out(element.size());
  for (size_t i = 0; i < element.size(); ++i) {
    // Strings as an object array of str (bytes where not UTF-8).
    out[i] = element[i].dtype() == DataType::kString
                 ? ToPython(element[i])
                 : py::object(ToNumpy(element[i], /*read_only=*/true));
  }
  return out;
}

// What a callable returned, as an element: a tuple or list of array-likes,
// or one array-like.
Element FromPython(const std::string& what, py::handle value) {
  Element element;
  if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)) {
    size_t k = 0;
    for (py::handle item : value) {
      element.push_back(ValueFromPython(
          what + " component " + std::to_string(k++), item, std::nullopt));
    }
  } else {
    element.push_back(ValueFromPython(what, value, std::nullopt));
  }
  return element;
}

// The Status a Python exception becomes, the exception kept for the
// iterator's caller (StashPythonException).
Status FromPythonError(const std::string& what, py::error_already_set& error) {
  const std::string message = error.what();
  return UnknownError(what + " raised " + message + " " +
                      StashPythonException(error));
}

// A Python callable shared by the threads that call it; released with the
// GIL held.
std::shared_ptr<py::function> Shared(py::function fn) {
  return std::shared_ptr<py::function>(new py::function(std::move(fn)),
                                       [](py::function* f) {
                                         py::gil_scoped_acquire gil;
                                         delete f;
                                       });
}

data::MapFn PythonMapFn(py::function fn) {
  auto shared = Shared(std::move(fn));
  return [shared](Element in) -> StatusOr<Element> {
    py::gil_scoped_acquire gil;
    // Python computes here: it counts against the core budget.
    ComputingScope computing;
    try {
      py::object result = (*shared)(*ToTuple(in));
      return FromPython("map function result", result);
    } catch (py::error_already_set& error) {
      return FromPythonError("the map function", error);
    } catch (const std::exception& error) {
      return InvalidArgumentError(error.what());
    }
  };
}

data::PredicateFn PythonPredicate(py::function fn) {
  auto shared = Shared(std::move(fn));
  return [shared](const Element& in) -> StatusOr<bool> {
    py::gil_scoped_acquire gil;
    // Python computes here: it counts against the core budget.
    ComputingScope computing;
    try {
      return py::bool_((*shared)(*ToTuple(in))).cast<bool>();
    } catch (py::error_already_set& error) {
      return FromPythonError("the filter predicate", error);
    }
  };
}

// from_generator: factory() returns a Python iterator for each pass.
data::GeneratorFactory PythonGenerator(py::function factory) {
  auto shared = Shared(std::move(factory));
  return [shared]() -> data::GeneratorFn {
    auto iterator = std::make_shared<py::object>();
    return [shared, iterator]() -> StatusOr<std::optional<Element>> {
      py::gil_scoped_acquire gil;
      // Python computes here: it counts against the core budget.
      ComputingScope computing;
      try {
        if (!*iterator) *iterator = py::iter((*shared)());
        PyObject* next = PyIter_Next(iterator->ptr());
        if (next == nullptr) {
          if (PyErr_Occurred()) throw py::error_already_set();
          *iterator = py::object();
          return std::optional<Element>();
        }
        py::object value = py::reinterpret_steal<py::object>(next);
        return std::optional<Element>(FromPython("generator element", value));
      } catch (py::error_already_set& error) {
        return FromPythonError("the generator", error);
      } catch (const std::exception& error) {
        return InvalidArgumentError(error.what());
      }
    };
  };
}

class PyIterator {
 public:
  explicit PyIterator(std::unique_ptr<data::Iterator> it)
      : it_(std::move(it)) {}
  // Stopping a pass waits for its calls in flight, which may need the GIL
  // (a Python map function): wait without it.
  ~PyIterator() {
    py::gil_scoped_release release;
    it_.reset();
  }
  PyIterator(PyIterator&&) = default;
  PyIterator(const PyIterator&) = delete;
  PyIterator& operator=(const PyIterator&) = delete;

  py::tuple Next() {
    Element element;
    bool end = false;
    Status status;
    {
      py::gil_scoped_release release;
      status = it_->GetNext(&element, &end);
    }
    Check(status);
    if (end) throw py::stop_iteration();
    return ToTuple(element);
  }

  py::list Stats() const {
    py::list out;
    for (const data::StageStats& s : it_->Stats()) {
      py::dict stage;
      stage["stage"] = s.stage;
      stage["elements"] = s.elements;
      stage["busy_seconds"] = s.busy_seconds;
      stage["wait_seconds"] = s.wait_seconds;
      stage["parallelism"] = s.parallelism;
      stage["skipped"] = s.skipped;
      stage["autotuned"] = s.autotuned;
      stage["bottleneck"] = s.bottleneck;
      out.append(stage);
    }
    return out;
  }

 private:
  std::unique_ptr<data::Iterator> it_;
};

Dataset Unwrap(const StatusOr<Dataset>& dataset) {
  Check(dataset.status());
  return *dataset;
}

// padding_values: one per component, None for zeros (or one for all).
Dataset PaddedBatch(const Dataset& d, int64_t batch_size,
                    std::vector<std::vector<int64_t>> shapes,
                    bool drop_remainder, const py::list& values) {
  std::vector<Tensor> pads;
  for (size_t c = 0; c < values.size(); ++c) {
    pads.push_back(
        values[c].is_none()
            ? Tensor()
            : ValueFromPython("padding_values component " + std::to_string(c),
                              values[c], std::nullopt));
  }
  return d.PaddedBatch(batch_size, std::move(shapes), drop_remainder,
                       std::move(pads));
}

}  // namespace

void BindData(py::module_& m) {
  py::class_<PyIterator>(m, "_Iterator")
      .def("__next__", &PyIterator::Next)
      .def("__iter__", [](py::object self) { return self; })
      .def("stats", &PyIterator::Stats);

  py::class_<Dataset>(m, "_Dataset")
      .def_static(
          "from_tensor_slices",
          [](py::list arrays) {
            std::vector<Tensor> components;
            size_t k = 0;
            for (py::handle a : arrays) {
              components.push_back(ValueFromPython(
                  "from_tensor_slices component " + std::to_string(k++), a,
                  std::nullopt));
            }
            return Unwrap(Dataset::FromTensorSlices(std::move(components)));
          })
      .def_static("range",
                  [](int64_t start, int64_t stop, int64_t step) {
                    return Unwrap(Dataset::Range(start, stop, step));
                  })
      .def_static("list_files",
                  [](const std::string& pattern, bool shuffle, uint64_t seed) {
                    return Unwrap(Dataset::ListFiles(pattern, shuffle, seed));
                  })
      .def_static(
          "from_generator",
          [](py::function factory) {
            return Dataset::FromGenerator(PythonGenerator(std::move(factory)));
          })
      .def_static("zip",
                  [](std::vector<Dataset> datasets) {
                    return Unwrap(Dataset::Zip(datasets));
                  })
      .def(
          "map_python",
          [](const Dataset& d, py::function fn, int calls, bool deterministic) {
            return d.Map(PythonMapFn(std::move(fn)), calls, deterministic,
                         /*blocking=*/true);
          })
      .def("map_graph",
           [](const Dataset& d, const PyGraph& graph,
              std::vector<std::string> inputs, std::vector<std::string> outputs,
              int calls, bool deterministic) {
             // Each call on one thread, nodes in the calling thread: the
             // parallelism is across elements, on the pipeline's pool.
             SessionOptions options;
             options.use_per_session_threads = true;
             options.inter_op_parallelism_threads = -1;
             options.intra_op_parallelism_threads = 1;
             StatusOr<data::MapFn> fn = UnknownError("not made");
             {
               py::gil_scoped_release release;
               fn = data::GraphFn(graph.file().graph, std::move(inputs),
                                  std::move(outputs), options);
             }
             Check(fn.status());
             return d.Map(*fn, calls, deterministic);
           })
      .def("read_file",
           [](const Dataset& d, int calls) {
             return d.Map(data::ReadFileFn(), calls, true, /*blocking=*/true);
           })
      .def("read_npy",
           [](const Dataset& d, int calls) {
             return d.Map(data::ReadNpyFn(), calls, true, /*blocking=*/true);
           })
      .def("filter",
           [](const Dataset& d, py::function fn) {
             return d.Filter(PythonPredicate(std::move(fn)));
           })
      .def("batch", &Dataset::Batch)
      .def("padded_batch", &PaddedBatch)
      .def("unbatch", &Dataset::Unbatch)
      .def("shuffle", &Dataset::Shuffle)
      .def("repeat", &Dataset::Repeat)
      .def("take", &Dataset::Take)
      .def("skip", &Dataset::Skip)
      .def("interleave",
           [](const Dataset& d, py::function fn, int cycle, int block) {
             auto shared = Shared(std::move(fn));
             return d.Interleave(
                 [shared](Element in) -> StatusOr<Dataset> {
                   py::gil_scoped_acquire gil;
                   try {
                     py::object result = (*shared)(*ToTuple(in));
                     return result.attr("_core").cast<Dataset>();
                   } catch (py::error_already_set& error) {
                     return FromPythonError("the interleave function", error);
                   } catch (const std::exception& error) {
                     return InvalidArgumentError(
                         std::string("the interleave function must return a "
                                     "weft.data.Dataset: ") +
                         error.what());
                   }
                 },
                 cycle, block);
           })
      .def("enumerate", &Dataset::Enumerate)
      .def("cache", &Dataset::Cache)
      .def("prefetch", &Dataset::Prefetch)
      .def("ignore_errors", &Dataset::IgnoreErrors)
      .def("describe", &Dataset::DebugString)
      .def(
          "iterator",
          [](const Dataset& d, int private_threads, bool autotune) {
            // tf.data's Options: threading.private_threadpool_size (0: the
            // process-wide inter-op pool) and autotune.enabled.
            data::IteratorOptions options;
            options.autotune = autotune;
            if (private_threads > 0) {
              ThreadPoolOptions pool;
              pool.name = "weft.data.private";
              pool.num_threads = private_threads;
              options.pool = std::make_shared<ThreadPool>(pool);
            }
            StatusOr<std::unique_ptr<data::Iterator>> it =
                UnknownError("not made");
            {
              py::gil_scoped_release release;
              it = d.MakeIterator(options);
            }
            Check(it.status());
            return PyIterator(std::move(it).value());
          },
          py::arg("private_threads") = 0, py::arg("autotune") = true);
  m.def("_register_iterator", [](const std::string& name, const Dataset& d) {
    Status status;
    {
      py::gil_scoped_release release;
      status = data::RegisterIterator(name, d);
    }
    Check(status);
  });
  m.def("_unregister_iterator", [](const std::string& name) {
    Status status;
    {
      py::gil_scoped_release release;
      status = data::UnregisterIterator(name);
    }
    Check(status);
  });
  m.attr("AUTOTUNE") = data::kAutotune;
}

}  // namespace weft::python
