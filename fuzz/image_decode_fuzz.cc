// libFuzzer target: the image decoders (weft.data's DecodeJpeg, DecodePng,
// DecodeImage, and the signatures ONNX's ImageDecoder names) on arbitrary
// bytes. The first byte picks the channels asked
// for; every input must give an image or an error, never a crash, a leak
// or a hang. Seeds: fuzz/image_seeds (small JPEGs and PNGs of every colour
// type).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr int kChannels[] = {0, 1, 3, 4};
  const int channels = kChannels[data[0] % 4];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  auto image = weft::internal::DecodeImage(bytes, channels);
  if (image.ok()) {
    // A decoded image re-encodes (the encoders' own checks).
    (void)weft::internal::EncodePng(*image);
  }
  // Each decoder on bytes of the other kind, too.
  (void)weft::internal::DecodeJpeg(bytes, channels == 4 ? 3 : channels);
  (void)weft::internal::DecodePng(bytes, channels);
  (void)weft::internal::UndecodedImageFormatName(bytes);
  return 0;
}
