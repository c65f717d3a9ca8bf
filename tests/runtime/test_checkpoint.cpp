// checkpoint::Process: arguments refused before the driver and the toolkit gate (no GPU
// needed); on a GPU with a CUDA 12.8+ driver, a child process holding GPU memory is
// locked, checkpointed, restored and unlocked, and finds its data intact afterwards.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "checks.hpp"
#include "gpu.hpp"

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace {

using cuwrap::checkpoint::GpuPair;
using cuwrap::checkpoint::Process;
using cuwrap::checkpoint::ProcessState;
using cuwrap::testing::contains;

constexpr const char* kChildFdVariable = "CUWRAP_CHECKPOINT_TEST_CHILD_FD";

TEST(Checkpoint, ProcessIdsAreChecked) {
  try {
    Process bad(0);
    ADD_FAILURE() << "pid 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "pid 0 is not a process ID")) << e.what();
  }
  EXPECT_THROW(Process(-7), std::invalid_argument);
  EXPECT_EQ(Process::current().pid(), static_cast<int>(::getpid()));
  EXPECT_EQ(Process(42).pid(), 42);
  EXPECT_EQ(cuwrap::checkpoint::to_string(ProcessState::Running), "running");
  EXPECT_EQ(cuwrap::checkpoint::to_string(ProcessState::Checkpointed), "checkpointed");
}

TEST(Checkpoint, GpuMappingIsCheckedBeforeAnythingElse) {
  const Process process = Process::current();
  const std::string good = "GPU-0123abcd-4567-89ab-cdef-0123456789AB";
  const std::vector<GpuPair> bad_new = {{good, good}, {good, "GPU-1234"}};
  try {
    process.restore(bad_new);
    ADD_FAILURE() << "a short UUID was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "gpu_mapping[1].new_uuid 'GPU-1234' is not a GPU UUID"))
        << e.what();
  }
  // Both forms parse: Device::uuid()'s (no prefix) and nvidia-smi's ("GPU-"); the
  // error names the second pair, so the first pair's four UUIDs were accepted.
  const std::string plain = "0123abcd-4567-89ab-cdef-0123456789ab";
  const std::vector<GpuPair> mixed = {{plain, good}, {plain, "1234"}};
  try {
    process.restore(mixed);
    ADD_FAILURE() << "a short UUID was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "gpu_mapping[1].new_uuid '1234' is not a GPU UUID")) << e.what();
  }
  const std::vector<GpuPair> bad_digit = {{"0123abcd456789abcdef0123456789ag", good}};
  EXPECT_THROW(process.restore(bad_digit), std::invalid_argument);
  const std::vector<GpuPair> too_long = {{good + "00", good}};
  EXPECT_THROW(process.restore(too_long), std::invalid_argument);
}

#if CUDA_VERSION < 12080
TEST(Checkpoint, OlderToolkitsAreRefusedNamingTheVersion) {
  try {
    static_cast<void>(Process::current().state());
    ADD_FAILURE() << "no UnsupportedError";
  } catch (const cuwrap::UnsupportedError& e) {
    EXPECT_EQ(e.required_version(), 12080);
    EXPECT_TRUE(contains(e.feature(), "checkpoint::Process::state")) << e.what();
  }
  EXPECT_THROW(static_cast<void>(Process::current().lock()), cuwrap::UnsupportedError);
}
#endif

// ---- GPU ---------------------------------------------------------------------------

// The child side of the test below, run in a child process started by it (skipped
// otherwise): fill GPU memory, say so, wait until told, then check the memory.
TEST(CheckpointChild, HoldsGpuMemoryUntilTold) {
  const char* fd_text = std::getenv(kChildFdVariable);
  if (fd_text == nullptr) {
    GTEST_SKIP() << "runs only as the child of Checkpoint.ChildSurvivesACheckpointAndRestore";
  }
  const int fd = std::atoi(fd_text);
  cuwrap::Device device(0);
  device.set_current();
  cuwrap::Stream stream = device.create_stream();
  std::vector<std::uint32_t> pattern(1 << 20);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    pattern[i] = static_cast<std::uint32_t>(i * 2654435761U);
  }
  cuwrap::Buffer buffer = device.allocate(pattern.size() * sizeof(std::uint32_t), stream);
  buffer.copy_from(pattern, stream);
  stream.sync();
  char message = 'R';
  ASSERT_EQ(::write(fd, &message, 1), 1);
  ASSERT_EQ(::read(fd, &message, 1), 1);  // the parent checkpoints and restores meanwhile
  EXPECT_EQ(message, 'G');
  std::vector<std::uint32_t> back(pattern.size());
  buffer.copy_to(back, stream);
  stream.sync();
  EXPECT_EQ(back, pattern);
}

TEST(Checkpoint, ChildSurvivesACheckpointAndRestore) {
  CUWRAP_REQUIRE_GPU();
  if (cuwrap::driver_version() < cuwrap::checkpoint::kCheckpointVersion ||
      cuwrap::bindings_version() < cuwrap::checkpoint::kCheckpointVersion) {
    GTEST_SKIP() << "needs CUDA 12.8 (driver and toolkit) for checkpoints";
  }
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const int parent_fd = fds[0];
  const int child_fd = fds[1];
  std::string exe = "/proc/self/exe";
  std::string filter = "--gtest_filter=CheckpointChild.HoldsGpuMemoryUntilTold";
  std::vector<char*> argv = {exe.data(), filter.data(), nullptr};
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    env_strings.emplace_back(*e);
  }
  env_strings.push_back(std::string(kChildFdVariable) + "=" + std::to_string(child_fd));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, parent_fd);
  pid_t child = 0;
  const int spawned =
      ::posix_spawn(&child, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_fd);
  ASSERT_EQ(spawned, 0);

  char message = 0;
  ASSERT_EQ(::read(parent_fd, &message, 1), 1) << "the child did not get ready";
  ASSERT_EQ(message, 'R');
  const Process process(static_cast<int>(child));
  EXPECT_EQ(process.state(), ProcessState::Running);
  EXPECT_GT(process.restore_thread_id(), 0);
  ASSERT_TRUE(process.lock(30000)) << "the child was not locked within 30 s";
  EXPECT_EQ(process.state(), ProcessState::Locked);
  // Out of order: a locked process cannot be unlocked twice or restored before a checkpoint.
  EXPECT_THROW(process.restore(), cuwrap::DriverError);
  process.checkpoint();
  EXPECT_EQ(process.state(), ProcessState::Checkpointed);
  process.restore();
  EXPECT_EQ(process.state(), ProcessState::Locked);
  process.unlock();
  EXPECT_EQ(process.state(), ProcessState::Running);

  message = 'G';
  EXPECT_EQ(::write(parent_fd, &message, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::close(parent_fd);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child found its GPU memory changed";
}

}  // namespace
