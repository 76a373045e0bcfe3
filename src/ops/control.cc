// Spin (burns CPU on its thread: the tuning guides' cpu_bound_op) and Sleep
// (waits without CPU; blocking). Both take any inputs, only to order them
// after other nodes, and output a float32 scalar: the micros they were given.
#include <time.h>

#include <chrono>

#include "framework/op_registry_impl.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Status OutputMicros(KernelContext& ctx, int64_t micros) {
  WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
  *out->data<float>() = static_cast<float>(micros);
  return Status::OK();
}

class SpinKernel : public OpKernel {
 public:
  explicit SpinKernel(const KernelConstruction& c)
      : micros_(c.attr<int64_t>("micros")) {}

  Status Compute(KernelContext& ctx) const override {
    // CPU time of this thread, not wall time: a descheduled Spin still burns
    // its full amount once it runs, like real compute.
    const int64_t end = ThreadCpuNs() + micros_ * 1000;
    volatile uint64_t sink = 0;
    for (uint32_t i = 0;; ++i) {
      sink = sink * 6364136223846793005ull + 1;
      if (i % 256 == 0) {
        if (ThreadCpuNs() >= end) break;
        if (ctx.IsCancelled())
          return CancelledError("cancelled while spinning");
      }
    }
    return OutputMicros(ctx, micros_);
  }

 private:
  const int64_t micros_;
};

class SleepKernel : public OpKernel {
 public:
  explicit SleepKernel(const KernelConstruction& c)
      : micros_(c.attr<int64_t>("micros")) {}

  Status Compute(KernelContext& ctx) const override {
    if (!ctx.WaitFor(std::chrono::microseconds(micros_))) {
      return CancelledError("cancelled while sleeping");
    }
    return OutputMicros(ctx, micros_);
  }

 private:
  const int64_t micros_;
};

OpDefBuilder TimedOp(const char* name) {
  return std::move(
      OpDefBuilder(name)
          .Input(ArgDef::AnyList("after"))
          .Output(ArgDef::Fixed("output", DataType::kFloat32))
          .Attr("micros", AttrType::kInt)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            const int64_t micros = ctx.attr<int64_t>("micros");
            if (micros < 0 || micros > 3'600'000'000) {
              return InvalidArgumentError(
                  "attribute 'micros' must be in [0, 3600000000], got " +
                  std::to_string(micros));
            }
            ctx.set_output(0, Shape{});
            return Status::OK();
          })
          .SetCostFn([](const InferenceContext& ctx) {
            return 1000.0 * static_cast<double>(ctx.attr<int64_t>("micros"));
          }));
}

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Sleep", "waits for `micros` without using a core (a blocking op)"},
    {"Spin", "busy-loops for `micros` of CPU time (for experiments)"},
};

}  // namespace

void RegisterControlOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(TimedOp("Spin").Build()));
  CheckRegistered(
      registry.RegisterKernel("Spin", KernelFactoryFor<SpinKernel>()));
  CheckRegistered(registry.RegisterOp(
      TimedOp("Sleep").SetBlocking().SetStateful().Build()));
  CheckRegistered(
      registry.RegisterKernel("Sleep", KernelFactoryFor<SleepKernel>()));
}

}  // namespace weft::internal
