// A non-owning reference to a callable, cheaper than std::function: no
// allocation, one indirect call. The referenced callable must outlive every
// call made through the reference.
#ifndef WEFT_FUNCTION_REF_H_
#define WEFT_FUNCTION_REF_H_

#include <memory>
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

}  // namespace weft

#endif  // WEFT_FUNCTION_REF_H_
