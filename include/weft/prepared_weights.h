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

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

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

// A constant's prepared form made by the first Run that reads the
// constant, not when the kernel is built, and shared through the session's
// cache (where there is one) with the same kernel of its other compiles.
// A session whose feeds leave a shape open builds its graph at creation
// and again per feed shape at the first Run with that shape: preparing
// when the kernel is built is work and memory for a graph that may never
// run, and preparing per kernel makes a copy per batch size.
//
//   In the constructor: packed_.Set(c.prepared_weights(), *w, "MyConv");
//   In Compute, where packed_.Is(w):
//     const Packed* p = packed_.Get([](const Tensor& w) { return Pack(w); });
template <class T>
class PreparedOnFirstRun {
 public:
  // Nothing to prepare until Set: Get() returns null.
  PreparedOnFirstRun() = default;
  PreparedOnFirstRun(const PreparedOnFirstRun&) = delete;
  PreparedOnFirstRun& operator=(const PreparedOnFirstRun&) = delete;

  // The constant to prepare, in the kernel's constructor (before any Get):
  // `recipe` as for PreparedWeights::GetOrMake; `cache` may be null.
  void Set(PreparedWeights* cache, const Tensor& source, std::string recipe) {
    cache_ = cache;
    source_ = source;
    recipe_ = std::move(recipe);
  }

  // Whether there is a constant to prepare, and `source` is it (a Run may
  // feed a tensor in place of the constant's node).
  bool Is(const Tensor& source) const {
    return source_.has_value() && source.raw_data() == source_->raw_data();
  }
  // The constant it prepares (null: none).
  const Tensor* source() const {
    return source_.has_value() ? &*source_ : nullptr;
  }

  // The form, made by `make(constant)` the first time any kernel asks for
  // it; null where there is no constant or `make` returned null. Callers
  // at once wait for the one making it. `make` runs under the cache's lock
  // (PreparedWeights::GetOrMake's rules).
  template <class Make>
  const T* Get(const Make& make) const {
    if (!source_.has_value()) return nullptr;
    std::call_once(once_, [&] {
      form_ = PreparedOrMade<T>(cache_, *source_, recipe_,
                                [&] { return make(*source_); });
      ready_.store(true, std::memory_order_release);
    });
    return form_.get();
  }
  // The form if made already, else null; never waits (prepared_bytes()).
  const T* IfMade() const {
    return ready_.load(std::memory_order_acquire) ? form_.get() : nullptr;
  }

 private:
  PreparedWeights* cache_ = nullptr;
  std::optional<Tensor> source_;
  std::string recipe_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const T> form_;
  mutable std::atomic<bool> ready_{false};
};

}  // namespace weft

#endif  // WEFT_PREPARED_WEIGHTS_H_
