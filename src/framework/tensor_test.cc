#include "weft/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "framework/large_buffer.h"
#include "test_support/page_faults.h"
#include "weft/status.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(TensorTest, ScalarsVectorsAndZeroSize) {
  Tensor s = Tensor::Scalar<double>(2.5);
  EXPECT_EQ(s.dtype(), DataType::kFloat64);
  EXPECT_EQ(s.shape().rank(), 0);
  EXPECT_EQ(s.NumElements(), 1);
  EXPECT_EQ(s.data<double>()[0], 2.5);
  Tensor z(DataType::kInt64, {3, 0});
  EXPECT_EQ(z.NumElements(), 0);
  EXPECT_TRUE(z.IsInitialized());
  EXPECT_EQ(z.DebugString(), "int64[3, 0]");
}

TEST(TensorTest, BuffersAre64ByteAlignedAndZeroed) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64,
                         DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    Tensor t(dtype, {7, 3});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
    const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.size_bytes(); ++i) ASSERT_EQ(bytes[i], 0);
  }
}

TEST(TensorTest, CopiesShareTheBuffer) {
  Tensor a(DataType::kFloat32, {4});
  Tensor b = a;
  a.data<float>()[0] = 3;
  EXPECT_EQ(b.data<float>()[0], 3);
  EXPECT_TRUE(a.BitwiseEqual(b));
}

TEST(TensorTest,
     WrapExternalViewsTheMemoryAndReleasesItOnceWhenTheLastHandleGoes) {
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  int releases = 0;
  {
    StatusOr<Tensor> t = Tensor::WrapExternal(
        DataType::kFloat32, Shape({2, 3}), memory.data(), [&] { ++releases; });
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->raw_data(), memory.data());  // No copy.
    EXPECT_EQ(t->data<float>()[5], 6.0f);
    Tensor copy = *t;
    Tensor reshaped = copy.WithShape(Shape({6}));
    t = Tensor();
    copy = Tensor();
    EXPECT_EQ(releases, 0);  // `reshaped` still holds it.
    EXPECT_EQ(reshaped.data<float>()[0], 1.0f);
  }
  EXPECT_EQ(releases, 1);
}

TEST(TensorTest, WrapExternalRefusesBadMemoryAndReleasesItAtOnce) {
  alignas(8) char memory[16] = {};
  int releases = 0;
  auto count = [&] { ++releases; };
  StatusOr<Tensor> misaligned =
      Tensor::WrapExternal(DataType::kFloat32, Shape({2}), memory + 1, count);
  EXPECT_FALSE(misaligned.ok());
  EXPECT_THAT(misaligned.status().message(), HasSubstr("not aligned"));
  StatusOr<Tensor> null_data =
      Tensor::WrapExternal(DataType::kInt32, Shape({2}), nullptr, count);
  EXPECT_THAT(null_data.status().message(), HasSubstr("null"));
  StatusOr<Tensor> bad_shape =
      Tensor::WrapExternal(DataType::kInt32, Shape({-1}), memory, count);
  EXPECT_THAT(bad_shape.status().message(), HasSubstr("invalid shape"));
  EXPECT_EQ(releases, 3);
  // No elements need no memory.
  EXPECT_TRUE(
      Tensor::WrapExternal(DataType::kFloat32, Shape({0, 3}), nullptr, count)
          .ok());
}

TEST(TensorTest, BadShapesAreErrorsNotCrashes) {
  auto negative = Tensor::Create(DataType::kFloat32, {2, -1});
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  auto overflow = Tensor::Create(DataType::kFloat32, {big, 4});
  EXPECT_FALSE(overflow.ok());
  auto too_large = Tensor::Create(DataType::kFloat64, {big});
  EXPECT_FALSE(too_large.ok());
  EXPECT_THAT(too_large.status().message(), HasSubstr("too large"));
}

TEST(TensorTest, DataTypeNames) {
  for (DataType dtype : kAllDataTypes) {
    EXPECT_EQ(DataTypeFromName(DataTypeName(dtype)), dtype);
  }
  EXPECT_EQ(DataTypeFromName("complex64"), std::nullopt);
  EXPECT_EQ(DataTypeSize(DataType::kFloat16), 2u);
  EXPECT_EQ(DataTypeSize(DataType::kUInt64), 8u);
  EXPECT_EQ(DataTypeSize(DataType::kInt8), 1u);
}

// Float16 rounds to nearest even, keeps signed zeros, infinities and NaN,
// and handles subnormals both ways.
TEST(TensorTest, Float16Conversions) {
  auto bits = [](float f) { return Float16(f).bits(); };
  EXPECT_EQ(bits(1.0f), 0x3c00);
  EXPECT_EQ(bits(-2.0f), 0xc000);
  EXPECT_EQ(bits(65504.0f), 0x7bff);
  EXPECT_EQ(bits(65520.0f), 0x7c00);  // Halfway past max: to infinity.
  EXPECT_EQ(bits(-0.0f), 0x8000);
  EXPECT_EQ(bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(
      static_cast<float>(Float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bits(1.0f + 0x1p-11f), 0x3c00);      // Tie: down to even.
  EXPECT_EQ(bits(1.0f + 3 * 0x1p-11f), 0x3c02);  // Tie: up to even.
  EXPECT_EQ(bits(0x1p-24f), 0x0001);             // Smallest subnormal.
  EXPECT_EQ(bits(0x1p-26f), 0x0000);             // Below half of it: zero.
  EXPECT_EQ(bits(0x1p-14f), 0x0400);             // Smallest normal.
  for (uint32_t b = 0; b < 0x7c00; ++b) {  // Every finite half round-trips.
    const Float16 h = Float16::FromBits(static_cast<uint16_t>(b));
    ASSERT_EQ(Float16(static_cast<float>(h)).bits(), b) << b;
  }
  EXPECT_EQ(static_cast<float>(Float16::FromBits(0x0001)), 0x1p-24f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<Float16>::lowest()),
            -65504.0f);
}

TEST(TensorTest, PartialShapes) {
  PartialShape p({2, -1});
  EXPECT_EQ(p.ToString(), "[2, ?]");
  EXPECT_TRUE(p.IsCompatibleWith(Shape{2, 9}));
  EXPECT_FALSE(p.IsCompatibleWith(Shape{3, 9}));
  EXPECT_FALSE(p.IsCompatibleWith(Shape{2}));
  EXPECT_TRUE(PartialShape::UnknownRank().IsCompatibleWith(Shape{1, 2, 3}));
}

TEST(StatusTest, CodesMessagesAndContext) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status s = NotFoundError("no such node").WithContext("fetch 'x'");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: fetch 'x': no such node");
  StatusOr<int> value = 3;
  EXPECT_EQ(*value, 3);
  StatusOr<int> error = InvalidArgumentError("bad");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().message(), "bad");
}

// The public entry points that take a size and values check them: a
// mismatch is a Status (Create) or a message and abort (the convenience
// forms), never a write or read past the buffer.
TEST(TensorContractTest, CreateFromValuesChecksTheCount) {
  const std::vector<float> three = {1, 2, 3};
  auto ok = Tensor::Create<float>(Shape{3}, three);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->data<float>()[2], 3.0f);
  auto too_many = Tensor::Create<float>(Shape{2}, three);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(),
            "a tensor of shape [2] needs 2 values, got 3");
  auto too_few = Tensor::Create<float>(Shape{2, 2}, three);
  EXPECT_EQ(too_few.status().message(),
            "a tensor of shape [2, 2] needs 4 values, got 3");
  auto negative = Tensor::Create<float>(Shape{-1, 3}, three);
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
}

TEST(TensorContractTest, NumElementsOfAnInvalidShapeIsMinusOne) {
  EXPECT_EQ(Shape({2, -3}).NumElements(), -1);
  EXPECT_EQ(Shape({int64_t{1} << 40, int64_t{1} << 40}).NumElements(), -1);
  EXPECT_FALSE(Shape({int64_t{1} << 40, int64_t{1} << 40}).IsValid());
  EXPECT_EQ(Shape({0, int64_t{1} << 62}).NumElements(), 0);
}

TEST(TensorContractDeathTest, FromVectorWithTheWrongCountAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(Tensor::FromVector<float>(Shape{2}, {1, 2, 3}),
               "needs 2 values, got 3");
  EXPECT_DEATH(Tensor::FromVector<int32_t>(Shape{4}, {1}),
               "needs 4 values, got 1");
}

TEST(TensorContractDeathTest, TypedViewOfTheWrongDtypeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t(DataType::kFloat32, Shape{2});
  EXPECT_DEATH(t.data<double>(),
               "check failed.*Tensor::data<float64>\\(\\) of a float32 tensor");
  const Tensor& c = t;
  EXPECT_DEATH(c.data<int64_t>(), "data<int64>\\(\\) of a float32 tensor");
}

TEST(TensorContractDeathTest, WithShapeOfAnotherSizeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Tensor t(DataType::kFloat32, Shape{2, 3});
  EXPECT_EQ(t.WithShape(Shape{3, 2}).shape(), (Shape{3, 2}));
  EXPECT_DEATH(t.WithShape(Shape{4, 2}), "WithShape to a shape of another");
}

TEST(TensorContractDeathTest, ToShapeOfAPartialShapeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EQ(PartialShape({2, 3}).ToShape(), (Shape{2, 3}));
  EXPECT_DEATH(PartialShape({2, -1}).ToShape(), "ToShape of a partial shape");
  EXPECT_DEATH(PartialShape::UnknownRank().ToShape(),
               "ToShape of a partial shape");
}

// A float tensor of `floats` elements, every one written with `value`.
Tensor WrittenTensor(int64_t floats, float value) {
  Tensor t =
      Tensor::CreateUninitialized(DataType::kFloat32, Shape({floats})).value();
  for (int64_t i = 0; i < floats; ++i) t.data<float>()[i] = value;
  return t;
}

}  // namespace
// A buffer of 128 KiB or more goes back to weft's cache, not to malloc:
// with glibc's mmap threshold fixed at 128 KiB, as under Dask's nanny, each
// such tensor was a fresh mmap whose pages all faulted when written.
TEST(TensorTest, BuffersFrom128KiBUpAreReusedNotFaultedInAgain) {
  // What MALLOC_TRIM_THRESHOLD_ in the environment leaves: no adaptive
  // threshold (mallopt is a no-op under the sanitizers' allocators).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  constexpr int64_t kFloats = 128 * 1024;  // 512 KiB
  constexpr int kTensors = 50;
  WrittenTensor(kFloats, 0.f);  // The first one is the cache's.
  const long before = test::ThreadPageFaults();
  for (int i = 0; i < kTensors; ++i) {
    const Tensor t = WrittenTensor(kFloats, static_cast<float>(i));
    EXPECT_EQ(t.data<float>()[kFloats - 1], static_cast<float>(i));
  }
  // Fresh mappings would fault 128 pages each: 6,400 in all.
  EXPECT_LT(test::ThreadPageFaults() - before, kTensors * 128 / 8);
}

TEST(TensorTest, BuffersOfNearbySizesShareTheCachedOnes) {
  // Images of varying sides make tensors of varying sizes: with exact
  // sizes alone each was a fresh mapping where glibc's mmap threshold is
  // fixed (Dask's workers), 500 page faults an image in `weft predict`.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  constexpr int64_t kFloats = 128 * 1024;  // 512 KiB, a class 64 KiB wide
  constexpr int kTensors = 50;
  WrittenTensor(kFloats + 8000, 0.f);  // The class's first buffer.
  const long before = test::ThreadPageFaults();
  for (int i = 0; i < kTensors; ++i) {
    const int64_t floats = kFloats + 1 + (i * 157) % 8000;
    const Tensor t = WrittenTensor(floats, static_cast<float>(i));
    EXPECT_EQ(t.data<float>()[floats - 1], static_cast<float>(i));
  }
  EXPECT_LT(test::ThreadPageFaults() - before, kTensors * 128 / 8);
}

// From 2 MiB a tensor's buffer is a mapping offered to transparent huge
// pages, so that writing a fresh one faults once per 2 MiB, not per 4 KiB
// (a Dask worker's 5 MB result blocks: 1,251 faults each before).
TEST(TensorTest, BuffersFromTwoMiBAreOfferedToHugePages) {
  const Tensor large = WrittenTensor(int64_t{3} << 18, 2.f);  // 3 MiB
  EXPECT_EQ(large.data<float>()[(int64_t{3} << 18) - 1], 2.f);
  if (test::TransparentHugePagesOff()) {
    GTEST_SKIP() << "transparent huge pages are off on this machine";
  }
  if (!internal::LargeBuffer::Maps(size_t{3} << 20)) {
    GTEST_SKIP() << "a sanitizer build: every buffer is the allocator's";
  }
  const int eligible = test::HugePageEligible(large.data<float>());
  if (eligible < 0) GTEST_SKIP() << "smaps has no THPeligible line here";
  EXPECT_EQ(eligible, 1);
}

}  // namespace weft
