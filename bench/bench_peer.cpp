// Peer copy between two GPUs: cuwrap::copy_peer(Buffer, Buffer, Stream) against the raw
// cuMemcpyPeerAsync (through the pointer cuGetProcAddress returns, as a C program gets
// it), measured in the same run:
//
//   device 0 -> device 1, 256 MiB, on device 0's stream, synchronised every iteration
//
// Both sides copy the same buffers (from the devices' default pools) on the same stream,
// with peer access enabled both ways (contexts and pools) where the topology allows it.
// After the run: the time ratio cuwrap/raw (target <= 1.03) and the bandwidth in GB/s.
// On a machine with fewer than two GPUs every benchmark is skipped with the reason.
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/peer.hpp>
#include <cuwrap/stream.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

constexpr std::size_t kCopyBytes = std::size_t{256} << 20;

using MemcpyPeerAsyncFn = CUresult (*)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, std::size_t,
                                       CUstream);
using StreamSynchronizeFn = CUresult (*)(CUstream);

// Let `peer` access `owner`'s default pool, which Device::allocate draws from.
void grant_pool_access(const cuwrap::Device& owner, const cuwrap::Device& peer) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = peer.device_id();
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  cuwrap::detail::check(cuwrap::driver::raw::cuMemPoolSetAccess(
                            cuwrap::driver::cuDeviceGetDefaultMemPool(owner.handle()), &access, 1),
                        "cuMemPoolSetAccess");
}

struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Device> peer;
  std::optional<cuwrap::Stream> peer_stream;
  std::optional<cuwrap::Buffer> src;  // on device 0
  std::optional<cuwrap::Buffer> dst;  // on device 1
  bool peer_access = false;
  MemcpyPeerAsyncFn memcpy_peer = nullptr;
  StreamSynchronizeFn stream_sync = nullptr;
};

Setup& setup() {
  using cuwrap::bench::driver_entry;
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    if (cuwrap::Device::count() < 2) {
      r.error = "needs 2 GPUs: " + std::to_string(cuwrap::Device::count()) + " CUDA device present";
      return;
    }
    r.peer.emplace(1);
    r.peer_stream.emplace(r.peer->create_stream());
    if (r.device->can_access_peer(*r.peer) && r.peer->can_access_peer(*r.device)) {
      r.device->enable_peer_access(*r.peer);
      r.peer->enable_peer_access(*r.device);
      grant_pool_access(*r.device, *r.peer);
      grant_pool_access(*r.peer, *r.device);
      r.peer_access = true;
    }
    r.src.emplace(r.device->allocate(kCopyBytes, *r.stream));
    r.dst.emplace(r.peer->allocate(kCopyBytes, *r.peer_stream));
    r.src->fill(std::uint8_t{0x33}, *r.stream);
    r.peer_stream->sync();
    r.stream->sync();
    r.memcpy_peer = driver_entry<MemcpyPeerAsyncFn>("cuMemcpyPeerAsync");
    r.stream_sync = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
  });
  return s;
}

template <class Body>
void measure(benchmark::State& state, const char* name, Body&& body) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUstream stream = s.stream->handle();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!body(s)) [[unlikely]] {
      state.SkipWithError("driver call failed");
      break;
    }
    static_cast<void>(s.stream_sync(stream));
  }
  cuwrap::bench::record(state, name, start);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kCopyBytes));
}

void BM_PeerCopy_Raw(benchmark::State& state) {
  measure(state, "peer_raw", [](Setup& s) {
    return s.memcpy_peer(s.dst->handle(), s.peer->context(), s.src->handle(), s.device->context(),
                         kCopyBytes, s.stream->handle()) == CUDA_SUCCESS;
  });
}
BENCHMARK(BM_PeerCopy_Raw)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_PeerCopy_Cuwrap(benchmark::State& state) {
  measure(state, "peer_cuwrap", [](Setup& s) {
    cuwrap::copy_peer(*s.dst, *s.src, *s.stream);
    return true;
  });
}
BENCHMARK(BM_PeerCopy_Cuwrap)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // as every program of this project
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    const auto c = cuwrap::bench::compare("peer_cuwrap", "peer_raw");
    if (!c) {
      return;
    }
    const double ours_gbs = static_cast<double>(kCopyBytes) / c->ours_ns;  // bytes/ns = GB/s
    const double raw_gbs = static_cast<double>(kCopyBytes) / c->raw_ns;
    std::printf(
        "peer copy 256 MiB (device 0 -> 1, peer access %s): time ratio cuwrap/raw = %.3f "
        "(target <= 1.03); %.2f GB/s vs %.2f GB/s\n",
        setup().peer_access ? "on" : "off", c->ratio(), ours_gbs, raw_gbs);
  });
}
