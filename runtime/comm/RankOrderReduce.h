//===- RankOrderReduce.h - deterministic reduction over ranks' buffers ----===//
//
// The arithmetic every CPU communicator shares: out[i] = in[0][i] + in[1][i]
// + ... + in[n-1][i], added left to right in rank order in the type's compute
// type (float for bf16 and f16, rounded to nearest even once when stored; i64
// wraps on overflow), then divided once by n for Avg. Because the order is
// fixed, the result is a function of the inputs alone, never of which rank
// arrived first; the in-process communicator calls it on the ranks' published
// buffers, an MPI communicator on buffers it gathered.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_RANKORDERREDUCE_H
#define FSDP_RUNTIME_COMM_RANKORDERREDUCE_H

#include "runtime/comm/Communicator.h"

namespace fsdp::rt::comm {

/// OK when (dtype, op) can be reduced; the error names `collective`.
Status checkReducible(DType dtype, ReduceOp op, const char *collective);

/// out[i] = reduction over s = 0..numInputs-1 of inputs[s][i] for i < count.
/// `out` may be exactly one of the inputs (same address); it may not
/// otherwise overlap them.
Status reduceInRankOrder(const void *const *inputs, int numInputs, void *out, int64_t count,
                         DType dtype, ReduceOp op);

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_RANKORDERREDUCE_H
