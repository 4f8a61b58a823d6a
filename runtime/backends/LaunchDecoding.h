//===- LaunchDecoding.h - helpers of the shared launch decoding -----------===//
//
// What LaunchDecoding.inc needs in scope besides the backend's kernels:
// reading an optional operand and the losses' integer attributes.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_LAUNCHDECODING_H
#define FSDP_RUNTIME_BACKENDS_LAUNCHDECODING_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/device/Device.h"

#include <cstdint>
#include <optional>

namespace fsdp::rt::decoding {

inline const TensorRef *optionalInput(const Launch &l, int i) {
  return i < l.numInputs && l.inputs[i].data ? &l.inputs[i] : nullptr;
}

inline Reduction reductionOf(int64_t code) {
  return code == 0 ? Reduction::None : code == 1 ? Reduction::Sum : Reduction::Mean;
}

inline std::optional<int64_t> ignoreIndexOf(const Launch &l) {
  return l.ints[1] ? std::optional<int64_t>(l.ints[2]) : std::nullopt;
}

} // namespace fsdp::rt::decoding

#endif // FSDP_RUNTIME_BACKENDS_LAUNCHDECODING_H
