// weft's sessions for Python: one class behind both InferenceSession
// (ONNX Runtime's API: declared inputs and outputs) and Session
// (TensorFlow's: tensor names), and the run controls (ONNX Runtime's
// RunOptions.terminate, Ctrl-C).
#ifndef WEFT_PYTHON_SRC_SESSION_BINDING_H_
#define WEFT_PYTHON_SRC_SESSION_BINDING_H_

#include <pybind11/pybind11.h>

namespace weft::python {

void BindSession(pybind11::module_& m);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_SESSION_BINDING_H_
