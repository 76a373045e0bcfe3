// The models the server's tests load, from tests/cli/data (WEFT_TEST_DATA,
// which only the serve test executable defines).
#ifndef WEFT_SRC_TEST_SUPPORT_SERVE_DATA_H_
#define WEFT_SRC_TEST_SUPPORT_SERVE_DATA_H_

#include <string>

namespace weft::test {

// A small MLP in ONNX form with an open batch dimension.
inline std::string ServeTestMlpPath() {
  return std::string(WEFT_TEST_DATA) + "/mlp.onnx";
}

}  // namespace weft::test

#endif  // WEFT_SRC_TEST_SUPPORT_SERVE_DATA_H_
