// The process-wide registry of ops, kernels and custom functions.
#ifndef WEFT_SRC_FRAMEWORK_OP_REGISTRY_IMPL_H_
#define WEFT_SRC_FRAMEWORK_OP_REGISTRY_IMPL_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "threading/mutex.h"
#include "weft/graph.h"
#include "weft/kernel.h"
#include "weft/op_registry.h"

namespace weft::internal {

// For a 2-D convolution node: the attributes of the NhwcConv that computes
// the same output channels-last, given the shapes of its NCHW input `x`
// and of its constant filter `w`; nullopt where NhwcConv cannot (oneDNN
// has no optimised kernel for it, or the node's attributes are invalid).
using ChannelsLastConvFn = std::function<std::optional<AttrMap>(
    const NodeDef& node, const Shape& x, const Shape& w)>;

// One op's one-line summary, for `weft ops` and docs/ops.md: each op family
// (src/ops/) lists its own beside its schemas and kernels.
struct OpSummary {
  std::string_view op;
  std::string_view text;
};

// Thread-safe. Entries are never removed, so returned pointers stay valid.
class OpRegistry {
 public:
  // The registry, with weft's built-in ops and kernels registered.
  static OpRegistry& Global();

  // A family's summaries, given before its ops: RegisterOp gives an op
  // registered without one its line from here.
  void AddSummaries(std::span<const OpSummary> summaries);
  // Every op a family gave a summary for (the test that keeps the lists
  // complete checks each is registered).
  std::vector<std::string> OpsWithSummary() const;

  Status RegisterOp(OpDef def);
  Status RegisterKernel(const std::string& op, KernelFactory factory);
  Status RegisterCustomFunction(const std::string& name, CustomFunction fn);

  // Facts about ops that graph passes (src/optimize/) read here, so that
  // no pass includes an op's header; the op families that know them
  // (src/ops/) register them with their ops.
  //
  // `op` is an element-wise activation that a fused kernel (FusedConv,
  // FusedGemm) applies to its output tile exactly as `op`'s own kernel
  // does, so the fusion pass may fold it in.
  void MarkFusableActivation(const std::string& op);
  bool IsFusableActivation(std::string_view op) const;
  // `op` has a channels-last form on this CPU (the nhwc-layout pass);
  // registered only where NhwcConv's oneDNN kernels run.
  void SetChannelsLastConv(const std::string& op, ChannelsLastConvFn fn);
  const ChannelsLastConvFn* FindChannelsLastConv(std::string_view op) const;
  // Set where the float forms above pay only in graphs that hold a
  // depthwise convolution (oneDNN's AVX2 kernels, docs/kernels.md): the
  // pass then leaves every other graph in NCHW.
  void SetChannelsLastOnlyWithDepthwise(bool only);
  bool ChannelsLastOnlyWithDepthwise() const;

  const OpDef* FindOp(std::string_view name) const;
  std::vector<const OpDef*> AllOps() const;  // By name.
  const KernelFactory* FindKernel(const std::string& op) const;
  const CustomFunction* FindCustomFunction(const std::string& name) const;

 private:
  OpRegistry() = default;

  mutable SharedMutex mu_;
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_
      WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<KernelFactory>> kernels_
      WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<CustomFunction>> functions_
      WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> summaries_
      WEFT_GUARDED_BY(mu_);
  std::set<std::string, std::less<>> fusable_activations_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<ChannelsLastConvFn>, std::less<>>
      channels_last_convs_ WEFT_GUARDED_BY(mu_);
  bool channels_last_only_with_depthwise_ WEFT_GUARDED_BY(mu_) = false;
};

// Registers every built-in op family. Defined by the op floor
// (src/ops/registry.cc), the one function of a floor above that this one
// calls: the registry is filled on first use, whoever uses it first.
void RegisterBuiltinOps(OpRegistry& registry);

// Registration of built-ins cannot fail unless weft itself is broken.
void CheckRegistered(const Status& status);

}  // namespace weft::internal

#endif  // WEFT_SRC_FRAMEWORK_OP_REGISTRY_IMPL_H_
