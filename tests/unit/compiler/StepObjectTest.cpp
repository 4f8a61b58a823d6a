//===- StepObjectTest.cpp - a compiled step's fsdp_embedded_step ----------===//
//
// Builds step modules with a fused table whose functions the test declares
// (the table fsdp-opt fills once Fused chains are generated), translates
// them to LLVM IR and reads the constant fsdp_embedded_step back field by
// field, at the offsets runtime/embed/EmbeddedStep.h gives them; embedded
// weights attach only at the declared size; a table naming a function the
// module lacks, or an entry without its AVX2 baseline, is an error.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/LlvmObject.h"
#include "compiler/Target/StepObject.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

namespace fsdp {
namespace {

class StepObjectTest : public ::testing::Test {
protected:
  StepObjectTest() {
    mlir::DialectRegistry registry;
    registerLlvmTranslations(registry);
    context.appendDialectRegistry(registry);
    context.loadDialect<mlir::LLVM::LLVMDialect>();
  }

  /// A module declaring the generated functions a fused table names.
  mlir::OwningOpRef<mlir::ModuleOp> moduleWithFunctions() {
    return mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
      llvm.func @chain_avx2(!llvm.ptr, !llvm.ptr, i64, i64)
      llvm.func @chain_avx512(!llvm.ptr, !llvm.ptr, i64, i64)
      llvm.func @other_avx2(!llvm.ptr, !llvm.ptr, i64, i64)
    )mlir",
                                                   &context);
  }

  StepObjectContents contents() {
    StepObjectContents c;
    c.plan = plan;
    c.planHash = 0x0123456789abcdefull;
    c.weightsFile = "step.safetensors";
    c.info = "Compiled by fsdp-opt from m.onnx";
    c.ptxSm90 = ".version 8.0";
    c.fused = {{42, "chain_avx2", "chain_avx512", "chain_ptx"}, {7, "other_avx2", "", ""}};
    return c;
  }

  mlir::MLIRContext context;
  llvm::LLVMContext llvmContext;
  std::vector<uint8_t> plan = std::vector<uint8_t>(100, 0xAB);
};

uint64_t intField(const llvm::Constant *aggregate, unsigned i) {
  return llvm::cast<llvm::ConstantInt>(aggregate->getAggregateElement(i))->getZExtValue();
}

bool isNull(const llvm::Constant *aggregate, unsigned i) {
  return aggregate->getAggregateElement(i)->isNullValue();
}

TEST_F(StepObjectTest, TheStepReadsBackFieldByField) {
  auto module = moduleWithFunctions();
  ASSERT_TRUE(module);
  StepObjectContents c = contents();
  c.embedWeights = true;
  c.embeddedWeightsSize = 5;
  c.defineMain = true;
  ASSERT_TRUE(mlir::succeeded(buildStepObject(*module, c)));
  std::unique_ptr<llvm::Module> ir =
      translateToLlvmIr(*module, llvmContext, CodegenTarget::hostBaseline());
  ASSERT_TRUE(ir);
  std::string error;
  EXPECT_TRUE(verifyStepLayout(*ir, error)) << error;

  const llvm::GlobalVariable *step = ir->getGlobalVariable(kEmbeddedStepSymbol);
  ASSERT_TRUE(step && step->hasInitializer());
  EXPECT_TRUE(step->isConstant());
  EXPECT_FALSE(step->hasLocalLinkage()); // the runtime's code refers to it
  const llvm::Constant *s = step->getInitializer();
  EXPECT_EQ(intField(s, 0), 1u); // abiVersion
  EXPECT_EQ(s->getAggregateElement(1u), ir->getGlobalVariable("fsdp_step_plan", true));
  EXPECT_EQ(intField(s, 2), plan.size());
  EXPECT_EQ(intField(s, 3), 0x0123456789abcdefull);
  EXPECT_EQ(s->getAggregateElement(4u), ir->getGlobalVariable(kEmbeddedWeightsSymbol, true));
  EXPECT_EQ(intField(s, 5), 5u);
  EXPECT_TRUE(isNull(s, 8));  // no sm_80 PTX
  EXPECT_FALSE(isNull(s, 9)); // sm_90 PTX
  EXPECT_EQ(intField(s, 11), 2u);

  const llvm::GlobalVariable *planGlobal = ir->getGlobalVariable("fsdp_step_plan", true);
  EXPECT_EQ(planGlobal->getAlign().valueOrOne().value(), 64u);
  auto *bytes = llvm::cast<llvm::ConstantDataArray>(planGlobal->getInitializer());
  EXPECT_EQ(bytes->getRawDataValues().str(), std::string(plan.begin(), plan.end()));

  const llvm::Constant *table = ir->getGlobalVariable("fsdp_step_fused", true)->getInitializer();
  const llvm::Constant *first = table->getAggregateElement(0u);
  EXPECT_EQ(intField(first, 0), 42u);
  EXPECT_EQ(first->getAggregateElement(1u), ir->getFunction("chain_avx2"));
  EXPECT_EQ(first->getAggregateElement(2u), ir->getFunction("chain_avx512"));
  EXPECT_FALSE(isNull(first, 3));
  const llvm::Constant *second = table->getAggregateElement(1u);
  EXPECT_EQ(intField(second, 0), 7u);
  EXPECT_TRUE(isNull(second, 2));
  EXPECT_TRUE(isNull(second, 3));

  // main(argc, argv) calls fsdp_step_main(argc, argv, &fsdp_embedded_step).
  const llvm::Function *main = ir->getFunction("main");
  ASSERT_TRUE(main && !main->isDeclaration());
  const llvm::Function *driver = ir->getFunction(kStepMainSymbol);
  ASSERT_TRUE(driver && driver->isDeclaration());
  ASSERT_EQ(driver->getNumUses(), 1u);

  // Weights attach at the declared size only.
  EXPECT_FALSE(attachEmbeddedWeights(*ir, llvm::ArrayRef<char>("abcd", 4), error));
  EXPECT_NE(error.find("changed size"), std::string::npos) << error;
  ASSERT_TRUE(attachEmbeddedWeights(*ir, llvm::ArrayRef<char>("abcde", 5), error)) << error;
  const llvm::GlobalVariable *weights = ir->getGlobalVariable(kEmbeddedWeightsSymbol, true);
  EXPECT_TRUE(weights->hasLocalLinkage());
  EXPECT_EQ(llvm::cast<llvm::ConstantDataArray>(weights->getInitializer())->getRawDataValues(),
            "abcde");
}

TEST_F(StepObjectTest, WithoutWeightsOrMainTheirFieldsAreNull) {
  auto module = moduleWithFunctions();
  StepObjectContents c = contents();
  c.weightsFile.clear();
  c.fused.clear();
  ASSERT_TRUE(mlir::succeeded(buildStepObject(*module, c)));
  std::unique_ptr<llvm::Module> ir =
      translateToLlvmIr(*module, llvmContext, CodegenTarget::hostBaseline());
  ASSERT_TRUE(ir);
  const llvm::Constant *s = ir->getGlobalVariable(kEmbeddedStepSymbol)->getInitializer();
  EXPECT_TRUE(isNull(s, 4));
  EXPECT_EQ(intField(s, 5), 0u);
  EXPECT_TRUE(isNull(s, 6));
  EXPECT_EQ(intField(s, 11), 0u);
  EXPECT_FALSE(ir->getFunction("main"));
  std::string error;
  EXPECT_FALSE(attachEmbeddedWeights(*ir, llvm::ArrayRef<char>("a", 1), error));
}

TEST_F(StepObjectTest, TheTableMustNameDeclaredFunctionsWithABaseline) {
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  auto module = moduleWithFunctions();
  StepObjectContents c = contents();
  c.fused = {{1, "missing_avx2", "", ""}};
  EXPECT_TRUE(mlir::failed(buildStepObject(*module, c)));
  EXPECT_NE(message.find("@missing_avx2, which the module does not declare"), std::string::npos)
      << message;

  module = moduleWithFunctions();
  c.fused = {{3, "", "chain_avx512", ""}};
  EXPECT_TRUE(mlir::failed(buildStepObject(*module, c)));
  EXPECT_NE(message.find("key 3 has no AVX2 function"), std::string::npos) << message;

  module = moduleWithFunctions();
  ASSERT_TRUE(mlir::succeeded(buildStepObject(*module, contents())));
  EXPECT_TRUE(mlir::failed(buildStepObject(*module, contents())));
  EXPECT_NE(message.find("already defines @fsdp_embedded_step"), std::string::npos) << message;
}

TEST(StepInfoTest, SaysWhatTheStepWasCompiledFrom) {
  StepInfo info;
  info.modelPath = "m.onnx";
  info.modelHash = 0xabc;
  info.mode = "train";
  info.worldSize = 2;
  info.strategy = "grad-op";
  info.ckpt = "blocks";
  info.plannedPeakBytes = 3 << 20;
  info.compiler = "fsdp-opt";
  EXPECT_EQ(formatStepInfo(info),
            "Compiled by fsdp-opt from m.onnx (content hash abc): train step, world size 2, "
            "--shard=grad-op, --ckpt=blocks; planned peak per rank 3145728 B (3 MiB).");
  info.strategy.clear();
  EXPECT_NE(formatStepInfo(info).find("world size 2, unsharded, --ckpt"), std::string::npos);
}

} // namespace
} // namespace fsdp
