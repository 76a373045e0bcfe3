// RandomUniform, RandomNormal, their -Like forms (the shape of an input)
// and Bernoulli, with ONNX's attributes. Counter-based: element i is a hash
// of (seed, i), so the output depends on neither the thread count nor the
// order in which blocks run, and a seed gives the same values on every
// machine.
#include <cmath>
#include <optional>

#include "framework/op_registry_impl.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace weft::internal {
namespace {

// SplitMix64's finaliser: a bijective 64-bit mix with good avalanche.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

uint64_t Bits(uint64_t seed, uint64_t index) {
  return Mix(Mix(seed + 0x9E3779B97F4A7C15ull) ^
             (index * 0xD1B54A32D192ED03ull));
}

// The shape a random op fills: its `shape` attribute, or (the -Like ops)
// its input's.
Shape OutputShape(KernelContext& ctx, const std::optional<Shape>& attr) {
  return attr ? *attr : ctx.input(0).shape();
}

std::optional<Shape> ShapeAttr(const KernelConstruction& c) {
  if (c.attrs().count("shape") == 0) return std::nullopt;
  return c.attr<PartialShape>("shape").ToShape();
}

// A uniform in [0, 1) from counter i: 24 bits for float32, 53 for float64.
float UnitFloat(uint64_t seed, int64_t i) {
  return static_cast<float>(Bits(seed, static_cast<uint64_t>(i)) >> 40) *
         0x1p-24f;
}
double UnitDouble(uint64_t seed, int64_t i) {
  return static_cast<double>(Bits(seed, static_cast<uint64_t>(i)) >> 11) *
         0x1p-53;
}

// RandomUniform and RandomUniformLike.
class RandomUniformKernel : public OpKernel {
 public:
  explicit RandomUniformKernel(const KernelConstruction& c)
      : shape_(ShapeAttr(c)),
        seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))),
        low_(c.attr<double>("low")),
        high_(c.attr<double>("high")) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutput(0, OutputShape(ctx, shape_)));
    const double scale = high_ - low_;
    if (out->dtype() == DataType::kFloat32) {
      float* p = out->data<float>();
      ctx.ParallelFor(out->NumElements(), 2.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          p[i] = static_cast<float>(low_ + scale * UnitFloat(seed_, i));
        }
      });
    } else {
      double* p = out->data<double>();
      ctx.ParallelFor(out->NumElements(), 2.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          p[i] = low_ + scale * UnitDouble(seed_, i);
        }
      });
    }
    return Status::OK();
  }

 private:
  const std::optional<Shape> shape_;
  const uint64_t seed_;
  const double low_;
  const double high_;
};

// Bernoulli: 1 where a uniform of the element's counter falls below its
// probability, else 0, in the output dtype.
class BernoulliKernel : public OpKernel {
 public:
  explicit BernoulliKernel(const KernelConstruction& c)
      : seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& p = ctx.input(0);
    for (int64_t i = 0; i < p.NumElements(); ++i) {
      const double v = p.ValueAsDouble(i);
      if (!(v >= 0 && v <= 1)) {
        return InvalidArgumentError("input element " + std::to_string(i) +
                                    " is " + std::to_string(v) +
                                    ", not a probability in [0, 1]");
      }
    }
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutputUninitialized(0, p.shape()));
    return DispatchDtype(out->dtype(), [&](auto zero) -> Status {
      using T = decltype(zero);
      T* y = out->data<T>();
      ctx.ParallelFor(p.NumElements(), 3.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          y[i] = static_cast<T>(UnitDouble(seed_, i) < p.ValueAsDouble(i));
        }
      });
      return Status::OK();
    });
  }

 private:
  const uint64_t seed_;
};

// TrainingDropout (data, training_mode[, ratio]): ONNX's Dropout with a
// training_mode known only at Run. Training: each element is kept where a
// uniform of its counter is >= ratio, and scaled by 1 / (1 - ratio); the
// mask says which. Otherwise data passes through with a mask of ones.
class TrainingDropoutKernel : public OpKernel {
 public:
  explicit TrainingDropoutKernel(const KernelConstruction& c)
      : seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))),
        default_ratio_(c.attr<double>("ratio")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& mode = ctx.input(1);
    if (mode.NumElements() != 1) {
      return InvalidArgumentError("training_mode must be a scalar, got " +
                                  mode.shape().ToString());
    }
    double ratio = default_ratio_;
    if (ctx.num_inputs() > 2) {
      const Tensor& r = ctx.input(2);
      if (r.NumElements() != 1) {
        return InvalidArgumentError("ratio must be a scalar, got " +
                                    r.shape().ToString());
      }
      ratio = r.ValueAsDouble(0);
    }
    if (!(ratio >= 0 && ratio < 1)) {
      return InvalidArgumentError("ratio " + std::to_string(ratio) +
                                  " is outside [0, 1)");
    }
    const bool training = *mode.data<bool>();
    WEFT_ASSIGN_OR_RETURN(Tensor * y,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    WEFT_ASSIGN_OR_RETURN(Tensor * mask,
                          ctx.AllocateOutputUninitialized(1, x.shape()));
    bool* keep = mask->data<bool>();
    const double scale = 1.0 / (1.0 - ratio);
    auto run = [&](auto zero) {
      using T = decltype(zero);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      ctx.ParallelFor(x.NumElements(), 3.0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          keep[i] = !training || UnitDouble(seed_, i) >= ratio;
          out[i] = !training ? in[i]
                   : keep[i] ? static_cast<T>(in[i] * scale)
                             : T(0);
        }
      });
    };
    DispatchFloat32Or64(x.dtype(), run);
    return Status::OK();
  }

 private:
  const uint64_t seed_;
  const double default_ratio_;
};

// RandomNormal and RandomNormalLike: Box-Muller on the two uniforms of
// counter 2i and 2i + 1.
class RandomNormalKernel : public OpKernel {
 public:
  explicit RandomNormalKernel(const KernelConstruction& c)
      : shape_(ShapeAttr(c)),
        seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))),
        mean_(c.attr<double>("mean")),
        scale_(c.attr<double>("scale")) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutput(0, OutputShape(ctx, shape_)));
    const bool f32 = out->dtype() == DataType::kFloat32;
    ctx.ParallelFor(out->NumElements(), 20.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const uint64_t n = static_cast<uint64_t>(i);
        // u1 in (0, 1] so that log(u1) is finite.
        const double u1 =
            (static_cast<double>(Bits(seed_, 2 * n) >> 11) + 1) * 0x1p-53;
        const double u2 =
            static_cast<double>(Bits(seed_, 2 * n + 1) >> 11) * 0x1p-53;
        const double z = std::sqrt(-2 * std::log(u1)) *
                         std::cos(6.283185307179586476925 * u2);
        const double v = mean_ + scale_ * z;
        if (f32) {
          out->data<float>()[i] = static_cast<float>(v);
        } else {
          out->data<double>()[i] = v;
        }
      }
    });
    return Status::OK();
  }

 private:
  const std::optional<Shape> shape_;
  const uint64_t seed_;
  const double mean_;
  const double scale_;
};

}  // namespace

namespace {

// One line per op of this family, for `weft ops` and docs/ops.md (the
// registry gives it to the op's schema when the op is registered).
constexpr OpSummary kSummaries[] = {
    {"Bernoulli", "1 with the probability its input gives, else 0 (seeded)"},
    {"RandomNormal",
     "normal random numbers, counter-based: same for any thread count"},
    {"RandomNormalLike", "normal samples in the shape of its input (seeded)"},
    {"RandomUniform",
     "uniform random numbers, counter-based: same for any thread count"},
    {"RandomUniformLike", "uniform samples in the shape of its input (seeded)"},
    {"TrainingDropout",
     "Dropout whose training_mode comes at Run: seeded random mask"},
};

}  // namespace

void RegisterRandomOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RandomNormal")
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType, DataType::kFloat32,
                {DataType::kFloat32, DataType::kFloat64})
          .Attr("shape", AttrType::kShape)
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("mean", AttrType::kFloat, 0.0)
          .Attr("scale", AttrType::kFloat, 1.0)
          .SetShapeFn(ShapeFromShapeAttr)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomNormal", KernelFactoryFor<RandomNormalKernel>()));

  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RandomUniform")
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType, DataType::kFloat32,
                {DataType::kFloat32, DataType::kFloat64})
          .Attr("shape", AttrType::kShape)
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("low", AttrType::kFloat, 0.0)
          .Attr("high", AttrType::kFloat, 1.0)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            if (!(ctx.attr<double>("low") <= ctx.attr<double>("high"))) {
              return InvalidArgumentError("attribute 'low' must be <= 'high'");
            }
            return ShapeFromShapeAttr(ctx);
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomUniform", KernelFactoryFor<RandomUniformKernel>()));

  // The -Like forms: the input's shape; its dtype unless `dtype` says
  // otherwise (the ONNX importer fills it in).
  const std::vector<DataType> kFloats = {DataType::kFloat32,
                                         DataType::kFloat64};
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RandomUniformLike")
          .Input(ArgDef::AnyList("input"))
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType, std::nullopt, kFloats)
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("low", AttrType::kFloat, 0.0)
          .Attr("high", AttrType::kFloat, 1.0)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomUniformLike", KernelFactoryFor<RandomUniformKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RandomNormalLike")
          .Input(ArgDef::AnyList("input"))
          .Output(ArgDef::Typed("output", "dtype"))
          .Attr("dtype", AttrType::kType, std::nullopt, kFloats)
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("mean", AttrType::kFloat, 0.0)
          .Attr("scale", AttrType::kFloat, 1.0)
          .SetShapeFn(shape_fns::SameAsInput0)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomNormalLike", KernelFactoryFor<RandomNormalKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("Bernoulli")
                              .Input(ArgDef::Typed("input", "T"))
                              .Output(ArgDef::Typed("output", "dtype"))
                              .Attr("T", AttrType::kType, std::nullopt, kFloats)
                              .Attr("dtype", AttrType::kType)
                              .Attr("seed", AttrType::kInt, int64_t{0})
                              .SetShapeFn(shape_fns::SameAsInput0)
                              .Build()));
  CheckRegistered(registry.RegisterKernel("Bernoulli",
                                          KernelFactoryFor<BernoulliKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("TrainingDropout")
          .Input(ArgDef::Typed("data", "T"))
          .Input(ArgDef::Fixed("training_mode", DataType::kBool))
          .Input(ArgDef::AnyList("ratio"))
          .Output(ArgDef::Typed("output", "T"))
          .Output(ArgDef::Fixed("mask", DataType::kBool))
          .Attr("T", AttrType::kType, std::nullopt, kFloats)
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("ratio", AttrType::kFloat, 0.5)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, ctx.input_shape(0));
            ctx.set_output(1, ctx.input_shape(0));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "TrainingDropout", KernelFactoryFor<TrainingDropoutKernel>()));
}

}  // namespace weft::internal
