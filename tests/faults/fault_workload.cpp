// The fault sweep's workloads (scripts/fault_sweep.sh): real uses of the high-level
// layer, each run with one driver call failed by the interposer. A run prints, one per
// line: "release-failure <function>" for each release reported to the handler, then
// "ok" (the workload finished and its results are right), or "DriverError <function>
// <status>" / "<other exception type> <what>" for the exception that ended it. Exit
// status 0 for all of these; 3 for a wrong result; 2 for a bad command line. Anything
// else (a signal, abort, another status) is a crash.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvrtc_raw.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::Device;
using cuwrap::Stream;

constexpr const char* kAddSource =
    "extern \"C\" __global__ void add(unsigned* v, unsigned long long n, unsigned x) {\n"
    "  unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;\n"
    "  if (i < n) v[i] += x;\n"
    "}\n";

constexpr std::size_t kWords = 4096;

struct WrongResult {
  std::string what;
};

void expect(bool ok, const char* what) {
  if (!ok) {
    throw WrongResult{what};
  }
}

cuwrap::LaunchConfig config_for(std::size_t n) {
  cuwrap::LaunchConfig config;
  config.grid = cuwrap::Dim3(static_cast<unsigned>((n + 255) / 256));
  config.block = cuwrap::Dim3(256);
  return config;
}

cuwrap::Kernel launch() {
  cuwrap::Program program(kAddSource, cuwrap::CodeType::Cxx);
  return program.compile(cuwrap::TargetType::Cubin).get_kernel("add");
}

std::vector<unsigned> download(const Buffer& buffer, const Stream& stream) {
  std::vector<unsigned> host(buffer.size() / sizeof(unsigned));
  buffer.copy_to(std::as_writable_bytes(std::span(host)), stream);
  stream.sync();
  return host;
}

bool all_equal(const std::vector<unsigned>& values, unsigned expected) {
  for (const unsigned v : values) {
    if (v != expected) {
      return false;
    }
  }
  return true;
}

// Allocate, copy both ways, fill.
void alloc_copy_fill(const Device& dev) {
  const Stream stream = dev.create_stream();
  std::vector<unsigned> host(kWords, 7u);
  Buffer a = dev.allocate(kWords * sizeof(unsigned), stream);
  a.copy_from(std::as_bytes(std::span(host)), stream);
  Buffer b = dev.allocate(kWords * sizeof(unsigned), stream);
  a.copy_to(b, stream);
  expect(all_equal(download(b, stream), 7u), "copy");
  b.fill(std::uint32_t{0x01020304u}, stream);
  expect(all_equal(download(b, stream), 0x01020304u), "fill");
}

// NVRTC compile, load, launch.
void nvrtc_launch(const Device& dev) {
  const Stream stream = dev.create_stream();
  const cuwrap::Kernel add = launch();
  Buffer data = dev.allocate(kWords * sizeof(unsigned), stream);
  data.fill(std::uint32_t{1}, stream);
  cuwrap::launch(stream, config_for(kWords), add, data, static_cast<unsigned long long>(kWords),
                 41u);
  expect(all_equal(download(data, stream), 42u), "launch");
}

// Two LTO-IR units linked by nvJitLink, loaded and launched.
void nvjitlink(const Device& dev) {
  cuwrap::ProgramOptions options;
  options.relocatable_device_code = true;
  options.link_time_optimization = true;
  cuwrap::Program helper("__device__ unsigned twice(unsigned x) { return 2 * x; }\n",
                         cuwrap::CodeType::Cxx, options);
  cuwrap::Program main_unit(
      "__device__ unsigned twice(unsigned x);\n"
      "extern \"C\" __global__ void doubled(unsigned* v, unsigned long long n) {\n"
      "  unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x;\n"
      "  if (i < n) v[i] = twice(v[i]);\n"
      "}\n",
      cuwrap::CodeType::Cxx, options);
  cuwrap::LinkerOptions link_options;
  link_options.arch = "sm_" + dev.arch();
  link_options.link_time_optimization = true;
  cuwrap::Linker linker(
      {helper.compile(cuwrap::TargetType::Ltoir), main_unit.compile(cuwrap::TargetType::Ltoir)},
      link_options);
  const cuwrap::Kernel doubled = linker.link(cuwrap::TargetType::Cubin).get_kernel("doubled");
  const Stream stream = dev.create_stream();
  Buffer data = dev.allocate(kWords * sizeof(unsigned), stream);
  data.fill(std::uint32_t{21}, stream);
  cuwrap::launch(stream, config_for(kWords), doubled, data,
                 static_cast<unsigned long long>(kWords));
  expect(all_equal(download(data, stream), 42u), "linked kernel");
}

// Stream capture with fork and join, replayed.
void capture_fork_join(const Device& dev) {
  const cuwrap::Kernel add = launch();
  const Stream stream = dev.create_stream();
  Buffer left = dev.allocate(kWords * sizeof(unsigned), stream);
  Buffer right = dev.allocate(kWords * sizeof(unsigned), stream);
  left.fill(std::uint32_t{0}, stream);
  right.fill(std::uint32_t{0}, stream);
  cuwrap::GraphBuilder builder = stream.create_graph_builder();
  builder.begin_building();
  std::vector<cuwrap::GraphBuilder> branches = builder.split(2);
  cuwrap::launch(branches[0], config_for(kWords), add, left,
                 static_cast<unsigned long long>(kWords), 1u);
  cuwrap::launch(branches[1], config_for(kWords), add, right,
                 static_cast<unsigned long long>(kWords), 2u);
  cuwrap::GraphBuilder joined = cuwrap::GraphBuilder::join(std::move(branches));
  cuwrap::Graph graph = joined.end_building().complete();
  for (int i = 0; i < 3; ++i) {
    graph.launch(stream);
  }
  expect(all_equal(download(left, stream), 3u), "left branch");
  expect(all_equal(download(right, stream), 6u), "right branch");
}

// A graph built on a device builder, instantiated, then updated with new arguments.
void graph_update(const Device& dev) {
  const cuwrap::Kernel add = launch();
  const Stream stream = dev.create_stream();
  Buffer data = dev.allocate(kWords * sizeof(unsigned), stream);
  data.fill(std::uint32_t{0}, stream);
  cuwrap::GraphBuilder first = dev.create_graph_builder();
  first.begin_building();
  cuwrap::launch(first, config_for(kWords), add, data, static_cast<unsigned long long>(kWords), 5u);
  cuwrap::Graph graph = first.end_building().complete();
  graph.launch(stream);
  cuwrap::GraphBuilder second = dev.create_graph_builder();
  second.begin_building();
  cuwrap::launch(second, config_for(kWords), add, data, static_cast<unsigned long long>(kWords),
                 10u);
  second.end_building();
  graph.update(second);
  graph.launch(stream);
  expect(all_equal(download(data, stream), 15u), "updated graph");
}

// Memory pools: a device pool of its own, pinned and managed memory.
void memory_pools(const Device& dev) {
  const Stream stream = dev.create_stream();
  cuwrap::DeviceMemoryResource pool(dev);
  cuwrap::PinnedMemoryResource pinned;
  cuwrap::ManagedMemoryResource managed;
  Buffer device_buffer = pool.allocate(kWords * sizeof(unsigned), stream);
  Buffer host_buffer = pinned.allocate(kWords * sizeof(unsigned), stream);
  Buffer managed_buffer = managed.allocate(kWords * sizeof(unsigned), stream);
  device_buffer.fill(std::uint32_t{9}, stream);
  device_buffer.copy_to(host_buffer, stream);
  host_buffer.copy_to(managed_buffer, stream);
  expect(all_equal(download(managed_buffer, stream), 9u), "pool copies");
  device_buffer.close(stream);
  stream.sync();
}

// Events ordering work across streams.
void events_streams(const Device& dev) {
  const cuwrap::Kernel add = launch();
  const Stream producer = dev.create_stream();
  const Stream consumer = dev.create_stream();
  Buffer data = dev.allocate(kWords * sizeof(unsigned), producer);
  data.fill(std::uint32_t{1}, producer);
  cuwrap::launch(producer, config_for(kWords), add, data, static_cast<unsigned long long>(kWords),
                 1u);
  const cuwrap::Event done = producer.record();
  consumer.wait(done);
  cuwrap::launch(consumer, config_for(kWords), add, data, static_cast<unsigned long long>(kWords),
                 40u);
  consumer.wait(producer);
  const cuwrap::Event finished = consumer.record();
  finished.sync();
  expect(all_equal(download(data, consumer), 42u), "ordered across streams");
}

struct Workload {
  const char* name;
  void (*run)(const Device&);
  bool compiles;  // compiles a kernel with NVRTC
};

constexpr Workload kWorkloads[] = {
    {"alloc_copy_fill", alloc_copy_fill, false},
    {"nvrtc_launch", nvrtc_launch, true},
    {"nvjitlink", nvjitlink, true},
    {"capture_fork_join", capture_fork_join, true},
    {"graph_update", graph_update, true},
    {"memory_pools", memory_pools, false},
    {"events_streams", events_streams, true},
};

// "" when NVRTC of the bindings' CUDA version can be loaded, else why not.
std::string nvrtc_unusable_reason() {
  int major = 0;
  int minor = 0;
  if (cuwrap::nvrtc::raw::nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
    return {};
  }
  return cuwrap::last_load_error();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    const std::string no_nvrtc = nvrtc_unusable_reason();
    for (const auto& w : kWorkloads) {
      if (w.compiles && !no_nvrtc.empty()) {
        std::cerr << "fault_workload: " << w.name << " left out: needs NVRTC: " << no_nvrtc << '\n';
        continue;
      }
      // LTO needs nvJitLink: without one these bindings can use, the Linker falls back to
      // the driver's linker, which refuses link_time_optimization by name.
      if (std::strcmp(w.name, "nvjitlink") == 0 && !cuwrap::detail::nvjitlink_usable()) {
        std::cerr << "fault_workload: nvjitlink left out: no nvJitLink these bindings can use\n";
        continue;
      }
      std::cout << w.name << '\n';
    }
    return 0;
  }
  const Workload* workload = nullptr;
  for (const auto& w : kWorkloads) {
    if (argc == 2 && std::strcmp(argv[1], w.name) == 0) {
      workload = &w;
    }
  }
  if (workload == nullptr) {
    std::cerr << "usage: fault_workload --list | <workload>\n";
    return 2;
  }
  cuwrap::set_release_failure_handler([](const cuwrap::ReleaseFailure& failure) {
    std::printf("release-failure %s\n", failure.function);
  });
  try {
    const Device dev(0);
    dev.set_current();
    workload->run(dev);
    std::printf("ok\n");
  } catch (const cuwrap::DriverError& e) {
    std::printf("DriverError %s %s\n", e.function().c_str(), e.name().c_str());
  } catch (const cuwrap::NvrtcError& e) {
    std::printf("NvrtcError %s %s\n", e.function().c_str(), e.name().c_str());
  } catch (const cuwrap::NvJitLinkError& e) {
    std::printf("NvJitLinkError %s %s\n", e.function().c_str(), e.name().c_str());
  } catch (const cuwrap::Error& e) {
    std::printf("Error %s\n", e.what());
  } catch (const WrongResult& e) {
    std::printf("wrong result: %s\n", e.what.c_str());
    return 3;
  } catch (const std::exception& e) {
    // Any other exception (std::invalid_argument, std::logic_error, ...) names no failed
    // call: the sweep counts it as "misnamed", which an abort would hide as a crash.
    std::printf("%s %s\n", typeid(e).name(), e.what());
  } catch (...) {
    std::printf("unknown exception\n");
  }
  return 0;
}
