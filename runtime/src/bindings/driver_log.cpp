// driver_log_since_last_failure(): the driver's log of a failed call, from its own log
// buffer (cuLogsDumpToMemory, CUDA 12.9), read with an iterator that each failure advances.
#include "bindings/driver_log.hpp"

#include <cuwrap/driver.hpp>
#include <cuwrap/version.hpp>

#include <cuda.h>

#include <cstddef>
#include <mutex>
#include <string>

namespace cuwrap::detail {

#if CUDA_VERSION >= 12090
namespace {

// The driver keeps at most this many bytes of logs (cuda.h, cuLogsDumpToMemory).
constexpr std::size_t kDriverLogBytes = 25600;
// The first driver version with the logs API.
constexpr int kDriverLogsVersion = 12090;

struct LogReader {
  std::mutex mutex;
  bool started = false;  // `iterator` marks the end of what a failure already read
  CUlogIterator iterator = 0;
};

LogReader& log_reader() {
  static auto* reader = new LogReader;  // never destroyed: errors may be thrown at exit
  return *reader;
}

// Keep the last kDriverLogLines lines of `text`, without a trailing newline.
std::string last_lines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) {
    text.pop_back();
  }
  std::size_t start = text.size();
  for (int lines = 0; lines < kDriverLogLines && start != 0; ++lines) {
    const std::size_t newline = text.rfind('\n', start - 1);
    start = newline == std::string::npos ? 0 : newline + 1;
    if (newline == std::string::npos) {
      break;
    }
  }
  return text.substr(start);
}

}  // namespace

std::string driver_log_since_last_failure() noexcept {
  // A failure inside this function (the version query, say) must not read again.
  thread_local bool reading = false;
  if (reading) {
    return {};
  }
  reading = true;
  std::string log;
  try {
    int version = 0;
    if (driver::raw::cuDriverGetVersion(&version) == CUDA_SUCCESS &&
        version >= kDriverLogsVersion) {
      LogReader& reader = log_reader();
      const std::lock_guard<std::mutex> lock(reader.mutex);
      std::string buffer(kDriverLogBytes + 1, '\0');
      std::size_t size = kDriverLogBytes;
      // The first failure reads what the driver kept; later ones what came since.
      const CUresult status = driver::raw::cuLogsDumpToMemory(
          reader.started ? &reader.iterator : nullptr, buffer.data(), &size, 0);
      if (!reader.started && driver::raw::cuLogsCurrent(&reader.iterator, 0) == CUDA_SUCCESS) {
        reader.started = true;
      }
      if (status == CUDA_SUCCESS && size != 0) {
        buffer.resize(size < kDriverLogBytes ? size : kDriverLogBytes);
        log = last_lines(std::move(buffer));
      }
    }
  } catch (...) {
    log.clear();
  }
  reading = false;
  return log;
}
#else
std::string driver_log_since_last_failure() noexcept { return {}; }
#endif

}  // namespace cuwrap::detail
