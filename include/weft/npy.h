// NumPy .npy files: read a tensor from one, write one to one.
//
//   weft::StatusOr<weft::Tensor> x = weft::ReadNpy("x.npy");
//   if (!x.ok()) ...  // x.status() names the file and what is wrong
//   weft::Status s = weft::WriteNpy("y.npy", outputs[0]);
//
// Format versions 1.0, 2.0 and 3.0, little-endian, C order, every weft
// dtype (NumPy's <f4, <f8, <f2, <i1..<i8, |u1..<u8, |b1).
#ifndef WEFT_NPY_H_
#define WEFT_NPY_H_

#include <string>
#include <string_view>

#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// Parses the bytes of a .npy file. Every malformed part (magic, version,
// header, dtype, Fortran order, shape, data size) is an InvalidArgument
// naming it; nothing is allocated before the sizes are checked.
StatusOr<Tensor> ParseNpy(std::string_view bytes);

// Reads a .npy file; errors start with the path.
StatusOr<Tensor> ReadNpy(const std::string& path);

// The .npy bytes of a tensor (version 1.0 header). REQUIRES: a tensor
// dtype, not a container (WriteNpy refuses one with an error); checked.
std::string SerializeNpy(const Tensor& tensor);
Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace weft

#endif  // WEFT_NPY_H_
