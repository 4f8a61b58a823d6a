//===- FlatParamOps.cpp - verifiers of flat_view and flatten --------------===//
//
// Both ops work on a 1-D flat buffer of the same element type as the
// parameters; every parameter's range must lie inside it, and the packed
// ranges of flatten must not overlap (a later input would silently
// overwrite an earlier one's gradient).
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"

using namespace mlir;
using namespace fsdp::dist;

LogicalResult FlatViewOp::verify() {
  RankedTensorType flat = getFlat().getType(), result = getResult().getType();
  if (flat.getRank() != 1)
    return emitOpError("flat buffer must be 1-D, not rank ") << flat.getRank();
  if (flat.getElementType() != result.getElementType())
    return emitOpError("flat buffer and view must have the same element type");
  int64_t offset = getOffset();
  if (offset < 0 || offset + result.getNumElements() > flat.getNumElements())
    return emitOpError("view [") << offset << ", " << offset + result.getNumElements()
                                 << ") lies outside the flat buffer of " << flat.getNumElements()
                                 << " elements";
  return success();
}

LogicalResult FlattenOp::verify() {
  RankedTensorType flat = getResult().getType();
  if (flat.getRank() != 1)
    return emitOpError("flat buffer must be 1-D, not rank ") << flat.getRank();
  ArrayRef<int64_t> offsets = getOffsets();
  if (offsets.size() != getInputs().size())
    return emitOpError("needs one offset per input (") << getInputs().size() << "), not "
                                                       << offsets.size();
  int64_t end = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != flat.getElementType())
      return emitOpError("input ") << i << " must have the flat buffer's element type";
    if (offsets[i] < end)
      return emitOpError("input ") << i << " at offset " << offsets[i]
                                   << " overlaps the previous input (ranges must ascend)";
    end = offsets[i] + type.getNumElements();
    if (end > flat.getNumElements())
      return emitOpError("input ") << i << " ends at " << end << ", past the flat buffer of "
                                   << flat.getNumElements() << " elements";
  }
  return success();
}
