// NVRTC compile time of cuda.core's saxpy through cuwrap::Program against the raw
// NVRTC calls (create, compile, get PTX/CUBIN, destroy), measured in the same run. No
// GPU needed: both compile for an explicit "sm_90". The ratios are printed at the end.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/nvrtc.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t N) {
  unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid < N) {
    out[tid] = a * x[tid] + y[tid];
  }
}
)";

// Nanoseconds per iteration of the last (final) run of each benchmark.
std::map<std::string, double>& results() {
  static std::map<std::string, double> r;
  return r;
}

template <class Body>
void measure(benchmark::State& state, const std::string& name, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    try {
      body();
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (state.iterations() > 0) {
    results()[name] = std::chrono::duration<double, std::nano>(elapsed).count() /
                      static_cast<double>(state.iterations());
  }
}

void BM_CuwrapProgram(benchmark::State& state) {
  const auto target = static_cast<cuwrap::TargetType>(state.range(0));
  cuwrap::ProgramOptions options;
  options.arch = "sm_90";
  measure(state, "cuwrap_" + std::string(cuwrap::to_string(target)), [&] {
    cuwrap::Program program(kSaxpy, cuwrap::CodeType::Cxx, options);
    cuwrap::ObjectCode obj = program.compile(target);
    benchmark::DoNotOptimize(obj.code().data());
  });
}
BENCHMARK(BM_CuwrapProgram)
    ->Arg(static_cast<int>(cuwrap::TargetType::Ptx))
    ->Arg(static_cast<int>(cuwrap::TargetType::Cubin))
    ->Unit(benchmark::kMillisecond);

void BM_RawNvrtc(benchmark::State& state) {
  const auto target = static_cast<cuwrap::TargetType>(state.range(0));
  namespace raw = cuwrap::nvrtc::raw;
  const char* options[] = {"-arch=sm_90"};
  measure(state, "raw_" + std::string(cuwrap::to_string(target)), [&] {
    nvrtcProgram program = nullptr;
    if (raw::nvrtcCreateProgram(&program, kSaxpy, "default_program", 0, nullptr, nullptr) !=
        NVRTC_SUCCESS) {
      throw std::runtime_error("nvrtcCreateProgram failed");
    }
    if (raw::nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) {
      raw::nvrtcDestroyProgram(&program);
      throw std::runtime_error("nvrtcCompileProgram failed");
    }
    std::size_t size = 0;
    std::vector<char> code;
    if (target == cuwrap::TargetType::Ptx) {
      raw::nvrtcGetPTXSize(program, &size);
      code.resize(size);
      raw::nvrtcGetPTX(program, code.data());
    } else {
      raw::nvrtcGetCUBINSize(program, &size);
      code.resize(size);
      raw::nvrtcGetCUBIN(program, code.data());
    }
    benchmark::DoNotOptimize(code.data());
    raw::nvrtcDestroyProgram(&program);
  });
}
BENCHMARK(BM_RawNvrtc)
    ->Arg(static_cast<int>(cuwrap::TargetType::Ptx))
    ->Arg(static_cast<int>(cuwrap::TargetType::Cubin))
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const auto& r = results();
  for (const char* target : {"ptx", "cubin"}) {
    const auto ours = r.find(std::string("cuwrap_") + target);
    const auto raw = r.find(std::string("raw_") + target);
    if (ours != r.end() && raw != r.end() && raw->second > 0) {
      std::printf("compile ratio cuwrap/raw (%s) = %.3f (%.2f ms vs %.2f ms)\n", target,
                  ours->second / raw->second, ours->second / 1e6, raw->second / 1e6);
    }
  }
  return 0;
}
