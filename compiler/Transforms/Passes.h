//===- Passes.h - the compiler's passes, declared by Passes.td ------------===//
//
// The one header tools and the pipeline include for passes: the options
// structs and createXPass() functions generated from
// compiler/Transforms/Passes.td, and registerFsdpPasses(). (The pipeline
// of all of them, fsdp-train-pipeline, is registered by
// compiler/Pipelines/Pipeline.h.)
// Each pass is defined in the file of the stage it runs (ShardParameters
// in compiler/Transforms/ShardParameters.cpp, AttachLoss in
// compiler/Autodiff/AttachLoss.cpp, ...): those files include this header
// with GEN_PASS_DEF_<PASS> defined to get their impl::<Pass>Base class.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_PASSES_H
#define FSDP_COMPILER_TRANSFORMS_PASSES_H

#include "compiler/Transforms/PassOptions.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace fsdp {

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

// registerFsdpPasses(), which registers every pass above with MLIR's
// global registry (what --pass-pipeline can name), and one
// register<Pass>() per pass.
#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_PASSES_H
