//===- MpiCommunicator.h - ranks as MPI processes ------------------------===//
//
// The communicator of a multi-process (and multi-node) CPU run started by
// mpirun / mpiexec: one rank per process, collectives over a duplicate of
// MPI_COMM_WORLD. It gives the in-process communicator's results bit for
// bit (reductions are the shared rank-order reduction over gathered data,
// not MPI_Reduce, whose order is the library's choice) and its failure
// contract: before every collective the ranks all-gather a small
// description of the call, so a mismatch is the same error on every rank
// instead of a hang or a corrupted buffer, and the communicator stays failed
// afterwards. abort() is MPI_Abort: it ends every process of the job.
//
// This header does not include mpi.h; only MpiCommunicator.cpp sees MPI.
// Link FSDPCommMpi to use it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_MPICOMMUNICATOR_H
#define FSDP_RUNTIME_COMM_MPICOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <cstddef>
#include <memory>

namespace fsdp::rt::comm {

/// True when mpirun / mpiexec started this process (Open MPI sets
/// OMPI_COMM_WORLD_SIZE; PMIx and PMI launchers set PMIX_RANK / PMI_SIZE),
/// so a driver can choose the MPI world over in-process ranks. Ask before
/// createMpiWorld: Open MPI's singleton start sets PMIX_RANK too.
bool launchedUnderMpi();

/// This process's rank of the job: initializes MPI if nobody has (thread
/// level MPI_THREAD_SERIALIZED requested: any one thread at a time may
/// call), duplicates MPI_COMM_WORLD with errors returned rather than fatal.
/// MPI is finalized when the last communicator made here (the world or one
/// split from it) is destroyed, or at exit, so the process exits cleanly;
/// after that MPI cannot start again and this returns an error. Without a
/// launcher it gives a world of one (MPI's singleton start).
Status createMpiWorld(std::unique_ptr<Communicator> &out);

/// Tests only: the largest per-rank message (bytes) sent as plain bytes;
/// larger ones go as one derived datatype, as messages over 2^31 bytes
/// (MPI's int counts) must. Returns the previous value.
size_t setMpiByteMessageLimitForTesting(size_t bytes);

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_MPICOMMUNICATOR_H
