//===- ModelSummary.cpp - what an imported model contains -----------------===//
//
// Walks the forward function's signature (parameters and inputs are marked
// by the frontend's argument attributes) and body (op histogram) and prints
// a compact table. Byte counts use the element type's storage size (i1 as
// one byte), as the runtime will store them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/ModelSummary.h"

#include "compiler/Analysis/OpCost.h"
#include "compiler/Transforms/FuseAttention.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace fsdp {
namespace {

TensorSummary describe(const std::string &name, Type type) {
  TensorSummary summary;
  summary.name = name;
  llvm::raw_string_ostream os(summary.type);
  type.print(os);
  if (auto shaped = llvm::dyn_cast<ShapedType>(type); shaped && shaped.hasStaticShape()) {
    summary.elements = shaped.getNumElements();
    summary.bytes = static_cast<int64_t>(tensorBytes(type));
  }
  return summary;
}

std::string humanBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return s;
}

} // namespace

FailureOr<ModelSummary> summarizeModel(ModuleOp module) {
  func::FuncOp func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func) {
    auto funcs = module.getOps<func::FuncOp>();
    if (funcs.empty())
      return module.emitError("module has no function to summarize");
    func = *funcs.begin();
  }
  ModelSummary summary;
  if (auto source = module->getAttrOfType<StringAttr>(nn::kSourceAttr))
    summary.source = source.str();
  if (auto producer = module->getAttrOfType<StringAttr>("nn.producer"))
    summary.producer = producer.str();
  if (auto opset = module->getAttrOfType<IntegerAttr>("nn.opset"))
    summary.opset = opset.getInt();
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Type type = func.getArgument(i).getType();
    if (auto name = func.getArgAttrOfType<StringAttr>(i, nn::kParamAttr)) {
      summary.parameters.push_back(describe(name.str(), type));
      summary.parameterElements += summary.parameters.back().elements;
      summary.parameterBytes += summary.parameters.back().bytes;
    } else {
      auto input = func.getArgAttrOfType<StringAttr>(i, nn::kInputAttr);
      summary.inputs.push_back(describe(input ? input.str() : "arg" + std::to_string(i), type));
    }
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
    summary.outputs.push_back(describe(name ? name.str() : "result" + std::to_string(i),
                                       func.getResultTypes()[i]));
  }
  func.walk([&](Operation *op) {
    if (op != func.getOperation() && !isa<func::ReturnOp>(op))
      ++summary.opCounts[op->getName().getStringRef().str()];
  });
  if (auto fusion = module->getAttrOfType<DictionaryAttr>(dist::kAttentionFusionAttr)) {
    summary.attentionFusionRan = true;
    if (auto fused = fusion.getAs<IntegerAttr>("fused"))
      summary.attentionFused = fused.getInt();
    if (auto unfused = fusion.getAs<ArrayAttr>("unfused"))
      for (Attribute why : unfused)
        if (auto text = dyn_cast<StringAttr>(why))
          summary.attentionUnfused.push_back(text.str());
  }
  return summary;
}

void printModelSummary(const ModelSummary &s, llvm::raw_ostream &os) {
  os << "model:      " << (s.source.empty() ? "(mlir input)" : s.source) << "\n";
  if (!s.producer.empty())
    os << "producer:   " << s.producer << "\n";
  if (s.opset)
    os << "opset:      " << s.opset << "\n";
  os << "parameters: " << s.parameters.size() << " tensors, " << s.parameterElements
     << " elements, " << humanBytes(s.parameterBytes) << "\n";
  size_t width = 0;
  for (const TensorSummary &t : s.parameters)
    width = std::max(width, t.name.size());
  for (const TensorSummary &t : s.parameters)
    os << "  " << llvm::left_justify(t.name, width) << "  " << t.type << "\n";
  os << "inputs:\n";
  for (const TensorSummary &t : s.inputs)
    os << "  " << t.name << "  " << t.type << "\n";
  os << "outputs:\n";
  for (const TensorSummary &t : s.outputs)
    os << "  " << t.name << "  " << t.type << "\n";
  int64_t total = 0;
  for (const auto &[name, count] : s.opCounts)
    total += count;
  os << "ops:        " << total << "\n";
  for (const auto &[name, count] : s.opCounts)
    os << "  " << llvm::left_justify(name, 28) << count << "\n";
  if (s.attentionFusionRan) {
    os << "attention:  " << s.attentionFused << " fused into nn.attention, "
       << s.attentionUnfused.size() << " left unfused\n";
    for (const std::string &why : s.attentionUnfused)
      os << "  unfused " << why << "\n";
  }
}

} // namespace fsdp
