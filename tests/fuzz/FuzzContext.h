//===- FuzzContext.h - one MLIR context for many fuzz inputs ---------------===//
//
// Creating an MLIRContext with our dialects costs far more than importing
// a small model, so the compiler's targets share one. A context never
// frees the types and attributes it uniques, so it is replaced every
// kInputsPerContext inputs to keep a long run's memory flat. Diagnostics
// are swallowed: a refused input is the expected outcome, not output.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_FUZZ_FUZZCONTEXT_H
#define FSDP_TESTS_FUZZ_FUZZCONTEXT_H

#include "mlir/IR/MLIRContext.h"

namespace fsdp::fuzz {

/// The shared context (dialects registered and loaded, one thread).
mlir::MLIRContext &fuzzContext();

} // namespace fsdp::fuzz

#endif // FSDP_TESTS_FUZZ_FUZZCONTEXT_H
