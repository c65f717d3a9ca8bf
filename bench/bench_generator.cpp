// Wall time of cuwrap-gen on the configured CUDA headers, in process: the whole run
// (parse, plan, render, write into a scratch directory) and each stage alone.
// Target: the whole run under 2 s.
#include "parse.hpp"
#include "pipeline.hpp"
#include "render.hpp"
#include "rules.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <sstream>
#include <string>

namespace {

namespace gen = cuwrap::gen;

const std::filesystem::path kTemplates = std::filesystem::path(CUWRAP_SOURCE_DIR) / "templates";

// A scratch directory for the generated files, removed at the end.
struct Scratch {
  Scratch() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cuwrap-bench-gen-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

void BM_GeneratorWholeRun(benchmark::State& state) {
  Scratch scratch;
  gen::Options options;
  options.cuda_include = CUWRAP_CUDA_INCLUDE_DIR;
  options.output = scratch.path / "generated";
  options.templates = kTemplates;
  options.print_coverage = false;
  for (auto _ : state) {
    std::ostringstream out;
    std::ostringstream err;
    if (gen::run(options, out, err) != gen::ExitCode::Success) {
      state.SkipWithError(err.str().c_str());
      break;
    }
  }
}
BENCHMARK(BM_GeneratorWholeRun)->Unit(benchmark::kMillisecond);

void BM_GeneratorParse(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(gen::parse_headers(CUWRAP_CUDA_INCLUDE_DIR));
  }
}
BENCHMARK(BM_GeneratorParse)->Unit(benchmark::kMillisecond);

void BM_GeneratorPlan(benchmark::State& state) {
  const gen::Api api = gen::parse_headers(CUWRAP_CUDA_INCLUDE_DIR);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gen::make_plan(api));
  }
}
BENCHMARK(BM_GeneratorPlan)->Unit(benchmark::kMillisecond);

void BM_GeneratorRender(benchmark::State& state) {
  const gen::Plan plan = gen::make_plan(gen::parse_headers(CUWRAP_CUDA_INCLUDE_DIR));
  for (auto _ : state) {
    benchmark::DoNotOptimize(gen::render(plan, kTemplates));
  }
}
BENCHMARK(BM_GeneratorRender)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
