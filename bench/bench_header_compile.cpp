// Compile-time cost of the generated headers: a translation unit that includes
// <cuwrap/driver.hpp>, <cuwrap/nvrtc.hpp> and <cuwrap/nvjitlink.hpp> against one that
// includes only cuda.h, nvrtc.h and nvJitLink.h, compiled (-c -O2) by the same compiler
// in the same run. The ratio of the two times is the figure to report (target < 2); a
// third case adds the standard headers the typed forms need to the C headers.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string write_tu(const std::string& name, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / "cuwrap_bench_headers";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << body;
  return path.string();
}

void compile(benchmark::State& state, const std::string& tu) {
  const std::string command = std::string(CUWRAP_CXX_COMPILER) + " -std=c++20 -O2 -c " + tu +
                              " -o /dev/null -I" CUWRAP_SOURCE_DIR "/generated/include -I" CUWRAP_SOURCE_DIR
                              "/runtime/include -isystem " CUWRAP_CUDA_INCLUDE_DIR;
  for (auto _ : state) {
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError(("compile failed: " + command).c_str());
      return;
    }
  }
}

void CHeadersOnly(benchmark::State& state) {
  compile(state, write_tu("c_headers.cpp",
                          "#include <cuda.h>\n#include <nvrtc.h>\n#include <nvJitLink.h>\n"
                          "int main() { return 0; }\n"));
}
BENCHMARK(CHeadersOnly)->Unit(benchmark::kMillisecond)->Iterations(5);

// The C headers plus the standard headers the public contract needs (std::string
// results, std::vector binaries, exception types derived from std::runtime_error): the
// fixed cost any C++ interface with these shapes has, against which the generated
// code's own share is seen.
void CHeadersPlusStandardLibrary(benchmark::State& state) {
  compile(state, write_tu("c_and_std_headers.cpp",
                          "#include <cuda.h>\n#include <nvrtc.h>\n#include <nvJitLink.h>\n"
                          "#include <iosfwd>\n#include <stdexcept>\n"
                          "#include <string>\n#include <string_view>\n#include <vector>\n"
                          "int main() { return 0; }\n"));
}
BENCHMARK(CHeadersPlusStandardLibrary)->Unit(benchmark::kMillisecond)->Iterations(5);

void CuwrapGeneratedHeaders(benchmark::State& state) {
  compile(state, write_tu("cuwrap_headers.cpp",
                          "#include <cuwrap/driver.hpp>\n#include <cuwrap/nvrtc.hpp>\n"
                          "#include <cuwrap/nvjitlink.hpp>\nint main() { return 0; }\n"));
}
BENCHMARK(CuwrapGeneratedHeaders)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
