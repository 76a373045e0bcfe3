// Non-owning, allocation-free references to callables.
//
// FunctionRef<R(Args...)> refers to a callable: one pointer to it and one to
// a trampoline, so a call is one indirect call. The referenced callable must
// outlive every call made through the reference.
//
// CopyingFunctionRef<R(Args...), N> is the same, except that a callable that
// is trivially copyable and fits in N bytes (a lambda capturing a few
// pointers or references, say) is copied into the reference instead of
// referred to. A thread on another core that calls it then reads the copy,
// which travels with the reference, rather than the caller's stack frame,
// which the caller keeps writing: one cache miss fewer per hand-off.
#ifndef WEFT_FUNCTION_REF_H_
#define WEFT_FUNCTION_REF_H_

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace weft {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, std::enable_if_t<
                         !std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                             std::is_invocable_r_v<R, F&, Args...>,
                         int> = 0>
  FunctionRef(F&& fn) noexcept  // NOLINT(google-explicit-constructor)
      : object_(
            const_cast<void*>(static_cast<const void*>(std::addressof(fn)))),
        invoke_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(
              std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const {
    return invoke_(object_, std::forward<Args>(args)...);
  }

 private:
  void* object_;
  R (*invoke_)(void*, Args...);
};

template <class Signature, size_t N>
class CopyingFunctionRef;

template <class R, class... Args, size_t N>
class CopyingFunctionRef<R(Args...), N> {
 public:
  template <class F, std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>,
                                                      CopyingFunctionRef> &&
                                          std::is_invocable_r_v<R, F&, Args...>,
                                      int> = 0>
  CopyingFunctionRef(F&& fn) noexcept  // NOLINT(google-explicit-constructor)
  {
    using Callable = std::remove_reference_t<F>;
    // A function is held as a pointer to it; anything else as itself.
    using Stored = std::conditional_t<std::is_function_v<Callable>,
                                      std::add_pointer_t<Callable>,
                                      std::remove_cv_t<Callable>>;
    if constexpr (FitsInline<Stored>()) {
      ::new (static_cast<void*>(storage_)) Stored(fn);
      invoke_ = [](void* storage, Args... args) -> R {
        return (*std::launder(static_cast<const Stored*>(storage)))(
            std::forward<Args>(args)...);
      };
    } else {
      void* object =
          const_cast<void*>(static_cast<const void*>(std::addressof(fn)));
      std::memcpy(storage_, &object, sizeof(object));
      invoke_ = [](void* storage, Args... args) -> R {
        void* object;
        std::memcpy(&object, storage, sizeof(object));
        return (*static_cast<Callable*>(object))(std::forward<Args>(args)...);
      };
    }
  }

  R operator()(Args... args) const {
    return invoke_(const_cast<unsigned char*>(storage_),
                   std::forward<Args>(args)...);
  }

 private:
  // Only callables whose call does not modify them are copied: calls of a
  // mutable lambda or a stateful functor keep updating the caller's object.
  template <class T>
  static constexpr bool FitsInline() {
    return sizeof(T) <= N && alignof(T) <= alignof(void*) &&
           std::is_trivially_copyable_v<T> &&
           std::is_trivially_destructible_v<T> &&
           std::is_invocable_r_v<R, const T&, Args...>;
  }
  static_assert(N >= sizeof(void*) && N % sizeof(void*) == 0);

  alignas(void*) unsigned char storage_[N];
  R (*invoke_)(void*, Args...);
};

}  // namespace weft

#endif  // WEFT_FUNCTION_REF_H_
