//===- Npy.h - NumPy .npy tensor files ------------------------------------===//
//
// .npy is how tensors cross between the runtime and Python tooling (test
// fixtures, inspecting a rank's shard, feeding a batch). The reader takes
// format versions 1.0, 2.0 and 3.0, little-endian numeric and bool dtypes,
// C order and ranks 0..kMaxRank, and treats the file as hostile: every
// length is checked against the file before allocating, and any defect is
// a Status naming the file and the reason. bf16 has no NumPy dtype and is
// refused both ways; use safetensors for it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_NPY_H
#define FSDP_RUNTIME_IO_NPY_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <string>

namespace fsdp::rt {

/// Reads `path` into `out`; `out` is left untouched on error.
Status readNpy(const std::string &path, HostTensor &out);

/// Writes `tensor` as a version 1.0 .npy file, atomically: the bytes go
/// to `path`.tmp, which is fsynced and renamed over `path`.
Status writeNpy(const std::string &path, const TensorRef &tensor);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_NPY_H
