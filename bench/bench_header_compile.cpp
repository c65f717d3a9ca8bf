// Compile-time cost of including cuwrap: translation units that hold only #includes and
// an empty main(), checked (-fsyntax-only) by the same compiler in the same run:
//   1. CHeadersOnly: cuda.h, nvrtc.h, nvJitLink.h;
//   2. CHeadersPlusStandardLibrary: the C headers plus <stdexcept>, <string>, <vector>,
//      the standard headers any C++ interface with cuwrap's shapes needs (exceptions,
//      std::string results, std::vector binaries): the baseline;
//   3. CuwrapGeneratedHeaders: <cuwrap/driver.hpp>, <cuwrap/nvrtc.hpp>,
//      <cuwrap/nvjitlink.hpp>;
//   4. CuwrapCoreHeader: <cuwrap/core.hpp>, the high-level layer alone;
//   5. CuwrapUmbrellaHeader: <cuwrap/cuwrap.hpp>, the whole library (3 and 4);
// plus CuwrapCoreHeaderPaired and CuwrapUmbrellaHeaderPaired: each against the baseline in
// 9 pairs checked back to back, whose per-pair ratio's median is the figure to compare
// with the target (robust to a machine whose speed drifts during the run);
// CuwrapDeviceHeader (<cuwrap/device.hpp> alone), what a user who includes one high-level
// header pays; and one paired figure per public header, high-level and generated, the
// umbrellas included (Header/<name>.hpp, 5 pairs), each against its own baseline: the C
// headers (cuda.h, nvrtc.h, nvJitLink.h) plus every header outside cuwrap that the
// header's own files include (the standard headers it needs, and a C header it wraps
// such as nvvm.h or dlpack.h), as the compiler's -H listing names them. After the runs it
// prints each figure's ratio to the baseline and a table of every public header's paired
// ratio to its own baseline (target: at most 1.5 for each). Where this program was built with
// DLPack (CUWRAP_HAS_DLPACK, as users of the cuwrap target are), the checks define it too, so that
// <cuwrap/dlpack.hpp> counts as it does for them.
//
// The compiler is the one this program was built with, or the command in the environment
// variable CUWRAP_BENCH_CXX (`CUWRAP_BENCH_CXX=clang++-16 bench_header_compile`), so one
// build reports the figures of several compilers.
//
// Each figure is the median over the iterations of the CPU time (user + system) the
// compiler's process took, read with getrusage(RUSAGE_CHILDREN): unlike the wall time
// (Google Benchmark's column), it barely moves when other processes share the machine.
// On a loaded machine take the median of several runs of the program as well.
#include "bench_support.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace {

constexpr const char* kCHeaders = "#include <cuda.h>\n#include <nvrtc.h>\n#include <nvJitLink.h>\n";
constexpr const char* kStandardHeaders =
    "#include <stdexcept>\n#include <string>\n#include <vector>\n";
#if defined(CUWRAP_HAS_DLPACK) && CUWRAP_HAS_DLPACK
constexpr const char* kDefines = " -DCUWRAP_HAS_DLPACK=1";
#else
constexpr const char* kDefines = "";
#endif

// Return the names (without .hpp) of the public headers, sorted: every
// runtime/include/cuwrap/*.hpp (the umbrellas included) but <cuwrap/launch_cuda.hpp> (nvcc
// only), and every generated/include/cuwrap/*.hpp. <cuwrap/driver_gl.hpp> and
// <cuwrap/driver_egl.hpp> need the system's GL/EGL headers: without them their checks fail
// and are reported as not checked.
std::vector<std::string> public_headers() {
  std::vector<std::string> names;
  for (const char* dir : {CUWRAP_SOURCE_DIR "/runtime/include/cuwrap",
                          CUWRAP_SOURCE_DIR "/generated/include/cuwrap"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::filesystem::path& path = entry.path();
      const std::string name = path.stem().string();
      if (path.extension() == ".hpp" && name != "launch_cuda") {
        names.push_back(name);
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string write_tu(const std::string& name, const std::string& includes) {
  const auto dir = std::filesystem::temp_directory_path() / "cuwrap_bench_headers";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << includes << "int main() { return 0; }\n";
  return path.string();
}

// Return the headers outside cuwrap that the files of cuwrap included by `tu` include
// themselves, as paths, from the compiler's -H listing (each header is listed where it is
// first included, one dot per level): what those files need from elsewhere. Empty where
// the listing fails.
std::vector<std::string> outside_headers(const std::string& tu);

// Return the CPU time (user + system) of the waited-for child processes so far, in ns.
double children_cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  const auto ns = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

// Return the compiler the checks run: CUWRAP_BENCH_CXX, else this program's own.
std::string compiler() {
  const char* chosen = std::getenv("CUWRAP_BENCH_CXX");
  return chosen != nullptr && *chosen != '\0' ? chosen : CUWRAP_CXX_COMPILER;
}

// Return the command that checks `tu`.
std::string check_command(const std::string& tu) {
  // dlpack.h from outside the system include path (a GPU machine without libdlpack-dev).
  const std::string dlpack_dir = CUWRAP_BENCH_DLPACK_DIR;
  const std::string dlpack = dlpack_dir.empty() ? "" : " -isystem " + dlpack_dir;
  return compiler() + " -std=c++20 -fsyntax-only " + tu + kDefines + dlpack +
         " -I" CUWRAP_SOURCE_DIR "/generated/include -I" CUWRAP_SOURCE_DIR
         "/runtime/include -isystem " CUWRAP_CUDA_INCLUDE_DIR " -isystem " CUWRAP_CUDA_INCLUDE_DIR
         "/cccl";  // CUDA 13 keeps CCCL there (<cuwrap/cccl_resource.hpp>, <cuwrap/mdspan.hpp>)
}

std::vector<std::string> outside_headers(const std::string& tu) {
  const auto listing = std::filesystem::temp_directory_path() / "cuwrap_bench_headers" /
                       (std::filesystem::path(tu).stem().string() + ".includes");
  const std::string command = check_command(tu) + " -H 2> " + listing.string();
  if (std::system(command.c_str()) != 0) {
    return {};
  }
  const auto ours = [](const std::string& path) {
    return path.find("/runtime/include/cuwrap/") != std::string::npos ||
           path.find("/generated/include/cuwrap/") != std::string::npos;
  };
  std::vector<std::string> stack;  // stack[d]: the file listed last at depth d + 1
  std::vector<std::string> found;
  std::ifstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t depth = line.find_first_not_of('.');
    if (depth == 0 || depth == std::string::npos || line[depth] != ' ') {
      continue;  // not a listing line (gcc's include-guard notes)
    }
    const std::string path = line.substr(depth + 1);
    stack.resize(depth - 1);
    if (!stack.empty() && ours(stack.back()) && !ours(path) &&
        std::find(found.begin(), found.end(), path) == found.end()) {
      found.push_back(path);
    }
    stack.push_back(path);
  }
  return found;
}

// Return the baseline translation unit of `name`: the C headers and what outside_headers
// finds for <cuwrap/name.hpp>.
std::string own_baseline(const std::string& name, const std::string& header_tu) {
  // <cuwrap/cccl_resource.hpp> turns on CCCL's cuda::mr before it includes CCCL: its
  // baseline does the same (without the macro, <cuda/memory_resource> declares nothing).
  std::string includes =
      std::string("#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE\n") + kCHeaders;
  for (const std::string& path : outside_headers(header_tu)) {
    includes += "#include \"" + path + "\"\n";
  }
  return write_tu("baseline_" + name + ".cpp", includes);
}

// Run `command` and return the CPU time it took in ns, or a negative value when it failed.
double timed_check(const std::string& command) {
  const double start = children_cpu_ns();
  if (std::system(command.c_str()) != 0) {
    return -1;
  }
  return children_cpu_ns() - start;
}

// Return the median of `values` (not empty; reorders them).
double median(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Check `tu` once per iteration and record the median CPU time per check under the
// benchmark's name.
void compile(benchmark::State& state, const std::string& name, const std::string& tu) {
  const std::string command = check_command(tu);
  std::vector<double> times_ns;
  for (auto _ : state) {
    const double ns = timed_check(command);
    if (ns < 0) {
      state.SkipWithError(("compile failed: " + command).c_str());
      return;
    }
    times_ns.push_back(ns);
  }
  if (times_ns.empty()) {
    return;
  }
  cuwrap::bench::results()[name] = median(times_ns);
}

// The ratio of `ours` to `base` from pairs checked back to back, the order swapped every
// pair: a machine whose speed drifts (other tenants, clocks) moves both checks of a pair
// alike, which the medians of separate benchmarks cannot promise; on a shared machine the
// baseline's median alone was seen to move by half between runs. Records the median,
// lowest and highest per-pair ratio under `name` + "_median" / "_low" / "_high".
void compile_pairs(benchmark::State& state, const std::string& name, const std::string& ours,
                   const std::string& base) {
  const std::string ours_command = check_command(ours);
  const std::string base_command = check_command(base);
  std::vector<double> ratios;
  for (auto _ : state) {
    const bool ours_first = ratios.size() % 2 == 0;
    const std::string& first_command = ours_first ? ours_command : base_command;
    const std::string& second_command = ours_first ? base_command : ours_command;
    const double first = timed_check(first_command);
    const double second = timed_check(second_command);
    if (first <= 0 || second <= 0) {
      const std::string failed = "compile failed: " + (first <= 0 ? first_command : second_command);
      state.SkipWithError(failed.c_str());
      return;
    }
    ratios.push_back(ours_first ? first / second : second / first);
  }
  if (ratios.empty()) {
    return;
  }
  const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
  auto& results = cuwrap::bench::results();
  results[name + "_low"] = *low;
  results[name + "_high"] = *high;
  results[name + "_median"] = median(ratios);
  state.counters["ratio"] = results[name + "_median"];
}

void CHeadersOnly(benchmark::State& state) {
  compile(state, "CHeadersOnly", write_tu("c_headers.cpp", kCHeaders));
}
BENCHMARK(CHeadersOnly)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void CHeadersPlusStandardLibrary(benchmark::State& state) {
  compile(state, "CHeadersPlusStandardLibrary",
          write_tu("c_and_std_headers.cpp", std::string(kCHeaders) + kStandardHeaders));
}
BENCHMARK(CHeadersPlusStandardLibrary)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void CuwrapGeneratedHeaders(benchmark::State& state) {
  compile(state, "CuwrapGeneratedHeaders",
          write_tu("cuwrap_generated.cpp",
                   "#include <cuwrap/driver.hpp>\n#include <cuwrap/nvrtc.hpp>\n#include "
                   "<cuwrap/nvjitlink.hpp>\n"));
}
BENCHMARK(CuwrapGeneratedHeaders)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void CuwrapCoreHeader(benchmark::State& state) {
  compile(state, "CuwrapCoreHeader", write_tu("cuwrap_core.cpp", "#include <cuwrap/core.hpp>\n"));
}
BENCHMARK(CuwrapCoreHeader)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void CuwrapCoreHeaderPaired(benchmark::State& state) {
  compile_pairs(state, "CorePairs", write_tu("cuwrap_core.cpp", "#include <cuwrap/core.hpp>\n"),
                write_tu("c_and_std_headers.cpp", std::string(kCHeaders) + kStandardHeaders));
}
BENCHMARK(CuwrapCoreHeaderPaired)->Unit(benchmark::kMillisecond)->Iterations(9)->UseRealTime();

void CuwrapUmbrellaHeader(benchmark::State& state) {
  compile(state, "CuwrapUmbrellaHeader",
          write_tu("cuwrap_umbrella.cpp", "#include <cuwrap/cuwrap.hpp>\n"));
}
BENCHMARK(CuwrapUmbrellaHeader)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void CuwrapUmbrellaHeaderPaired(benchmark::State& state) {
  compile_pairs(state, "UmbrellaPairs",
                write_tu("cuwrap_umbrella.cpp", "#include <cuwrap/cuwrap.hpp>\n"),
                write_tu("c_and_std_headers.cpp", std::string(kCHeaders) + kStandardHeaders));
}
BENCHMARK(CuwrapUmbrellaHeaderPaired)->Unit(benchmark::kMillisecond)->Iterations(9)->UseRealTime();

void CuwrapDeviceHeader(benchmark::State& state) {
  compile(state, "CuwrapDeviceHeader",
          write_tu("cuwrap_device.cpp", "#include <cuwrap/device.hpp>\n"));
}
BENCHMARK(CuwrapDeviceHeader)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

// Register Header/<name>.hpp for every public header: each against its own baseline, in
// pairs (fewer than the umbrellas' 9: there are many).
void register_header_benchmarks() {
  for (const std::string& name : public_headers()) {
    benchmark::RegisterBenchmark(
        ("Header/" + name + ".hpp").c_str(),
        [name](benchmark::State& state) {
          const std::string header =
              write_tu("header_" + name + ".cpp", "#include <cuwrap/" + name + ".hpp>\n");
          compile_pairs(state, "Header/" + name, header, own_baseline(name, header));
        })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5)
        ->UseRealTime();
  }
}

// Print `what`'s median time and its ratio to the baseline `base`.
void print_ratio(const char* what, const std::string& ours, const std::string& base,
                 const char* target) {
  if (const auto c = cuwrap::bench::compare(ours, base)) {
    std::printf("%s: %.0f ms vs %.0f ms CPU, ratio %.2f%s\n", what, c->ours_ns / 1e6,
                c->raw_ns / 1e6, c->ratio(), target);
  }
}

// Print the median, lowest and highest per-pair ratio recorded under `name`.
void print_pairs(const char* what, const std::string& name, const char* target) {
  const auto& results = cuwrap::bench::results();
  if (results.count(name + "_median") != 0) {
    std::printf(
        "%s vs C + standard headers, 9 pairs checked back to back: median ratio %.2f "
        "(range %.2f-%.2f%s)\n",
        what, results.at(name + "_median"), results.at(name + "_low"), results.at(name + "_high"),
        target);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_header_benchmarks();
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    std::printf("compiler: %s\n", compiler().c_str());
    const char* base = "CHeadersPlusStandardLibrary";
    print_ratio("C headers + <stdexcept>,<string>,<vector> vs C headers", base, "CHeadersOnly", "");
    print_ratio("generated headers vs C + standard headers", "CuwrapGeneratedHeaders", base, "");
    print_ratio("<cuwrap/core.hpp> vs C + standard headers", "CuwrapCoreHeader", base,
                " (target <= 1.5)");
    print_ratio("<cuwrap/cuwrap.hpp> (whole library) vs C + standard headers",
                "CuwrapUmbrellaHeader", base, "");
    print_pairs("<cuwrap/core.hpp>", "CorePairs", "; target <= 1.5");
    print_pairs("<cuwrap/cuwrap.hpp>", "UmbrellaPairs", "");
    print_ratio("<cuwrap/device.hpp> vs C + standard headers", "CuwrapDeviceHeader", base, "");
    // Every public header alone vs its own baseline: the paired median (target <= 1.5).
    std::printf(
        "\nEach public header vs the C headers + the headers outside cuwrap it includes:\n"
        "| header | paired median | range | <= 1.5 |\n|---|---:|---|---|\n");
    const auto& results = cuwrap::bench::results();
    for (const std::string& name : public_headers()) {
      const std::string key = "Header/" + name;
      if (results.count(key + "_median") == 0) {
        std::printf("| `<cuwrap/%s.hpp>` | (not checked) | | |\n", name.c_str());
        continue;
      }
      const double ratio = results.at(key + "_median");
      std::printf("| `<cuwrap/%s.hpp>` | %.2f | %.2f-%.2f | %s |\n", name.c_str(), ratio,
                  results.at(key + "_low"), results.at(key + "_high"), ratio <= 1.5 ? "yes" : "no");
    }
  });
}
