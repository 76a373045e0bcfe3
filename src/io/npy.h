// NumPy .npy files (format versions 1.0, 2.0, 3.0), little-endian, C order:
// float32, float64, int32, int64 and bool.
#ifndef WEFT_SRC_IO_NPY_H_
#define WEFT_SRC_IO_NPY_H_

#include <string>
#include <string_view>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft::internal {

// Parses the bytes of a .npy file. Every malformed part (magic, version,
// header, dtype, Fortran order, shape, data size) is an InvalidArgument
// naming it; nothing is allocated before the sizes are checked.
StatusOr<Tensor> ParseNpy(std::string_view bytes);

// Reads a .npy file; errors start with the path.
StatusOr<Tensor> ReadNpy(const std::string& path);

// The .npy bytes of a tensor (version 1.0 header).
std::string SerializeNpy(const Tensor& tensor);
Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace weft::internal

#endif  // WEFT_SRC_IO_NPY_H_
