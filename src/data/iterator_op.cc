// IteratorGetNext (TensorFlow's name): a graph node that takes the next
// element of a dataset registered under a name (RegisterIterator), so that
// one Run reads its batch itself and, through inter-op parallelism alone,
// loads the next batch while computing this one.
//
// A blocking op: it runs on the blocking pool, so a node waiting for its
// element holds no inter-op worker (a graph at inter_op = 1 whose pipeline
// runs on the same pool cannot deadlock). Nodes reading one iterator take
// its elements one at a time, in the dataset's order.
#include <map>

#include "threading/mutex.h"
#include "weft/data.h"
#include "weft/kernel.h"
#include "weft/op_registry.h"

namespace weft::data {
namespace {

using weft::internal::Mutex;
using weft::internal::MutexLock;

struct NamedIterator {
  Mutex mu;  // One GetNext at a time.
  std::unique_ptr<Iterator> iterator;
};

class IteratorTable {
 public:
  static IteratorTable& Global() {
    static auto* table = new IteratorTable();  // Never destroyed.
    return *table;
  }

  Status Add(const std::string& name, std::unique_ptr<Iterator> iterator) {
    auto entry = std::make_shared<NamedIterator>();
    entry->iterator = std::move(iterator);
    MutexLock lock(mu_);
    if (!entries_.emplace(name, std::move(entry)).second) {
      return AlreadyExistsError("an iterator named '" + name +
                                "' is registered already");
    }
    return Status::OK();
  }

  Status Remove(const std::string& name) {
    std::shared_ptr<NamedIterator> gone;
    {
      MutexLock lock(mu_);
      auto it = entries_.find(name);
      if (it == entries_.end()) {
        return NotFoundError("no iterator named '" + name + "'");
      }
      gone = std::move(it->second);
      entries_.erase(it);
    }
    return Status::OK();  // Destroyed here, outside the table's lock.
  }

  std::shared_ptr<NamedIterator> Find(const std::string& name) {
    MutexLock lock(mu_);
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<NamedIterator>> entries_
      WEFT_GUARDED_BY(mu_);
};

class IteratorGetNextKernel : public OpKernel {
 public:
  explicit IteratorGetNextKernel(const KernelConstruction& c)
      : name_(c.attr<std::string>("iterator")),
        types_(c.attr<std::vector<DataType>>("output_types")) {}

  Status Compute(KernelContext& ctx) const override {
    std::shared_ptr<NamedIterator> entry = IteratorTable::Global().Find(name_);
    if (entry == nullptr) {
      return NotFoundError("no iterator named '" + name_ +
                           "' (weft::data::RegisterIterator, "
                           "weft.data.register_iterator)");
    }
    Element element;
    bool end = false;
    {
      MutexLock lock(entry->mu);
      WEFT_RETURN_IF_ERROR(entry->iterator->GetNext(&element, &end));
    }
    if (end) {
      return OutOfRangeError("end of sequence of iterator '" + name_ + "'");
    }
    if (element.size() != types_.size()) {
      return InvalidArgumentError(
          "iterator '" + name_ + "' gave " + std::to_string(element.size()) +
          " components, output_types lists " + std::to_string(types_.size()));
    }
    for (size_t i = 0; i < element.size(); ++i) {
      if (element[i].dtype() != types_[i]) {
        return InvalidArgumentError(
            "iterator '" + name_ + "': component " + std::to_string(i) +
            " is " + DataTypeName(element[i].dtype()) + ", output_types says " +
            DataTypeName(types_[i]));
      }
      WEFT_RETURN_IF_ERROR(
          ctx.SetOutput(static_cast<int>(i), std::move(element[i])));
    }
    return Status::OK();
  }

 private:
  std::string name_;
  std::vector<DataType> types_;
};

// Registered with the first iterator: the op belongs to the data floor,
// above the built-in op table.
Status EnsureOpRegistered() {
  static const Status registered = [] {
    WEFT_RETURN_IF_ERROR(RegisterOp(
        OpDefBuilder("IteratorGetNext")
            .Output(ArgDef::TypeList("components", "output_types"))
            .Attr("iterator", AttrType::kString)
            .Attr("output_types", AttrType::kListType)
            .AcceptsAnyValue("output_types")
            .SetBlocking()
            .SetStateful()
            .Summary("the next element of a registered dataset iterator "
                     "(a blocking op)")
            .Build()));
    return RegisterKernel("IteratorGetNext",
                          KernelFactoryFor<IteratorGetNextKernel>());
  }();
  return registered;
}

}  // namespace

Status RegisterIterator(const std::string& name, const Dataset& dataset,
                        IteratorOptions options) {
  WEFT_RETURN_IF_ERROR(EnsureOpRegistered());
  if (name.empty()) return InvalidArgumentError("an iterator needs a name");
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> iterator,
                        dataset.MakeIterator(std::move(options)));
  return IteratorTable::Global().Add(name, std::move(iterator));
}

Status UnregisterIterator(const std::string& name) {
  return IteratorTable::Global().Remove(name);
}

}  // namespace weft::data
