//===- EraseDeadChain.cpp - erase an op and the producers it alone used ---===//
//
// A worklist from the chain's last op toward its inputs; an op is erased
// only once it has no uses, and queued at most once, so a producer that
// feeds several operands of one dead op is not erased twice.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/EraseDeadChain.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace fsdp {

void eraseDeadChain(Operation *op) {
  llvm::SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *cur = work.pop_back_val();
    if (!cur->use_empty())
      continue;
    llvm::SmallVector<Operation *> producers;
    for (Value v : cur->getOperands())
      if (Operation *def = v.getDefiningOp())
        producers.push_back(def);
    cur->erase();
    for (Operation *def : producers)
      if (llvm::find(work, def) == work.end())
        work.push_back(def);
  }
}

} // namespace fsdp
