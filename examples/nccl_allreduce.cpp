// nccl_allreduce: an all-reduce over every GPU of the host with NCCL, on cuwrap's streams
// and buffers.
//
// NCCL takes a cudaStream_t and device pointers; a cuwrap::Stream's handle() is that
// stream (CUstream and cudaStream_t are the same type) and a cuwrap::Buffer's handle()
// is the device pointer. One process drives all devices (ncclCommInitAll); device i
// contributes i + 1 to every element, and every device must end with the sum.
// Built only where nccl.h and libnccl.so.2 are found (examples/CMakeLists.txt).
#include <cuwrap/cuwrap.hpp>

#include <nccl.h>

#include "support.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check_nccl(ncclResult_t result, const char* function) {
  if (result != ncclSuccess) {
    throw std::runtime_error(std::string(function) + " failed: " + ncclGetErrorString(result));
  }
}

// The communicators of one process over `count` devices, destroyed on every path.
class Communicators {
 public:
  explicit Communicators(const std::vector<int>& devices) : comms_(devices.size(), nullptr) {
    check_nccl(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()),
               "ncclCommInitAll");
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  ~Communicators() {
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) {
        static_cast<void>(ncclCommDestroy(comm));
      }
    }
  }
  ncclComm_t operator[](std::size_t i) const { return comms_[i]; }

 private:
  std::vector<ncclComm_t> comms_;
};

int nccl_allreduce_example() {
  const std::vector<cuwrap::Device> devices = cuwrap::Device::all();
  std::vector<int> ordinals;
  for (const cuwrap::Device& dev : devices) {
    ordinals.push_back(dev.device_id());
  }
  int nccl_version = 0;
  check_nccl(ncclGetVersion(&nccl_version), "ncclGetVersion");
  std::cout << "NCCL " << nccl_version << ", " << devices.size()
            << (devices.size() == 1 ? " device\n" : " devices\n");

  const std::size_t count = std::size_t{1} << 20;
  std::vector<cuwrap::Stream> streams;
  std::vector<cuwrap::Buffer> send;
  std::vector<cuwrap::Buffer> recv;
  for (const cuwrap::Device& dev : devices) {
    dev.set_current();
    streams.push_back(dev.create_stream());
    send.push_back(dev.allocate(count * sizeof(float), streams.back()));
    recv.push_back(dev.allocate(count * sizeof(float), streams.back()));
    const auto contribution = static_cast<float>(dev.device_id() + 1);
    send.back().fill(std::bit_cast<std::uint32_t>(contribution), streams.back());
  }

  const Communicators comms(ordinals);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    check_nccl(ncclAllReduce(reinterpret_cast<const void*>(send[i].handle()),
                             reinterpret_cast<void*>(recv[i].handle()), count, ncclFloat, ncclSum,
                             comms[i], streams[i].handle()),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");

  const auto n = static_cast<double>(devices.size());
  const double expected = n * (n + 1) / 2;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::vector<float> host(count);
    recv[i].copy_to(host, streams[i]);
    streams[i].sync();
    for (const float v : host) {
      if (!example::close(v, expected)) {
        ++wrong;
      }
    }
  }
  std::cout << "all-reduce (sum) of " << count << " floats: expected " << expected
            << " everywhere\n";
  return example::verdict("nccl_allreduce", count * devices.size(), wrong);
}

}  // namespace

int main() {
  // Before NCCL starts: never NVLink SHARP (multicast objects) on shared machines.
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  return example::run_on_gpu("nccl_allreduce", nccl_allreduce_example);
}
