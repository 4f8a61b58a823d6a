//===- TcpCommunicator.h - ranks as processes connected over TCP ---------===//
//
// The communicator of a run started by torchrun (or any launcher that sets
// torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT): one rank per process, connected to every other rank by
// TCP, found through the rendezvous of TcpRendezvous.h. It gives the
// in-process and MPI communicators' results bit for bit and their failure
// contract: before every collective the ranks exchange the fixed-size call
// description of CollectiveCall.h and judge it the same way, so a mismatch
// is the same error on every rank; reductions are the shared rank-order
// reduction over exchanged data; a failure is sticky. A peer that dies or
// closes its connection is an error naming it, never a hang. abort() may
// come from any thread: it wakes this rank's thread blocked in a
// collective, and an abort message on a separate control connection per
// pair of processes wakes every other rank with this rank's reason; like
// MPI_Abort (and the in-process family) it fails every communicator of the
// job, split ones included. Sub-communicators from split() have meshes of
// their own, so collectives of different groups never share a socket.
//
// The port. torchrun's agent (torch >= 2.4, TORCHELASTIC_USE_AGENT_STORE=
// True) already listens at MASTER_PORT with its TCPStore, whose protocol
// is torch's; so under that agent rank 0 listens at MASTER_PORT + 1
// instead, or, when that port is taken (torchrun chooses MASTER_PORT among
// free ports, and the ports next to it are often the local ends of the
// agent's own connections), at the first free one of MASTER_PORT + 2 ..
// MASTER_PORT + 8, which the other ranks try in order; rank 0 tells them
// at once whether they reached this job (TORCHELASTIC_RUN_ID). Otherwise
// (an environment set by hand, older torchrun) it is MASTER_PORT itself.
// FSDP_RENDEZVOUS_PORT overrides both (that port alone). The start-up
// timeout (how long ranks wait for each other) is 120 s, or
// FSDP_RENDEZVOUS_TIMEOUT seconds.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_TCPCOMMUNICATOR_H
#define FSDP_RUNTIME_COMM_TCPCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/TcpRendezvous.h"

#include <memory>
#include <string>

namespace fsdp::rt::comm {

/// Where and who this process is in a TCP world: the rendezvous' options
/// (rank 0's address and port, rank, world size, start-up timeout; tests
/// pass rank 0 a listening socket bound to a free port) and where the rank
/// is on its machine.
struct TcpWorldOptions : tcp::RendezvousOptions {
  int localRank = 0; // selects the GPU
  int localSize = 0; // ranks on this machine (0: unknown)
};

/// True when torchrun's environment is set: RANK, WORLD_SIZE, LOCAL_RANK,
/// MASTER_ADDR and MASTER_PORT all present. (mpirun's environment takes
/// precedence where both are: ask launchedUnderMpi first.)
bool launchedUnderTorchrun();

/// The options from torchrun's environment (plus LOCAL_WORLD_SIZE,
/// FSDP_RENDEZVOUS_PORT, FSDP_RENDEZVOUS_TIMEOUT; the port as the file
/// comment says). An unset or invalid value is an error naming the
/// variable.
Status tcpWorldOptionsFromEnv(TcpWorldOptions &out);

/// This process's rank of the world: the rendezvous, then the mesh. Every
/// rank must call it; errors (nobody listening by the timeout, ranks that
/// disagree on the world size, two processes with one rank) name the
/// address and the ranks.
Status createTcpWorld(const TcpWorldOptions &options, std::unique_ptr<Communicator> &out);

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_TCPCOMMUNICATOR_H
