//===- NcclMapping.h - channel calls as NCCL calls ------------------------===//
//
// The one place that decides what NCCL is asked to do: a channel's
// collective (runtime/device/Channel.h: Communicator's arguments) becomes
// the arguments of ncclAllGather / ncclReduceScatter / ncclAllReduce /
// ncclBroadcast (buffers, NCCL's size_t count, ncclDataType_t, ncclRedOp_t,
// root), several collectives issued at one plan point become one
// ncclGroupStart/End group, and the executor's shard and replica groups
// become ncclCommSplit's (color, key). A pure function of its arguments,
// with no NCCL or CUDA header: the CUDA build issues exactly what it
// returns (backends/cuda/NcclChannel.cpp, which static_asserts the enums
// below against nccl.h), and the CPU tests run the same description
// through an interpreter of NCCL's semantics and compare it with the
// in-process communicator (tests/unit/runtime/comm/NcclMappingTest.cpp).
//
// The refusals are the communicators' own (comm::checkCall, so a call the
// CPU refuses is refused on NCCL in the same words: reductions of types
// other than f32, f64, bf16, f16 and i64, avg of an integer type, a root
// outside the group, a negative split color), plus what only NCCL cannot
// do: buffers that overlap outside NCCL's in-place layouts (the CPU copes
// through a scratch buffer; NCCL's result would be undefined). Types NCCL
// has no name for (i1, i16, ui16) are moved as bytes by the collectives
// that only copy (allGather, broadcast).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_NCCLMAPPING_H
#define FSDP_RUNTIME_COMM_NCCLMAPPING_H

#include "runtime/comm/CollectiveCall.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fsdp::rt::nccl {

/// ncclDataType_t, value for value (nccl.h 2.28).
enum class DataType : int {
  Int8 = 0, Uint8 = 1, Int32 = 2, Uint32 = 3, Int64 = 4, Uint64 = 5,
  Float16 = 6, Float32 = 7, Float64 = 8, Bfloat16 = 9,
};

/// The ncclRedOp_t values the mapping uses.
enum class RedOp : int { Sum = 0, Max = 2, Avg = 4 };

/// The NCCL entry point a Call stands for.
enum class Function : uint8_t {
  AllGather, ReduceScatter, AllReduce, Broadcast, GroupStart, GroupEnd,
};

const char *functionName(Function f); // "ncclAllGather", ...
const char *dataTypeName(DataType t); // "ncclFloat32", ...

/// Bytes of one element of `t`.
size_t dataTypeSize(DataType t);

/// One NCCL call, argument for argument. `count` is NCCL's: sendcount for
/// ncclAllGather, recvcount for ncclReduceScatter, the element count
/// otherwise. `op` is meaningful for the reductions, `root` for
/// ncclBroadcast (whose sendbuff and recvbuff are the one buffer); the
/// group markers use no field.
struct Call {
  Function function = Function::GroupStart;
  const void *sendbuff = nullptr;
  void *recvbuff = nullptr;
  size_t count = 0;
  DataType datatype = DataType::Uint8;
  RedOp op = RedOp::Sum;
  int root = 0;
};

/// A channel's collective as the channel received it: the description
/// every communicator checks (kind, count, dtype, op, root), and the
/// buffers (broadcast: send == recv == its buffer).
struct ChannelCall {
  comm::CallDesc desc;
  const void *send = nullptr;
  void *recv = nullptr;
};

/// NCCL's type for `dtype`; false when NCCL has none (i1, i16, ui16).
bool nativeType(DType dtype, DataType &out);

/// The NCCL call rank `rank` of a group of `size` makes for `call`, or
/// why it cannot: checkCall's refusal in checkCall's words, or an overlap
/// of send and recv outside NCCL's in-place layouts (allReduce recv ==
/// send, allGather send == recv + rank * count, reduceScatter recv == send
/// + rank * count: exactly Communicator.h's).
Status mapCall(const ChannelCall &call, int rank, int size, Call &out);

/// The calls rank `rank` makes for `calls`, issued at one plan point in
/// this order: each run of calls that do not touch each other's buffers is
/// one ncclGroupStart .. ncclGroupEnd group (NCCL may run a group's
/// operations in any order or together, so a call that reads or writes
/// what an earlier call of the run writes starts a new group); a lone call
/// is made as is. All or nothing: if any call is refused, `out` is empty
/// and the error names the call's place in the batch.
Status mapBatch(const ChannelCall *calls, size_t numCalls, int rank, int size,
                std::vector<Call> &out);

/// Whether `later` must wait for `earlier`'s result (it reads what earlier
/// writes, or writes what earlier reads or writes), for `size` ranks.
bool dependsOn(const ChannelCall &later, const ChannelCall &earlier, int size);

/// ncclCommSplit's color and key. NCCL, like Communicator::split, ranks
/// the new communicator by (key, old rank).
struct Split {
  int color = 0;
  int key = 0;
};

/// Channel::split(color, key) as ncclCommSplit's arguments: the same pair,
/// refused in checkCall's words when the color is negative (NCCL would
/// read -1 as NCCL_SPLIT_NOCOLOR and leave the rank out of every group).
Status mapSplit(int color, int key, Split &out);

/// The split that forms a collective's groups, as the plan lays them out
/// (runtime/plan/KernelTable.h's CollectiveGroups): `ranks` holds the
/// world's ranks group by group, `groupSize` each. Rank `rank` at position
/// p joins group p / groupSize as its member p % groupSize. The executor
/// splits its host communicator with it, and a device channel forms the
/// same groups with ncclCommSplit. An error when `rank` is not in `ranks`
/// or the layout is not whole groups.
Status splitForGroups(const int64_t *ranks, size_t numRanks, int64_t groupSize, int rank,
                      Split &out);

} // namespace fsdp::rt::nccl

#endif // FSDP_RUNTIME_COMM_NCCLMAPPING_H
