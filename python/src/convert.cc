#include "convert.h"

#include <Python.h>

#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "weft/container.h"

namespace weft::python {
namespace {

struct DtypeInfo {
  DataType dtype;
  const char* numpy;  // NumPy's dtype name.
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

const DtypeInfo* InfoOfNumpyName(const std::string& name) {
  for (const DtypeInfo& info : kDtypes) {
    if (name == info.numpy) return &info;
  }
  return nullptr;
}

// Drops a reference to a Python object from any thread, GIL held or not:
// the release callback of a tensor over a NumPy array, which the last
// holder of the tensor runs wherever it is (often a pool thread).
void ReleaseFromAnyThread(PyObject* object) {
  // At interpreter exit the object goes with everything else; taking the
  // GIL then could hang.
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF(object);
  PyGILState_Release(state);
}

}  // namespace

namespace {

constexpr char kStashTag[] = "(python exception ";

struct StashedException {
  py::object type, value, trace;
};

// Ids to exceptions, oldest first; never destroyed (Python may be gone at
// exit). Guarded by the GIL.
std::map<int64_t, StashedException>& Stash() {
  static auto* stash = new std::map<int64_t, StashedException>;
  return *stash;
}

// The kept exception whose tag ends `message`, taken out of the stash;
// *rest gets the message without the tag.
std::optional<StashedException> TakeStashed(const std::string& message,
                                            std::string* rest) {
  const size_t at = message.rfind(kStashTag);
  if (at == std::string::npos || message.back() != ')') return std::nullopt;
  const std::string digits =
      message.substr(at + sizeof(kStashTag) - 1,
                     message.size() - 1 - at - (sizeof(kStashTag) - 1));
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  auto& stash = Stash();
  auto it = stash.find(std::stoll(digits));
  if (it == stash.end()) return std::nullopt;
  StashedException found = std::move(it->second);
  stash.erase(it);
  *rest = message.substr(0, at);
  while (!rest->empty() && (rest->back() == ' ' || rest->back() == '\n')) {
    rest->pop_back();
  }
  return found;
}

}  // namespace

std::string StashPythonException(py::error_already_set& error) {
  static int64_t next = 0;
  auto& stash = Stash();
  while (stash.size() >= 64) stash.erase(stash.begin());
  const int64_t id = next++;
  stash[id] = {error.type(), error.value(), error.trace()};
  return std::string(kStashTag) + std::to_string(id) + ")";
}

void Raise(const Status& status) {
  std::string without_tag;
  if (std::optional<StashedException> original =
          TakeStashed(status.message(), &without_tag)) {
    // The body's own exception, chained to weft's account of where it
    // happened: `raise original from RuntimeError("... py_function 'f' ...")`.
    py::object cause = py::module_::import("builtins")
                           .attr("RuntimeError")(
                               Status(status.code(), without_tag).ToString());
    PyException_SetCause(original->value.ptr(), cause.release().ptr());
    PyErr_Restore(original->type.release().ptr(),
                  original->value.release().ptr(),
                  original->trace.release().ptr());
    throw py::error_already_set();
  }
  const std::string message = status.ToString();
  switch (status.code()) {
    case StatusCode::kDeadlineExceeded:
      RaiseMessage(PyExc_TimeoutError, message);
    case StatusCode::kResourceExhausted:
      RaiseMessage(PyExc_MemoryError, message);
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:  // An unknown op (a missing file is checked
                                 // first, in Python: FileNotFoundError).
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
    case StatusCode::kOutOfRange:
      RaiseMessage(PyExc_ValueError, message);
    default:
      RaiseMessage(PyExc_RuntimeError, message);
  }
}

void SetErrorMessage(PyObject* type, const char* message) {
  PyObject* text = PyUnicode_DecodeUTF8(
      message, static_cast<Py_ssize_t>(std::strlen(message)),
      "backslashreplace");
  if (text == nullptr) return;  // Out of memory: that is the error set.
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

void RaiseMessage(PyObject* type, const std::string& message) {
  SetErrorMessage(type, message.c_str());
  throw py::error_already_set();
}

void InstallMessageTranslator() {
  // Tried before pybind11's own translator, which an exception not caught
  // here reaches.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const py::value_error& e) {
      SetErrorMessage(PyExc_ValueError, e.what());
    } catch (const py::key_error& e) {
      SetErrorMessage(PyExc_KeyError, e.what());
    } catch (const py::type_error& e) {
      SetErrorMessage(PyExc_TypeError, e.what());
    }
  });
}

py::str NameToPython(const std::string& name) {
  PyObject* text = PyUnicode_DecodeUTF8(
      name.data(), static_cast<Py_ssize_t>(name.size()), "surrogateescape");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

std::string NameFromPython(py::handle name) {
  const py::str text(name);
  PyObject* bytes =
      PyUnicode_AsEncodedString(text.ptr(), "utf-8", "surrogateescape");
  if (bytes == nullptr) throw py::error_already_set();  // A surrogate pair.
  const auto held = py::reinterpret_steal<py::bytes>(bytes);
  return std::string(held);
}

const char* NumpyName(DataType dtype) { return InfoOf(dtype).numpy; }

std::string OnnxTypeName(DataType dtype) {
  if (IsOptionalType(dtype)) {
    return "optional(" + OnnxTypeName(ContainedType(dtype)) + ")";
  }
  if (IsSequenceType(dtype)) {
    return "seq(" + OnnxTypeName(ContainedType(dtype)) + ")";
  }
  // Not in kDtypes: NumPy holds strings as objects, which FromNumpy must
  // not take for string elements (StringsFromPython converts them).
  if (dtype == DataType::kString) return "tensor(string)";
  if (dtype == DataType::kBFloat16) return "tensor(bfloat16)";
  if (dtype == DataType::kInt4) return "tensor(int4)";
  if (dtype == DataType::kUInt4) return "tensor(uint4)";
  if (dtype == DataType::kFloat8E4M3FN) return "tensor(float8e4m3fn)";
  if (dtype == DataType::kFloat8E4M3FNUZ) return "tensor(float8e4m3fnuz)";
  if (dtype == DataType::kFloat8E5M2) return "tensor(float8e5m2)";
  if (dtype == DataType::kFloat8E5M2FNUZ) return "tensor(float8e5m2fnuz)";
  return InfoOf(dtype).onnx;
}

DataType DtypeFromPython(py::handle dtype, const std::string& what) {
  // Strings: TensorFlow's name, or NumPy's text and object dtypes.
  if (py::isinstance<py::str>(dtype) && dtype.cast<std::string>() == "string") {
    return DataType::kString;
  }
  py::dtype numpy_dtype;
  try {
    numpy_dtype =
        py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  } catch (py::error_already_set&) {
    throw py::value_error(what + ": " + py::repr(dtype).cast<std::string>() +
                          " is not a dtype");
  }
  const char kind = numpy_dtype.kind();
  if (kind == 'U' || kind == 'S' || kind == 'O') return DataType::kString;
  const std::string name = py::str(numpy_dtype).cast<std::string>();
  const DtypeInfo* info = InfoOfNumpyName(name);
  if (info == nullptr) {
    throw py::value_error(what + ": dtype " + name + " is not one weft has");
  }
  return info->dtype;
}

py::array ToNumpy(const Tensor& tensor, bool read_only) {
  const bool writable = !read_only && tensor.RefCountIsOne();
  auto* owned = new Tensor(tensor);
  py::capsule base(owned, [](void* p) { delete static_cast<Tensor*>(p); });
  const std::vector<int64_t> dims = tensor.shape().dims();
  const std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  py::array array(py::dtype(NumpyName(tensor.dtype())), shape,
                  owned->raw_data(), base);
  if (!writable) {
    py::detail::array_proxy(array.ptr())->flags &=
        ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  }
  return array;
}

namespace {

// A string tensor as a NumPy array of Python str (bytes where an element
// is not UTF-8), dtype object, as ONNX Runtime returns strings.
py::object StringsToPython(const Tensor& tensor) {
  py::list items;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    const std::string& s = tensor.data<std::string>()[i];
    PyObject* text = PyUnicode_DecodeUTF8(s.data(), s.size(), nullptr);
    if (text == nullptr) {
      PyErr_Clear();
      items.append(py::bytes(s));
    } else {
      items.append(py::reinterpret_steal<py::object>(text));
    }
  }
  py::module_ np = py::module_::import("numpy");
  py::object array = np.attr("empty")(tensor.NumElements(), "object");
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    array[py::int_(i)] = items[i];
  }
  py::tuple shape(tensor.shape().rank());
  for (int i = 0; i < tensor.shape().rank(); ++i) {
    shape[i] = py::int_(tensor.shape().dim(i));
  }
  return array.attr("reshape")(shape);
}

// A string tensor from an array or list of str (UTF-8) or bytes.
Tensor StringsFromPython(const std::string& what, py::handle value) {
  py::module_ np = py::module_::import("numpy");
  py::array array = np.attr("asarray")(value, "object");
  const std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  StatusOr<Tensor> tensor = Tensor::Create(DataType::kString, Shape(dims));
  if (!tensor.ok())
    throw py::value_error(what + ": " + tensor.status().message());
  py::object flat = array.attr("ravel")();
  std::string* out = tensor->data<std::string>();
  for (int64_t i = 0; i < tensor->NumElements(); ++i) {
    py::object item = flat[py::int_(i)];
    if (py::isinstance<py::bytes>(item)) {
      out[i] = item.cast<std::string>();
    } else if (py::isinstance<py::str>(item)) {
      out[i] = item.cast<std::string>();  // UTF-8.
    } else {
      throw py::value_error(what + ": element " + std::to_string(i) + " is a " +
                            py::str(py::type::of(item)).cast<std::string>() +
                            ", not str or bytes");
    }
  }
  return *std::move(tensor);
}

// Whether a value given without an expected dtype holds text.
bool HoldsText(py::handle value) {
  py::array array = py::array::ensure(value);
  if (!array) return false;
  const char kind = array.dtype().kind();
  return kind == 'U' || kind == 'S' ||
         (kind == 'O' && array.size() > 0 &&
          (py::isinstance<py::str>(array.attr("flat")[py::int_(0)]) ||
           py::isinstance<py::bytes>(array.attr("flat")[py::int_(0)])));
}

}  // namespace

py::object ToPython(const Tensor& tensor) {
  if (tensor.dtype() == DataType::kString) return StringsToPython(tensor);
  if (tensor.dtype() != DataType::kString && IsListedOnlyType(tensor.dtype())) {
    throw py::value_error(std::string("an output of dtype ") +
                          DataTypeName(tensor.dtype()) +
                          " has no NumPy dtype; Cast it to a NumPy type in "
                          "the model");
  }
  if (IsOptionalType(tensor.dtype())) {
    const Tensor* value = OptionalValue(tensor);
    return value == nullptr ? py::object(py::none()) : ToPython(*value);
  }
  if (IsSequenceType(tensor.dtype())) {
    py::list items;
    // Items may be shared with other sequences and fetches: read-only.
    for (const Tensor& item : SequenceItems(tensor)) {
      items.append(item.dtype() == DataType::kString
                       ? StringsToPython(item)
                       : py::object(ToNumpy(item, /*read_only=*/true)));
    }
    return items;
  }
  return ToNumpy(tensor);
}

Tensor ValueFromPython(const std::string& what, py::handle value,
                       std::optional<DataType> expected) {
  if (expected == DataType::kString || (!expected && HoldsText(value))) {
    return StringsFromPython(what, value);
  }
  if (expected && *expected != DataType::kString &&
      IsListedOnlyType(*expected)) {
    throw py::value_error(what + ": an input of dtype " +
                          DataTypeName(*expected) +
                          " has no NumPy dtype; feed a NumPy type and Cast "
                          "it in the model");
  }
  if (!expected || !IsContainerType(*expected)) {
    return FromNumpy(what, value, expected);
  }
  StatusOr<Tensor> made = InvalidArgumentError("");
  if (IsOptionalType(*expected)) {
    const DataType inner = ContainedType(*expected);
    made = value.is_none()
               ? MakeOptional(inner, std::nullopt)
               : MakeOptional(inner, ValueFromPython(what, value, inner));
  } else {
    if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) {
      throw py::value_error(what + ": expected a list of arrays for a " +
                            OnnxTypeName(*expected) + " input, got " +
                            py::str(py::type::of(value)).cast<std::string>());
    }
    std::vector<Tensor> items;
    int i = 0;
    for (py::handle item : value) {
      items.push_back(ValueFromPython(what + " item " + std::to_string(i++),
                                      item, ContainedType(*expected)));
    }
    made = MakeSequence(ContainedType(*expected), std::move(items));
  }
  if (!made.ok()) throw py::value_error(what + ": " + made.status().message());
  return *std::move(made);
}

Tensor FromNumpy(const std::string& what, py::handle value,
                 std::optional<DataType> expected, bool cast) {
  py::array array;
  // A list, a tuple or a Python scalar is converted to the input's dtype as
  // np.asarray(value, dtype) would (docs/python.md); an array of another
  // dtype is refused unless `cast`, as ONNX Runtime refuses it.
  const py::module_ np = py::module_::import("numpy");
  const bool listed_or_scalar =
      py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value) ||
      py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) ||
      py::isinstance<py::bool_>(value) ||
      py::isinstance(value, np.attr("generic"));
  if (expected && (cast || listed_or_scalar)) {
    array = py::array::ensure(value);
    const py::dtype target(NumpyName(*expected));
    if (!array || !array.dtype().equal(target)) {
      // np.asarray(value, dtype): a list, a scalar or another dtype,
      // converted once.
      try {
        array = np.attr("asarray")(value, target);
      } catch (py::error_already_set& e) {
        throw py::value_error(what + ": cannot convert it to " +
                              NumpyName(*expected) +
                              " as np.asarray would: " + e.what());
      }
    }
  } else {
    array = py::array::ensure(value);
  }
  if (!array) {
    throw py::value_error(what +
                          ": expected a NumPy array (or something "
                          "np.asarray takes), got " +
                          py::str(py::type::of(value)).cast<std::string>());
  }
  const std::string given = py::str(array.dtype()).cast<std::string>();
  const DtypeInfo* info = InfoOfNumpyName(given);
  if (expected && (info == nullptr || info->dtype != *expected)) {
    throw py::value_error(what + ": expected dtype " + NumpyName(*expected) +
                          ", got " + given);
  }
  if (info == nullptr) {
    throw py::value_error(what + ": dtype " + given + " is not one weft has");
  }
  const int flags = array.flags();
  const bool in_place = (flags & py::array::c_style) != 0 &&
                        (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  if (!in_place) {
    // Non-contiguous or misaligned (a C-contiguous array unpickled from a
    // buffer at an odd offset, as a Dask worker receives blocks): one copy,
    // into a weft buffer, which from 128 KiB up is one weft's cache holds,
    // its pages mapped. A NumPy array there was a fresh mmap each Run in a
    // Dask worker (its nanny fixes glibc's mmap threshold), every page
    // faulting: the two-tower MLP's Runs over a job's 20,000 rows took
    // 0.60-0.74 s so, 0.45 from aligned blocks (Zen 5 guest, 2026-12-03).
    StatusOr<Tensor> copy =
        Tensor::CreateUninitialized(info->dtype, Shape(dims));
    if (!copy.ok()) {
      throw py::value_error(what + ": " + copy.status().message());
    }
    np.attr("copyto")(ToNumpy(*copy), array);
    return *std::move(copy);
  }
  PyObject* object = array.ptr();
  Py_INCREF(object);  // Released by the tensor's last holder.
  StatusOr<Tensor> tensor = Tensor::WrapExternal(
      info->dtype, Shape(dims), const_cast<void*>(array.data()),
      [object] { ReleaseFromAnyThread(object); });
  if (!tensor.ok()) {
    throw py::value_error(what + ": " + tensor.status().message());
  }
  return *std::move(tensor);
}

}  // namespace weft::python
