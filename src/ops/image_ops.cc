// Ops for input pipelines (TensorFlow's tf.io / tf.image names, each image
// [height, width, channels]): ReadFile, DecodeJpeg / DecodePng /
// DecodeImage, EncodeJpeg / EncodePng, ResizeBilinear /
// ResizeNearestNeighbor / ResizeArea, CropToBoundingBox, CenterCrop,
// RandomCrop, RandomResizedCrop, RandomFlipLeftRight, Normalize,
// ReverseChannels; and ONNX's ImageDecoder.
//
// The random ops are stateless: what they draw depends only on their seed
// attribute and their `key` input (an element's index from Enumerate), so a
// pipeline gives the same images whatever order its parallel map calls run
// in.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/op_registry_impl.h"
#include "framework/seeded_random.h"
#include "io/image_codec.h"
#include "kernels/image_resample.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "weft/file_status.h"

namespace weft::internal {
namespace {

constexpr OpSummary kSummaries[] = {
    {"ReadFile", "the bytes of a file, as a string scalar (a blocking op)"},
    {"DecodeJpeg", "JPEG bytes to a uint8 [height, width, channels] image"},
    {"DecodePng", "PNG bytes to a uint8 [height, width, channels] image"},
    {"DecodeImage", "JPEG or PNG bytes (by signature) to a uint8 image"},
    {"ImageDecoder",
     "ONNX's: JPEG or PNG bytes in a uint8 tensor to an RGB, BGR or grey "
     "image"},
    {"EncodeJpeg", "a uint8 image to JPEG bytes"},
    {"EncodePng", "a uint8 image to PNG bytes"},
    {"ResizeBilinear", "resize an image (float32 out), optionally antialiased"},
    {"ResizeNearestNeighbor", "resize an image by nearest samples"},
    {"ResizeArea", "resize an image by averaging the area each pixel covers"},
    {"CropToBoundingBox", "the window of an image at an offset"},
    {"CenterCrop", "the centred window of an image"},
    {"RandomCrop", "a window at a seeded position per key"},
    {"RandomResizedCrop",
     "a seeded random area and aspect window, resized (torchvision's)"},
    {"RandomFlipLeftRight", "mirror an image with probability 1/2 per key"},
    {"Normalize", "(x * scale - mean) / std per channel, float32 out"},
    {"ReverseChannels", "RGB to BGR and back: the last dimension reversed"},
};

// ---- Argument checks ----

StatusOr<std::string_view> ScalarBytes(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kString || t.shape().rank() != 0) {
    return InvalidArgumentError(std::string(what) +
                                " must be a string scalar, not " +
                                DataTypeName(t.dtype()) + t.shape().ToString());
  }
  return std::string_view(t.data<std::string>()[0]);
}

Status CheckImage(const Tensor& image) {
  const Shape& s = image.shape();
  if (s.rank() != 3 || s.dim(0) <= 0 || s.dim(1) <= 0 || s.dim(2) <= 0) {
    return InvalidArgumentError(
        "the image must be [height, width, channels] with no empty side, "
        "not " +
        s.ToString());
  }
  return Status::OK();
}

StatusOr<int64_t> Key(const Tensor& key) {
  if (key.shape().rank() != 0 ||
      (key.dtype() != DataType::kInt64 && key.dtype() != DataType::kInt32)) {
    return InvalidArgumentError("key must be an int64 or int32 scalar, not " +
                                std::string(DataTypeName(key.dtype())) +
                                key.shape().ToString());
  }
  return key.dtype() == DataType::kInt64 ? *key.data<int64_t>()
                                         : *key.data<int32_t>();
}

// [height, width] from a size attribute of two positive entries.
Status TwoSides(const std::vector<int64_t>& size, const char* what) {
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > 65535 ||
      size[1] > 65535) {
    return InvalidArgumentError(std::string(what) +
                                " must be [height, width], each 1 to 65535");
  }
  return Status::OK();
}

// The image as float32 (a copy for uint8, the tensor itself for float32).
StatusOr<Tensor> AsFloat(const Tensor& image) {
  if (image.dtype() == DataType::kFloat32) return image;
  if (image.dtype() != DataType::kUInt8) {
    return InvalidArgumentError("the image must be uint8 or float32, not " +
                                std::string(DataTypeName(image.dtype())));
  }
  WEFT_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(
                                        DataType::kFloat32, image.shape()));
  const uint8_t* in = image.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < image.NumElements(); ++i) o[i] = in[i];
  return out;
}

// ---- File and codec kernels ----

class ReadFileKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::string_view path,
                          ScalarBytes(ctx.input(0), "filename"));
    const std::string name(path);
    WEFT_ASSIGN_OR_RETURN(std::string bytes,
                          ReadFileBytes(name, "ReadFile: " + name));
    WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
    out->data<std::string>()[0] = std::move(bytes);
    return Status::OK();
  }
};

enum class Codec { kJpeg, kPng, kAny };

class DecodeKernel : public OpKernel {
 public:
  DecodeKernel(const KernelConstruction& c, Codec codec)
      : codec_(codec),
        channels_(static_cast<int>(c.attr<int64_t>("channels"))) {}

  Status Compute(KernelContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::string_view bytes,
                          ScalarBytes(ctx.input(0), "contents"));
    StatusOr<Tensor> image =
        codec_ == Codec::kJpeg  ? DecodeJpeg(bytes, channels_)
        : codec_ == Codec::kPng ? DecodePng(bytes, channels_)
                                : DecodeImage(bytes, channels_);
    if (!image.ok()) return image.status();
    return ctx.SetOutput(0, std::move(image).value());
  }

 private:
  Codec codec_;
  int channels_;
};

enum class PixelFormat { kRgb, kBgr, kGrayscale };

// ONNX's ImageDecoder (opset 20): a 1-D uint8 tensor of encoded bytes to a
// uint8 [height, width, channels] image, RGB, BGR or Grayscale. JPEG and
// PNG decode (libjpeg-turbo, libpng); the other formats ONNX lists are
// refused naming the format. Alpha is dropped. Grayscale is ONNX's
// reference (Pillow's "L"): a grey image as it is, a colour one as
// (19595 R + 38470 G + 7471 B + 2^15) >> 16. A stream that does not decode
// is an error saying why: ONNX's text allows an empty image instead, which
// would pass bad input on as a silent empty result.
class ImageDecoderKernel : public OpKernel {
 public:
  static StatusOr<std::unique_ptr<OpKernel>> Create(
      const KernelConstruction& c) {
    const std::string& name = c.attr<std::string>("pixel_format");
    WEFT_RETURN_IF_ERROR(c.status());
    PixelFormat format;
    if (name == "RGB") {
      format = PixelFormat::kRgb;
    } else if (name == "BGR") {
      format = PixelFormat::kBgr;
    } else if (name == "Grayscale") {
      format = PixelFormat::kGrayscale;
    } else {
      return InvalidArgumentError("pixel_format \"" + name +
                                  "\" is not one of RGB, BGR, Grayscale");
    }
    return std::unique_ptr<OpKernel>(new ImageDecoderKernel(format));
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& encoded = ctx.input(0);
    if (encoded.shape().rank() != 1) {
      return InvalidArgumentError("encoded_stream must be 1-D, not " +
                                  encoded.shape().ToString());
    }
    const std::string_view bytes(
        reinterpret_cast<const char*>(encoded.data<uint8_t>()),
        static_cast<size_t>(encoded.NumElements()));
    if (bytes.empty()) return InvalidArgumentError("encoded_stream is empty");
    if (DetectImageFormat(bytes) == ImageFormat::kUnknown) {
      const std::string_view other = UndecodedImageFormatName(bytes);
      if (other.empty()) {
        return InvalidArgumentError(
            "encoded_stream is not an image weft reads (JPEG, PNG): its " +
            std::to_string(bytes.size()) + " bytes start with no known " +
            "signature");
      }
      return UnimplementedError("encoded_stream is a " + std::string(other) +
                                " image; weft decodes JPEG and PNG");
    }
    if (format_ == PixelFormat::kGrayscale) {
      WEFT_ASSIGN_OR_RETURN(Tensor image, DecodeImage(bytes, 0));
      WEFT_ASSIGN_OR_RETURN(Tensor grey, ToGrey(image));
      return ctx.SetOutput(0, std::move(grey));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor image, DecodeImage(bytes, 3));
    if (format_ == PixelFormat::kBgr) {
      uint8_t* p = image.data<uint8_t>();
      for (int64_t i = 0; i < image.NumElements(); i += 3) {
        std::swap(p[i], p[i + 2]);
      }
    }
    return ctx.SetOutput(0, std::move(image));
  }

 private:
  explicit ImageDecoderKernel(PixelFormat format) : format_(format) {}

  // An image of 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA) channels
  // as one grey channel.
  static StatusOr<Tensor> ToGrey(const Tensor& image) {
    const int64_t height = image.shape().dim(0);
    const int64_t width = image.shape().dim(1);
    const int64_t channels = image.shape().dim(2);
    if (channels == 1) return image;
    WEFT_ASSIGN_OR_RETURN(
        Tensor grey,
        Tensor::CreateUninitialized(DataType::kUInt8, Shape{height, width, 1}));
    const uint8_t* in = image.data<uint8_t>();
    uint8_t* out = grey.data<uint8_t>();
    for (int64_t i = 0; i < height * width; ++i, in += channels) {
      out[i] = channels < 3
                   ? in[0]
                   : static_cast<uint8_t>((in[0] * 19595u + in[1] * 38470u +
                                           in[2] * 7471u + 0x8000u) >>
                                          16);
    }
    return grey;
  }

  PixelFormat format_;
};

class EncodeKernel : public OpKernel {
 public:
  EncodeKernel(const KernelConstruction& c, Codec codec)
      : codec_(codec),
        quality_(codec == Codec::kJpeg
                     ? static_cast<int>(c.attr<int64_t>("quality"))
                     : 0) {}

  Status Compute(KernelContext& ctx) const override {
    StatusOr<std::string> bytes = codec_ == Codec::kJpeg
                                      ? EncodeJpeg(ctx.input(0), quality_)
                                      : EncodePng(ctx.input(0));
    if (!bytes.ok()) return bytes.status();
    WEFT_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, Shape{}));
    out->data<std::string>()[0] = std::move(bytes).value();
    return Status::OK();
  }

 private:
  Codec codec_;
  int quality_;
};

// ---- Geometry ----

// Resamples the window [y0, y0 + h) x [x0, x0 + w) of a float image to
// out_h x out_w, rows split across the intra-op pool.
StatusOr<Tensor> Resample(KernelContext& ctx, const Tensor& image, double y0,
                          double x0, double h, double w, int64_t out_h,
                          int64_t out_w, ResampleFilter filter,
                          bool antialias) {
  if (image.dtype() != DataType::kUInt8 &&
      image.dtype() != DataType::kFloat32) {
    return InvalidArgumentError("the image must be uint8 or float32, not " +
                                std::string(DataTypeName(image.dtype())));
  }
  const int64_t in_h = image.shape().dim(0), in_w = image.shape().dim(1),
                channels = image.shape().dim(2);
  const ResampleTaps across =
      ComputeResampleTaps(in_w, out_w, x0, w, filter, antialias);
  const ResampleTaps all_down =
      ComputeResampleTaps(in_h, out_h, y0, h, filter, antialias);
  // Only the rows the height pass reads go through the width pass (a crop
  // reads a band of the image).
  int64_t row0 = 0, row1 = 0;
  TapSpan(all_down, &row0, &row1);
  const ResampleTaps down = ShiftTaps(all_down, row0);
  WEFT_ASSIGN_OR_RETURN(
      Tensor wide,
      Tensor::CreateUninitialized(DataType::kFloat32,
                                  Shape({row1 - row0, out_w, channels})));
  WEFT_ASSIGN_OR_RETURN(
      Tensor out, Tensor::CreateUninitialized(DataType::kFloat32,
                                              Shape({out_h, out_w, channels})));
  const double per_row = 2.0 * static_cast<double>(out_w * channels);
  const size_t row_bytes =
      static_cast<size_t>(in_w * channels) * DataTypeSize(image.dtype());
  const char* band =
      static_cast<const char*>(image.raw_data()) + row0 * row_bytes;
  ctx.ParallelFor(row1 - row0, per_row * static_cast<double>(across.max_taps),
                  [&](int64_t b, int64_t e) {
                    if (image.dtype() == DataType::kUInt8) {
                      ResampleWidth(reinterpret_cast<const uint8_t*>(band),
                                    in_w, channels, across, wide.data<float>(),
                                    b, e);
                    } else {
                      ResampleWidth(reinterpret_cast<const float*>(band), in_w,
                                    channels, across, wide.data<float>(), b, e);
                    }
                  });
  ctx.ParallelFor(out_h, per_row * static_cast<double>(down.max_taps),
                  [&](int64_t b, int64_t e) {
                    ResampleHeight(wide.data<float>(), out_w, channels, down,
                                   out.data<float>(), b, e);
                  });
  return out;
}

// The output size of a resize: [h, w], or [s] for "the shorter side to s,
// the aspect kept" (torchvision's Resize(s)).
std::pair<int64_t, int64_t> ResizedSides(const std::vector<int64_t>& size,
                                         int64_t h, int64_t w) {
  if (size.size() == 2) return {size[0], size[1]};
  const int64_t s = size[0];
  if (h <= w) {
    return {s, std::max<int64_t>(
                   1, static_cast<int64_t>(static_cast<double>(s) * w / h))};
  }
  return {std::max<int64_t>(
              1, static_cast<int64_t>(static_cast<double>(s) * h / w)),
          s};
}

class ResizeKernel : public OpKernel {
 public:
  ResizeKernel(const KernelConstruction& c, ResampleFilter filter)
      : filter_(filter),
        size_(c.attr<std::vector<int64_t>>("size")),
        antialias_(c.attr<bool>("antialias")) {}

  static Status CheckSize(const std::vector<int64_t>& size) {
    if (size.empty() || size.size() > 2 ||
        std::any_of(size.begin(), size.end(),
                    [](int64_t s) { return s <= 0 || s > 65535; })) {
      return InvalidArgumentError(
          "size must be [height, width] or [shorter side], each 1 to 65535");
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckImage(image));
    WEFT_RETURN_IF_ERROR(CheckSize(size_));
    const int64_t h = image.shape().dim(0), w = image.shape().dim(1);
    auto [out_h, out_w] = ResizedSides(size_, h, w);
    WEFT_ASSIGN_OR_RETURN(
        Tensor out,
        Resample(ctx, image, 0, 0, static_cast<double>(h),
                 static_cast<double>(w), out_h, out_w, filter_, antialias_));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  ResampleFilter filter_;
  std::vector<int64_t> size_;
  bool antialias_;
};

// Copies the window [y0, y0 + h) x [x0, x0 + w) of any numeric image.
StatusOr<Tensor> CopyWindow(const Tensor& image, int64_t y0, int64_t x0,
                            int64_t h, int64_t w, bool mirror = false) {
  const int64_t width = image.shape().dim(1), channels = image.shape().dim(2);
  WEFT_ASSIGN_OR_RETURN(
      Tensor out,
      Tensor::CreateUninitialized(image.dtype(), Shape({h, w, channels})));
  const size_t pixel = DataTypeSize(image.dtype()) * channels;
  const auto* in = static_cast<const char*>(image.raw_data());
  auto* o = static_cast<char*>(out.raw_data());
  for (int64_t y = 0; y < h; ++y) {
    const char* src = in + ((y0 + y) * width + x0) * pixel;
    char* dst = o + y * w * pixel;
    if (!mirror) {
      std::memcpy(dst, src, w * pixel);
      continue;
    }
    for (int64_t x = 0; x < w; ++x) {
      std::memcpy(dst + x * pixel, src + (w - 1 - x) * pixel, pixel);
    }
  }
  return out;
}

Status CheckWindow(const Tensor& image, int64_t y0, int64_t x0, int64_t h,
                   int64_t w) {
  const int64_t height = image.shape().dim(0), width = image.shape().dim(1);
  if (y0 < 0 || x0 < 0 || h <= 0 || w <= 0 || y0 + h > height ||
      x0 + w > width) {
    return InvalidArgumentError(
        "the window " + std::to_string(h) + "x" + std::to_string(w) + " at (" +
        std::to_string(y0) + ", " + std::to_string(x0) +
        ") does not fit in the " + std::to_string(height) + "x" +
        std::to_string(width) + " image");
  }
  return Status::OK();
}

Status CheckCopyable(const Tensor& image) {
  WEFT_RETURN_IF_ERROR(CheckImage(image));
  if (image.dtype() == DataType::kString || IsContainerType(image.dtype())) {
    return InvalidArgumentError("the image must be numeric");
  }
  return Status::OK();
}

class CropToBoundingBoxKernel : public OpKernel {
 public:
  explicit CropToBoundingBoxKernel(const KernelConstruction& c)
      : y0_(c.attr<int64_t>("offset_height")),
        x0_(c.attr<int64_t>("offset_width")),
        h_(c.attr<int64_t>("target_height")),
        w_(c.attr<int64_t>("target_width")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckCopyable(image));
    WEFT_RETURN_IF_ERROR(CheckWindow(image, y0_, x0_, h_, w_));
    WEFT_ASSIGN_OR_RETURN(Tensor out, CopyWindow(image, y0_, x0_, h_, w_));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  int64_t y0_, x0_, h_, w_;
};

class CenterCropKernel : public OpKernel {
 public:
  explicit CenterCropKernel(const KernelConstruction& c)
      : size_(c.attr<std::vector<int64_t>>("size")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckCopyable(image));
    WEFT_RETURN_IF_ERROR(TwoSides(size_, "size"));
    // torchvision's offsets: round((side - crop) / 2).
    const int64_t y0 = static_cast<int64_t>(std::lround(
        static_cast<double>(image.shape().dim(0) - size_[0]) / 2.0));
    const int64_t x0 = static_cast<int64_t>(std::lround(
        static_cast<double>(image.shape().dim(1) - size_[1]) / 2.0));
    WEFT_RETURN_IF_ERROR(CheckWindow(image, y0, x0, size_[0], size_[1]));
    WEFT_ASSIGN_OR_RETURN(Tensor out,
                          CopyWindow(image, y0, x0, size_[0], size_[1]));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  std::vector<int64_t> size_;
};

class RandomCropKernel : public OpKernel {
 public:
  explicit RandomCropKernel(const KernelConstruction& c)
      : size_(c.attr<std::vector<int64_t>>("size")),
        seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckCopyable(image));
    WEFT_RETURN_IF_ERROR(TwoSides(size_, "size"));
    WEFT_ASSIGN_OR_RETURN(int64_t key, Key(ctx.input(1)));
    WEFT_RETURN_IF_ERROR(CheckWindow(image, 0, 0, size_[0], size_[1]));
    SeededRandom random(seed_, static_cast<uint64_t>(key));
    const int64_t y0 = static_cast<int64_t>(random.Below(
        static_cast<uint64_t>(image.shape().dim(0) - size_[0] + 1)));
    const int64_t x0 = static_cast<int64_t>(random.Below(
        static_cast<uint64_t>(image.shape().dim(1) - size_[1] + 1)));
    WEFT_ASSIGN_OR_RETURN(Tensor out,
                          CopyWindow(image, y0, x0, size_[0], size_[1]));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  std::vector<int64_t> size_;
  uint64_t seed_;
};

class RandomFlipKernel : public OpKernel {
 public:
  explicit RandomFlipKernel(const KernelConstruction& c)
      : seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckCopyable(image));
    WEFT_ASSIGN_OR_RETURN(int64_t key, Key(ctx.input(1)));
    if (SeededRandom(seed_, static_cast<uint64_t>(key)).Below(2) == 0) {
      return ctx.SetOutput(0, image);
    }
    WEFT_ASSIGN_OR_RETURN(Tensor out,
                          CopyWindow(image, 0, 0, image.shape().dim(0),
                                     image.shape().dim(1), /*mirror=*/true));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  uint64_t seed_;
};

// torchvision's RandomResizedCrop: up to 10 draws of an area fraction in
// `scale` and a log-uniform aspect ratio in `ratio`; the first window that
// fits is resized to `size`; else the centre crop at the nearest ratio.
class RandomResizedCropKernel : public OpKernel {
 public:
  explicit RandomResizedCropKernel(const KernelConstruction& c)
      : size_(c.attr<std::vector<int64_t>>("size")),
        scale_(c.attr<std::vector<double>>("scale")),
        ratio_(c.attr<std::vector<double>>("ratio")),
        seed_(static_cast<uint64_t>(c.attr<int64_t>("seed"))),
        antialias_(c.attr<bool>("antialias")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& image = ctx.input(0);
    WEFT_RETURN_IF_ERROR(CheckImage(image));
    WEFT_RETURN_IF_ERROR(TwoSides(size_, "size"));
    if (scale_.size() != 2 || ratio_.size() != 2 || !(scale_[0] > 0) ||
        !(scale_[0] <= scale_[1]) || !(ratio_[0] > 0) ||
        !(ratio_[0] <= ratio_[1])) {
      return InvalidArgumentError(
          "scale and ratio must each be [low, high] with 0 < low <= high");
    }
    WEFT_ASSIGN_OR_RETURN(int64_t key, Key(ctx.input(1)));
    const int64_t h = image.shape().dim(0), w = image.shape().dim(1);
    int64_t ch = 0, cw = 0, y0 = 0, x0 = 0;
    Window(h, w, static_cast<uint64_t>(key), &ch, &cw, &y0, &x0);
    WEFT_ASSIGN_OR_RETURN(
        Tensor out,
        Resample(ctx, image, static_cast<double>(y0), static_cast<double>(x0),
                 static_cast<double>(ch), static_cast<double>(cw), size_[0],
                 size_[1], ResampleFilter::kBilinear, antialias_));
    return ctx.SetOutput(0, std::move(out));
  }

 private:
  // A uniform double in [0, 1) from 53 random bits.
  static double Unit(SeededRandom& random) {
    return static_cast<double>(random.Next() >> 11) * 0x1.0p-53;
  }

  void Window(int64_t h, int64_t w, uint64_t key, int64_t* ch, int64_t* cw,
              int64_t* y0, int64_t* x0) const {
    SeededRandom random(seed_, key);
    const double area = static_cast<double>(h * w);
    const double log_lo = std::log(ratio_[0]), log_hi = std::log(ratio_[1]);
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target =
          area * (scale_[0] + (scale_[1] - scale_[0]) * Unit(random));
      const double aspect = std::exp(log_lo + (log_hi - log_lo) * Unit(random));
      const auto tw =
          static_cast<int64_t>(std::lround(std::sqrt(target * aspect)));
      const auto th =
          static_cast<int64_t>(std::lround(std::sqrt(target / aspect)));
      if (tw > 0 && th > 0 && tw <= w && th <= h) {
        *ch = th;
        *cw = tw;
        *y0 = static_cast<int64_t>(
            random.Below(static_cast<uint64_t>(h - th + 1)));
        *x0 = static_cast<int64_t>(
            random.Below(static_cast<uint64_t>(w - tw + 1)));
        return;
      }
    }
    const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
    if (in_ratio < ratio_[0]) {
      *cw = w;
      *ch =
          std::max<int64_t>(1, std::lround(static_cast<double>(w) / ratio_[0]));
    } else if (in_ratio > ratio_[1]) {
      *ch = h;
      *cw =
          std::max<int64_t>(1, std::lround(static_cast<double>(h) * ratio_[1]));
    } else {
      *ch = h;
      *cw = w;
    }
    *ch = std::min(*ch, h);
    *cw = std::min(*cw, w);
    *y0 = (h - *ch) / 2;
    *x0 = (w - *cw) / 2;
  }

  std::vector<int64_t> size_;
  std::vector<double> scale_, ratio_;
  uint64_t seed_;
  bool antialias_;
};

// ---- Values ----

class NormalizeKernel : public OpKernel {
 public:
  explicit NormalizeKernel(const KernelConstruction& c)
      : mean_(c.attr<std::vector<double>>("mean")),
        std_(c.attr<std::vector<double>>("std")),
        scale_(c.attr<double>("scale")) {}

  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t channels =
        x.shape().rank() > 0 ? x.shape().dim(x.shape().rank() - 1) : 0;
    if (mean_.size() != std_.size() ||
        (mean_.size() != 1 && static_cast<int64_t>(mean_.size()) != channels)) {
      return InvalidArgumentError(
          "mean and std must both have one entry, or one per channel (the "
          "last dimension, " +
          std::to_string(channels) + ")");
    }
    if (std::any_of(std_.begin(), std_.end(),
                    [](double s) { return !(s != 0); })) {
      return InvalidArgumentError("std must not be 0");
    }
    WEFT_ASSIGN_OR_RETURN(Tensor in, AsFloat(x));
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    const size_t n = mean_.size();
    std::vector<float> mul(n), add(n);
    for (size_t c = 0; c < n; ++c) {
      mul[c] = static_cast<float>(scale_ / std_[c]);
      add[c] = static_cast<float>(-mean_[c] / std_[c]);
    }
    const float* i = in.data<float>();
    float* o = out->data<float>();
    // Pixel by pixel, each channel's own factors (no division per element).
    // A scalar is one pixel of one channel.
    const int64_t width = x.shape().rank() == 0 ? 1 : channels;
    const int64_t pixels = width == 0 ? 0 : x.NumElements() / width;
    ctx.ParallelFor(pixels, static_cast<double>(width),
                    [&](int64_t b, int64_t e) {
                      for (int64_t p = b; p < e; ++p) {
                        for (int64_t c = 0; c < width; ++c) {
                          const size_t k = n == 1 ? 0 : static_cast<size_t>(c);
                          o[p * width + c] = i[p * width + c] * mul[k] + add[k];
                        }
                      }
                    });
    return Status::OK();
  }

 private:
  std::vector<double> mean_, std_;
  double scale_;
};

class ReverseChannelsKernel : public OpKernel {
 public:
  Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.shape().rank() < 1) {
      return InvalidArgumentError("needs a last dimension (the channels)");
    }
    const int64_t channels = x.shape().dim(x.shape().rank() - 1);
    WEFT_ASSIGN_OR_RETURN(Tensor * out,
                          ctx.AllocateOutputUninitialized(0, x.shape()));
    const size_t size = DataTypeSize(x.dtype());
    const auto* in = static_cast<const char*>(x.raw_data());
    auto* o = static_cast<char*>(out->raw_data());
    const int64_t pixels = channels == 0 ? 0 : x.NumElements() / channels;
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t c = 0; c < channels; ++c) {
        std::memcpy(o + (p * channels + c) * size,
                    in + (p * channels + channels - 1 - c) * size, size);
      }
    }
    return Status::OK();
  }
};

// ---- Registration ----

Status SetImageShape(InferenceContext& ctx, int64_t channels) {
  ctx.set_output(0, PartialShape({-1, -1, channels > 0 ? channels : -1}));
  return Status::OK();
}

Status SameRankThree(InferenceContext& ctx) {
  const PartialShape& x = ctx.input_shape(0);
  if (x.rank_known() && x.rank() != 3) {
    return InvalidArgumentError(
        "the image must be [height, width, channels], not " + x.ToString());
  }
  const int64_t channels = x.rank_known() ? x.dims()[2] : -1;
  return SetImageShape(ctx, channels);
}

template <class Kernel, class Arg>
KernelFactory FactoryWith(Arg arg) {
  return
      [arg](
          const KernelConstruction& c) -> StatusOr<std::unique_ptr<OpKernel>> {
        auto kernel = std::make_unique<Kernel>(c, arg);
        WEFT_RETURN_IF_ERROR(c.status());
        return std::unique_ptr<OpKernel>(std::move(kernel));
      };
}

const std::vector<DataType> kImageTypes = {DataType::kUInt8,
                                           DataType::kFloat32};

// ReadFile and the codecs.
void RegisterCodecOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ReadFile")
          .Input(ArgDef::Fixed("filename", DataType::kString))
          .Output(ArgDef::Fixed("contents", DataType::kString))
          .SetBlocking()
          .SetStateful()
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("ReadFile", KernelFactoryFor<ReadFileKernel>()));

  const std::pair<const char*, Codec> decoders[] = {
      {"DecodeJpeg", Codec::kJpeg},
      {"DecodePng", Codec::kPng},
      {"DecodeImage", Codec::kAny}};
  for (const auto& [name, codec] : decoders) {
    CheckRegistered(registry.RegisterOp(
        OpDefBuilder(name)
            .Input(ArgDef::Fixed("contents", DataType::kString))
            .Output(ArgDef::Fixed("image", DataType::kUInt8))
            .Attr("channels", AttrType::kInt, int64_t{0})
            .SetShapeFn([](InferenceContext& ctx) -> Status {
              return SetImageShape(ctx, ctx.attr<int64_t>("channels"));
            })
            .Build()));
    CheckRegistered(
        registry.RegisterKernel(name, FactoryWith<DecodeKernel>(codec)));
  }
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("ImageDecoder")
          .Input(ArgDef::Fixed("encoded_stream", DataType::kUInt8))
          .Output(ArgDef::Fixed("image", DataType::kUInt8))
          .Attr("pixel_format", AttrType::kString, std::string("RGB"))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            return SetImageShape(
                ctx,
                ctx.attr<std::string>("pixel_format") == "Grayscale" ? 1 : 3);
          })
          .Build()));
  CheckRegistered(
      registry.RegisterKernel("ImageDecoder", &ImageDecoderKernel::Create));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("EncodeJpeg")
          .Input(ArgDef::Fixed("image", DataType::kUInt8))
          .Output(ArgDef::Fixed("contents", DataType::kString))
          .Attr("quality", AttrType::kInt, int64_t{95})
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "EncodeJpeg", FactoryWith<EncodeKernel>(Codec::kJpeg)));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("EncodePng")
          .Input(ArgDef::Fixed("image", DataType::kUInt8))
          .Output(ArgDef::Fixed("contents", DataType::kString))
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "EncodePng", FactoryWith<EncodeKernel>(Codec::kPng)));
}

// Resizes, crops and flips.
void RegisterGeometryOps(OpRegistry& registry) {
  const std::pair<const char*, ResampleFilter> resizers[] = {
      {"ResizeBilinear", ResampleFilter::kBilinear},
      {"ResizeNearestNeighbor", ResampleFilter::kNearest},
      {"ResizeArea", ResampleFilter::kArea}};
  for (const auto& [name, filter] : resizers) {
    CheckRegistered(registry.RegisterOp(
        OpDefBuilder(name)
            .Input(ArgDef::Typed("images", "T"))
            .Output(ArgDef::Fixed("resized", DataType::kFloat32))
            .Attr("T", AttrType::kType, std::nullopt, kImageTypes)
            .Attr("size", AttrType::kListInt)
            .Attr("antialias", AttrType::kBool, false)
            .SetShapeFn(SameRankThree)
            .Build()));
    CheckRegistered(
        registry.RegisterKernel(name, FactoryWith<ResizeKernel>(filter)));
  }

  CheckRegistered(registry.RegisterOp(OpDefBuilder("CropToBoundingBox")
                                          .Input(ArgDef::Typed("image", "T"))
                                          .Output(ArgDef::Typed("cropped", "T"))
                                          .Attr("T", AttrType::kType)
                                          .Attr("offset_height", AttrType::kInt)
                                          .Attr("offset_width", AttrType::kInt)
                                          .Attr("target_height", AttrType::kInt)
                                          .Attr("target_width", AttrType::kInt)
                                          .SetShapeFn(SameRankThree)
                                          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "CropToBoundingBox", KernelFactoryFor<CropToBoundingBoxKernel>()));
  CheckRegistered(registry.RegisterOp(OpDefBuilder("CenterCrop")
                                          .Input(ArgDef::Typed("image", "T"))
                                          .Output(ArgDef::Typed("cropped", "T"))
                                          .Attr("T", AttrType::kType)
                                          .Attr("size", AttrType::kListInt)
                                          .SetShapeFn(SameRankThree)
                                          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "CenterCrop", KernelFactoryFor<CenterCropKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("RandomCrop")
                              .Input(ArgDef::Typed("image", "T"))
                              .Input(ArgDef::Typed("key", "K"))
                              .Output(ArgDef::Typed("cropped", "T"))
                              .Attr("T", AttrType::kType)
                              .Attr("K", AttrType::kType, std::nullopt,
                                    {DataType::kInt64, DataType::kInt32})
                              .Attr("size", AttrType::kListInt)
                              .Attr("seed", AttrType::kInt, int64_t{0})
                              .SetShapeFn(SameRankThree)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomCrop", KernelFactoryFor<RandomCropKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("RandomFlipLeftRight")
                              .Input(ArgDef::Typed("image", "T"))
                              .Input(ArgDef::Typed("key", "K"))
                              .Output(ArgDef::Typed("flipped", "T"))
                              .Attr("T", AttrType::kType)
                              .Attr("K", AttrType::kType, std::nullopt,
                                    {DataType::kInt64, DataType::kInt32})
                              .Attr("seed", AttrType::kInt, int64_t{0})
                              .SetShapeFn(SameRankThree)
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomFlipLeftRight", KernelFactoryFor<RandomFlipKernel>()));
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("RandomResizedCrop")
          .Input(ArgDef::Typed("image", "T"))
          .Input(ArgDef::Typed("key", "K"))
          .Output(ArgDef::Fixed("resized", DataType::kFloat32))
          .Attr("T", AttrType::kType, std::nullopt, kImageTypes)
          .Attr("K", AttrType::kType, std::nullopt,
                {DataType::kInt64, DataType::kInt32})
          .Attr("size", AttrType::kListInt)
          .Attr("scale", AttrType::kListFloat, std::vector<double>{0.08, 1.0})
          .Attr("ratio", AttrType::kListFloat,
                std::vector<double>{3.0 / 4.0, 4.0 / 3.0})
          .Attr("seed", AttrType::kInt, int64_t{0})
          .Attr("antialias", AttrType::kBool, true)
          .SetShapeFn(SameRankThree)
          .Build()));
  CheckRegistered(registry.RegisterKernel(
      "RandomResizedCrop", KernelFactoryFor<RandomResizedCropKernel>()));
}

// Normalize and ReverseChannels.
void RegisterValueOps(OpRegistry& registry) {
  CheckRegistered(registry.RegisterOp(
      OpDefBuilder("Normalize")
          .Input(ArgDef::Typed("x", "T"))
          .Output(ArgDef::Fixed("y", DataType::kFloat32))
          .Attr("T", AttrType::kType, std::nullopt, kImageTypes)
          .Attr("mean", AttrType::kListFloat)
          .Attr("std", AttrType::kListFloat)
          .Attr("scale", AttrType::kFloat, 1.0)
          .SetShapeFn([](InferenceContext& ctx) -> Status {
            ctx.set_output(0, ctx.input_shape(0));
            return Status::OK();
          })
          .Build()));
  CheckRegistered(registry.RegisterKernel("Normalize",
                                          KernelFactoryFor<NormalizeKernel>()));
  CheckRegistered(
      registry.RegisterOp(OpDefBuilder("ReverseChannels")
                              .Input(ArgDef::Typed("x", "T"))
                              .Output(ArgDef::Typed("y", "T"))
                              .Attr("T", AttrType::kType)
                              .SetShapeFn([](InferenceContext& ctx) -> Status {
                                ctx.set_output(0, ctx.input_shape(0));
                                return Status::OK();
                              })
                              .Build()));
  CheckRegistered(registry.RegisterKernel(
      "ReverseChannels", KernelFactoryFor<ReverseChannelsKernel>()));
}

}  // namespace

void RegisterImageOps(OpRegistry& registry) {
  registry.AddSummaries(kSummaries);
  RegisterCodecOps(registry);
  RegisterGeometryOps(registry);
  RegisterValueOps(registry);
}

}  // namespace weft::internal
