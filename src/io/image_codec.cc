#include "io/image_codec.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <csetjmp>
#include <cstring>
#include <utility>
#include <vector>

namespace weft::internal {
namespace {

// ---- JPEG ----
// libjpeg reports a fatal error by calling error_exit, which must not
// return: it longjmps back to the decode function, whose frame holds only
// trivially destructible objects between setjmp and the jump.
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// Warnings (a truncated file is one: libjpeg pads it with grey) are kept as
// errors, so a damaged image is never a silent partial result.
void JpegEmitMessage(j_common_ptr info, int level) {
  if (level < 0) JpegErrorExit(info);
}

Status CheckChannels(const char* format, int channels, int max) {
  if (channels == 0 || channels == 1 || channels == 3 ||
      (max == 4 && channels == 4)) {
    return Status::OK();
  }
  return InvalidArgumentError(
      std::string(format) + ": channels must be 0, 1, 3" +
      (max == 4 ? " or 4" : "") + ", not " + std::to_string(channels));
}

// Makes `*image` a uint8 [height, width, channels] tensor and returns its
// first byte, or nullptr with `message` set. The decoders decode straight
// into it: a tensor's block comes from weft's buffer cache, where a
// decoder's own vector would be a new mapping per image once glibc's mmap
// threshold is fixed (Dask's nanny fixes it), every page faulting when
// written. Called between a decoder's setjmp and its end, so that every
// object with a destructor lives and dies in this frame, not the caller's.
[[gnu::noinline]] uint8_t* AllocateImage(Tensor* image, int height, int width,
                                         int channels, char* message,
                                         size_t message_size) {
  StatusOr<Tensor> made = Tensor::CreateUninitialized(
      DataType::kUInt8, Shape({height, width, channels}));
  if (!made.ok()) {
    std::snprintf(message, message_size, "%dx%d image: %s", width, height,
                  made.status().message().c_str());
    return nullptr;
  }
  *image = *std::move(made);
  return static_cast<uint8_t*>(image->raw_data());
}

// Decodes into `*image` (made by AllocateImage once the header is read);
// returns false with error->message set on failure. Kept free of objects
// with destructors between setjmp and the end, as longjmp skips them.
bool DecodeJpegInto(std::string_view bytes, int channels, JpegError* error,
                    Tensor* image) {
  jpeg_decompress_struct info{};
  info.err = jpeg_std_error(&error->manager);
  error->manager.error_exit = JpegErrorExit;
  error->manager.emit_message = JpegEmitMessage;
  if (setjmp(error->jump) != 0) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (static_cast<int64_t>(info.image_width) * info.image_height >
      kMaxImagePixels) {
    std::snprintf(error->message, sizeof(error->message),
                  "%ux%u pixels is more than the %lld allowed",
                  info.image_width, info.image_height,
                  static_cast<long long>(kMaxImagePixels));
    jpeg_destroy_decompress(&info);
    return false;
  }
  const int own = info.num_components == 1 ? 1 : 3;
  const int out_channels = channels == 0 ? own : channels;
  info.out_color_space = out_channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  if (info.output_components != out_channels) {
    std::snprintf(error->message, sizeof(error->message),
                  "decodes to %d channels, not the %d asked for",
                  info.output_components, out_channels);
    jpeg_destroy_decompress(&info);
    return false;
  }
  uint8_t* pixels =
      AllocateImage(image, static_cast<int>(info.output_height),
                    static_cast<int>(info.output_width), out_channels,
                    error->message, sizeof(error->message));
  if (pixels == nullptr) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  const size_t row = static_cast<size_t>(info.output_width) * out_channels;
  while (info.output_scanline < info.output_height) {
    JSAMPROW rows[1] = {pixels + row * info.output_scanline};
    jpeg_read_scanlines(&info, rows, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

// ---- PNG ----
struct PngReader {
  std::string_view bytes;
  size_t offset = 0;
  char message[256] = {};
};

void PngError(png_structp png, png_const_charp message) {
  auto* reader = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(reader->message, sizeof(reader->message), "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

void PngRead(png_structp png, png_bytep out, png_size_t size) {
  auto* reader = static_cast<PngReader*>(png_get_io_ptr(png));
  if (reader->bytes.size() - reader->offset < size) {
    png_error(png, "the data ends early (truncated file)");
  }
  std::memcpy(out, reader->bytes.data() + reader->offset, size);
  reader->offset += size;
}

// As DecodeJpegInto; `rows` is the caller's, for the same reason.
bool DecodePngInto(PngReader* reader, int channels, Tensor* image,
                   std::vector<png_bytep>* rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader,
                                           PngError, PngWarning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    std::snprintf(reader->message, sizeof(reader->message), "out of memory");
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, reader, PngRead);
  png_set_user_limits(png, 1u << 20, 1u << 20);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info);
  const png_uint_32 h = png_get_image_height(png, info);
  if (static_cast<int64_t>(w) * h > kMaxImagePixels) {
    png_error(png, "more pixels than allowed");
  }
  const int color = png_get_color_type(png, info);
  const bool transparency = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  // The image's own channels once expanded to 8 bits per sample.
  const bool grey =
      color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA;
  const bool has_alpha = (color & PNG_COLOR_MASK_ALPHA) != 0 || transparency;
  const int own = (grey ? 1 : 3) + (has_alpha ? 1 : 0);
  const int out_channels = channels == 0 ? own : channels;
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (transparency) png_set_tRNS_to_alpha(png);
  if (out_channels >= 3 && grey) png_set_gray_to_rgb(png);
  if (out_channels <= 2 && !grey) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
  if ((out_channels == 1 || out_channels == 3) && has_alpha) {
    png_set_strip_alpha(png);
  }
  if ((out_channels == 2 || out_channels == 4) && !has_alpha) {
    png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t row = png_get_rowbytes(png, info);
  if (static_cast<int>(png_get_channels(png, info)) != out_channels ||
      png_get_bit_depth(png, info) != 8 ||
      row != static_cast<size_t>(w) * out_channels) {
    png_error(png, "cannot convert to the channels asked for");
  }
  uint8_t* pixels =
      AllocateImage(image, static_cast<int>(h), static_cast<int>(w),
                    out_channels, reader->message, sizeof(reader->message));
  if (pixels == nullptr) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  rows->resize(h);
  for (png_uint_32 y = 0; y < h; ++y) (*rows)[y] = pixels + row * y;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

Status CheckImage(const char* format, const Tensor& image, int max_channels) {
  const Shape& s = image.shape();
  if (image.dtype() != DataType::kUInt8 || s.rank() != 3 || s.dim(0) <= 0 ||
      s.dim(1) <= 0 || s.dim(2) < 1 || s.dim(2) > max_channels ||
      (max_channels == 3 && s.dim(2) == 2) || s.dim(0) > 65535 ||
      s.dim(1) > 65535) {
    return InvalidArgumentError(std::string(format) +
                                ": the image must be uint8 [height, width, " +
                                (max_channels == 3 ? "1 or 3" : "1 to 4") +
                                "] with sides up to 65535, not " +
                                DataTypeName(image.dtype()) + s.ToString());
  }
  return Status::OK();
}

}  // namespace

ImageFormat DetectImageFormat(std::string_view bytes) {
  if (bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
      static_cast<uint8_t>(bytes[1]) == 0xD8 &&
      static_cast<uint8_t>(bytes[2]) == 0xFF) {
    return ImageFormat::kJpeg;
  }
  if (bytes.size() >= 8 && bytes.substr(0, 8) == "\x89PNG\r\n\x1a\n") {
    return ImageFormat::kPng;
  }
  return ImageFormat::kUnknown;
}

std::string_view UndecodedImageFormatName(std::string_view bytes) {
  const auto starts = [&](std::string_view signature) {
    return bytes.substr(0, signature.size()) == signature;
  };
  if (starts("BM")) return "BMP";
  if (starts(std::string_view("II*\0", 4)) ||
      starts(std::string_view("MM\0*", 4))) {
    return "TIFF";
  }
  if (bytes.size() >= 12 && starts("RIFF") && bytes.substr(8, 4) == "WEBP") {
    return "WebP";
  }
  if (starts(std::string_view("\0\0\0\x0cjP  \r\n\x87\n", 12)) ||
      starts("\xff\x4f\xff\x51")) {
    return "JPEG 2000";
  }
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' &&
      bytes[1] <= '7') {
    return "PNM";
  }
  if (starts("GIF87a") || starts("GIF89a")) return "GIF";
  return "";
}

StatusOr<Tensor> DecodeJpeg(std::string_view bytes, int channels) {
  WEFT_RETURN_IF_ERROR(CheckChannels("JPEG", channels, 3));
  if (DetectImageFormat(bytes) != ImageFormat::kJpeg) {
    return InvalidArgumentError("JPEG: not a JPEG image (no FF D8 FF start)");
  }
  JpegError error{};
  Tensor image;
  if (!DecodeJpegInto(bytes, channels, &error, &image)) {
    return InvalidArgumentError(std::string("JPEG: ") + error.message);
  }
  return image;
}

StatusOr<Tensor> DecodePng(std::string_view bytes, int channels) {
  WEFT_RETURN_IF_ERROR(CheckChannels("PNG", channels, 4));
  if (DetectImageFormat(bytes) != ImageFormat::kPng) {
    return InvalidArgumentError("PNG: not a PNG image (no PNG signature)");
  }
  PngReader reader{bytes};
  Tensor image;
  std::vector<png_bytep> rows;
  if (!DecodePngInto(&reader, channels, &image, &rows)) {
    return InvalidArgumentError(std::string("PNG: ") + reader.message);
  }
  return image;
}

StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels) {
  switch (DetectImageFormat(bytes)) {
    case ImageFormat::kJpeg:
      return DecodeJpeg(bytes, channels);
    case ImageFormat::kPng:
      return DecodePng(bytes, channels);
    case ImageFormat::kUnknown:
      break;
  }
  return InvalidArgumentError("not a JPEG or PNG image (" +
                              std::to_string(bytes.size()) +
                              " bytes, no JPEG or PNG signature at the start)");
}

namespace {

struct JpegSink {
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
};

bool EncodeJpegInto(const Tensor& image, int quality, JpegError* error,
                    JpegSink* sink) {
  jpeg_compress_struct info{};
  info.err = jpeg_std_error(&error->manager);
  error->manager.error_exit = JpegErrorExit;
  if (setjmp(error->jump) != 0) {
    jpeg_destroy_compress(&info);
    return false;
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &sink->buffer, &sink->size);
  info.image_height = static_cast<JDIMENSION>(image.shape().dim(0));
  info.image_width = static_cast<JDIMENSION>(image.shape().dim(1));
  info.input_components = static_cast<int>(image.shape().dim(2));
  info.in_color_space = info.input_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t row = info.image_width * info.input_components;
  const auto* pixels = image.data<uint8_t>();
  while (info.next_scanline < info.image_height) {
    JSAMPROW rows[1] = {
        const_cast<JSAMPLE*>(pixels + row * info.next_scanline)};
    jpeg_write_scanlines(&info, rows, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return true;
}

void PngWrite(png_structp png, png_bytep data, png_size_t size) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), size);
}

void PngFlush(png_structp) {}

bool EncodePngInto(const Tensor& image, std::string* out, PngReader* error,
                   std::vector<png_bytep>* rows) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error,
                                            PngError, PngWarning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  const auto height = static_cast<png_uint_32>(image.shape().dim(0));
  const auto width = static_cast<png_uint_32>(image.shape().dim(1));
  const int channels = static_cast<int>(image.shape().dim(2));
  static constexpr int kColor[] = {PNG_COLOR_TYPE_GRAY,
                                   PNG_COLOR_TYPE_GRAY_ALPHA,
                                   PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA};
  png_set_write_fn(png, out, PngWrite, PngFlush);
  png_set_IHDR(png, info, width, height, 8, kColor[channels - 1],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t row = static_cast<size_t>(width) * channels;
  auto* pixels = const_cast<uint8_t*>(image.data<uint8_t>());
  for (png_uint_32 y = 0; y < height; ++y) (*rows)[y] = pixels + row * y;
  png_write_image(png, rows->data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality) {
  WEFT_RETURN_IF_ERROR(CheckImage("JPEG", image, 3));
  if (quality < 1 || quality > 100) {
    return InvalidArgumentError("JPEG: quality must be from 1 to 100, not " +
                                std::to_string(quality));
  }
  JpegError error{};
  JpegSink sink;
  const bool ok = EncodeJpegInto(image, quality, &error, &sink);
  std::string bytes;
  if (ok) bytes.assign(reinterpret_cast<const char*>(sink.buffer), sink.size);
  std::free(sink.buffer);
  if (!ok) return InternalError(std::string("JPEG: ") + error.message);
  return bytes;
}

StatusOr<std::string> EncodePng(const Tensor& image) {
  WEFT_RETURN_IF_ERROR(CheckImage("PNG", image, 4));
  PngReader error{};
  std::string out;
  std::vector<png_bytep> rows(static_cast<size_t>(image.shape().dim(0)));
  if (!EncodePngInto(image, &out, &error, &rows)) {
    return InternalError(std::string("PNG: ") + error.message);
  }
  return out;
}

}  // namespace weft::internal
