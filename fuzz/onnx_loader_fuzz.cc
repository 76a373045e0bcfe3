// libFuzzer target for the ONNX loader: any byte string either fails to
// parse or import with a Status, or yields a graph that compiles or fails to
// with a Status — never a crash, a hang, a sanitizer report or an
// allocation beyond what the bytes justify. Seeded with the ONNX node-test
// models (scripts/fuzz generates them).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/compiled_graph.h"
#include "weft/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // No external data: the fuzzer must not read files.
  auto model = weft::ParseOnnxModel(bytes, /*base_dir=*/"/nonexistent");
  if (!model.ok()) return 0;
  auto compiled = weft::internal::CompiledGraph::Compile(
      std::move(model->file.graph), weft::internal::CompileOptions{});
  (void)compiled;
  return 0;
}
