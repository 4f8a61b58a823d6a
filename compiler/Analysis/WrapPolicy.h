//===- WrapPolicy.h - which parameters form a shard unit ------------------===//
//
// FSDP shards parameters unit by unit (a unit is one FlatParameter: its
// parameters are gathered, used and released together). The policies of
// `--wrap` decide the units from what the source model tells us, its
// parameter names and sizes, so the compiler needs no module tree:
//   blocks   repeated blocks: the first numbered path component under which
//            at least two numbers occur (`blocks.3.`, `layers.11.`,
//            `transformer.encoder.layers.0.`) starts a unit per number;
//   size:N   consecutive parameters until a unit holds >= N elements (like
//            torch's size_based_auto_wrap_policy's min_num_params);
//   regex:RE one unit per distinct matched text of RE in the name.
// Parameters no unit takes form the root unit, which FSDP keeps gathered
// for the whole step. Pure C++ (no MLIR), so the rules are unit-tested on
// the names torch exports.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_WRAPPOLICY_H
#define FSDP_COMPILER_ANALYSIS_WRAPPOLICY_H

#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {

struct ParamInfo {
  std::string name;
  int64_t numel = 0;
};

struct WrapUnit {
  std::string name;            // "root", the block prefix, or the matched text
  std::vector<size_t> params;  // indices into the parameter list, in model order
  int64_t numel = 0;
};

enum class WrapPolicyKind { Blocks, Size, Regex };

struct WrapPolicy {
  WrapPolicyKind kind = WrapPolicyKind::Blocks;
  int64_t minParams = 0; // size:N
  std::string regex;     // regex:RE (POSIX extended, already validated)
};

/// The units of `params` under `policy`: the root unit first (present even
/// when empty, so unit 0 is always the root), then the others in the order
/// their first parameter appears. Every parameter is in exactly one unit.
std::vector<WrapUnit> formUnits(const std::vector<ParamInfo> &params, const WrapPolicy &policy);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_WRAPPOLICY_H
