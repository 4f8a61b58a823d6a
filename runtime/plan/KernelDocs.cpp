//===- KernelDocs.cpp - the kernel table as a markdown page ---------------===//
//
// Prints Kernels.def as docs/Kernels.md (generated into the build
// directory, like the dialects' docs from their ODS), so the documented
// contract is the table itself: one line per kernel with its operands and
// results, attribute layouts and whether it is a collective. Built and run
// by the FSDPKernelDocs target.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/KernelTable.h"

#include <cstdio>
#include <string>

using namespace fsdp::rt;

namespace {

/// A row's count as the table means it.
std::string countText(int count) {
  switch (count) {
  case kAny: return "any";
  case kRank: return "rank";
  case kTwiceRank: return "2 x rank";
  case kOnePlusOptional: return "1 (+1 with the optional operand)";
  case kProgram: return "program";
  case kNoneOrTwo: return "0 or 2";
  case kOwnLayout: return "own layout";
  default: return std::to_string(count);
  }
}

/// Text for a table cell: `|` would end the cell.
std::string cell(const char *text) {
  std::string out;
  for (const char *c = text; *c; ++c)
    out += *c == '|' ? std::string("\\|") : std::string(1, *c);
  return out;
}

/// An attribute column: its layout and count, or "-" for none.
std::string attributes(const char *doc, int count) {
  if (!*doc && count == 0)
    return "-";
  return (*doc ? "`" + cell(doc) + "` " : std::string()) + "(" + countText(count) + ")";
}

} // namespace

int main() {
  std::printf("# Plan kernels\n\n"
              "Generated from runtime/plan/Kernels.def, which documents the special counts "
              "and conventions. `|none` marks the operand that may be absent (kNoBuffer).\n\n"
              "| # | Kernel | Operands -> results | ints | floats | inputs | outputs |\n"
              "|---|---|---|---|---|---|---|\n");
  for (uint16_t k = 0; k < kNumKernels; ++k) {
    const KernelInfo &info = *kernelInfo(k);
    std::string inputs = info.minInputs == info.maxInputs
                             ? countText(info.minInputs)
                             : countText(info.minInputs) + ".." + countText(info.maxInputs);
    std::printf("| %u | %s%s | `%s` | %s | %s | %s | %s |\n", k, info.name,
                info.kernelClass == KernelClass::Collective ? " (collective)" : "",
                cell(info.operands).c_str(), attributes(info.intsDoc, info.ints).c_str(),
                attributes(info.floatsDoc, info.floats).c_str(), inputs.c_str(),
                countText(info.outputs).c_str());
  }
  return 0;
}
