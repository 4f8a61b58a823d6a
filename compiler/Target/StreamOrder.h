//===- StreamOrder.h - how async collectives meet the compute stream ------===//
//
// A collective marked `fsdp.stream = 1` (compiler/Transforms/
// ScheduleCollectives.h) runs on the communication stream, which executes
// in plan order on its own. The plan orders it against the compute stream
// with two events: it starts once every compute instruction before it is
// done (the emitter makes it wait for the last one), and its waiter, the
// first compute op that reads its result or touches its operands, waits for
// it. In between, the compute stream must not reuse the bytes it reads or
// writes, so this analysis also says how long each buffer owner it uses
// stays allocated: until the collective is known complete, which is its
// own waiter or that of any later collective (the stream runs in order).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_STREAMORDER_H
#define FSDP_COMPILER_TARGET_STREAMORDER_H

#include "compiler/Target/BufferViews.h"

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

namespace fsdp {

struct AsyncCollective {
  /// The first compute op that reads its result or touches its operands
  /// (null: nothing does; the end of the step drains the stream).
  mlir::Operation *waiter = nullptr;
  /// The first compute op by which it is known complete (null: the end).
  mlir::Operation *complete = nullptr;
  /// The owners of its operands' bytes, and its results.
  llvm::SmallVector<mlir::Value> roots;
};

struct StreamOrder {
  /// The async collectives in program order.
  llvm::MapVector<mlir::Operation *, AsyncCollective> collectives;
  /// Buffer owners an async collective uses past their last compute
  /// reader: the op after which they are released (null: never).
  llvm::DenseMap<mlir::Value, mlir::Operation *> heldUntil;
};

/// Whether `op` runs on the communication stream.
bool isAsyncCollective(mlir::Operation *op);

/// Analyzes `body` (views as findBufferViews found them).
StreamOrder findStreamOrder(mlir::Block &body, const BufferViews &views);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_STREAMORDER_H
