//===- EraseDeadChain.h - erase an op and the producers it alone used -----===//
//
// The pattern-rewriting passes (fsdp-fuse-attention, fsdp-fuse-gelu)
// replace a recognized chain's last op and then remove the chain: the op,
// and every producer that no longer has a reader, transitively. Producers
// still read elsewhere (the chain's inputs, shared constants) stay.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_ERASEDEADCHAIN_H
#define FSDP_COMPILER_TRANSFORMS_ERASEDEADCHAIN_H

#include "mlir/IR/Operation.h"

namespace fsdp {

/// Erases `op` if it has no uses, then every producer left without a use
/// (each once, however many operands it feeds).
void eraseDeadChain(mlir::Operation *op);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_ERASEDEADCHAIN_H
