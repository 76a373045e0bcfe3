#include "framework/op_registry_impl.h"
namespace weft::internal {
void RegisterNnOps(OpRegistry&) {}
}  // namespace weft::internal
