//===- CommTestGroups.h - groups of every communicator, as threads --------===//
//
// The communicators the conformance suite (CommunicatorTest.cpp) runs on,
// each as N ranks on N threads of the test process: in-process groups, and
// TCP worlds whose ranks each make their own TcpCommunicator on loopback,
// rendezvousing at a listener bound to a free port first (no race for the
// port). The same test bodies then check every communicator's bits and
// failure contract.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTGROUPS_H
#define FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTGROUPS_H

#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/comm/TcpCommunicator.h"
#include "runtime/comm/TcpRendezvous.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fsdp::rt::commtest {

using Comms = std::vector<std::unique_ptr<Communicator>>;

enum class GroupKind { InProcess, Tcp };

inline std::string kindName(GroupKind kind) { return kind == GroupKind::Tcp ? "tcp" : "inProcess"; }

/// A TCP world of `size` ranks on loopback, made by `size` threads at once
/// (the rendezvous needs them all).
inline Comms makeTcpGroup(int size, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  comm::tcp::Fd listener;
  uint16_t port = 0;
  Status bound = comm::tcp::listenTcp(0, listener, port);
  EXPECT_TRUE(bound.isOk()) << bound.message();
  Comms comms(static_cast<size_t>(size));
  std::vector<Status> made(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      comm::TcpWorldOptions o;
      o.addr = "127.0.0.1";
      o.port = port;
      o.rank = r;
      o.size = size;
      o.timeout = timeout;
      o.listenFd = r == 0 ? listener.get() : -1;
      made[r] = comm::createTcpWorld(o, comms[r]);
    });
  for (std::thread &t : threads)
    t.join();
  for (int r = 0; r < size; ++r)
    EXPECT_TRUE(made[r].isOk()) << "rank " << r << ": " << made[r].message();
  return comms;
}

inline Comms makeGroup(GroupKind kind, int size) {
  if (kind == GroupKind::Tcp)
    return makeTcpGroup(size);
  Comms comms;
  Status s = comm::createInProcessGroup(size, comms);
  EXPECT_TRUE(s.isOk()) << s.message();
  return comms;
}

} // namespace fsdp::rt::commtest

#endif // FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTGROUPS_H
