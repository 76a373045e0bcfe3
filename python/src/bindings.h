// What each part of the extension adds to weft._weft (module.cc calls them
// in turn):
// - BindSession (session_binding.cc): one session class behind both
//   InferenceSession (ONNX Runtime's API: declared inputs and outputs) and
//   Session (TensorFlow's: tensor names), and the run controls (ONNX
//   Runtime's RunOptions.terminate, Ctrl-C);
// - BindTune (tune_binding.cc): _tune(source, feeds, cores, timeout_ms),
//   which returns the result as `weft tune --json` prints it (src/tune/);
//   the Python layer wraps it in weft.TuneResult.
// BindGraph is declared with the class it binds, in graph_binding.h.
#ifndef WEFT_PYTHON_SRC_BINDINGS_H_
#define WEFT_PYTHON_SRC_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace weft::python {

void BindSession(pybind11::module_& m);
void BindTune(pybind11::module_& m);
// weft.data's core (data_binding.cc): _Dataset and _Iterator.
void BindData(pybind11::module_& m);
// weft.predict's core (predict_binding.cc): _PredictModel and _predict.
void BindPredict(pybind11::module_& m);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_BINDINGS_H_
