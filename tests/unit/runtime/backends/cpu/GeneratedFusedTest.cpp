//===- GeneratedFusedTest.cpp - the registry of generated Fused code ------===//
//
// The CPU's Fused kernel must run registered code for exactly the program
// and broadcasts it was generated for, over element ranges that cover each
// element once (also split across a pool's threads), and interpret every
// other program. The registered functions here are stand-ins that record
// their calls and compute the program (x + y) in C++; the generated code
// itself is tested against the interpreter in
// tests/unit/compiler/Target/FusedCodegenTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/GeneratedFused.h"

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/KernelThreads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

// x - y; its negation marks that the stand-in ran, not the interpreter.
const std::vector<int64_t> kProgram = {1, FusedSub, 0, 1, 2};
std::atomic<int64_t> elementsRun{0}, calls{0};

void standIn(const float *const *in, float *const *out, int64_t begin, int64_t end) {
  ++calls;
  elementsRun += end - begin;
  for (int64_t i = begin; i < end; ++i)
    out[0][i] = in[1][i] - in[0][i];
}

uint64_t keyOf(bool scalar0, bool scalar1) {
  const bool scalar[2] = {scalar0, scalar1};
  return fusedProgramKey(kProgram.data(), static_cast<int>(kProgram.size()), scalar, 2);
}

TensorRef ref(std::vector<float> &v) {
  TensorRef t;
  t.rank = 1;
  t.dims[0] = static_cast<int64_t>(v.size());
  t.data = v.data();
  return t;
}

/// The stand-in registered for x - y over two full inputs while in scope
/// (the registry is the process's: other tests must see the interpreter).
struct Registered {
  FsdpGeneratedFused table[1] = {{keyOf(false, false), standIn, standIn, nullptr}};
  Registered() { registerGeneratedFused(table, 1); }
  ~Registered() { unregisterGeneratedFused(table, 1); }
};

Status run(std::vector<float> &x, std::vector<float> &y, std::vector<float> &out) {
  TensorRef in[2] = {ref(x), ref(y)}, result = ref(out);
  return fusedElementwise(in, 2, kProgram.data(), static_cast<int>(kProgram.size()), &result, 1);
}

TEST(GeneratedFused, RegisteredCodeRunsForItsProgramOnly) {
  std::optional<Registered> registered(std::in_place);
  ASSERT_TRUE(hasGeneratedFused());
  ASSERT_EQ(lookupGeneratedFused(keyOf(false, false)), &standIn);
  EXPECT_EQ(lookupGeneratedFused(keyOf(false, true)), nullptr);

  const int64_t n = 100000;
  std::vector<float> x(n, 1.0f), y(n, 3.0f), out(n, 0.0f);
  for (int threads : {1, 3}) {
    KernelThreads pool(threads);
    KernelThreads::Scope scope(&pool);
    elementsRun = calls = 0;
    ASSERT_TRUE(run(x, y, out).isOk());
    EXPECT_EQ(elementsRun.load(), n) << threads << " threads";
    EXPECT_EQ(calls.load(), threads) << "one range per thread";
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 2.0f) << i; // the stand-in's y - x
  }

  // A broadcast y is another program: interpreted (x - y).
  std::vector<float> one(1, 3.0f);
  elementsRun = 0;
  ASSERT_TRUE(run(x, one, out).isOk());
  EXPECT_EQ(elementsRun.load(), 0);
  EXPECT_EQ(out[0], -2.0f);

  // Unregistered: interpreted again.
  registered.reset();
  EXPECT_EQ(lookupGeneratedFused(keyOf(false, false)), nullptr);
  elementsRun = 0;
  ASSERT_TRUE(run(x, y, out).isOk());
  EXPECT_EQ(elementsRun.load(), 0);
  EXPECT_EQ(out[n - 1], -2.0f);
}

TEST(GeneratedFused, AMalformedProgramIsRefusedBeforeAnyCode) {
  Registered registered;
  std::vector<float> x(8, 1.0f), y(7, 3.0f), out(8, 0.0f);
  elementsRun = 0;
  EXPECT_FALSE(run(x, y, out).isOk()); // y's count is neither n nor 1
  EXPECT_EQ(elementsRun.load(), 0);
}

} // namespace
