//===- StepObject.cpp - the data a compiled step object carries -----------===//
//
// The step is one constant struct of the C layout in
// runtime/embed/EmbeddedStep.h, built as named LLVM struct types so the
// emitted IR reads like the header; its fields point at internal constant
// globals (the plan 64-byte aligned, as the runtime reads constant data in
// place). The layout is checked twice: at compile time against offsetof
// for x86-64's natural alignment, and on the translated module against its
// data layout (verifyStepLayout), so a header change that this file misses
// fails loudly instead of producing a step the runtime misreads.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/StepObject.h"

#include "runtime/embed/EmbeddedStep.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"

#include <cstddef>
#include <sstream>

namespace fsdp {
namespace {

using namespace mlir;

// The offsets the struct types below produce under x86-64's data layout
// (verifyStepLayout checks the same against the translated module).
static_assert(offsetof(FsdpEmbeddedStep, abiVersion) == 0 &&
                  offsetof(FsdpEmbeddedStep, plan) == 8 &&
                  offsetof(FsdpEmbeddedStep, planSize) == 16 &&
                  offsetof(FsdpEmbeddedStep, planHash) == 24 &&
                  offsetof(FsdpEmbeddedStep, weights) == 32 &&
                  offsetof(FsdpEmbeddedStep, weightsSize) == 40 &&
                  offsetof(FsdpEmbeddedStep, weightsFile) == 48 &&
                  offsetof(FsdpEmbeddedStep, info) == 56 &&
                  offsetof(FsdpEmbeddedStep, ptxSm80) == 64 &&
                  offsetof(FsdpEmbeddedStep, ptxSm90) == 72 &&
                  offsetof(FsdpEmbeddedStep, fused) == 80 &&
                  offsetof(FsdpEmbeddedStep, numFused) == 88 && sizeof(FsdpEmbeddedStep) == 96,
              "StepObject.cpp builds FsdpEmbeddedStep field by field: update stepType()");
static_assert(offsetof(FsdpGeneratedFused, key) == 0 && offsetof(FsdpGeneratedFused, avx2) == 8 &&
                  offsetof(FsdpGeneratedFused, avx512) == 16 &&
                  offsetof(FsdpGeneratedFused, ptxEntry) == 24 && sizeof(FsdpGeneratedFused) == 32,
              "StepObject.cpp builds FsdpGeneratedFused field by field: update fusedType()");
static_assert(FSDP_EMBEDDED_STEP_ABI == 1, "a new ABI version: check the fields built here");

/// Field offsets of the C structs, in field order, for verifyStepLayout.
constexpr uint64_t kStepOffsets[] = {
    offsetof(FsdpEmbeddedStep, abiVersion), offsetof(FsdpEmbeddedStep, plan),
    offsetof(FsdpEmbeddedStep, planSize),   offsetof(FsdpEmbeddedStep, planHash),
    offsetof(FsdpEmbeddedStep, weights),    offsetof(FsdpEmbeddedStep, weightsSize),
    offsetof(FsdpEmbeddedStep, weightsFile), offsetof(FsdpEmbeddedStep, info),
    offsetof(FsdpEmbeddedStep, ptxSm80),    offsetof(FsdpEmbeddedStep, ptxSm90),
    offsetof(FsdpEmbeddedStep, fused),      offsetof(FsdpEmbeddedStep, numFused)};
constexpr uint64_t kFusedOffsets[] = {
    offsetof(FsdpGeneratedFused, key), offsetof(FsdpGeneratedFused, avx2),
    offsetof(FsdpGeneratedFused, avx512), offsetof(FsdpGeneratedFused, ptxEntry)};

constexpr const char *kStepTypeName = "FsdpEmbeddedStep";
constexpr const char *kFusedTypeName = "FsdpGeneratedFused";

LLVM::LLVMStructType stepType(MLIRContext *ctx) {
  Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto type = LLVM::LLVMStructType::getIdentified(ctx, kStepTypeName);
  if (!type.isInitialized())
    (void)type.setBody({i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, i32},
                       /*isPacked=*/false);
  return type;
}

LLVM::LLVMStructType fusedType(MLIRContext *ctx) {
  Type i64 = IntegerType::get(ctx, 64);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto type = LLVM::LLVMStructType::getIdentified(ctx, kFusedTypeName);
  if (!type.isInitialized())
    (void)type.setBody({i64, ptr, ptr, ptr}, /*isPacked=*/false);
  return type;
}

/// Builds the module's internal constants and the step struct.
class StepBuilder {
public:
  StepBuilder(ModuleOp module)
      : module_(module), ctx_(module.getContext()), b_(ctx_), loc_(module.getLoc()),
        ptr_(LLVM::LLVMPointerType::get(ctx_)) {
    b_.setInsertionPointToEnd(module.getBody());
  }

  /// An internal constant byte array `name` holding `bytes`.
  void bytesGlobal(StringRef name, StringRef bytes, uint64_t alignment) {
    auto type = LLVM::LLVMArrayType::get(b_.getI8Type(), bytes.size());
    b_.create<LLVM::GlobalOp>(loc_, type, /*isConstant=*/true, LLVM::Linkage::Internal, name,
                              b_.getStringAttr(bytes), alignment);
  }

  /// A NUL-terminated string global, or "" (null) for an empty `text`.
  std::string stringGlobal(StringRef name, StringRef text) {
    if (text.empty())
      return "";
    bytesGlobal(name, (text + StringRef("\0", 1)).str(), 1);
    return name.str();
  }

  /// Inside an initializer region: the address of `symbol`, or null.
  Value addressOrNull(OpBuilder &b, StringRef symbol) {
    if (symbol.empty())
      return b.create<LLVM::ZeroOp>(loc_, ptr_);
    return b.create<LLVM::AddressOfOp>(loc_, ptr_, symbol);
  }

  Value integer(OpBuilder &b, unsigned width, uint64_t value) {
    Type type = b.getIntegerType(width);
    return b.create<LLVM::ConstantOp>(loc_, type, b.getIntegerAttr(type, value));
  }

  /// A constant global `name` of `type` whose initializer `fill` builds.
  template <typename Fill>
  void structGlobal(Type type, StringRef name, LLVM::Linkage linkage, uint64_t alignment,
                    Fill fill) {
    auto global = b_.create<LLVM::GlobalOp>(loc_, type, /*isConstant=*/true, linkage, name,
                                            Attribute(), alignment);
    Block *body = b_.createBlock(&global.getInitializerRegion());
    OpBuilder init = OpBuilder::atBlockEnd(body);
    Value value = fill(init);
    init.create<LLVM::ReturnOp>(loc_, value);
    b_.setInsertionPointToEnd(module_.getBody());
  }

  /// Inserts `fields` into an undef value of struct `type`.
  Value makeStruct(OpBuilder &b, Type type, ArrayRef<Value> fields) {
    Value value = b.create<LLVM::UndefOp>(loc_, type);
    for (auto [i, field] : llvm::enumerate(fields))
      value = b.create<LLVM::InsertValueOp>(loc_, value, field, ArrayRef<int64_t>{int64_t(i)});
    return value;
  }

  LogicalResult fusedTable(ArrayRef<GeneratedFusedSymbols> fused) {
    for (const GeneratedFusedSymbols &entry : fused)
      for (StringRef symbol : {StringRef(entry.avx2Symbol), StringRef(entry.avx512Symbol)})
        if (!symbol.empty() && !module_.lookupSymbol<LLVM::LLVMFuncOp>(symbol))
          return module_.emitError("compiled step: the fused table names function @")
                 << symbol << ", which the module does not declare";
    for (const GeneratedFusedSymbols &entry : fused)
      if (entry.avx2Symbol.empty())
        return module_.emitError("compiled step: the fused program with key ")
               << entry.key << " has no AVX2 function (the baseline every CPU runs)";
    std::vector<std::string> entries;
    for (auto [i, entry] : llvm::enumerate(fused))
      entries.push_back(stringGlobal("fsdp_step_ptx_entry_" + std::to_string(i), entry.ptxEntry));
    auto table = LLVM::LLVMArrayType::get(fusedType(ctx_), fused.size());
    structGlobal(table, "fsdp_step_fused", LLVM::Linkage::Internal, 8, [&](OpBuilder &b) {
      Value value = b.create<LLVM::UndefOp>(loc_, table);
      for (auto [i, entry] : llvm::enumerate(fused)) {
        Value item = makeStruct(b, fusedType(ctx_),
                                {integer(b, 64, entry.key), addressOrNull(b, entry.avx2Symbol),
                                 addressOrNull(b, entry.avx512Symbol),
                                 addressOrNull(b, entries[i])});
        value = b.create<LLVM::InsertValueOp>(loc_, value, item, ArrayRef<int64_t>{int64_t(i)});
      }
      return value;
    });
    return success();
  }

  void weightsGlobal(uint64_t size) {
    // Declared here, given its bytes after translation (attachEmbeddedWeights).
    auto type = LLVM::LLVMArrayType::get(b_.getI8Type(), size);
    b_.create<LLVM::GlobalOp>(loc_, type, /*isConstant=*/true, LLVM::Linkage::External,
                              kEmbeddedWeightsSymbol, Attribute(), /*alignment=*/64);
  }

  void stepMain() {
    Type i32 = b_.getI32Type();
    auto driverType = LLVM::LLVMFunctionType::get(i32, {i32, ptr_, ptr_});
    auto driver = b_.create<LLVM::LLVMFuncOp>(loc_, kStepMainSymbol, driverType);
    auto main = b_.create<LLVM::LLVMFuncOp>(loc_, "main",
                                             LLVM::LLVMFunctionType::get(i32, {i32, ptr_}));
    Block *entry = main.addEntryBlock(b_);
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    Value step = body.create<LLVM::AddressOfOp>(loc_, ptr_, kEmbeddedStepSymbol);
    auto call = body.create<LLVM::CallOp>(
        loc_, driver, ValueRange{entry->getArgument(0), entry->getArgument(1), step});
    body.create<LLVM::ReturnOp>(loc_, call.getResult());
    b_.setInsertionPointToEnd(module_.getBody());
  }

  ModuleOp module_;
  MLIRContext *ctx_;
  OpBuilder b_;
  Location loc_;
  Type ptr_;
};

} // namespace

std::string formatStepInfo(const StepInfo &info) {
  std::ostringstream os;
  os << "Compiled by " << (info.compiler.empty() ? "fsdp-opt" : info.compiler) << " from "
     << info.modelPath << " (content hash " << std::hex << info.modelHash << std::dec << "): "
     << info.mode << " step, world size " << info.worldSize << ", "
     << (info.strategy.empty() ? std::string("unsharded") : "--shard=" + info.strategy)
     << ", --ckpt=" << info.ckpt << "; planned peak per rank " << info.plannedPeakBytes
     << " B (" << (info.plannedPeakBytes + (1 << 19)) / (1 << 20) << " MiB).";
  return os.str();
}

LogicalResult buildStepObject(ModuleOp module, const StepObjectContents &contents) {
  if (contents.plan.empty())
    return module.emitError("compiled step: no plan bytes");
  for (StringRef symbol : {kEmbeddedStepSymbol, "main"})
    if (module.lookupSymbol(symbol))
      return module.emitError("compiled step: the module already defines @") << symbol;
  StepBuilder s(module);
  MLIRContext *ctx = module.getContext();
  s.bytesGlobal("fsdp_step_plan",
                StringRef(reinterpret_cast<const char *>(contents.plan.data()),
                          contents.plan.size()),
                64);
  if (contents.embedWeights)
    s.weightsGlobal(contents.embeddedWeightsSize);
  std::string weightsFile = s.stringGlobal("fsdp_step_weights_file", contents.weightsFile);
  std::string info = s.stringGlobal("fsdp_step_info", contents.info);
  std::string sm80 = s.stringGlobal("fsdp_step_ptx_sm80", contents.ptxSm80);
  std::string sm90 = s.stringGlobal("fsdp_step_ptx_sm90", contents.ptxSm90);
  if (failed(s.fusedTable(contents.fused)))
    return failure();
  s.structGlobal(stepType(ctx), kEmbeddedStepSymbol, LLVM::Linkage::External, 8,
                 [&](OpBuilder &b) {
                   return s.makeStruct(
                       b, stepType(ctx),
                       {s.integer(b, 32, FSDP_EMBEDDED_STEP_ABI),
                        s.addressOrNull(b, "fsdp_step_plan"),
                        s.integer(b, 64, contents.plan.size()),
                        s.integer(b, 64, contents.planHash),
                        s.addressOrNull(b, contents.embedWeights ? kEmbeddedWeightsSymbol : ""),
                        s.integer(b, 64, contents.embedWeights ? contents.embeddedWeightsSize : 0),
                        s.addressOrNull(b, weightsFile), s.addressOrNull(b, info),
                        s.addressOrNull(b, sm80), s.addressOrNull(b, sm90),
                        s.addressOrNull(b, "fsdp_step_fused"),
                        s.integer(b, 32, contents.fused.size())});
                 });
  if (contents.defineMain)
    s.stepMain();
  return success();
}

bool attachEmbeddedWeights(llvm::Module &module, llvm::ArrayRef<char> bytes, std::string &error) {
  llvm::GlobalVariable *global = module.getGlobalVariable(kEmbeddedWeightsSymbol);
  if (!global || !global->isDeclaration()) {
    error = "compiled step: no embedded weights global to fill (--embed-weights)";
    return false;
  }
  auto *type = llvm::dyn_cast<llvm::ArrayType>(global->getValueType());
  if (!type || type->getNumElements() != bytes.size()) {
    error = "compiled step: the embedded weights changed size since the module was built";
    return false;
  }
  // ConstantDataArray keeps the bytes as one blob: no per-element constants.
  global->setInitializer(llvm::ConstantDataArray::getRaw(
      llvm::StringRef(bytes.data(), bytes.size()), bytes.size(),
      llvm::Type::getInt8Ty(module.getContext())));
  global->setLinkage(llvm::GlobalValue::InternalLinkage);
  // Gigabytes of weights go to the large read-only section (.lrodata),
  // which linkers place beyond the sections code reaches RIP-relative, so
  // they never push the runtime's own constants out of that ±2 GiB reach.
  global->setCodeModel(llvm::CodeModel::Large);
  return true;
}

bool verifyStepLayout(const llvm::Module &module, std::string &error) {
  const llvm::DataLayout &layout = module.getDataLayout();
  auto check = [&](const char *name, llvm::ArrayRef<uint64_t> offsets, uint64_t size) {
    llvm::StructType *type = llvm::StructType::getTypeByName(module.getContext(), name);
    if (!type) {
      error = std::string("compiled step: no ") + name + " type in the module";
      return false;
    }
    const llvm::StructLayout *fields = layout.getStructLayout(type);
    if (type->getNumElements() != offsets.size() || fields->getSizeInBytes() != size) {
      error = std::string("compiled step: ") + name + " does not match runtime/embed/EmbeddedStep.h";
      return false;
    }
    for (unsigned i = 0; i < offsets.size(); ++i)
      if (fields->getElementOffset(i) != offsets[i]) {
        error = std::string("compiled step: field ") + std::to_string(i) + " of " + name +
                " is at byte " + std::to_string(fields->getElementOffset(i)) + ", the C header's at " +
                std::to_string(offsets[i]);
        return false;
      }
    return true;
  };
  return check(kStepTypeName, kStepOffsets, sizeof(FsdpEmbeddedStep)) &&
         check(kFusedTypeName, kFusedOffsets, sizeof(FsdpGeneratedFused));
}

} // namespace fsdp
