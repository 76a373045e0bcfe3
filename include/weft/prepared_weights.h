// PreparedWeights: the forms kernels prepare from constant inputs (a weight
// packed for a micro-kernel, transformed for Winograd), shared by the
// kernels of one session that prepare the same constant the same way.
//
// A session whose feeds leave shapes open compiles its graph again for each
// set of feed shapes it meets (a batching server meets every batch size),
// and each compile builds its kernels anew. Where a kernel's prepared form
// does not depend on the shape that changed, it asks for the form here and
// every compile after the first finds it made.
//
//   std::shared_ptr<const Packed> packed = PreparedOrMade<Packed>(
//       c.prepared_weights(), *w, "MyConv/block=64",
//       [&] { return Pack(*w, 64); });
#ifndef WEFT_PREPARED_WEIGHTS_H_
#define WEFT_PREPARED_WEIGHTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "weft/tensor.h"

namespace weft {

class PreparedWeights {
 public:
  PreparedWeights();
  ~PreparedWeights();
  PreparedWeights(const PreparedWeights&) = delete;
  PreparedWeights& operator=(const PreparedWeights&) = delete;

  // The form of the constant `source` that `recipe` names, made by `make`
  // the first time (source, recipe) is asked for and the same object after.
  // `recipe` names everything the form depends on besides the constant's
  // bytes (the kernel, its layout and block sizes), and one type T only.
  // The constant is told apart by its buffer, dtype and shape, not by its
  // contents: two equal constants are prepared twice. The cache holds a
  // reference to `source`'s buffer while it lives, so that no other
  // constant can take its address while the entry can be found.
  //
  // T must have `int64_t bytes() const` (the memory the form holds, for
  // bytes()). `make` runs under the cache's lock, at most once per
  // (source, recipe) at a time; it must not call the cache nor wait for
  // another thread that may. What it throws reaches the caller, and a null
  // form is returned; neither is kept. Thread-safe.
  template <class T>
  std::shared_ptr<const T> GetOrMake(
      const Tensor& source, const std::string& recipe,
      const std::function<std::shared_ptr<const T>()>& make) {
    return std::static_pointer_cast<const T>(
        GetOrMakeErased(source, recipe, [&]() -> Made {
          std::shared_ptr<const T> form = make();
          const int64_t bytes = form != nullptr ? form->bytes() : 0;
          return {std::move(form), bytes};
        }));
  }

  // Forms held, and the bytes they hold.
  int64_t size() const;
  int64_t bytes() const;
  // How many GetOrMake calls found their form made.
  int64_t reuses() const;

 private:
  struct Made {
    std::shared_ptr<const void> form;
    int64_t bytes = 0;
  };
  std::shared_ptr<const void> GetOrMakeErased(
      const Tensor& source, const std::string& recipe,
      const std::function<Made()>& make);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `cache`'s form (GetOrMake) where there is a cache, else `make`'s own: what
// a kernel calls with KernelConstruction::prepared_weights(), null outside
// a session.
template <class T>
std::shared_ptr<const T> PreparedOrMade(
    PreparedWeights* cache, const Tensor& source, const std::string& recipe,
    const std::function<std::shared_ptr<const T>()>& make) {
  return cache != nullptr ? cache->GetOrMake<T>(source, recipe, make) : make();
}

}  // namespace weft

#endif  // WEFT_PREPARED_WEIGHTS_H_
