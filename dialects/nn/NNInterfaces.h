//===- NNInterfaces.h - interfaces of nn ops -------------------------------===//
//
// Declares the interfaces of NNInterfaces.td (generated) and what their
// methods exchange: KernelEncoding, an op's plan instruction as its kernel
// reads it. Included by both dialects whose ops implement them (nn and
// fsdp). The plan's kernel enum is only declared (runtime/plan/
// KernelTable.h); the encoding files include its definition.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_NN_NNINTERFACES_H
#define FSDP_DIALECTS_NN_NNINTERFACES_H

#include "runtime/plan/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace fsdp::nn {

/// An op's plan instruction in the layout of its kernel's row in
/// runtime/plan/Kernels.def (KernelOpInterface::encodeKernel).
struct KernelEncoding {
  plan::Kernel kernel{};
  /// In kernel order; a null Value for an absent optional operand.
  llvm::SmallVector<mlir::Value, 4> operands;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

} // namespace fsdp::nn

#include "dialects/nn/NNInterfaces.h.inc"

#endif // FSDP_DIALECTS_NN_NNINTERFACES_H
