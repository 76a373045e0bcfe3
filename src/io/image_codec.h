// JPEG and PNG to and from uint8 tensors of shape [height, width, channels]
// (libjpeg-turbo and libpng, Debian's). Every decoder treats its bytes as
// hostile: a corrupt, truncated or oversized image is a Status saying what
// is wrong, never a crash (fuzz/image_decode_fuzz.cc).
#ifndef WEFT_SRC_IO_IMAGE_CODEC_H_
#define WEFT_SRC_IO_IMAGE_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

enum class ImageFormat { kUnknown, kJpeg, kPng };

// By the first bytes (the signatures), never by a file name.
ImageFormat DetectImageFormat(std::string_view bytes);

// The name of a format weft recognises by its signature but does not
// decode ("BMP", "TIFF", "WebP", "JPEG 2000", "PNM", "GIF"), for errors
// that say what a stream is; "" when none matches.
std::string_view UndecodedImageFormatName(std::string_view bytes);

// Images larger than this many pixels are refused before any pixel is
// decoded (a 30-byte header can claim 65535 x 65535).
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

// channels: 0 keeps the image's own (1 or 3 for JPEG; 1, 2, 3 or 4 for
// PNG), 1 gives grey, 3 RGB, 4 RGBA (PNG only). Errors start with "JPEG:"
// or "PNG:" and say what is wrong.
StatusOr<Tensor> DecodeJpeg(std::string_view bytes, int channels = 0);
// 16-bit PNGs are reduced to 8 bits (the high byte, as TensorFlow's uint8
// decode_png).
StatusOr<Tensor> DecodePng(std::string_view bytes, int channels = 0);
// Either, by its signature; anything else is an error naming the formats.
StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels = 0);

// image: uint8 [height, width, channels] with 1 or 3 channels (JPEG), 1-4
// (PNG). quality: 1-100.
StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality = 95);
StatusOr<std::string> EncodePng(const Tensor& image);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_IMAGE_CODEC_H_
