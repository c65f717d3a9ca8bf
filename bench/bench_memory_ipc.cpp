// Sharing memory between processes: cuwrap's IPC calls against the raw driver calls,
// measured in the same run. The exporting side runs here; the importing side runs in a
// child process (this program again, fork + exec) that receives the pool's handle and a
// buffer's descriptor over an IPCChannel and runs its own benchmarks:
//
//   exporter  export_pool:    get_allocation_handle() (+ close)  vs
//   cuMemPoolExportToShareableHandle + close(fd)
//             export_pointer: Buffer::get_ipc_descriptor()           vs cuMemPoolExportPointer
//   importer  import_pool:    from_allocation_handle (+ destroy) vs dup +
//   cuMemPoolImportFromShareableHandle + close + cuMemPoolDestroy
//             import_pointer: Buffer::from_ipc_descriptor + close vs cuMemPoolImportPointer +
//             cuMemFreeAsync
//                             (the mapping of the buffer into this process; the same pointer
//                             is imported again only after its free completed: synced each time)
//
// Each process prints its cuwrap/raw ratios after its run (target <= 1.05).
#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for execve

namespace {

constexpr const char* kChildFdVariable = "CUWRAP_BENCH_IPC_CHILD_FD";
constexpr std::size_t kBytes = std::size_t{1} << 20;
constexpr int kSyncEvery = 256;

// The exporter: an IPC-enabled pool and one buffer from it.
struct ExporterSetup : cuwrap::bench::GpuSetup {
  std::unique_ptr<cuwrap::DeviceMemoryResource> mr;
  std::optional<cuwrap::Buffer> buffer;
};

ExporterSetup& exporter() {
  static ExporterSetup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](ExporterSetup& r) {
    r.mr = std::make_unique<cuwrap::DeviceMemoryResource>(
        *r.device, cuwrap::DeviceMemoryResourceOptions{.ipc_enabled = true});
    r.buffer.emplace(r.mr->allocate(kBytes, *r.stream));
    r.stream->sync();
  });
  return s;
}

// The importer: the exporter's pool handle and buffer descriptor, and the pool imported once.
struct ImporterSetup : cuwrap::bench::GpuSetup {
  cuwrap::IPCChannel channel;
  cuwrap::IPCAllocationHandle handle;
  cuwrap::IPCBufferDescriptor descriptor;
  std::unique_ptr<cuwrap::DeviceMemoryResource> mr;
};

ImporterSetup& importer() {
  static ImporterSetup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](ImporterSetup& r) {
    r.channel = cuwrap::IPCChannel::from_fd(std::atoi(std::getenv(kChildFdVariable)));
    r.handle = r.channel.receive_allocation_handle();
    r.descriptor = r.channel.receive_value<cuwrap::IPCBufferDescriptor>();
    // make_unique would need a move constructor; `new` initialises from the prvalue in place.
    r.mr.reset(new cuwrap::DeviceMemoryResource(  // NOLINT(modernize-make-unique)
        cuwrap::DeviceMemoryResource::from_allocation_handle(
            *r.device, cuwrap::IPCAllocationHandle(::dup(r.handle.handle()), r.handle.pool_id()))));
  });
  return s;
}

// Run `body` per iteration and record the time under `name`; stop on a failed call.
template <class Setup, class Body>
void measure(benchmark::State& state, Setup& s, const char* name, Body&& body,
             int sync_every = kSyncEvery) {
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  int pending = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!body(s)) [[unlikely]] {
      state.SkipWithError("driver call failed");
      break;
    }
    if (++pending == sync_every) {
      pending = 0;
      static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(s.stream->handle()));
    }
  }
  static_cast<void>(cuwrap::driver::raw::cuStreamSynchronize(s.stream->handle()));
  cuwrap::bench::record(state, name, start);
}

// ---- exporter ------------------------------------------------------------------------

void BM_ExportPool_Raw(benchmark::State& state) {
  measure(state, exporter(), "export_pool_raw", [](ExporterSetup& s) {
    int fd = -1;
    if (cuwrap::driver::raw::cuMemPoolExportToShareableHandle(
            &fd, s.mr->handle(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) {
      return false;
    }
    return ::close(fd) == 0;
  });
}

void BM_ExportPool_Cuwrap(benchmark::State& state) {
  measure(state, exporter(), "export_pool_cuwrap", [](ExporterSetup& s) {
    cuwrap::IPCAllocationHandle handle = s.mr->get_allocation_handle();
    benchmark::DoNotOptimize(handle.handle());
    return true;
  });
}

void BM_ExportPointer_Raw(benchmark::State& state) {
  measure(state, exporter(), "export_pointer_raw", [](ExporterSetup& s) {
    CUmemPoolPtrExportData data{};
    const bool ok =
        cuwrap::driver::raw::cuMemPoolExportPointer(&data, s.buffer->handle()) == CUDA_SUCCESS;
    benchmark::DoNotOptimize(data);
    return ok;
  });
}

void BM_ExportPointer_Cuwrap(benchmark::State& state) {
  measure(state, exporter(), "export_pointer_cuwrap", [](ExporterSetup& s) {
    cuwrap::IPCBufferDescriptor descriptor = s.buffer->get_ipc_descriptor();
    benchmark::DoNotOptimize(descriptor);
    return true;
  });
}

// ---- importer (child process) --------------------------------------------------------

void BM_ImportPool_Raw(benchmark::State& state) {
  measure(state, importer(), "import_pool_raw", [](ImporterSetup& s) {
    const int fd = ::dup(s.handle.handle());
    CUmemoryPool pool = nullptr;
    const CUresult status = cuwrap::driver::raw::cuMemPoolImportFromShareableHandle(
        &pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    ::close(fd);
    return status == CUDA_SUCCESS && cuwrap::driver::raw::cuMemPoolDestroy(pool) == CUDA_SUCCESS;
  });
}

void BM_ImportPool_Cuwrap(benchmark::State& state) {
  measure(state, importer(), "import_pool_cuwrap", [](ImporterSetup& s) {
    const cuwrap::DeviceMemoryResource mr = cuwrap::DeviceMemoryResource::from_allocation_handle(
        *s.device, cuwrap::IPCAllocationHandle(::dup(s.handle.handle()), s.handle.pool_id()));
    benchmark::DoNotOptimize(mr.handle());
    return true;
  });
}

void BM_ImportPointer_Raw(benchmark::State& state) {
  measure(
      state, importer(), "import_pointer_raw",
      [](ImporterSetup& s) {
        CUmemPoolPtrExportData data{};
        std::memcpy(&data, s.descriptor.payload.data(), sizeof(data));
        CUdeviceptr ptr = 0;
        if (cuwrap::driver::raw::cuMemPoolImportPointer(&ptr, s.mr->handle(), &data) !=
            CUDA_SUCCESS) {
          return false;
        }
        return cuwrap::driver::raw::cuMemFreeAsync(ptr, s.stream->handle()) == CUDA_SUCCESS;
      },
      1);
}

void BM_ImportPointer_Cuwrap(benchmark::State& state) {
  measure(
      state, importer(), "import_pointer_cuwrap",
      [](ImporterSetup& s) {
        cuwrap::Buffer buffer = cuwrap::Buffer::from_ipc_descriptor(*s.mr, s.descriptor, *s.stream);
        benchmark::DoNotOptimize(buffer.handle());
        buffer.close(*s.stream);
        return true;
      },
      1);
}

void print_ratio(const char* what, const char* ours, const char* raw) {
  if (const auto c = cuwrap::bench::compare(ours, raw)) {
    std::printf("%s cuwrap/raw = %.3f (%.2f us vs %.2f us; target <= 1.05)\n", what, c->ratio(),
                c->ours_ns / 1e3, c->raw_ns / 1e3);
  }
}

// Start the importer (this program again) and hand it the pool and the buffer; wait
// for it. Everything execve needs is built before fork.
void run_importer() {
  ExporterSetup& s = exporter();
  if (!s.error.empty()) {
    return;
  }
  auto [mine, theirs] = cuwrap::IPCChannel::create_pair();
  theirs.inherit_across_exec();
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string variable = std::string(kChildFdVariable) + "=" + std::to_string(theirs.handle());
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()), nullptr};
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    envp.push_back(*entry);
  }
  envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  theirs.close();
  if (pid < 0) {
    std::printf("importer: fork failed\n");
    return;
  }
  try {
    mine.send(s.mr->get_allocation_handle());
    mine.send_value(s.buffer->get_ipc_descriptor());
  } catch (const std::exception& e) {
    std::printf("importer: %s\n", e.what());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("importer process failed (status %d)\n", status);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool is_importer = std::getenv(kChildFdVariable) != nullptr;
  const auto add = [](const char* name, void (*fn)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  if (is_importer) {
    add("BM_ImportPool_Raw", BM_ImportPool_Raw);
    add("BM_ImportPool_Cuwrap", BM_ImportPool_Cuwrap);
    add("BM_ImportPointer_Raw", BM_ImportPointer_Raw);
    add("BM_ImportPointer_Cuwrap", BM_ImportPointer_Cuwrap);
    return cuwrap::bench::run_benchmarks(argc, argv, [] {
      print_ratio("import pool (importer process)", "import_pool_cuwrap", "import_pool_raw");
      print_ratio("import + map a buffer (importer process)", "import_pointer_cuwrap",
                  "import_pointer_raw");
    });
  }
  add("BM_ExportPool_Raw", BM_ExportPool_Raw);
  add("BM_ExportPool_Cuwrap", BM_ExportPool_Cuwrap);
  add("BM_ExportPointer_Raw", BM_ExportPointer_Raw);
  add("BM_ExportPointer_Cuwrap", BM_ExportPointer_Cuwrap);
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    print_ratio("export pool", "export_pool_cuwrap", "export_pool_raw");
    print_ratio("export a buffer", "export_pointer_cuwrap", "export_pointer_raw");
    run_importer();
  });
}
