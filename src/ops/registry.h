// The op families of src/ops/, each registering its ops and kernels with
// the registry (one file each); registry.cc calls them all from
// RegisterBuiltinOps.
#ifndef WEFT_SRC_OPS_REGISTRY_H_
#define WEFT_SRC_OPS_REGISTRY_H_

#include "framework/op_registry_impl.h"

namespace weft::internal {

void RegisterArrayOps(OpRegistry& registry);
void RegisterMathOps(OpRegistry& registry);
void RegisterElementwiseOps(OpRegistry& registry);
void RegisterNormalizationOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterMatMulOps(OpRegistry& registry);
void RegisterReduceOps(OpRegistry& registry);
void RegisterRandomOps(OpRegistry& registry);
void RegisterControlOps(OpRegistry& registry);
void RegisterControlFlowOps(OpRegistry& registry);
void RegisterContainerOps(OpRegistry& registry);
void RegisterCustomOps(OpRegistry& registry);
void RegisterQueueOps(OpRegistry& registry);
void RegisterReshapeOps(OpRegistry& registry);
void RegisterLogicOps(OpRegistry& registry);
void RegisterActivationOps(OpRegistry& registry);
void RegisterIndexOps(OpRegistry& registry);
void RegisterConvOps(OpRegistry& registry);
void RegisterPoolOps(OpRegistry& registry);
void RegisterNhwcOps(OpRegistry& registry);
void RegisterLossOps(OpRegistry& registry);
void RegisterResizeOps(OpRegistry& registry);
void RegisterRnnOps(OpRegistry& registry);
void RegisterSignalOps(OpRegistry& registry);
void RegisterSpectralOps(OpRegistry& registry);
void RegisterTextOps(OpRegistry& registry);
void RegisterStringOps(OpRegistry& registry);
void RegisterOptimizerOps(OpRegistry& registry);
void RegisterSequenceIndexOps(OpRegistry& registry);
void RegisterLinalgOps(OpRegistry& registry);
void RegisterQuantizeOps(OpRegistry& registry);
void RegisterMatMulNBitsOps(OpRegistry& registry);
void RegisterQuantizedConvOps(OpRegistry& registry);
void RegisterQuantizedConvNhwcOps(OpRegistry& registry);
void RegisterQuantizedAddOps(OpRegistry& registry);
void RegisterRoiOps(OpRegistry& registry);
void RegisterDetectionOps(OpRegistry& registry);
void RegisterGridSampleOps(OpRegistry& registry);
void RegisterDeformConvOps(OpRegistry& registry);
void RegisterImageOps(OpRegistry& registry);
void RegisterAttentionOps(OpRegistry& registry);

}  // namespace weft::internal

#endif  // WEFT_SRC_OPS_REGISTRY_H_
