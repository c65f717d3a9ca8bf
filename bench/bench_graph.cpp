// Graphs, each cuwrap figure against the raw C API in the same run:
//
// 1. Replaying a captured graph of 1000 small kernels: Graph::launch against raw
//    cuGraphLaunch of the same executable graph (target ratio <= 1.03), and both
//    against 1000 individual launches (what graphs buy).
// 2. Changing one kernel argument of an instantiated graph of kUpdateKernels nodes,
//    then launching it: Graph::set_kernel_node against raw
//    cuGraphExecKernelNodeSetParams (cuwrap's overhead), and against what one does
//    without it: change the node in the graph and cuGraphExecUpdate, or re-instantiate.
// 3. Relaunch after a whole-graph update: change a GraphDefinition's kernel node, then
//    Graph::update(definition) and launch, against the raw cuGraphKernelNodeSetParams +
//    cuGraphExecUpdate + cuGraphLaunch. (What the Graph keeps alive stays flat over the
//    iterations: GraphTest.UpdateInALoopKeepsWhatItKeepsFlat counts it.)
//
// Every iteration launches and waits, so times include execution. The ratios are
// printed at the end.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/graph_definition.hpp>

#include <benchmark/benchmark.h>

#include "bench_support.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace {

constexpr int kKernels = 1000;
constexpr int kUpdateKernels = 10;

constexpr const char* kSource = R"(
extern "C" __global__ void tiny(unsigned* data) {
  if (threadIdx.x == 0) data[blockIdx.x] += 1u;
}
extern "C" __global__ void add(unsigned* data, unsigned value) {
  if (threadIdx.x == 0) data[blockIdx.x] += value;
}
)";

using GraphLaunchFn = CUresult (*)(CUgraphExec, CUstream);
using StreamSynchronizeFn = CUresult (*)(CUstream);
using ExecKernelNodeSetParamsFn = CUresult (*)(CUgraphExec, CUgraphNode,
                                               const CUDA_KERNEL_NODE_PARAMS*);
using KernelNodeSetParamsFn = CUresult (*)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
using ExecUpdateFn = CUresult (*)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*);
using InstantiateFn = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
using ExecDestroyFn = CUresult (*)(CUgraphExec);

// One graph of kUpdateKernels `add` nodes in a chain, built explicitly.
struct UpdateGraph {
  cuwrap::GraphBuilder builder;
  cuwrap::GraphNode first;  // the node whose argument the benchmarks change
  cuwrap::Graph graph;
};

// Everything the benchmarks share, built once; `error` is set when there is no GPU.
struct Setup : cuwrap::bench::GpuSetup {
  std::optional<cuwrap::Kernel> kernel;
  std::optional<cuwrap::Kernel> add;
  std::optional<cuwrap::Buffer> data;
  cuwrap::Graph graph;
  UpdateGraph ours;  // changed through cuwrap
  UpdateGraph raw;   // changed through the raw C API (its graph is edited too)
  std::optional<cuwrap::GraphDefinition> definition;  // the same chain, updated whole
  cuwrap::GraphNode definition_first;
  cuwrap::Graph definition_graph;
  CUfunction add_function = nullptr;
  GraphLaunchFn graph_launch = nullptr;
  StreamSynchronizeFn stream_synchronize = nullptr;
  ExecKernelNodeSetParamsFn exec_kernel_node_set_params = nullptr;
  KernelNodeSetParamsFn kernel_node_set_params = nullptr;
  ExecUpdateFn exec_update = nullptr;
  InstantiateFn instantiate = nullptr;
  ExecDestroyFn exec_destroy = nullptr;
};

cuwrap::LaunchConfig one_thread() {
  cuwrap::LaunchConfig config;
  config.grid = cuwrap::Dim3(1);
  config.block = cuwrap::Dim3(1);
  return config;
}

void build_update_graph(Setup& r, UpdateGraph& g) {
  g.builder = r.device->create_graph_builder();
  g.first = g.builder.launch({}, one_thread(), *r.add, *r.data, 1u);
  cuwrap::GraphNode previous = g.first;
  for (int i = 1; i < kUpdateKernels; ++i) {
    previous = g.builder.launch(std::array<cuwrap::GraphNode, 1>{previous}, one_thread(), *r.add,
                                *r.data, 1u);
  }
  g.graph = g.builder.complete();
  g.graph.upload(*r.stream);
}

Setup& setup() {
  using cuwrap::bench::driver_entry;
  static Setup s;
  [[maybe_unused]] static const bool usable = cuwrap::bench::build_setup(s, [](Setup& r) {
    cuwrap::ProgramOptions options;
    options.arch = "sm_" + r.device->arch();
    cuwrap::Program program(kSource, cuwrap::CodeType::Cxx, options);
    const cuwrap::ObjectCode code = program.compile(cuwrap::TargetType::Cubin);
    r.kernel.emplace(code.get_kernel("tiny"));
    r.add.emplace(code.get_kernel("add"));
    r.data.emplace(r.device->allocate(sizeof(unsigned), *r.stream));
    r.data->fill(std::uint8_t{0}, *r.stream);

    cuwrap::GraphBuilder builder = r.stream->create_graph_builder();
    builder.begin_building();
    const cuwrap::LaunchConfig config;
    for (int i = 0; i < kKernels; ++i) {
      cuwrap::launch(builder, config, *r.kernel, *r.data);
    }
    r.graph = builder.end_building().complete();
    r.graph.upload(*r.stream);

    build_update_graph(r, r.ours);
    build_update_graph(r, r.raw);
    r.definition.emplace(*r.device);
    r.definition_first = r.definition->launch({}, one_thread(), *r.add, *r.data, 1u);
    cuwrap::GraphNode previous = r.definition_first;
    for (int i = 1; i < kUpdateKernels; ++i) {
      previous = r.definition->launch({{previous}}, one_thread(), *r.add, *r.data, 1u);
    }
    r.definition_graph = r.definition->instantiate();
    r.definition_graph.upload(*r.stream);
    r.stream->sync();

    r.add_function = cuwrap::driver::cuKernelGetFunction(r.add->handle());  // current context
    r.graph_launch = driver_entry<GraphLaunchFn>("cuGraphLaunch");
    r.stream_synchronize = driver_entry<StreamSynchronizeFn>("cuStreamSynchronize");
    r.exec_kernel_node_set_params =
        driver_entry<ExecKernelNodeSetParamsFn>("cuGraphExecKernelNodeSetParams");
    r.kernel_node_set_params = driver_entry<KernelNodeSetParamsFn>("cuGraphKernelNodeSetParams");
    r.exec_update = driver_entry<ExecUpdateFn>("cuGraphExecUpdate");
    r.instantiate = driver_entry<InstantiateFn>("cuGraphInstantiateWithFlags");
    r.exec_destroy = driver_entry<ExecDestroyFn>("cuGraphExecDestroy");
  });
  return s;
}

void set_per_kernel(benchmark::State& state) {
  state.counters["per_kernel"] = benchmark::Counter(
      kKernels, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------------
// 1. Replay

void BM_GraphLaunch_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    s.graph.launch(*s.stream);
    s.stream->sync();
  }
  cuwrap::bench::record(state, "graph_launch_cuwrap", start);
  set_per_kernel(state);
}
BENCHMARK(BM_GraphLaunch_cuwrap)->UseRealTime();

void BM_GraphLaunch_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUgraphExec exec = s.graph.handle();
  const CUstream stream = s.stream->handle();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (s.graph_launch(exec, stream) != CUDA_SUCCESS ||
        s.stream_synchronize(stream) != CUDA_SUCCESS) {
      state.SkipWithError("cuGraphLaunch failed");
      return;
    }
  }
  cuwrap::bench::record(state, "graph_launch_raw", start);
  set_per_kernel(state);
}
BENCHMARK(BM_GraphLaunch_raw)->UseRealTime();

void BM_IndividualLaunches_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const cuwrap::LaunchConfig config;
  for (auto _ : state) {
    for (int i = 0; i < kKernels; ++i) {
      cuwrap::launch(*s.stream, config, *s.kernel, *s.data);
    }
    s.stream->sync();
  }
  set_per_kernel(state);
}
BENCHMARK(BM_IndividualLaunches_cuwrap)->UseRealTime();

void BM_IndividualLaunches_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUstream stream = s.stream->handle();
  const CUfunction function =
      cuwrap::driver::cuKernelGetFunction(s.kernel->handle());  // in the current context
  CUdeviceptr pointer = s.data->handle();
  void* args[] = {&pointer};
  for (auto _ : state) {
    for (int i = 0; i < kKernels; ++i) {
      if (cuwrap::driver::raw::cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, args,
                                              nullptr) != CUDA_SUCCESS) {
        state.SkipWithError("cuLaunchKernel failed");
        return;
      }
    }
    cuwrap::driver::raw::cuStreamSynchronize(stream);
  }
  set_per_kernel(state);
}
BENCHMARK(BM_IndividualLaunches_raw)->UseRealTime();

// ---------------------------------------------------------------------------------
// 2. Change one argument, then launch

void BM_SetKernelNode_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const cuwrap::LaunchConfig config = one_thread();
  unsigned value = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    s.ours.graph.set_kernel_node(s.ours.first, config, *s.add, *s.data, ++value);
    s.ours.graph.launch(*s.stream);
    s.stream->sync();
  }
  cuwrap::bench::record(state, "set_kernel_node_cuwrap", start);
}
BENCHMARK(BM_SetKernelNode_cuwrap)->UseRealTime();

// The parameters a C program passes for the first node, with `args` as kernelParams.
CUDA_KERNEL_NODE_PARAMS raw_params(const Setup& s, void** args) {
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = s.add_function;
  params.gridDimX = params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = params.blockDimY = params.blockDimZ = 1;
  params.kernelParams = args;
  return params;
}

void BM_SetKernelNode_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUgraphExec exec = s.raw.graph.handle();
  const CUgraphNode node = s.raw.first.handle();
  const CUstream stream = s.stream->handle();
  CUdeviceptr pointer = s.data->handle();
  unsigned value = 0;
  void* args[] = {&pointer, &value};
  const CUDA_KERNEL_NODE_PARAMS params = raw_params(s, args);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ++value;
    if (s.exec_kernel_node_set_params(exec, node, &params) != CUDA_SUCCESS ||
        s.graph_launch(exec, stream) != CUDA_SUCCESS ||
        s.stream_synchronize(stream) != CUDA_SUCCESS) {
      state.SkipWithError("cuGraphExecKernelNodeSetParams + cuGraphLaunch failed");
      return;
    }
  }
  cuwrap::bench::record(state, "set_kernel_node_raw", start);
}
BENCHMARK(BM_SetKernelNode_raw)->UseRealTime();

void BM_ExecUpdate_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUgraphExec exec = s.raw.graph.handle();
  const CUgraph graph = s.raw.builder.handle();
  const CUgraphNode node = s.raw.first.handle();
  const CUstream stream = s.stream->handle();
  CUdeviceptr pointer = s.data->handle();
  unsigned value = 0;
  void* args[] = {&pointer, &value};
  const CUDA_KERNEL_NODE_PARAMS params = raw_params(s, args);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ++value;
    CUgraphExecUpdateResultInfo info{};
    if (s.kernel_node_set_params(node, &params) != CUDA_SUCCESS ||
        s.exec_update(exec, graph, &info) != CUDA_SUCCESS ||
        s.graph_launch(exec, stream) != CUDA_SUCCESS ||
        s.stream_synchronize(stream) != CUDA_SUCCESS) {
      state.SkipWithError("cuGraphKernelNodeSetParams + cuGraphExecUpdate failed");
      return;
    }
  }
  cuwrap::bench::record(state, "exec_update_raw", start);
}
BENCHMARK(BM_ExecUpdate_raw)->UseRealTime();

void BM_Reinstantiate_raw(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const CUgraph graph = s.raw.builder.handle();
  const CUgraphNode node = s.raw.first.handle();
  const CUstream stream = s.stream->handle();
  CUdeviceptr pointer = s.data->handle();
  unsigned value = 0;
  void* args[] = {&pointer, &value};
  const CUDA_KERNEL_NODE_PARAMS params = raw_params(s, args);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ++value;
    CUgraphExec exec = nullptr;
    if (s.kernel_node_set_params(node, &params) != CUDA_SUCCESS ||
        s.instantiate(&exec, graph, 0) != CUDA_SUCCESS) {
      state.SkipWithError("cuGraphKernelNodeSetParams + cuGraphInstantiate failed");
      return;
    }
    const bool ran = s.graph_launch(exec, stream) == CUDA_SUCCESS &&
                     s.stream_synchronize(stream) == CUDA_SUCCESS;
    s.exec_destroy(exec);
    if (!ran) {
      state.SkipWithError("cuGraphLaunch failed");
      return;
    }
  }
  cuwrap::bench::record(state, "reinstantiate_raw", start);
}
BENCHMARK(BM_Reinstantiate_raw)->UseRealTime();

// ---------------------------------------------------------------------------------
// 3. Change the definition, update the whole graph from it, relaunch

void BM_UpdateFromDefinition_cuwrap(benchmark::State& state) {
  Setup& s = setup();
  if (!cuwrap::bench::ready(state, s)) {
    return;
  }
  const cuwrap::LaunchConfig config = one_thread();
  unsigned value = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    s.definition->set_kernel_node(s.definition_first, config, *s.add, *s.data, ++value);
    s.definition_graph.update(*s.definition);
    s.definition_graph.launch(*s.stream);
    s.stream->sync();
  }
  cuwrap::bench::record(state, "update_from_definition_cuwrap", start);
  state.counters["kept_objects"] =
      static_cast<double>(cuwrap::detail::kept_alive_count(s.definition_graph));
}
BENCHMARK(BM_UpdateFromDefinition_cuwrap)->UseRealTime();

void print_ratio(const char* what, const char* ours, const char* raw) {
  if (const auto c = cuwrap::bench::compare(ours, raw)) {
    std::printf("%s = %.3f (%.2f us vs %.2f us)\n", what, c->ratio(), c->ours_ns / 1e3,
                c->raw_ns / 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return cuwrap::bench::run_benchmarks(argc, argv, [] {
    print_ratio("Graph::launch / cuGraphLaunch", "graph_launch_cuwrap", "graph_launch_raw");
    print_ratio("set_kernel_node+launch / cuGraphExecKernelNodeSetParams+launch",
                "set_kernel_node_cuwrap", "set_kernel_node_raw");
    print_ratio("set_kernel_node+launch / cuGraphKernelNodeSetParams+cuGraphExecUpdate+launch",
                "set_kernel_node_cuwrap", "exec_update_raw");
    print_ratio("set_kernel_node+launch / cuGraphKernelNodeSetParams+cuGraphInstantiate+launch",
                "set_kernel_node_cuwrap", "reinstantiate_raw");
    print_ratio(
        "set_kernel_node+update(definition)+launch / "
        "cuGraphKernelNodeSetParams+cuGraphExecUpdate+launch",
        "update_from_definition_cuwrap", "exec_update_raw");
  });
}
