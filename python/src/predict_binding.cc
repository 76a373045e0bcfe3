// weft.predict's core (weft/predict.h): _PredictModel, a model opened once
// and shared by the jobs of a process (weft.dask keeps one per worker), and
// _predict, one job into files (Predict) or into memory (PredictToMemory).
// The GIL is released for the whole job; the progress callback takes it.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "interrupt.h"
#include "weft/predict.h"

namespace weft::python {
namespace {

// The holder is non-const for pybind11; the jobs get it as const.
using ModelHandle = std::shared_ptr<PredictModel>;

py::dict SummaryDict(const PredictSummary& s) {
  py::dict out;
  out["inputs"] = s.inputs;
  out["predicted"] = s.predicted;
  out["resumed"] = s.resumed;
  out["seconds"] = s.seconds;
  out["model_seconds"] = s.model_seconds;
  out["wait_seconds"] = s.wait_seconds;
  out["inter_op_threads"] = s.inter_op_threads;
  out["intra_op_threads"] = s.intra_op_threads;
  return out;
}

// `model`: a path, or a _PredictModel already open.
py::dict RunPredict(py::object model, std::vector<std::string> inputs,
                    const std::string& output, const std::string& preprocess,
                    int64_t batch_size, bool skip_bad_inputs, bool prefetch,
                    int64_t key_offset, const SessionOptions& session,
                    const py::object& progress) {
  PredictOptions options;
  if (py::isinstance<PredictModel>(model)) {
    options.opened_model = model.cast<ModelHandle>();
  } else {
    options.model = py::str(model).cast<std::string>();
  }
  options.inputs = std::move(inputs);
  options.output = output;
  options.preprocess = preprocess;
  options.batch_size = batch_size;
  options.skip_bad_inputs = skip_bad_inputs;
  options.prefetch = prefetch;
  options.key_offset = key_offset;
  options.session = session;
  if (!progress.is_none()) {
    options.progress = [&progress](const PredictProgress& p) {
      py::gil_scoped_acquire gil;
      progress(p.done, p.total, p.items_per_second);
    };
  }
  InterruptScope interrupt(std::make_shared<RunCancellation>());
  options.stop_requested = [&interrupt] { return interrupt.interrupted(); };

  py::dict out;
  if (output.empty()) {
    StatusOr<PredictRows> rows = InvalidArgumentError("not run");
    {
      py::gil_scoped_release release;
      rows = PredictToMemory(options);
    }
    Check(rows.status());
    out["summary"] = SummaryDict(rows->summary);
    out["rows"] = rows->predicted.empty() ? py::object(py::none())
                                          : py::object(ToNumpy(rows->rows));
    out["predicted"] = rows->predicted;
    out["skipped"] = rows->skipped;
    return out;
  }
  StatusOr<PredictSummary> summary = InvalidArgumentError("not run");
  {
    py::gil_scoped_release release;
    summary = Predict(options);
  }
  Check(summary.status());
  out["summary"] = SummaryDict(*summary);
  out["skipped"] = summary->skipped;
  return out;
}

}  // namespace

void BindPredict(py::module_& m) {
  py::class_<PredictModel, ModelHandle>(m, "_PredictModel")
      .def(py::init([](const std::string& path, const SessionOptions& options) {
             StatusOr<std::shared_ptr<const PredictModel>> model =
                 InvalidArgumentError("not opened");
             {
               py::gil_scoped_release release;
               model = PredictModel::Open(path, options);
             }
             Check(model.status());
             return std::const_pointer_cast<PredictModel>(*model);
           }),
           py::arg("path"), py::arg("options"))
      .def_property_readonly("input", &PredictModel::input)
      .def_property_readonly("output", &PredictModel::output)
      .def_property_readonly(
          "inter_op_threads",
          [](const PredictModel& m) { return m.session().inter_op_threads(); })
      .def_property_readonly("intra_op_threads", [](const PredictModel& m) {
        return m.session().intra_op_threads();
      });
  m.def("_predict", &RunPredict, py::arg("model"), py::arg("inputs"),
        py::arg("output"), py::arg("preprocess"), py::arg("batch_size"),
        py::arg("skip_bad_inputs"), py::arg("prefetch"), py::arg("key_offset"),
        py::arg("session"), py::arg("progress"));
  m.def("_preprocess_recipes", &PreprocessRecipes);
}

}  // namespace weft::python
