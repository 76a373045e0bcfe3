// Node attributes: typed values, read through the op's attribute schema.
#ifndef WEFT_ATTR_H_
#define WEFT_ATTR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

struct Subgraph;  // weft/graph.h
using SubgraphPtr = std::shared_ptr<const Subgraph>;

enum class AttrType {
  kInt,
  kFloat,
  kBool,
  kString,
  kType,
  kShape,
  kTensor,
  kGraph,  // A subgraph a node calls (weft/graph.h, Subgraph).
  kListInt,
  kListFloat,
  kListBool,
  kListString,
  kListType,
  kListShape,
  kListTensor,
};

const char* AttrTypeName(AttrType type);  // "int", "list(float)", ...

// One attribute value. The variant's alternatives are in AttrType's order.
class AttrValue {
 public:
  using Variant =
      std::variant<int64_t, double, bool, std::string, DataType, PartialShape,
                   Tensor, SubgraphPtr, std::vector<int64_t>,
                   std::vector<double>, std::vector<bool>,
                   std::vector<std::string>, std::vector<DataType>,
                   std::vector<PartialShape>, std::vector<Tensor>>;

  AttrValue() = default;
  // Implicit conversions keep graph-building code short: attrs{{"seed", 7}}.
  AttrValue(int v) : value_(static_cast<int64_t>(v)) {}             // NOLINT
  AttrValue(int64_t v) : value_(v) {}                               // NOLINT
  AttrValue(double v) : value_(v) {}                                // NOLINT
  AttrValue(bool v) : value_(v) {}                                  // NOLINT
  AttrValue(const char* v) : value_(std::string(v)) {}              // NOLINT
  AttrValue(std::string v) : value_(std::move(v)) {}                // NOLINT
  AttrValue(DataType v) : value_(v) {}                              // NOLINT
  AttrValue(PartialShape v) : value_(std::move(v)) {}               // NOLINT
  AttrValue(const Shape& v) : value_(PartialShape(v)) {}            // NOLINT
  AttrValue(Tensor v) : value_(std::move(v)) {}                     // NOLINT
  AttrValue(SubgraphPtr v) : value_(std::move(v)) {}                // NOLINT
  AttrValue(std::vector<int64_t> v) : value_(std::move(v)) {}       // NOLINT
  AttrValue(std::vector<double> v) : value_(std::move(v)) {}        // NOLINT
  AttrValue(std::vector<bool> v) : value_(std::move(v)) {}          // NOLINT
  AttrValue(std::vector<std::string> v) : value_(std::move(v)) {}   // NOLINT
  AttrValue(std::vector<DataType> v) : value_(std::move(v)) {}      // NOLINT
  AttrValue(std::vector<PartialShape> v) : value_(std::move(v)) {}  // NOLINT
  AttrValue(std::vector<Tensor> v) : value_(std::move(v)) {}        // NOLINT

  AttrType type() const { return static_cast<AttrType>(value_.index()); }
  const Variant& variant() const { return value_; }

  template <class T>
  const T* get_if() const {
    return std::get_if<T>(&value_);
  }

  // Human-readable, for error messages: 7, 0.5, "abc", float32, [2, 3].
  std::string DebugString() const;

 private:
  Variant value_;
};

using AttrMap = std::map<std::string, AttrValue>;

// Attribute `name` of attrs as a T, or a Status naming what is wrong: the
// attribute is missing, or holds another type.
template <class T>
StatusOr<const T*> FindAttr(const AttrMap& attrs, const std::string& name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) {
    return NotFoundError("no attribute '" + name + "'");
  }
  if (const T* value = it->second.get_if<T>()) return value;
  return InvalidArgumentError("attribute '" + name + "' is " +
                              AttrTypeName(it->second.type()) + ", read as " +
                              AttrTypeName(AttrValue(T{}).type()));
}

// What KernelConstruction::attr and InferenceContext::attr share: the
// attribute, or, when it is missing or of another type, an empty T and the
// error kept in *first_error (if that holds none yet). The caller (the
// graph compiler) fails with that error once the kernel factory or shape
// function returns; no exception or null dereference reaches the caller.
template <class T>
const T& AttrOrRecordError(const AttrMap& attrs, const std::string& name,
                           Status* first_error) {
  StatusOr<const T*> found = FindAttr<T>(attrs, name);
  if (found.ok()) return **found;
  if (first_error->ok()) *first_error = found.status();
  static const T kEmpty{};
  return kEmpty;
}

}  // namespace weft

#endif  // WEFT_ATTR_H_
