//===- NcclLibraryTest.cpp - NCCL's loader against the real library -------===//
//
// Opens the NCCL the CUDA build found (no GPU needed) and checks what the
// channel relies on before any GPU is involved: the library is the
// headers' release or newer, every entry point is bound, error messages
// take the "nccl: <operation>: <NCCL's text>" form, and ncclGetUniqueId -
// what rank 0 does first, host-only - works. Skipped, with the loader's
// reason, on machines without the library, so CI without NCCL stays green.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/NcclLibrary.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace fsdp::rt;
using namespace fsdp::rt::cuda;

namespace {

const NcclLibrary *loadOrSkip(std::string &skipped) {
  const NcclLibrary *nccl = nullptr;
  Status s = loadNccl(nccl);
  if (!s && s.message().find("cannot load NCCL") != std::string::npos)
    skipped = s.message();
  else
    EXPECT_TRUE(s.isOk()) << s.message();
  return nccl;
}

TEST(NcclLibrary, LoadsTheHeadersReleaseOrNewer) {
  std::string skipped;
  const NcclLibrary *nccl = loadOrSkip(skipped);
  if (!skipped.empty())
    GTEST_SKIP() << skipped;
  ASSERT_NE(nccl, nullptr);
  EXPECT_GE(nccl->version, 22800) << "NCCL 2.28 or newer";
  EXPECT_GE(nccl->version, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, 0));
  int again = 0;
  ASSERT_EQ(nccl->getVersion(&again), ncclSuccess);
  EXPECT_EQ(again, nccl->version);
  EXPECT_NE(nccl->path.find("libnccl.so.2"), std::string::npos) << nccl->path;

  // Loaded once: the same table every time.
  const NcclLibrary *second = nullptr;
  ASSERT_TRUE(loadNccl(second).isOk());
  EXPECT_EQ(second, nccl);

  const void *entryPoints[] = {
      reinterpret_cast<const void *>(nccl->getUniqueId),
      reinterpret_cast<const void *>(nccl->commInitRank),
      reinterpret_cast<const void *>(nccl->commInitRankConfig),
      reinterpret_cast<const void *>(nccl->commSplit),
      reinterpret_cast<const void *>(nccl->commAbort),
      reinterpret_cast<const void *>(nccl->commDestroy),
      reinterpret_cast<const void *>(nccl->commFinalize),
      reinterpret_cast<const void *>(nccl->commGetAsyncError),
      reinterpret_cast<const void *>(nccl->commUserRank),
      reinterpret_cast<const void *>(nccl->commCount),
      reinterpret_cast<const void *>(nccl->getErrorString),
      reinterpret_cast<const void *>(nccl->getLastError),
      reinterpret_cast<const void *>(nccl->groupStart),
      reinterpret_cast<const void *>(nccl->groupEnd),
      reinterpret_cast<const void *>(nccl->allGather),
      reinterpret_cast<const void *>(nccl->reduceScatter),
      reinterpret_cast<const void *>(nccl->allReduce),
      reinterpret_cast<const void *>(nccl->broadcast)};
  for (size_t i = 0; i < sizeof(entryPoints) / sizeof(entryPoints[0]); ++i)
    EXPECT_NE(entryPoints[i], nullptr) << "entry point " << i;
}

TEST(NcclLibrary, ErrorsNameTheOperationAndNcclsReason) {
  std::string skipped;
  const NcclLibrary *nccl = loadOrSkip(skipped);
  if (!skipped.empty())
    GTEST_SKIP() << skipped;
  ASSERT_NE(nccl, nullptr);
  const std::string text = nccl->getErrorString(ncclInvalidArgument);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(ncclFailure(*nccl, ncclInvalidArgument, "ncclAllGather of unit 3", nullptr)
                .rfind("nccl: ncclAllGather of unit 3: " + text, 0),
            0u);
  // A call NCCL refuses on the host, without a GPU: a null communicator.
  ncclResult_t asyncError = ncclSuccess;
  const ncclResult_t r = nccl->commGetAsyncError(nullptr, &asyncError);
  EXPECT_NE(r, ncclSuccess);
  const std::string message = ncclFailure(*nccl, r, "ncclCommGetAsyncError", nullptr);
  EXPECT_EQ(message.rfind("nccl: ncclCommGetAsyncError: ", 0), 0u) << message;
}

// Rank 0's first step of every bootstrap, on the host alone.
TEST(NcclLibrary, UniqueIdIsMadeOnTheHost) {
  std::string skipped;
  const NcclLibrary *nccl = loadOrSkip(skipped);
  if (!skipped.empty())
    GTEST_SKIP() << skipped;
  ASSERT_NE(nccl, nullptr);
  ncclUniqueId id{};
  const ncclResult_t r = nccl->getUniqueId(&id);
  ASSERT_EQ(r, ncclSuccess) << ncclFailure(*nccl, r, "ncclGetUniqueId", nullptr);
  EXPECT_TRUE(std::any_of(id.internal, id.internal + NCCL_UNIQUE_ID_BYTES,
                          [](char c) { return c != 0; }));
}

} // namespace
