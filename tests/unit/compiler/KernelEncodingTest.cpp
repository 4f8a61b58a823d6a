//===- KernelEncodingTest.cpp - every kernel row has an op that lowers to it ===//
//
// The compiler half of the proof that runtime/plan/Kernels.def is the
// single source of the kernel contract (the runtime half is
// tests/unit/runtime/plan/KernelTableTest.cpp). Walking the registered ops
// of the nn and fsdp dialects, every table row is the kernel of at least
// one op's KernelOpInterface, and the only ops without one are those the
// emitter places without an instruction (constants, flat views). Then the
// encodings of the ops with absent optional operands or operands in
// another order than the op's fill exactly their row's operand slots, with
// the absent one (kNoBuffer in the plan) at the row's optional position.
//
//===----------------------------------------------------------------------===//

#include "compiler/RegisterDialects.h"
#include "runtime/plan/KernelTable.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

using namespace fsdp;

/// A context with the dialects every fsdp tool sees, all loaded.
class KernelEncoding : public ::testing::Test {
protected:
  KernelEncoding() : ctx(registry()) { ctx.loadAllAvailableDialects(); }
  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    registerFsdpDialects(r);
    return r;
  }
  mlir::MLIRContext ctx;
};

TEST_F(KernelEncoding, EveryRowHasAnOp) {
  std::set<uint16_t> produced;
  std::set<std::string> withoutKernel;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    llvm::StringRef dialect = op.getDialectNamespace();
    if (dialect != "nn" && dialect != "fsdp")
      continue;
    if (auto *kernelOp = op.getInterface<nn::KernelOpInterface>())
      produced.insert(static_cast<uint16_t>(kernelOp->getKernel()));
    else
      withoutKernel.insert(op.getStringRef().str());
  }
  for (uint16_t k = 0; k < rt::kNumKernels; ++k)
    EXPECT_TRUE(produced.count(k)) << "no nn or fsdp op lowers to " << rt::kernelName(k);
  EXPECT_EQ(withoutKernel, (std::set<std::string>{"fsdp.flat_view", "nn.constant"}));
}

/// Ops whose optional operand is absent or whose kernel takes its operands
/// in another order.
constexpr const char *kReordered = R"mlir(
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %x: tensor<2x4xf32>,
             %scale: tensor<4xf32>, %labels: tensor<2xi64>, %lr: tensor<f64>,
             %dloss: tensor<f32>) {
  %0 = nn.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1:3 = nn.layer_norm %x, %scale {axis = 1 : i64, epsilon = 1.0e-5 : f32}
      : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %2:2 = nn.softmax_cross_entropy %x, %labels {reduction = "mean"}
      : (tensor<2x4xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x4xf32>)
  %3 = nn.nll_loss %x, %labels {reduction = "sum"}
      : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  %4 = nn.softmax_cross_entropy_grad %dloss, %2#1, %labels {reduction = "mean"}
      : (tensor<f32>, tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %5 = nn.nll_loss_grad %dloss, %labels {reduction = "sum"}
      : (tensor<f32>, tensor<2xi64>) -> tensor<2x4xf32>
  %6 = nn.sgd %x, %x, %lr {momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false}
      : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f64>) -> tensor<2x4xf32>
  return
}
)mlir";

TEST_F(KernelEncoding, AbsentOperandsSitInTheirRowsOptionalSlot) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kReordered, &ctx);
  ASSERT_TRUE(module);
  int seen = 0;
  module->walk([&](nn::KernelOpInterface op) {
    ++seen;
    nn::KernelEncoding encoding = op.encodeKernel();
    const rt::KernelInfo &row = *rt::kernelInfo(encoding.kernel);
    SCOPED_TRACE(row.name);
    ASSERT_EQ(static_cast<int>(encoding.operands.size()), row.minInputs);
    ASSERT_NE(row.optionalInput, rt::kNoOptional);
    for (int i = 0; i < row.minInputs; ++i)
      EXPECT_EQ(!encoding.operands[i], i == row.optionalInput) << "operand " << i;
    if (row.ints >= 0) {
      EXPECT_EQ(static_cast<int>(encoding.ints.size()), row.ints);
    }
    EXPECT_EQ(static_cast<int>(encoding.floats.size()), row.floats);
  });
  EXPECT_EQ(seen, 7);
  // The loss gradients take the incoming gradient last, Sgd its lr.
  module->walk([&](nn::SoftmaxCrossEntropyGradOp op) {
    EXPECT_EQ(op.encodeKernel().operands.back(), op.getLossGrad());
  });
  module->walk([&](nn::SgdOp op) { EXPECT_EQ(op.encodeKernel().operands.back(), op.getLr()); });
}

} // namespace
