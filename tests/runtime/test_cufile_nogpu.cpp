// cuFile without a GPU or libcufile: the generated forms' types, CuFileError and its
// message, the loader's error when libcufile is missing, and the checks CuFileHandle makes
// before any cuFile call. Runs in CI (no cufile.h there: the parts needing it say so).
#include <cuwrap/cufile_handle.hpp>
#include <cuwrap/error.hpp>
#if CUWRAP_HAS_CUFILE
#include <cuwrap/cufile.hpp>
#endif

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

using cuwrap::BufferRef;
using cuwrap::CuFileHandle;
using cuwrap::CuFileHandleRef;

// A handle value and a buffer that no call ever reaches: the checks refuse first.
CuFileHandleRef fake_handle() {
  return CuFileHandleRef::from_handle(reinterpret_cast<void*>(0x10), 3);
}
BufferRef fake_buffer() { return BufferRef::from_handle(0x1000, 64); }

#if CUWRAP_HAS_CUFILE
// The typed forms: outputs returned, statuses thrown; the data path keeps its ssize_t.
static_assert(
    std::is_same_v<decltype(cuwrap::cufile::cuFileHandleRegister(nullptr)), CUfileHandle_t>);
static_assert(std::is_same_v<decltype(cuwrap::cufile::cuFileDriverOpen()), void>);
static_assert(std::is_same_v<decltype(cuwrap::cufile::cuFileDriverClose()), void>);
static_assert(
    std::is_same_v<decltype(cuwrap::cufile::cuFileDriverGetProperties()), CUfileDrvProps_t>);
static_assert(std::is_same_v<decltype(cuwrap::cufile::cuFileGetVersion()), int>);
static_assert(
    std::is_same_v<decltype(cuwrap::cufile::cuFileBatchIOSetUp(1U)), CUfileBatchHandle_t>);
static_assert(
    std::is_same_v<decltype(cuwrap::cufile::cuFileRead(nullptr, nullptr, 0, 0, 0)), ssize_t>);
static_assert(
    std::is_same_v<decltype(cuwrap::cufile::cuFileWrite(nullptr, nullptr, 0, 0, 0)), ssize_t>);
static_assert(std::is_same_v<decltype(cuwrap::cufile::raw::cuFileDriverOpen()), CUfileError_t>);
static_assert(std::is_base_of_v<cuwrap::StatusError, cuwrap::CuFileError>);
static_assert(std::is_same_v<decltype(std::declval<cuwrap::CuFileError>().code()), CUfileOpError>);

TEST(CuFileError, NamesTheStatusTheFunctionAndTheHeadersText) {
  const cuwrap::CuFileError error(CUfileError_t{CU_FILE_INVALID_VALUE, CUDA_SUCCESS},
                                  "cuFileBufRegister");
  EXPECT_EQ(error.code(), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(error.status(), 5022);
  EXPECT_EQ(error.cuda_error(), CUDA_SUCCESS);
  const std::string what = error.what();
  EXPECT_NE(what.find("cuFileBufRegister"), std::string::npos) << what;
  EXPECT_NE(what.find("CU_FILE_INVALID_VALUE"), std::string::npos) << what;
  EXPECT_NE(what.find(cufileop_status_error(CU_FILE_INVALID_VALUE)), std::string::npos) << what;
  EXPECT_EQ(cuwrap::to_string(CU_FILE_DRIVER_NOT_INITIALIZED), "CU_FILE_DRIVER_NOT_INITIALIZED");
}

TEST(CuFileError, CarriesTheCudaErrorOfACudaDriverError) {
  const cuwrap::CuFileError error(
      CUfileError_t{CU_FILE_CUDA_DRIVER_ERROR, CUDA_ERROR_INVALID_CONTEXT}, "cuFileRead");
  EXPECT_EQ(error.code(), CU_FILE_CUDA_DRIVER_ERROR);
  EXPECT_EQ(error.cuda_error(), CUDA_ERROR_INVALID_CONTEXT);
  const std::string what = error.what();
  EXPECT_NE(what.find("CUDA_ERROR_INVALID_CONTEXT"), std::string::npos) << what;
  // Another code's cu_err means nothing and is not kept.
  const cuwrap::CuFileError other(CUfileError_t{CU_FILE_IO_ERROR, CUDA_ERROR_INVALID_VALUE},
                                  "cuFileWrite");
  EXPECT_EQ(other.cuda_error(), CUDA_SUCCESS);
}

TEST(CuFileError, CheckThrowsForEveryCodeButSuccess) {
  EXPECT_NO_THROW(cuwrap::detail::check(CUfileError_t{CU_FILE_SUCCESS, CUDA_SUCCESS}, "f"));
  try {
    cuwrap::detail::check(CUfileError_t{CU_FILE_HANDLE_NOT_REGISTERED, CUDA_SUCCESS}, "f");
    FAIL() << "no exception";
  } catch (const cuwrap::CuFileError& e) {
    EXPECT_EQ(e.code(), CU_FILE_HANDLE_NOT_REGISTERED);
    EXPECT_EQ(e.function(), "f");
  }
}

TEST(CuFileLoader, AMissingLibcufileIsALoadErrorNamingIt) {
  // This test's process only (ctest runs each test in its own).
  ::setenv("CUWRAP_LIBCUFILE", "/nonexistent/libcufile.so.0", 1);
  try {
    static_cast<void>(cuwrap::CuFileDriver::open());
    FAIL() << "no exception";
  } catch (const cuwrap::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find("libcufile"), std::string::npos) << e.what();
  }
}
#else
TEST(CuFileLoader, ABuildWithoutTheHeaderSaysSo) {
  try {
    static_cast<void>(cuwrap::CuFileDriver::open());
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cufile.h"), std::string::npos) << e.what();
  }
  EXPECT_EQ(CUWRAP_HAS_CUFILE, 0);
}
#endif

TEST(CuFileHandle, ChecksTheTransferBeforeAnyCall) {
  const CuFileHandleRef file = fake_handle();
  const BufferRef buffer = fake_buffer();
  EXPECT_THROW(static_cast<void>(file.read(buffer, 65, 0)), std::out_of_range);
  EXPECT_THROW(static_cast<void>(file.write(buffer, 16, 0, 60)), std::out_of_range);
  EXPECT_THROW(static_cast<void>(file.read(buffer, 8, 0, 65)), std::out_of_range);
  EXPECT_THROW(static_cast<void>(file.read(buffer, 8, -1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(file.write(buffer, 8, 0, -4)), std::invalid_argument);
  try {
    static_cast<void>(file.read(buffer, 100, 0, 8));
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("100"), std::string::npos) << what;
    EXPECT_NE(what.find("64-byte"), std::string::npos) << what;
  }
}

TEST(CuFileHandle, AClosedHandleRefusesNamingWhy) {
  const CuFileHandle closed;
  EXPECT_FALSE(closed.is_open());
  EXPECT_EQ(closed.fd(), -1);
  try {
    static_cast<void>(closed.read(fake_buffer(), 1, 0));
    FAIL() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("closed CuFileHandle"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(CuFileHandleRef::from_handle(nullptr, 3)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(CuFileHandle::adopt(-1)), std::invalid_argument);
  static_assert(std::is_trivially_copyable_v<CuFileHandleRef>);
  static_assert(!std::is_copy_constructible_v<CuFileHandle>);
  static_assert(std::is_nothrow_move_constructible_v<CuFileHandle>);
  static_assert(std::is_convertible_v<const CuFileHandle&, CuFileHandleRef>);
}

TEST(CuFileDriver, AnEmptyReferenceRefusesAndClosesQuietly) {
  cuwrap::CuFileDriver driver;
  EXPECT_FALSE(driver.is_open());
  EXPECT_THROW(static_cast<void>(driver.version()), std::logic_error);
  driver.close();
  EXPECT_FALSE(driver.is_open());
  cuwrap::CuFileBufferRegistration registration;
  EXPECT_FALSE(registration.is_open());
  registration.close();
}

}  // namespace
