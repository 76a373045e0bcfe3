// The built-in op list: every op family registers itself here, once, when
// OpRegistry::Global() is first used. A new family (a file in src/ops/)
// adds its Register*Ops declaration to ops/registry.h and a
// line below.
#include "ops/registry.h"

#include "framework/op_registry_impl.h"

namespace weft::internal {

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterMathOps(registry);
  RegisterElementwiseOps(registry);
  RegisterNormalizationOps(registry);
  RegisterShapeOps(registry);
  RegisterMatMulOps(registry);
  RegisterReduceOps(registry);
  RegisterRandomOps(registry);
  RegisterControlOps(registry);
  RegisterControlFlowOps(registry);
  RegisterContainerOps(registry);
  RegisterCustomOps(registry);
  RegisterQueueOps(registry);
  RegisterReshapeOps(registry);
  RegisterLogicOps(registry);
  RegisterActivationOps(registry);
  RegisterIndexOps(registry);
  RegisterConvOps(registry);
  RegisterPoolOps(registry);
  RegisterNhwcOps(registry);
  RegisterLossOps(registry);
  RegisterResizeOps(registry);
  RegisterRnnOps(registry);
  RegisterSignalOps(registry);
  RegisterSpectralOps(registry);
  RegisterTextOps(registry);
  RegisterStringOps(registry);
  RegisterOptimizerOps(registry);
  RegisterSequenceIndexOps(registry);
  RegisterLinalgOps(registry);
  RegisterQuantizeOps(registry);
  RegisterMatMulNBitsOps(registry);
  RegisterQuantizedConvOps(registry);
  RegisterQuantizedConvNhwcOps(registry);
  RegisterQuantizedAddOps(registry);
  RegisterRoiOps(registry);
  RegisterDetectionOps(registry);
  RegisterGridSampleOps(registry);
  RegisterDeformConvOps(registry);
  RegisterImageOps(registry);
  RegisterAttentionOps(registry);
}

}  // namespace weft::internal
