// weft.tune()'s core: _tune(source, feeds, cores, timeout_ms) returns the
// result as `weft tune --json` prints it (src/tune/); the Python layer
// wraps it in weft.TuneResult.
#ifndef WEFT_PYTHON_SRC_TUNE_BINDING_H_
#define WEFT_PYTHON_SRC_TUNE_BINDING_H_

#include <pybind11/pybind11.h>

namespace weft::python {

void BindTune(pybind11::module_& m);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_TUNE_BINDING_H_
