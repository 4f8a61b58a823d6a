//===- FuseElementwiseTest.cpp - which ops the fusion pass takes ----------===//
//
// The lit test (tests/lit/compiler/Transforms/fuse-elementwise.mlir) shows
// what fuses on verified IR. This covers the guard lit cannot reach yet: an
// elementwise op whose operand has another element type than its result
// (torch's scalar rule: a rank-0 f32 meeting a bf16 tensor, which nn.mul
// and friends may come to accept) computes at a precision a Fused program
// cannot express, so it must stay unfused. The IR is parsed without
// verification, as such an op may not verify in this tree.
//
//===----------------------------------------------------------------------===//

#include "compiler/RegisterDialects.h"
#include "compiler/Transforms/FuseElementwise.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace fsdp;

class FuseElementwise : public ::testing::Test {
protected:
  FuseElementwise() : ctx(registry()) { ctx.loadAllAvailableDialects(); }
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    registerFsdpDialects(r);
    return r;
  }

  /// Fuses @f of a module whose scalar %s has `scalarType`; returns the
  /// nn.fused ops created.
  int fuseWithScalar(const std::string &scalarType) {
    const std::string text = "func.func @f(%x: tensor<4xbf16>, %s: tensor<" + scalarType +
                             R"(>) -> tensor<4xbf16> {
  %0 = nn.mul %x, %s : (tensor<4xbf16>, tensor<)" + scalarType +
                             R"(>) -> tensor<4xbf16>
  %1 = nn.exp %0 : tensor<4xbf16>
  %2 = nn.add %1, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %2 : tensor<4xbf16>
})";
    mlir::ParserConfig config(&ctx, /*verifyAfterParse=*/false);
    module = mlir::parseSourceString<mlir::ModuleOp>(text, config);
    if (!module)
      return -1;
    auto func = module->lookupSymbol<mlir::func::FuncOp>("f");
    return fuseElementwise(func);
  }

  int countOps(llvm::StringRef name) {
    int n = 0;
    module->walk([&](mlir::Operation *op) { n += op->getName().getStringRef() == name; });
    return n;
  }

  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(FuseElementwise, ABf16ChainWithABf16ScalarFusesWhole) {
  ASSERT_EQ(fuseWithScalar("bf16"), 1);
  EXPECT_EQ(countOps("nn.fused"), 1);
  EXPECT_EQ(countOps("nn.mul"), 0);
}

TEST_F(FuseElementwise, AnOpWithAnF32ScalarOnBf16StaysUnfused) {
  // The mul stays; exp and add (bf16 throughout) still fuse after it.
  ASSERT_EQ(fuseWithScalar("f32"), 1);
  EXPECT_EQ(countOps("nn.mul"), 1);
  EXPECT_EQ(countOps("nn.exp"), 0);
  module->walk([](mlir::Operation *op) {
    if (op->getName().getStringRef() == "nn.fused")
      for (mlir::Value in : op->getOperands())
        EXPECT_TRUE(mlir::cast<mlir::RankedTensorType>(in.getType()).getElementType().isBF16());
  });
}

} // namespace
