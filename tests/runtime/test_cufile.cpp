// CuFileHandle on a GPU: a device buffer written to a file and read back through cuFile,
// in compatibility mode (CUFILE_FORCE_COMPAT_MODE=true, set for this test's process), as
// on machines without GPUDirect Storage. Skips, saying why, without a GPU, without
// cufile.h at build time or without libcufile. Each test has its own temporary file.
//
// cuFileHandleRegister accepts files on ext4 and xfs only, compatibility mode included
// (elsewhere, tmpfs and overlayfs among them, it answers CU_FILE_HANDLE_NOT_REGISTERED): the
// file is made in the first of CUWRAP_CUFILE_TEST_DIR, GoogleTest's temporary directory,
// the build directory (the working directory of ctest), $HOME and /var/tmp that is on one,
// and the tests that register it skip, naming the filesystems they found, where none is.
#include <cuwrap/cufile_handle.hpp>
#include <cuwrap/synchronous_memory_resource.hpp>
#if CUWRAP_HAS_CUFILE
#include <cuwrap/cufile.hpp>  // CuFileError
#endif

#include <gtest/gtest.h>

#include "device_fixture.hpp"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace {

// The filesystems cuFileHandleRegister accepts (statfs's f_type): ext2/3/4 share one magic.
constexpr long kExt4Magic = 0xEF53;
constexpr long kXfsMagic = 0x58465342;

// The first candidate directory on ext4 or xfs; "" and, in `seen`, what each was on.
std::string registrable_directory(std::string& seen) {
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  std::error_code ec;
  const std::string candidates[] = {env("CUWRAP_CUFILE_TEST_DIR"), ::testing::TempDir(),
                                    std::filesystem::current_path(ec).string(), env("HOME"),
                                    "/var/tmp"};
  for (const std::string& dir : candidates) {
    struct statfs fs {};
    if (dir.empty() || ::statfs(dir.c_str(), &fs) != 0) {
      continue;
    }
    const long type = static_cast<long>(fs.f_type);
    if (type == kExt4Magic || type == kXfsMagic) {
      return dir.back() == '/' ? dir : dir + "/";
    }
    char hex[32];
    std::snprintf(hex, sizeof hex, "%lx", static_cast<unsigned long>(type));
    seen += (seen.empty() ? "" : ", ") + dir + " (f_type 0x" + hex + ")";
  }
  return {};
}

// A temporary file of this test alone (mkstemp) in a directory cuFile can register files
// of, removed at the end; path() is empty where there is none (why() says what was seen).
class TemporaryFile {
 public:
  TemporaryFile() {
    const std::string dir = registrable_directory(why_);
    if (dir.empty()) {
      return;
    }
    std::string pattern = dir + "cuwrap_cufile_XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd >= 0) {
      ::close(fd);
      path_ = pattern;
    } else {
      why_ = "mkstemp failed in " + dir;
    }
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (!path_.empty()) {
      ::unlink(path_.c_str());
    }
  }
  const std::string& path() const { return path_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_;
  std::string why_;
};

std::vector<std::byte> pattern(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  }
  return bytes;
}

class CuFileTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
#if !CUWRAP_HAS_CUFILE
    GTEST_SKIP() << "cuwrap was built without cufile.h (CUWRAP_EXTRA_HEADERS_DIR)";
#else
    // No GPUDirect Storage on the test machines: POSIX I/O through host memory.
    ::setenv("CUFILE_FORCE_COMPAT_MODE", "true", 1);
    try {
      driver_ = cuwrap::CuFileDriver::open();
    } catch (const cuwrap::LoadError& e) {
      GTEST_SKIP() << "libcufile cannot be loaded: " << e.what();
    }
    if (file_.path().empty()) {
      GTEST_SKIP() << "no directory on ext4 or xfs, which cuFileHandleRegister needs (set "
                      "CUWRAP_CUFILE_TEST_DIR to one); seen: "
                   << file_.why();
    }
    // libcufile registers a file only where it can read the volume's attributes (udev's
    // ID_FS_USAGE of the block device, compatibility mode included): a virtual machine
    // without a udev database has none, and every registration answers
    // CU_FILE_HANDLE_NOT_REGISTERED (cufile.log: "unable to get volume attributes").
    // That is the machine's, not cuwrap's: the tests skip, saying so (docs/cufile.md).
    try {
      static_cast<void>(cuwrap::CuFileHandle::open(file_.path()));
    } catch (const cuwrap::CuFileError& e) {
      if (e.code() != CU_FILE_HANDLE_NOT_REGISTERED) {
        throw;
      }
      GTEST_SKIP() << "libcufile registers no file of " << file_.path() << " on this machine ("
                   << e.what()
                   << "; its cufile.log says why: a block device without udev properties is "
                      "one cause, docs/cufile.md)";
    }
#endif
  }

  cuwrap::Buffer allocate(std::size_t size) {
    cuwrap::SynchronousMemoryResource resource(device());
    return resource.allocate(size);
  }

  cuwrap::CuFileDriver driver_;
  TemporaryFile file_;
};

TEST_F(CuFileTest, WritesABufferAndReadsItBackExactly) {
  constexpr std::size_t kSize = 1 << 20;
  const std::vector<std::byte> expected = pattern(kSize);
  cuwrap::Buffer source = allocate(kSize);
  source.copy_from(expected);
  cuwrap::CuFileHandle file =
      cuwrap::CuFileHandle::open(file_.path(), {.read = true, .write = true, .truncate = true});
  ASSERT_TRUE(file.is_open());
  EXPECT_EQ(file.write(source, kSize, 0), kSize);

  cuwrap::Buffer target = allocate(kSize);
  std::vector<std::byte> zeros(kSize);
  target.copy_from(zeros);
  EXPECT_EQ(file.read(target, kSize, 0), kSize);
  std::vector<std::byte> got(kSize);
  target.copy_to(got);
  EXPECT_EQ(got, expected);
  EXPECT_GT(driver_.version(), 0);
  file.close();
  EXPECT_FALSE(file.is_open());
  EXPECT_THROW(static_cast<void>(file.read(target, 1, 0)), std::logic_error);
}

TEST_F(CuFileTest, ReadsAtAFileOffsetIntoABufferOffset) {
  constexpr std::size_t kSize = 64 * 1024;
  const std::vector<std::byte> expected = pattern(kSize);
  cuwrap::Buffer source = allocate(kSize);
  source.copy_from(expected);
  {
    cuwrap::CuFileHandle writer =
        cuwrap::CuFileHandle::open(file_.path(), {.read = false, .write = true, .truncate = true});
    ASSERT_EQ(writer.write(source, kSize, 0), kSize);
  }
  cuwrap::CuFileHandle reader = cuwrap::CuFileHandle::open(file_.path());
  constexpr std::size_t kPart = 4096;
  constexpr off_t kFileOffset = 12288;
  constexpr off_t kBufferOffset = 512;
  cuwrap::Buffer target = allocate(kPart + kBufferOffset);
  std::vector<std::byte> zeros(kPart + kBufferOffset);
  target.copy_from(zeros);
  const cuwrap::CuFileHandleRef ref = reader;
  EXPECT_EQ(ref.read(target, kPart, kFileOffset, kBufferOffset), kPart);
  std::vector<std::byte> got(kPart + kBufferOffset);
  target.copy_to(got);
  EXPECT_EQ(std::vector<std::byte>(got.begin(), got.begin() + kBufferOffset),
            std::vector<std::byte>(kBufferOffset));
  EXPECT_EQ(std::vector<std::byte>(got.begin() + kBufferOffset, got.end()),
            std::vector<std::byte>(expected.begin() + kFileOffset,
                                   expected.begin() + kFileOffset + kPart));
  // Past the end of the file: fewer bytes than asked.
  EXPECT_EQ(reader.read(target, kPart, static_cast<off_t>(kSize - 100)), 100U);
}

TEST_F(CuFileTest, AdoptsADescriptorAndRegistersABuffer) {
  constexpr std::size_t kSize = 8192;
  const std::vector<std::byte> expected = pattern(kSize);
  cuwrap::Buffer buffer = allocate(kSize);
  buffer.copy_from(expected);
  const int fd = ::open(file_.path().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  cuwrap::CuFileHandle file = cuwrap::CuFileHandle::adopt(fd);
  EXPECT_EQ(file.fd(), fd);
  {
    cuwrap::CuFileBufferRegistration registration =
        cuwrap::CuFileBufferRegistration::register_buffer(buffer);
    EXPECT_TRUE(registration.is_open());
    EXPECT_EQ(registration.address(), buffer.handle());
    EXPECT_EQ(file.write(buffer, kSize, 0), kSize);
  }
  cuwrap::Buffer back = allocate(kSize);
  EXPECT_EQ(file.read(back, kSize, 0), kSize);
  std::vector<std::byte> got(kSize);
  back.copy_to(got);
  EXPECT_EQ(got, expected);
}

TEST_F(CuFileTest, AMissingFileIsASystemErrorNamingThePath) {
  const std::string missing = file_.path() + ".missing";
  try {
    static_cast<void>(cuwrap::CuFileHandle::open(missing));
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

}  // namespace
