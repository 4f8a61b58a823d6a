//===- StreamOrder.h - how async streams meet the compute stream ----------===//
//
// A collective marked `fsdp.stream = 1` runs on the communication stream and
// an offload copy marked `fsdp.stream = 2` on the copy stream
// (compiler/Transforms/ScheduleCollectives.h); each stream executes in plan
// order on its own. The plan orders an async op against the compute stream
// with two events: it starts once every compute instruction before it is
// done (the emitter makes it wait for the last one), and its waiter, the
// first compute op that reads its result or touches its operands, waits for
// it. An async op that reads the result of an async op on the other async
// stream (a gather of a shard just copied to the device, a host copy of a
// reduced gradient) also waits for that op's event. In between, the
// compute stream must not reuse the bytes an async op reads or writes, so
// this analysis also says how long each buffer owner it uses stays
// allocated: until the op is known complete, which is its own waiter's
// point, that of any later op of its stream (a stream runs in order), or
// that of an async op of the other stream that waited for it.
//
// An optimizer update marked `fsdp.stream = 3` runs on the host stream and
// is ordered more tightly, so that it starts as soon as its operands are
// ready rather than when the compute stream reaches it: it waits for the
// last compute op and the last op of each other stream before it that
// touched its operands (the copy of its gradient to the host, the copies
// of its shard to the device, which must read the shard before it is
// overwritten). Nothing on a device stream waits for it within the step
// (the scheduling stage only puts updates there whose results are the
// step's in-place updates; the emitter refuses anything else), so the
// compute op after it waits instead for the host copies it read: there
// the copies' device-side buffers are known free.
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

struct AsyncOp {
  /// The stream it runs on (dist::kCommStream, kCopyStream or kHostStream).
  int64_t stream = 0;
  /// The first compute op that reads its result or touches its operands
  /// (null: nothing does; the end of the step drains the stream).
  mlir::Operation *waiter = nullptr;
  /// The first compute op by which it is known complete (null: the end).
  mlir::Operation *complete = nullptr;
  /// The owners of its operands' bytes, and its results.
  llvm::SmallVector<mlir::Value> roots;
  /// Async ops of another stream it must wait for: those whose results it
  /// reads (and, on the host stream, the last op of each other stream that
  /// touched its operands).
  llvm::SmallVector<mlir::Operation *> waitsFor;
  /// Host stream only: the last compute op before it that touched its
  /// operands, which it waits for (null: none; it waits for no compute op),
  /// and what it writes (its results and the operands it updates in place),
  /// which no later op may touch before it completes.
  mlir::Operation *after = nullptr;
  llvm::SmallVector<mlir::Value> writes;
};

struct StreamOrder {
  /// The async ops in program order.
  llvm::MapVector<mlir::Operation *, AsyncOp> asyncOps;
  /// Buffer owners an async op uses past their last compute reader: the op
  /// after which they are released (null: never).
  llvm::DenseMap<mlir::Value, mlir::Operation *> heldUntil;
  /// The number of streams the plan needs (1 + the highest stream used).
  unsigned numStreams = 1;
};

/// The stream `op` runs on asynchronously, or 0 (the compute stream).
int64_t asyncStreamOf(mlir::Operation *op);

/// Analyzes `body` (views as findBufferViews found them).
StreamOrder findStreamOrder(mlir::Block &body, const BufferViews &views);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_STREAMORDER_H
