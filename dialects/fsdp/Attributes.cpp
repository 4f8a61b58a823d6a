//===- Attributes.cpp - verifiers of the fsdp discardable attributes ------===//
//
// The passes communicate through a few `fsdp.` attributes on the module, on
// function arguments and on ops (FSDPDialect.h names them, FSDPBase.td
// documents them). The plan emitter reads them without re-checking, so a
// hand-written or edited module with a misspelled name, a wrong value type
// or a unit description missing a key must fail here, at parse or after
// the pass that wrote it, rather than as a crash or a wrong plan later.
// Each attribute is accepted in one kind of place only: the hook MLIR calls
// (operation, region argument, region result) says where it was found.
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace fsdp::dist;

namespace {

/// Where an attribute was found, as the hooks see it.
enum class Place { Operation, Argument, Result };

/// An attribute the dialect knows: the hook it is valid in, and the place
/// it belongs as the diagnostics say it.
struct Known {
  Place place;
  StringRef where;
};

std::optional<Known> lookup(StringRef name) {
  return llvm::StringSwitch<std::optional<Known>>(name)
      .Cases(kWorldSizeAttr, kCheckpointChoiceAttr, kGradAccumAttr, kAccumulationAttr,
             kAccumulationChoiceAttr, kAttentionFusionAttr, Known{Place::Operation, "the module"})
      .Case(kMicroBatchAttr, Known{Place::Operation, "an fsdp.all_gather"})
      .Case(kStreamAttr,
            Known{Place::Operation, "an fsdp collective, offload copy or optimizer update"})
      .Case(kRecomputeAttr, Known{Place::Operation, "an operation"})
      .Case(kEvalLossAttr, Known{Place::Operation, "the op computing the step's loss"})
      .Cases(kUnitAttr, kHostAttr, Known{Place::Argument, "a function argument"})
      .Default(std::nullopt);
}

/// Rejects unknown names and known ones found in the wrong place: the wrong
/// hook, or (for operation attributes) the wrong kind of op.
LogicalResult verifyPlace(Operation *op, NamedAttribute attr, Place found) {
  StringRef name = attr.getName().getValue();
  std::optional<Known> known = lookup(name);
  if (!known)
    return op->emitError("unknown fsdp attribute '") << name << "'";
  bool right = known->place == found;
  if (right && name == kStreamAttr)
    right = isa<AllGatherOp, ReduceScatterOp, AllReduceOp, ToDeviceOp, ToHostOp, fsdp::nn::AdamWOp,
                fsdp::nn::SgdOp>(op);
  else if (right && (name == kWorldSizeAttr || name == kCheckpointChoiceAttr ||
                     name == kGradAccumAttr || name == kAccumulationAttr ||
                     name == kAccumulationChoiceAttr || name == kAttentionFusionAttr))
    right = isa<ModuleOp>(op);
  else if (right && name == kMicroBatchAttr)
    right = isa<AllGatherOp>(op);
  if (right)
    return success();
  InFlightDiagnostic diag = op->emitError("'") << name << "' belongs on " << known->where;
  switch (found) {
  case Place::Operation: return diag << ", not on '" << op->getName() << "'";
  case Place::Argument: return diag << ", not on a function argument";
  case Place::Result: return diag << ", not on a function result";
  }
  return diag;
}

/// An i64 integer attribute, or null.
IntegerAttr getI64(Attribute attr) {
  auto integer = dyn_cast_or_null<IntegerAttr>(attr);
  return integer && integer.getType().isSignlessInteger(64) ? integer : IntegerAttr();
}

/// A non-empty string attribute, or null.
StringAttr getName(Attribute attr) {
  auto string = dyn_cast_or_null<StringAttr>(attr);
  return string && !string.getValue().empty() ? string : StringAttr();
}

/// Emits an error about the argument being verified.
using ErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// Fails unless `dict` has exactly `keys`.
LogicalResult verifyKeys(const ErrorFn &error, StringRef what, DictionaryAttr dict,
                         ArrayRef<StringRef> keys) {
  for (StringRef key : keys)
    if (!dict.get(key))
      return error() << what << " has no '" << key << "'";
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(keys, entry.getName().getValue()))
      return error() << what << " has an unknown key '" << entry.getName().getValue() << "'";
  return success();
}

/// One entry of a unit's `params`: {name, offset, type}, within the flat
/// buffer and of the shard's element type.
LogicalResult verifyParam(const ErrorFn &error, Attribute entry, int64_t flatNumel, Type element) {
  auto param = dyn_cast<DictionaryAttr>(entry);
  if (!param)
    return error() << "'fsdp.unit' params must be dictionaries";
  if (failed(verifyKeys(error, "'fsdp.unit' param", param, {"name", "offset", "type"})))
    return failure();
  StringAttr name = getName(param.get("name"));
  if (!name)
    return error() << "'fsdp.unit' param name must be a non-empty string";
  IntegerAttr offset = getI64(param.get("offset"));
  if (!offset || offset.getInt() < 0)
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "': offset must be a non-negative i64";
  auto typeAttr = dyn_cast<TypeAttr>(param.get("type"));
  auto type = typeAttr ? dyn_cast<RankedTensorType>(typeAttr.getValue()) : RankedTensorType();
  if (!type || !type.hasStaticShape())
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "': type must be a static tensor type";
  if (type.getElementType() != element)
    return error() << "'fsdp.unit' param '" << name.getValue() << "' has element type "
                   << type.getElementType() << ", the shard " << element;
  if (offset.getInt() + type.getNumElements() > flatNumel)
    return error() << "'fsdp.unit' param '" << name.getValue() << "' ends past flat_numel ("
                   << flatNumel << ")";
  return success();
}

/// `fsdp.unit` on an argument of type `argType`: the description the plan
/// emitter writes the Unit and Parameter tables from, and which must agree
/// with the shard the argument holds.
LogicalResult verifyUnit(const ErrorFn &error, Attribute value, Type argType) {
  auto unit = dyn_cast<DictionaryAttr>(value);
  if (!unit)
    return error() << "'fsdp.unit' must be a dictionary";
  if (failed(verifyKeys(error, "'fsdp.unit'", unit,
                        {"name", "flat_numel", "padded_numel", "group_size", "params"})))
    return failure();
  if (!getName(unit.get("name")))
    return error() << "'fsdp.unit' name must be a non-empty string";
  IntegerAttr flat = getI64(unit.get("flat_numel")), padded = getI64(unit.get("padded_numel")),
              group = getI64(unit.get("group_size"));
  if (!flat || !padded || !group)
    return error() << "'fsdp.unit' flat_numel, padded_numel and group_size must be i64";
  if (group.getInt() < 1)
    return error() << "'fsdp.unit' group_size must be at least 1";
  if (flat.getInt() < 0 || padded.getInt() < flat.getInt() || padded.getInt() % group.getInt() != 0)
    return error() << "'fsdp.unit' padded_numel (" << padded.getInt()
                   << ") must be at least flat_numel (" << flat.getInt()
                   << ") and a multiple of group_size (" << group.getInt() << ")";
  auto shard = dyn_cast<RankedTensorType>(argType);
  const int64_t shardNumel = padded.getInt() / group.getInt();
  if (!shard || !shard.hasStaticShape() || shard.getRank() != 1 ||
      shard.getNumElements() != shardNumel)
    return error() << "'fsdp.unit' argument must be a 1-D tensor of padded_numel / "
                      "group_size = "
                   << shardNumel << " elements, not " << argType;
  auto params = dyn_cast<ArrayAttr>(unit.get("params"));
  if (!params || params.empty())
    return error() << "'fsdp.unit' params must be a non-empty array";
  for (Attribute entry : params)
    if (failed(verifyParam(error, entry, flat.getInt(), shard.getElementType())))
      return failure();
  return success();
}

/// The host stream reads and writes host memory only: every operand of an
/// update placed there must be a host argument or a copy to the host.
LogicalResult verifyOnHost(Operation *op) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isInHostMemory(operand.get()))
      return op->emitError("'")
             << kStreamAttr << "' " << kHostStream << " (host) needs every operand in host memory "
             << "(an '" << kHostAttr << "' argument or an fsdp.to_host result), but operand "
             << operand.getOperandNumber() << " is not";
  }
  return success();
}

} // namespace

bool fsdp::dist::isInHostMemory(Value v) {
  if (v.getDefiningOp<ToHostOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(v);
  Block *block = arg ? arg.getOwner() : nullptr;
  Operation *owner = block && block->isEntryBlock() ? block->getParentOp() : nullptr;
  auto func = dyn_cast_or_null<FunctionOpInterface>(owner);
  return func && func.getArgAttr(arg.getArgNumber(), kHostAttr);
}

LogicalResult FSDPDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (failed(verifyPlace(op, attr, Place::Operation)))
    return failure();
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == kWorldSizeAttr) {
    IntegerAttr size = getI64(value);
    if (!size || size.getInt() < 1)
      return op->emitError("'") << name << "' must be a positive i64, not " << value;
  } else if (name == kCheckpointChoiceAttr || name == kAccumulationChoiceAttr) {
    if (!isa<StringAttr>(value))
      return op->emitError("'") << name << "' must be a string, not " << value;
  } else if (name == kGradAccumAttr || name == kMicroBatchAttr) {
    IntegerAttr k = getI64(value);
    int64_t least = name == kGradAccumAttr ? 2 : 1;
    if (!k || k.getInt() < least)
      return op->emitError("'") << name << "' must be an i64 >= " << least << ", not " << value;
  } else if (name == kAccumulationAttr) {
    auto choices = dyn_cast<DictionaryAttr>(value);
    if (!choices || llvm::any_of(choices, [](NamedAttribute c) {
          auto s = dyn_cast<StringAttr>(c.getValue());
          return !s || (s.getValue() != "each" && s.getValue() != "last");
        }))
      return op->emitError("'") << name
                                << "' must map flat groups to \"each\" or \"last\", not " << value;
  } else if (name == kStreamAttr) {
    // Collectives run on the communication stream, offload copies on the
    // copy stream, optimizer updates on the host stream; any of them may
    // stay on the compute stream.
    IntegerAttr stream = getI64(value);
    const bool copy = isa<ToDeviceOp, ToHostOp>(op);
    const bool update = isa<fsdp::nn::AdamWOp, fsdp::nn::SgdOp>(op);
    const int64_t async = copy ? kCopyStream : update ? kHostStream : kCommStream;
    if (!stream || (stream.getInt() != kComputeStream && stream.getInt() != async))
      return op->emitError("'") << name << "' must be the i64 stream " << kComputeStream
                                << " (compute) or " << async
                                << (copy     ? " (copy)"
                                    : update ? " (host)"
                                             : " (communication)")
                                << ", not " << value;
    if (stream.getInt() == kHostStream)
      return verifyOnHost(op);
  } else if (name == kAttentionFusionAttr) {
    auto fusion = dyn_cast<DictionaryAttr>(value);
    auto error = [&] { return op->emitError(); };
    const std::string what = "'" + name.str() + "'";
    if (!fusion)
      return error() << what << " must be a dictionary, not " << value;
    if (failed(verifyKeys(error, what, fusion, {"fused", "unfused"})))
      return failure();
    IntegerAttr fused = getI64(fusion.get("fused"));
    auto unfused = dyn_cast<ArrayAttr>(fusion.get("unfused"));
    if (!fused || fused.getInt() < 0)
      return error() << what << " fused must be an i64 >= 0";
    if (!unfused || llvm::any_of(unfused, [](Attribute a) { return !getName(a); }))
      return error() << what << " unfused must be an array of non-empty strings";
  } else if (name == kEvalLossAttr) {
    if (!isa<UnitAttr>(value))
      return op->emitError("'") << name << "' must be a unit attribute, not " << value;
  } else if (!getName(value)) { // kRecomputeAttr
    return op->emitError("'") << name << "' must name a block (a non-empty string), not " << value;
  }
  return success();
}

LogicalResult FSDPDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                                    unsigned argIndex, NamedAttribute attr) {
  if (failed(verifyPlace(op, attr, Place::Argument)))
    return failure();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError("'") << attr.getName().getValue()
                              << "' belongs on a function argument, not on an argument of '"
                              << op->getName() << "'";
  auto error = [&] { return op->emitError("argument ") << argIndex << ": "; };
  if (attr.getName() == kHostAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return error() << "'" << kHostAttr << "' must be a unit attribute, not " << attr.getValue();
    return success();
  }
  return verifyUnit(error, attr.getValue(), func.getArgumentTypes()[argIndex]);
}

LogicalResult FSDPDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                                       unsigned resultIndex, NamedAttribute attr) {
  return verifyPlace(op, attr, Place::Result);
}
