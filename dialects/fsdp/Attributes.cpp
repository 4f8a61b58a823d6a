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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace fsdp::dist;

namespace {

/// Where an attribute was found, as the hooks see it.
enum class Place { Operation, Argument, Result };

/// The attributes the dialect knows, and the place each belongs.
std::optional<Place> placeOf(StringRef name) {
  return llvm::StringSwitch<std::optional<Place>>(name)
      .Cases(kWorldSizeAttr, kCheckpointChoiceAttr, kStreamAttr, kRecomputeAttr,
             Place::Operation)
      .Cases(kUnitAttr, kHostAttr, Place::Argument)
      .Default(std::nullopt);
}

StringRef describe(Place place) {
  switch (place) {
  case Place::Operation:
    return "an operation";
  case Place::Argument:
    return "a function argument";
  case Place::Result:
    return "a function result";
  }
  return "";
}

/// Rejects unknown names and known ones found in the wrong kind of place.
LogicalResult verifyPlace(Operation *op, NamedAttribute attr, Place found) {
  std::optional<Place> expected = placeOf(attr.getName().getValue());
  if (!expected)
    return op->emitError("unknown fsdp attribute '")
           << attr.getName().getValue() << "'";
  if (*expected != found)
    return op->emitError("'")
           << attr.getName().getValue() << "' belongs on "
           << describe(*expected) << ", not on " << describe(found);
  return success();
}

/// An i64 integer attribute, or null.
IntegerAttr getI64(Attribute attr) {
  auto integer = dyn_cast_or_null<IntegerAttr>(attr);
  return integer && integer.getType().isSignlessInteger(64) ? integer
                                                            : IntegerAttr();
}

/// A non-empty string attribute, or null.
StringAttr getName(Attribute attr) {
  auto string = dyn_cast_or_null<StringAttr>(attr);
  return string && !string.getValue().empty() ? string : StringAttr();
}

/// Emits an error about the argument being verified.
using ErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// Fails unless `dict` has exactly `keys`.
LogicalResult verifyKeys(const ErrorFn &error, StringRef what,
                         DictionaryAttr dict, ArrayRef<StringRef> keys) {
  for (StringRef key : keys)
    if (!dict.get(key))
      return error() << what << " has no '" << key << "'";
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(keys, entry.getName().getValue()))
      return error() << what << " has an unknown key '"
                     << entry.getName().getValue() << "'";
  return success();
}

/// One entry of a unit's `params`: {name, offset, type}, within the flat
/// buffer and of the shard's element type.
LogicalResult verifyParam(const ErrorFn &error, Attribute entry,
                          int64_t flatNumel, Type element) {
  auto param = dyn_cast<DictionaryAttr>(entry);
  if (!param)
    return error() << "'fsdp.unit' params must be dictionaries";
  if (failed(verifyKeys(error, "'fsdp.unit' param", param,
                        {"name", "offset", "type"})))
    return failure();
  StringAttr name = getName(param.get("name"));
  if (!name)
    return error() << "'fsdp.unit' param name must be a non-empty string";
  IntegerAttr offset = getI64(param.get("offset"));
  if (!offset || offset.getInt() < 0)
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "': offset must be a non-negative i64";
  auto typeAttr = dyn_cast<TypeAttr>(param.get("type"));
  auto type = typeAttr ? dyn_cast<RankedTensorType>(typeAttr.getValue())
                       : RankedTensorType();
  if (!type || !type.hasStaticShape())
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "': type must be a static tensor type";
  if (type.getElementType() != element)
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "' has element type " << type.getElementType()
                   << ", the shard " << element;
  if (offset.getInt() + type.getNumElements() > flatNumel)
    return error() << "'fsdp.unit' param '" << name.getValue()
                   << "' ends past flat_numel (" << flatNumel << ")";
  return success();
}

/// `fsdp.unit` on an argument of type `argType`: the description the plan
/// emitter writes the Unit and Parameter tables from, and which must agree
/// with the shard the argument holds.
LogicalResult verifyUnit(const ErrorFn &error, Attribute value, Type argType) {
  auto unit = dyn_cast<DictionaryAttr>(value);
  if (!unit)
    return error() << "'fsdp.unit' must be a dictionary";
  if (failed(verifyKeys(
          error, "'fsdp.unit'", unit,
          {"name", "flat_numel", "padded_numel", "group_size", "params"})))
    return failure();
  if (!getName(unit.get("name")))
    return error() << "'fsdp.unit' name must be a non-empty string";
  IntegerAttr flat = getI64(unit.get("flat_numel")),
              padded = getI64(unit.get("padded_numel")),
              group = getI64(unit.get("group_size"));
  if (!flat || !padded || !group)
    return error()
           << "'fsdp.unit' flat_numel, padded_numel and group_size must be i64";
  if (group.getInt() < 1)
    return error() << "'fsdp.unit' group_size must be at least 1";
  if (flat.getInt() < 0 || padded.getInt() < flat.getInt() ||
      padded.getInt() % group.getInt() != 0)
    return error() << "'fsdp.unit' padded_numel (" << padded.getInt()
                   << ") must be at least flat_numel (" << flat.getInt()
                   << ") and a multiple of group_size (" << group.getInt()
                   << ")";
  auto shard = dyn_cast<RankedTensorType>(argType);
  const int64_t shardNumel = padded.getInt() / group.getInt();
  if (!shard || !shard.hasStaticShape() || shard.getRank() != 1 ||
      shard.getNumElements() != shardNumel)
    return error()
           << "'fsdp.unit' argument must be a 1-D tensor of padded_numel / "
              "group_size = "
           << shardNumel << " elements, not " << argType;
  auto params = dyn_cast<ArrayAttr>(unit.get("params"));
  if (!params || params.empty())
    return error() << "'fsdp.unit' params must be a non-empty array";
  for (Attribute entry : params)
    if (failed(
            verifyParam(error, entry, flat.getInt(), shard.getElementType())))
      return failure();
  return success();
}

} // namespace

LogicalResult FSDPDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (failed(verifyPlace(op, attr, Place::Operation)))
    return failure();
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == kWorldSizeAttr || name == kCheckpointChoiceAttr) {
    if (!isa<ModuleOp>(op))
      return op->emitError("'") << name << "' belongs on the module";
    if (name == kCheckpointChoiceAttr && !isa<StringAttr>(value))
      return op->emitError("'") << name << "' must be a string";
    IntegerAttr size = getI64(value);
    if (name == kWorldSizeAttr && (!size || size.getInt() < 1))
      return op->emitError("'")
             << name << "' must be a positive i64, not " << value;
    return success();
  }
  if (name == kStreamAttr) {
    if (!isa<AllGatherOp, ReduceScatterOp, AllReduceOp>(op))
      return op->emitError("'") << name << "' belongs on an fsdp collective";
    IntegerAttr stream = getI64(value);
    if (!stream ||
        (stream.getInt() != kComputeStream && stream.getInt() != kCommStream))
      return op->emitError("'")
             << name << "' must be the i64 stream " << kComputeStream
             << " (compute) or " << kCommStream << " (communication), not "
             << value;
    return success();
  }
  // kRecomputeAttr, the only other attribute verifyPlace lets through.
  if (!getName(value))
    return op->emitError("'")
           << name << "' must name a block (a non-empty string)";
  return success();
}

LogicalResult FSDPDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (failed(verifyPlace(op, attr, Place::Argument)))
    return failure();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError("'")
           << attr.getName().getValue() << "' belongs on a function argument";
  if (attr.getName() == kHostAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'") << kHostAttr << "' must be a unit attribute";
    return success();
  }
  auto error = [&] { return op->emitError("argument ") << argIndex << ": "; };
  return verifyUnit(error, attr.getValue(), func.getArgumentTypes()[argIndex]);
}

LogicalResult FSDPDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  return verifyPlace(op, attr, Place::Result);
}
