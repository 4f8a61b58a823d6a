//===- CompileFlagsFuzzer.cpp - libFuzzer target: fsdp-opt's own flags -----===//
//
// fsdp-opt parses its flags with parseCompileFlag (CompileOptions.h) and
// then checks them together (validateCompileOptions, findUnimplemented)
// before it reads the model: world sizes, shard strategies, budgets with
// units, regexes, schedules, mesh shapes. The input is the argv, one
// argument per line; arguments that are not ours (MLIR's --mlir-* options)
// go to llvm::cl in the tool and are skipped here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Pipelines/Pipeline.h"
#include "tests/fuzz/FuzzSupport.h"

using namespace fsdp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args = fuzz::splitArguments(data, size);
  if (args.size() > 64)
    return 0;
  CompileOptions opts;
  std::string error;
  for (const std::string &arg : args) {
    if (arg.empty() || arg[0] != '-')
      continue;
    if (parseCompileFlag(arg, opts, error) == FlagParse::Error)
      return 0;
  }
  if (!validateCompileOptions(opts, error))
    return 0;
  (void)findUnimplemented(opts);
  return 0;
}
