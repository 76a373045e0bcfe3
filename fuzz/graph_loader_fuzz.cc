// libFuzzer target for the graph loader: any byte string either fails to
// parse or compile with a Status, or yields a compiled graph — never a
// crash, a hang, a sanitizer report or a huge allocation. Seeded with the
// bad-input corpus (tests/bad_input) and the examples.
//
//   cmake --preset fuzz && cmake --build --preset fuzz
//   build-fuzz/bin/weft_graph_fuzzer -max_total_time=60 \
//       -dict=fuzz/graph.dict build-fuzz/corpus tests/bad_input examples
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/compiled_graph.h"
#include "weft/graph_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = weft::ParseGraph(text, /*base_dir=*/"/nonexistent");
  if (!file.ok()) return 0;
  // Compile only: running a well-formed graph may legitimately take long
  // (a Spin of an hour is a valid graph).
  auto compiled = weft::internal::CompiledGraph::Compile(
      std::move(file->graph), weft::internal::CompileOptions{});
  (void)compiled;
  return 0;
}
