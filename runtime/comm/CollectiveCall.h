//===- CollectiveCall.h - what a rank asked a collective to do ------------===//
//
// Every communicator that detects mismatched calls (the in-process one from
// its shared slots, the MPI and TCP ones from descriptors they exchange
// before each collective) publishes the same description of each call, checks a rank's
// own arguments the same way and reaches its verdict with the same function,
// so the ranks of either backend report a disagreement in the same words.
// The verdict is a pure function of all ranks' descriptions: every rank that
// sees them reaches the same one.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_COLLECTIVECALL_H
#define FSDP_RUNTIME_COMM_COLLECTIVECALL_H

#include "runtime/comm/Communicator.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::rt::comm {

enum class CallKind : uint8_t { AllGather, ReduceScatter, AllReduce, Broadcast, Barrier, Split };

/// What one rank asked for. All ranks must publish equal descriptions; the
/// fields a kind does not use stay at their defaults so they compare equal.
/// (split's color and key differ between ranks by design and are not part
/// of it.)
struct CallDesc {
  CallKind kind = CallKind::Barrier;
  int64_t count = 0;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;

  bool operator==(const CallDesc &o) const {
    return kind == o.kind && count == o.count && dtype == o.dtype && op == o.op &&
           root == o.root;
  }
  bool operator!=(const CallDesc &o) const { return !(*this == o); }

  /// "allReduce(4 x f32, sum)": how errors name the call.
  std::string describe() const;
};

/// Why this rank's own arguments cannot take part in `desc` on a group of
/// `size` ranks (invalid type, negative or huge count, null buffers for a
/// non-empty call, a type or op the reduction does not define, a root
/// outside the group, a negative split color); OK when they can. The
/// reason is published to every rank rather than returned early, so no
/// rank is left waiting.
Status checkCall(const CallDesc &desc, int size, const void *send, const void *recv, int color = 0);

/// The verdict on every rank's published call: empty when the call may
/// proceed, otherwise the error every rank reports. `localErrors[r]` is
/// rank r's checkCall message (empty when its arguments were fine).
std::string judgeCalls(const std::vector<CallDesc> &descs,
                       const std::vector<std::string> &localErrors);

/// One rank's call as it travels between processes (the MPI and TCP
/// communicators exchange one per rank before every collective): fixed
/// size, so the exchange itself can never mismatch. A local error travels
/// truncated. Ranks of one job share a byte order.
struct WireCall {
  int64_t kind, count, dtype, op, root;
  char localError[216]; // NUL-terminated; empty when the rank's arguments are fine
};
static_assert(sizeof(WireCall) == 256, "the call description is one fixed-size message");

/// `desc` and this rank's checkCall verdict as they travel.
WireCall toWire(const CallDesc &desc, const Status &local);

/// judgeCalls on every rank's WireCall (`calls[r]` from rank r).
std::string judgeWireCalls(const WireCall *calls, size_t size);

/// Bytes of `count` elements (0 for a non-positive count).
inline size_t byteCount(int64_t count, DType dtype) {
  return count > 0 ? static_cast<size_t>(count) * dtypeSize(dtype) : 0;
}

/// Whether two byte ranges share a byte: when an output must not be written
/// in place because another rank (or the transport) still reads the input.
inline bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_COLLECTIVECALL_H
