#include "io/image_codec.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <string>
#include <utility>
#include <vector>

#include "test_support/page_faults.h"
#include "test_support/sanitizers.h"

namespace weft::internal {
namespace {

// A [h, w, c] image whose pixels vary smoothly (JPEG keeps those well).
Tensor Gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DataType::kUInt8, Shape({h, w, c}));
  uint8_t* p = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        p[(y * w + x) * c + k] =
            static_cast<uint8_t>((y * 2 + x * 2 + k * 20) % 256);
      }
    }
  }
  return t;
}

int MaxDifference(const Tensor& a, const Tensor& b) {
  int worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(
        worst, std::abs(int{a.data<uint8_t>()[i]} - int{b.data<uint8_t>()[i]}));
  }
  return worst;
}

TEST(ImageCodecTest, PngRoundTripsExactlyForEveryChannelCount) {
  for (int64_t c : {1, 2, 3, 4}) {
    Tensor image = Gradient(17, 23, c);
    auto bytes = EncodePng(image);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(DetectImageFormat(*bytes), ImageFormat::kPng);
    auto back = DecodeImage(*bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape(), image.shape());
    EXPECT_TRUE(back->BitwiseEqual(image)) << c << " channels";
  }
}

TEST(ImageCodecTest, PngConvertsChannels) {
  auto bytes = EncodePng(Gradient(4, 5, 3));
  ASSERT_TRUE(bytes.ok());
  auto rgba = DecodePng(*bytes, 4);
  ASSERT_TRUE(rgba.ok()) << rgba.status();
  EXPECT_EQ(rgba->shape(), Shape({4, 5, 4}));
  EXPECT_EQ(rgba->data<uint8_t>()[3], 255);  // Opaque alpha added.
  auto grey = DecodePng(*bytes, 1);
  ASSERT_TRUE(grey.ok()) << grey.status();
  EXPECT_EQ(grey->shape(), Shape({4, 5, 1}));
}

TEST(ImageCodecTest, JpegRoundTripsCloselyAndConvertsToGrey) {
  Tensor image = Gradient(32, 48, 3);
  auto bytes = EncodeJpeg(image, 95);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = DecodeJpeg(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->shape(), image.shape());
  EXPECT_LE(MaxDifference(*back, image), 24);
  auto grey = DecodeImage(*bytes, 1);
  ASSERT_TRUE(grey.ok());
  EXPECT_EQ(grey->shape(), Shape({32, 48, 1}));
}

TEST(ImageCodecTest, DamagedImagesAreErrorsNotPartialImages) {
  auto jpeg = EncodeJpeg(Gradient(64, 64, 3), 90);
  auto png = EncodePng(Gradient(64, 64, 3));
  ASSERT_TRUE(jpeg.ok() && png.ok());
  for (size_t keep :
       {size_t{2}, size_t{20}, jpeg->size() / 2, jpeg->size() - 3}) {
    auto cut = DecodeJpeg(std::string_view(*jpeg).substr(0, keep));
    ASSERT_FALSE(cut.ok()) << "JPEG cut to " << keep << " bytes decoded";
    EXPECT_EQ(cut.status().message().rfind("JPEG: ", 0), 0u) << cut.status();
  }
  for (size_t keep :
       {size_t{8}, size_t{30}, png->size() / 2, png->size() - 5}) {
    auto cut = DecodePng(std::string_view(*png).substr(0, keep));
    ASSERT_FALSE(cut.ok()) << "PNG cut to " << keep << " bytes decoded";
    EXPECT_EQ(cut.status().message().rfind("PNG: ", 0), 0u) << cut.status();
  }
  auto text = DecodeImage("hello, world");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("not a JPEG or PNG"),
            std::string::npos);
  EXPECT_FALSE(DecodeJpeg(*png).ok());
  EXPECT_FALSE(DecodeJpeg(*jpeg, 4).ok());
}

TEST(ImageCodecTest, HugeDeclaredSizesAreRefusedBeforeDecoding) {
  // A PNG header claiming 1,000,000 x 1,000,000 pixels and nothing more.
  auto png = EncodePng(Gradient(1, 1, 1));
  ASSERT_TRUE(png.ok());
  std::string bytes = *png;
  for (int i = 16; i < 24; i += 4) {  // IHDR width and height.
    bytes[i] = 0x00;
    bytes[i + 1] = 0x0f;
    bytes[i + 2] = 0x42;
    bytes[i + 3] = 0x40;
  }
  auto huge = DecodePng(bytes);
  ASSERT_FALSE(huge.ok());
}

TEST(ImageCodecTest, EncodersCheckTheirInput) {
  EXPECT_FALSE(EncodeJpeg(Tensor(DataType::kFloat32, Shape({2, 2, 3}))).ok());
  EXPECT_FALSE(EncodeJpeg(Gradient(2, 2, 4)).ok());
  EXPECT_FALSE(EncodeJpeg(Gradient(2, 2, 3), 0).ok());
  EXPECT_FALSE(EncodePng(Tensor(DataType::kUInt8, Shape({2, 2}))).ok());
}

// An image pipeline decodes images of varying sides one after another. The
// decoders write straight into a tensor, whose block comes from weft's
// buffer cache by size class: with glibc's mmap threshold fixed at 128 KiB,
// as under Dask's nanny, a decoder's own buffer was a fresh mapping per
// image, each of its pages faulting when written.
TEST(ImageCodecTest, DecodedImagesReuseCachedBuffersNotFreshMemory) {
  if (weft::test::kUnderSanitizer) {
    GTEST_SKIP() << "the sanitizers' allocators keep freed memory aside";
  }
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  constexpr int kImages = 40;
  constexpr int64_t kSide = 256;  // 192 KiB and more an image, 48 pages
  for (const bool png : {false, true}) {
    std::vector<std::string> files;
    for (int i = 0; i < kImages; ++i) {
      const Tensor image = Gradient(kSide, kSide + i % 7, 3);
      auto bytes = png ? EncodePng(image) : EncodeJpeg(image, 90);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      files.push_back(*std::move(bytes));
    }
    ASSERT_TRUE(DecodeImage(files.back()).ok());  // The class's first buffer.
    const long before = test::ThreadPageFaults();
    for (int i = 0; i < kImages; ++i) {
      auto image = DecodeImage(files[i]);
      ASSERT_TRUE(image.ok()) << image.status();
      EXPECT_EQ(image->shape(), Shape({kSide, kSide + i % 7, 3}));
    }
    // A fresh buffer per image would fault 48 pages or more each.
    EXPECT_LT(test::ThreadPageFaults() - before, kImages * 48 / 4)
        << (png ? "PNG" : "JPEG");
  }
}

}  // namespace
}  // namespace weft::internal
