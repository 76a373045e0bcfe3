#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/image_codec.h"
#include "test_support/session_util.h"

namespace weft {
namespace {

using test::RunOneOutput;
using test::Values;

Tensor Pixels(int64_t h, int64_t w, int64_t c) {
  Tensor t(DataType::kUInt8, Shape({h, w, c}));
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<uint8_t>()[i] = static_cast<uint8_t>(i % 251);
  }
  return t;
}

TEST(ImageOpsTest, ReadFileThenDecodeImageInOneGraph) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("weft_image_ops_" + std::to_string(::getpid()) + ".png");
  Tensor image = Pixels(6, 7, 3);
  std::ofstream(path, std::ios::binary) << internal::EncodePng(image).value();
  Graph g;
  std::string name =
      g.Const("name", Tensor::Scalar<std::string>(path.string()));
  test::MustAdd(g, {"bytes", "ReadFile", {name}, {}, ""});
  test::MustAdd(g, {"image", "DecodeImage", {"bytes"}, {}, ""});
  auto session = test::MustCreate(std::move(g), test::PerSessionOptions(1, 1));
  std::vector<Tensor> out = test::MustRun(*session, {"image"});
  EXPECT_TRUE(out[0].BitwiseEqual(image));
  std::filesystem::remove(path);

  auto missing = RunOneOutput(
      "ReadFile", {Tensor::Scalar<std::string>("/nonexistent/x.jpg")});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/x.jpg"),
            std::string::npos);
}

TEST(ImageOpsTest, ResizeKeepsAConstantImageAndAveragesWhenShrinking) {
  Tensor flat(DataType::kUInt8, Shape({10, 8, 3}));
  std::fill(flat.data<uint8_t>(), flat.data<uint8_t>() + flat.NumElements(),
            77);
  for (const char* op :
       {"ResizeBilinear", "ResizeArea", "ResizeNearestNeighbor"}) {
    auto out =
        RunOneOutput(op, {flat}, {{"size", std::vector<int64_t>{5, 13}}});
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    EXPECT_EQ(out->shape(), Shape({5, 13, 3}));
    for (float v : Values<float>(*out)) EXPECT_NEAR(v, 77.0f, 1e-4) << op;
  }
  // Halving with an area filter averages each 2 x 2 block.
  Tensor four = Tensor::FromVector<float>({2, 2, 1}, {0, 2, 4, 6});
  auto half = RunOneOutput("ResizeArea", {four},
                           {{"size", std::vector<int64_t>{1, 1}}});
  ASSERT_TRUE(half.ok());
  EXPECT_FLOAT_EQ(half->data<float>()[0], 3.0f);
  // Bilinear with antialias averages too; without, it samples the centre.
  auto aa =
      RunOneOutput("ResizeBilinear", {four},
                   {{"size", std::vector<int64_t>{1, 1}}, {"antialias", true}});
  ASSERT_TRUE(aa.ok());
  EXPECT_FLOAT_EQ(aa->data<float>()[0], 3.0f);
}

TEST(ImageOpsTest, ResizeToAShorterSideKeepsTheAspect) {
  auto out = RunOneOutput("ResizeBilinear", {Pixels(300, 400, 3)},
                          {{"size", std::vector<int64_t>{150}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape({150, 200, 3}));
  auto bad = RunOneOutput("ResizeBilinear", {Pixels(3, 4, 3)},
                          {{"size", std::vector<int64_t>{0, 4}}});
  EXPECT_FALSE(bad.ok());
}

TEST(ImageOpsTest, CropsTakeTheRightWindow) {
  Tensor image = Pixels(5, 6, 1);
  auto crop = RunOneOutput("CropToBoundingBox", {image},
                           {{"offset_height", int64_t{1}},
                            {"offset_width", int64_t{2}},
                            {"target_height", int64_t{2}},
                            {"target_width", int64_t{3}}});
  ASSERT_TRUE(crop.ok()) << crop.status();
  EXPECT_EQ(Values<uint8_t>(*crop),
            (std::vector<uint8_t>{8, 9, 10, 14, 15, 16}));
  auto center = RunOneOutput("CenterCrop", {image},
                             {{"size", std::vector<int64_t>{3, 2}}});
  ASSERT_TRUE(center.ok());
  EXPECT_EQ(Values<uint8_t>(*center),
            (std::vector<uint8_t>{8, 9, 14, 15, 20, 21}));
  auto outside = RunOneOutput("CenterCrop", {image},
                              {{"size", std::vector<int64_t>{9, 2}}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("does not fit"), std::string::npos);
}

TEST(ImageOpsTest, RandomOpsDependOnlyOnSeedAndKey) {
  Tensor image = Pixels(20, 30, 3);
  auto crop = [&](int64_t key, int64_t seed) {
    return RunOneOutput("RandomCrop", {image, Tensor::Scalar<int64_t>(key)},
                        {{"size", std::vector<int64_t>{8, 8}}, {"seed", seed}})
        .value();
  };
  EXPECT_TRUE(crop(3, 1).BitwiseEqual(crop(3, 1)));
  int differing = 0;
  for (int64_t key = 0; key < 8; ++key)
    differing += !crop(key, 1).BitwiseEqual(crop(key + 100, 1));
  EXPECT_GT(differing, 4);
  int flipped = 0;
  for (int64_t key = 0; key < 40; ++key) {
    auto out = RunOneOutput("RandomFlipLeftRight",
                            {image, Tensor::Scalar<int64_t>(key)},
                            {{"seed", int64_t{7}}});
    ASSERT_TRUE(out.ok());
    if (!out->BitwiseEqual(image)) {
      ++flipped;
      // Mirrored: the first pixel is the old last pixel of the row.
      EXPECT_EQ(out->data<uint8_t>()[0], image.data<uint8_t>()[29 * 3]);
    }
  }
  EXPECT_GT(flipped, 8);
  EXPECT_LT(flipped, 32);
  auto rrc = RunOneOutput(
      "RandomResizedCrop", {image, Tensor::Scalar<int64_t>(5)},
      {{"size", std::vector<int64_t>{16, 16}}, {"seed", int64_t{2}}});
  ASSERT_TRUE(rrc.ok()) << rrc.status();
  EXPECT_EQ(rrc->shape(), Shape({16, 16, 3}));
}

TEST(ImageOpsTest, NormalizeAndReverseChannels) {
  Tensor x = Tensor::FromVector<uint8_t>({1, 2, 3}, {255, 0, 51, 0, 255, 102});
  auto y = RunOneOutput("Normalize", {x},
                        {{"mean", std::vector<double>{0.5, 0.5, 0.2}},
                         {"std", std::vector<double>{0.5, 0.25, 0.2}},
                         {"scale", 1.0 / 255}});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> v = Values<float>(*y);
  EXPECT_NEAR(v[0], 1.0f, 1e-6);
  EXPECT_NEAR(v[1], -2.0f, 1e-6);
  EXPECT_NEAR(v[2], 0.0f, 1e-6);
  EXPECT_NEAR(v[4], 2.0f, 1e-6);
  EXPECT_FALSE(RunOneOutput("Normalize", {x},
                            {{"mean", std::vector<double>{0, 0}},
                             {"std", std::vector<double>{1, 1}}})
                   .ok());
  auto bgr = RunOneOutput("ReverseChannels", {x});
  ASSERT_TRUE(bgr.ok());
  EXPECT_EQ(Values<uint8_t>(*bgr),
            (std::vector<uint8_t>{51, 0, 255, 102, 255, 0}));
}

TEST(ImageOpsTest, DecodeNamesWhatIsWrong) {
  auto bad = RunOneOutput(
      "DecodeJpeg", {Tensor::Scalar<std::string>("\xff\xd8\xff garbage")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("JPEG"), std::string::npos)
      << bad.status();
}

// ONNX's ImageDecoder: the bytes in a uint8 tensor, RGB by default, BGR
// with the channels swapped, grey with Pillow's weights (ONNX's reference;
// the cases against Pillow's decoding are in tests/onnx/newer_opsets).
TEST(ImageDecoderTest, DecodesPngAsRgbBgrAndGrey) {
  Tensor image = Pixels(2, 3, 3);
  const std::string png = internal::EncodePng(image).value();
  Tensor stream(DataType::kUInt8, Shape{static_cast<int64_t>(png.size())});
  std::copy(png.begin(), png.end(), stream.data<uint8_t>());
  auto decode = [&](const char* format) {
    auto out = RunOneOutput("ImageDecoder", {stream},
                            {{"pixel_format", std::string(format)}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *std::move(out) : Tensor();
  };
  EXPECT_TRUE(decode("RGB").BitwiseEqual(image));
  Tensor bgr = decode("BGR");
  ASSERT_EQ(bgr.shape(), image.shape());
  EXPECT_EQ(bgr.data<uint8_t>()[0], image.data<uint8_t>()[2]);
  EXPECT_EQ(bgr.data<uint8_t>()[2], image.data<uint8_t>()[0]);
  Tensor grey = decode("Grayscale");
  ASSERT_EQ(grey.shape(), (Shape{2, 3, 1}));
  const uint8_t* rgb = image.data<uint8_t>() + 3;  // The second pixel.
  EXPECT_EQ(grey.data<uint8_t>()[1],
            (rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

TEST(ImageDecoderTest, NamesWhatItCannotDecode) {
  auto decode = [](const std::string& bytes) {
    Tensor stream(DataType::kUInt8, Shape{static_cast<int64_t>(bytes.size())});
    std::copy(bytes.begin(), bytes.end(), stream.data<uint8_t>());
    return RunOneOutput("ImageDecoder", {stream}).status();
  };
  const Status bmp = decode(std::string("BM\x36\0\0\0", 6));
  EXPECT_EQ(bmp.code(), StatusCode::kUnimplemented);
  EXPECT_NE(bmp.message().find("a BMP image; weft decodes JPEG and PNG"),
            std::string::npos)
      << bmp;
  const Status webp = decode(std::string("RIFF\0\0\0\0WEBPVP8 ", 16));
  EXPECT_NE(webp.message().find("WebP"), std::string::npos) << webp;
  const Status unknown = decode("RIFF");  // Too short to be WebP.
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("4 bytes start with no known signature"),
            std::string::npos)
      << unknown;
  const Status empty = decode("");
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument) << empty;
  EXPECT_NE(empty.message().find("encoded_stream is empty"), std::string::npos)
      << empty;
  const Status truncated = decode("\xff\xd8\xff\xe0");
  EXPECT_NE(truncated.message().find("JPEG"), std::string::npos) << truncated;
  auto flat = RunOneOutput("ImageDecoder", {Tensor(DataType::kUInt8, {2, 2})});
  EXPECT_NE(flat.status().message().find("must be 1-D, not [2, 2]"),
            std::string::npos)
      << flat.status();
  auto format = RunOneOutput("ImageDecoder", {Tensor(DataType::kUInt8, {2})},
                             {{"pixel_format", std::string("CMYK")}});
  EXPECT_NE(format.status().message().find(
                "pixel_format \"CMYK\" is not one of RGB, BGR, Grayscale"),
            std::string::npos)
      << format.status();
}

}  // namespace
}  // namespace weft
