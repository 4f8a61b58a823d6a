//===- CudaDriverLibraryTest.cpp - the driver API's loader, no GPU needed -===//
//
// CudaDriverLibrary.h without a GPU: where libcuda.so.1 is absent (no
// NVIDIA driver) the loader's error names the library and what needs it,
// the same error every time; the toolkit's stub libcuda.so, which exports
// the real entry points, binds every one of them (so the names the loader
// asks for exist), and its calls fail in the "cuda driver: WHAT: NAME
// (text)" form; a library that is not a driver is refused naming the first
// missing entry point. On a machine with the driver the real library must
// load and bind.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDriverLibrary.h"

#include <gtest/gtest.h>

#include <fstream>

namespace fsdp::rt::cuda {
namespace {

bool haveDriver() { return std::ifstream("/proc/driver/nvidia/version").good(); }

TEST(CudaDriverLibrary, LoadsTheDriverOrSaysWhyNot) {
  const CudaDriverLibrary *driver = nullptr;
  Status s = loadCudaDriver(driver);
  if (s.isOk()) {
    ASSERT_NE(driver, nullptr);
    EXPECT_NE(driver->launchKernel, nullptr);
    EXPECT_EQ(driver->path, "libcuda.so.1");
    return;
  }
  EXPECT_FALSE(haveDriver()) << "the NVIDIA driver is installed but: " << s.message();
  EXPECT_EQ(driver, nullptr);
  EXPECT_EQ(s.message().rfind("cuda: cannot load the CUDA driver (libcuda.so.1): ", 0), 0u)
      << s.message();
  EXPECT_NE(s.message().find("needs the NVIDIA driver's libcuda"), std::string::npos)
      << s.message();
  // Loaded once: the same answer again.
  EXPECT_EQ(loadCudaDriver(driver).message(), s.message());
}

TEST(CudaDriverLibrary, NamesAPathThatCannotBeOpened) {
  CudaDriverLibrary driver;
  Status s = openCudaDriver("/nonexistent/libcuda.so.1", driver);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("cannot load the CUDA driver (/nonexistent/libcuda.so.1): "),
            std::string::npos)
      << s.message();
}

TEST(CudaDriverLibrary, RefusesALibraryThatIsNotADriver) {
  CudaDriverLibrary driver;
  Status s = openCudaDriver("libm.so.6", driver);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "cuda: libm.so.6 has no cuInit (not a CUDA driver?)");
}

#if defined(FSDP_CUDA_DRIVER_STUB)
TEST(CudaDriverLibrary, BindsEveryEntryPointOfTheToolkitsStub) {
  CudaDriverLibrary driver;
  Status s = openCudaDriver(FSDP_CUDA_DRIVER_STUB, driver);
  ASSERT_TRUE(s.isOk()) << s.message();
  for (const void *fn :
       {(const void *)driver.init, (const void *)driver.deviceGet,
        (const void *)driver.ctxGetCurrent, (const void *)driver.ctxGetDevice,
        (const void *)driver.moduleLoadDataEx, (const void *)driver.moduleGetFunction,
        (const void *)driver.moduleUnload, (const void *)driver.launchKernel,
        (const void *)driver.getErrorName, (const void *)driver.getErrorString})
    EXPECT_NE(fn, nullptr);
  // The stub refuses to initialize; the failure reads like any other.
  CUresult r = driver.init(0);
  EXPECT_NE(r, CUDA_SUCCESS);
  EXPECT_EQ(driverFailure(driver, r, "cuInit").rfind("cuda driver: cuInit: ", 0), 0u)
      << driverFailure(driver, r, "cuInit");
}
#endif

TEST(CudaDriverLibrary, FailureTextWithoutTheDriversNames) {
  CudaDriverLibrary none{};
  EXPECT_EQ(driverFailure(none, CUDA_ERROR_INVALID_PTX, "cuModuleLoadDataEx"),
            "cuda driver: cuModuleLoadDataEx: error 218");
}

} // namespace
} // namespace fsdp::rt::cuda
