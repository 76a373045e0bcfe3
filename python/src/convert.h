// Between Python and weft: Status -> Python exception, dtypes, and tensors
// <-> NumPy arrays without copies where the memory allows.
#ifndef WEFT_PYTHON_SRC_CONVERT_H_
#define WEFT_PYTHON_SRC_CONVERT_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "warnings_bridge.h"
#include "weft/weft.h"

namespace weft::python {

namespace py = pybind11;

// Raises the Python exception that fits the status (docs/python.md):
// TimeoutError, MemoryError, ValueError or RuntimeError.
[[noreturn]] void Raise(const Status& status);
// A Python exception a py_function body raised, kept so that the run's
// caller gets the same exception back: returns the text to end the
// Status's message with ("(python exception 3)"). Raise() finds it there,
// and raises the kept exception, its type and traceback intact, with a
// RuntimeError naming the node as its __cause__. At most 64 are kept (a
// run whose status never reaches Python drops nothing else). Needs the GIL.
std::string StashPythonException(py::error_already_set& error);

// A graph's name as a Python str. ONNX names are bytes that nothing checks
// for UTF-8 (ONNX Runtime loads a model whose names are not), so a byte
// that does not decode becomes a lone surrogate, as Python decodes file
// names (os.fsdecode's surrogateescape): NameFromPython gives the same
// bytes back, so such a name can be fed and fetched by the str it came as.
py::str NameToPython(const std::string& name);
// A str (or anything str() takes) as the name's bytes: UTF-8, lone
// surrogates from NameToPython back to their bytes.
std::string NameFromPython(py::handle name);

// Sets Python's error to an exception of `type` (PyExc_ValueError, ...)
// whose message is `message`, any byte in it that is not UTF-8 shown as
// \xNN (a graph's name in an error): PyErr_SetString would fail on it and
// raise a UnicodeDecodeError in the error's place. RaiseMessage then
// throws it (py::error_already_set).
void SetErrorMessage(PyObject* type, const char* message);
[[noreturn]] void RaiseMessage(PyObject* type, const std::string& message);
// Has pybind11's exceptions that carry a message (py::value_error, ...)
// set with SetErrorMessage.
void InstallMessageTranslator();

// After every call into the core: its warnings reach Python's `warnings`
// (warnings_bridge.h), then a failed status raises.
inline void Check(const Status& status) {
  FlushWarnings();
  if (!status.ok()) Raise(status);
}

// NumPy's name ("float32") and ONNX Runtime's ("tensor(float)",
// "seq(tensor(float))").
const char* NumpyName(DataType dtype);
std::string OnnxTypeName(DataType dtype);
// A dtype from anything np.dtype() takes (np.float32, "float32", an
// array's dtype). ValueError, naming `what`, for one weft does not have.
DataType DtypeFromPython(py::handle dtype, const std::string& what);

// A NumPy array over the tensor's buffer (no copy): the array keeps the
// buffer alive. Writable only when nothing else holds the buffer (a
// constant of the graph, a feed passed through, a fetch named twice come
// back read-only, so writing one cannot change the graph or the feed).
// `read_only` forces a read-only view (a node's inputs, which later nodes
// and fetches may share).
py::array ToNumpy(const Tensor& tensor, bool read_only = false);
// A fetched value as Python sees it: a tensor as ToNumpy, a sequence as a
// list of read-only arrays, an optional as None or its value (as ONNX
// Runtime's Python API returns them).
py::object ToPython(const Tensor& tensor);
// FromNumpy, and for a container input: a list (or tuple) of arrays for a
// sequence, None or the value for an optional.
Tensor ValueFromPython(const std::string& what, py::handle value,
                       std::optional<DataType> expected);

// A tensor for the value `value` of input `what`. A C-contiguous, aligned
// array of `expected`'s dtype (or, without one, of any dtype weft has) is
// used in place: the tensor holds a reference to it, released when weft is
// done. Other arrays and sequences are converted once; with `cast`, to
// `expected` whatever their dtype, else a dtype other than `expected` is a
// ValueError naming the input, the expected and the given dtype.
Tensor FromNumpy(const std::string& what, py::handle value,
                 std::optional<DataType> expected, bool cast = false);

}  // namespace weft::python

#endif  // WEFT_PYTHON_SRC_CONVERT_H_
