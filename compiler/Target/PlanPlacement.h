//===- PlanPlacement.h - where a step's values live and when its ops run --===//
//
// The analysis every emitter of a compiled step needs before it writes
// anything: one walk of the step function in program order gives
// arguments and returned values persistent buffers (host memory for state
// offloaded to it), constants bytes in the constant blob, views (reshapes,
// folded transposes, flat views, contiguous slices) a place inside their
// root's buffer, and every other op result an arena lifetime announced to
// ArenaAllocator (allocated before the op runs, released after the last
// use of its root, or when the async collective holding it is waited for,
// so an op never writes over its own operands). The walk also orders the
// instructions on the compute and communication streams and makes the
// events between them (StreamOrder.h). Once every lifetime is known the
// arena is placed offline and every offset resolved.
//
// The result lists the instructions in plan order, each the op it runs
// (or, at the end, a copy of a returned value into its output buffer) with
// its stream and events; which kernel runs an op is the emitter's
// business (the plan emitter asks KernelOpInterface). The plan emitter
// (PlanEmitter.cpp) and a future LLVM step emitter share it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_PLANPLACEMENT_H
#define FSDP_COMPILER_TARGET_PLANPLACEMENT_H

#include "compiler/Target/BufferViews.h"
#include "compiler/Target/PlanDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fsdp {

/// One instruction of the step, in plan order.
struct ScheduledInstruction {
  /// The op it runs; null for a copy of a returned value (below).
  mlir::Operation *op = nullptr;
  /// A copy's source and target buffers and the output's name.
  uint32_t copySource = rt::kNoBuffer, copyTarget = rt::kNoBuffer;
  std::string copyName;
  uint8_t stream = 0; // 0 compute, kComm/kCopy/kHostStream (collectives, copies, host updates)
  std::vector<uint32_t> waits;
  int32_t signal = -1; // the event it signals (-1: none)
};

struct PlanPlacement {
  /// The buffer table, every offset final.
  std::vector<BufferDesc> buffers;
  std::vector<ScheduledInstruction> instructions;
  std::vector<uint8_t> constantData;
  /// Graph inputs and outputs, parameters and optimizer state by name.
  Bindings inputs, outputs, params, state;
  /// Flat-parameter shards of a sharded step: the fsdp.unit description
  /// and the shard's buffer.
  std::vector<std::pair<mlir::DictionaryAttr, uint32_t>> units;
  /// Shard buffer -> the persistent buffer its unit is gathered into.
  llvm::DenseMap<uint32_t, uint32_t> gatheredBufferOf;
  uint32_t lrBuffer = rt::kNoBuffer, stepBuffer = rt::kNoBuffer;
  uint32_t lossScaleBuffer = rt::kNoBuffer, invLossScaleBuffer = rt::kNoBuffer;
  uint64_t persistentBytes = 0, hostBytes = 0, arenaBytes = 0;
  uint64_t arenaLowerBound = 0; // peak of simultaneously live arena bytes
  uint8_t numStreams = 1;
  uint32_t numEvents = 0;
  /// The views found, and each placed value's buffer.
  BufferViews views;
  llvm::DenseMap<mlir::Value, uint32_t> valueBuffers;

  /// `v`'s buffer; kNoBuffer for a null Value (an absent operand).
  uint32_t bufferOf(mlir::Value v) const { return v ? valueBuffers.lookup(v) : rt::kNoBuffer; }
  /// Whether `v` is a transpose its matmuls read in place.
  bool isFoldedTranspose(mlir::Value v) const {
    mlir::Operation *def = v ? v.getDefiningOp() : nullptr;
    return def && views.foldedTransposes.count(def);
  }
  /// The buffer a kernel reads for `v`: a folded transpose reads its input.
  uint32_t operandBuffer(mlir::Value v) const {
    return isFoldedTranspose(v) ? bufferOf(v.getDefiningOp()->getOperand(0)) : bufferOf(v);
  }
};

/// The plan dtype of a tensor element type (nullopt: none).
std::optional<rt::DType> planDType(mlir::Type element);

/// An op's name in the plan (its source location: the ONNX node name).
std::string locationName(mlir::Location loc);

/// Places `func` (a single-block step: @train_step or @forward). Errors are
/// emitted on the offending value or op.
mlir::FailureOr<PlanPlacement> placeStep(mlir::func::FuncOp func);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_PLANPLACEMENT_H
