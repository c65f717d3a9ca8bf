// checkpoint::Process. See cuwrap/checkpoint.hpp.
#include <cuwrap/checkpoint.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>

#include <cuda.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace cuwrap::checkpoint {
namespace {

// Every operation first: built against 12.8 headers and running on a 12.8 driver.
void require_checkpoint(const char* operation) {
  const std::string feature = std::string("checkpoint::Process::") + operation;
#if CUDA_VERSION >= 12080
  detail::require_driver(kCheckpointVersion, feature.c_str());
#else
  detail::throw_toolkit_too_old(kCheckpointVersion, feature.c_str());
#endif
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Parse UUID text (optional "GPU-" prefix, optional hyphens) into its 16 bytes.
CUuuid parse_uuid(std::string_view text, const std::string& what) {
  std::string_view digits = text;
  if (digits.starts_with("GPU-")) {
    digits.remove_prefix(4);
  }
  CUuuid uuid{};
  std::size_t count = 0;
  for (const char c : digits) {
    if (c == '-') {
      continue;
    }
    const int value = hex_value(c);
    if (value < 0 || count >= 32) {
      count = 33;  // not a UUID: report below
      break;
    }
    const std::size_t byte = count / 2;
    uuid.bytes[byte] = static_cast<char>(static_cast<unsigned char>(uuid.bytes[byte]) |
                                         (count % 2 == 0 ? value << 4 : value));
    ++count;
  }
  if (count != 32) {
    throw std::invalid_argument("checkpoint::Process::restore: " + what + " '" + std::string(text) +
                                "' is not a GPU UUID (32 hex digits, as Device::uuid() "
                                "writes it, optionally after nvidia-smi's \"GPU-\")");
  }
  return uuid;
}

}  // namespace

std::string_view to_string(ProcessState state) noexcept {
  switch (state) {
    case ProcessState::Running:
      return "running";
    case ProcessState::Locked:
      return "locked";
    case ProcessState::Checkpointed:
      return "checkpointed";
    case ProcessState::Failed:
      return "failed";
  }
  return "unknown";
}

Process::Process(int pid) : pid_(pid) {
  if (pid <= 0) {
    throw std::invalid_argument("checkpoint::Process: pid " + std::to_string(pid) +
                                " is not a process ID (it must be > 0)");
  }
}

Process Process::current() { return Process(static_cast<int>(::getpid())); }

ProcessState Process::state() const {
  require_checkpoint("state");
#if CUDA_VERSION >= 12080
  const CUprocessState state = driver::cuCheckpointProcessGetState(pid_);
  switch (state) {
    case CU_PROCESS_STATE_RUNNING:
      return ProcessState::Running;
    case CU_PROCESS_STATE_LOCKED:
      return ProcessState::Locked;
    case CU_PROCESS_STATE_CHECKPOINTED:
      return ProcessState::Checkpointed;
    case CU_PROCESS_STATE_FAILED:
      return ProcessState::Failed;
    default:
      break;
  }
  throw std::runtime_error("checkpoint::Process::state: the driver reports process state " +
                           std::to_string(static_cast<int>(state)) +
                           ", which cuwrap does not know");
#else
  return ProcessState::Failed;  // not reached: require_checkpoint threw
#endif
}

int Process::restore_thread_id() const {
  require_checkpoint("restore_thread_id");
#if CUDA_VERSION >= 12080
  return driver::cuCheckpointProcessGetRestoreThreadId(pid_);
#else
  return 0;
#endif
}

bool Process::lock(std::uint32_t timeout_ms) const {
  require_checkpoint("lock");
#if CUDA_VERSION >= 12080
  CUcheckpointLockArgs args{};
  args.timeoutMs = timeout_ms;
  return driver::cuCheckpointProcessLock(pid_, &args);
#else
  static_cast<void>(timeout_ms);
  return false;
#endif
}

void Process::checkpoint() const {
  require_checkpoint("checkpoint");
#if CUDA_VERSION >= 12080
  driver::cuCheckpointProcessCheckpoint(pid_, nullptr);
#endif
}

void Process::restore(std::span<const GpuPair> gpu_mapping) const {
  // The mapping is checked first, then the versions, then the driver is called.
  std::vector<CUuuid> uuids;
  uuids.reserve(2 * gpu_mapping.size());
  for (std::size_t i = 0; i < gpu_mapping.size(); ++i) {
    const std::string index = "gpu_mapping[" + std::to_string(i) + "]";
    uuids.push_back(parse_uuid(gpu_mapping[i].old_uuid, index + ".old_uuid"));
    uuids.push_back(parse_uuid(gpu_mapping[i].new_uuid, index + ".new_uuid"));
  }
  require_checkpoint("restore");
#if CUDA_VERSION >= 13000
  std::vector<CUcheckpointGpuPair> pairs(gpu_mapping.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    pairs[i].oldUuid = uuids[2 * i];
    pairs[i].newUuid = uuids[2 * i + 1];
  }
  CUcheckpointRestoreArgs args{};
  args.gpuPairs = pairs.empty() ? nullptr : pairs.data();
  args.gpuPairsCount = static_cast<unsigned>(pairs.size());
  driver::cuCheckpointProcessRestore(pid_, pairs.empty() ? nullptr : &args);
#elif CUDA_VERSION >= 12080
  if (!gpu_mapping.empty()) {
    detail::throw_toolkit_too_old(kGpuRemapVersion,
                                  "checkpoint::Process::restore with a gpu_mapping");
  }
  driver::cuCheckpointProcessRestore(pid_, nullptr);
#endif
}

void Process::unlock() const {
  require_checkpoint("unlock");
#if CUDA_VERSION >= 12080
  driver::cuCheckpointProcessUnlock(pid_, nullptr);
#endif
}

}  // namespace cuwrap::checkpoint
