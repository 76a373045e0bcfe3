// Named resources of a session (FIFO queues), shared by every Run of it and
// destroyed with it.
#ifndef WEFT_SRC_FRAMEWORK_RESOURCES_H_
#define WEFT_SRC_FRAMEWORK_RESOURCES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "threading/mutex.h"
#include "weft/status.h"

namespace weft::internal {

class Resource {
 public:
  virtual ~Resource() = default;
  // What kind of resource this is, for error messages ("FIFO queue").
  virtual const char* kind() const = 0;
};

class ResourceMgr {
 public:
  // The resource named `name`; made by `make` the first time. Thread-safe.
  // An error if `name` holds a resource of another type.
  template <class T>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(
      const std::string& name,
      const std::function<StatusOr<std::shared_ptr<T>>()>& make) {
    MutexLock lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<T> made, make());
      resources_.emplace(name, made);
      return made;
    }
    if (auto typed = std::dynamic_pointer_cast<T>(it->second)) return typed;
    return InvalidArgumentError("resource '" + name + "' is a " +
                                it->second->kind() + ", not what this op uses");
  }

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<Resource>> resources_
      WEFT_GUARDED_BY(mu_);
};

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_RESOURCES_H_
