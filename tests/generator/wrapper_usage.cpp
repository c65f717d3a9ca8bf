// Representative uses of the generated wrappers, compiled (not run) by
// test_toolkits.cpp with -Wall -Wextra -Wpedantic -Werror, with and without
// CUDA_API_PER_THREAD_DEFAULT_STREAM.
#include <cuwrap/driver.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>

#include <iostream>
#include <string>
#include <vector>

#define CUWRAP_DEVICE_ATTRIBUTE(name, enumerator) \
  [[maybe_unused]] constexpr CUdevice_attribute name = enumerator;
namespace device_attributes {
#include <cuwrap/detail/device_attributes.inc>
}
#undef CUWRAP_DEVICE_ATTRIBUTE

#define CUWRAP_FUNCTION_ATTRIBUTE(name, enumerator) \
  [[maybe_unused]] constexpr CUfunction_attribute name = enumerator;
namespace function_attributes {
#include <cuwrap/detail/function_attributes.inc>
}
#undef CUWRAP_FUNCTION_ATTRIBUTE

void use_wrappers(CUstream s, CUevent start, CUevent stop, const char* src) {
  int n = cuwrap::driver::cuDeviceGetCount();
  CUdevice d = cuwrap::driver::cuDeviceGet(0);
  int warp = cuwrap::driver::cuDeviceGetAttribute(device_attributes::warp_size, d);
  int regs = 0;
  static_cast<void>(function_attributes::num_regs);
  CUdeviceptr p = cuwrap::driver::cuMemAlloc(1024);
  auto [free, total] = cuwrap::driver::cuMemGetInfo();
  cuwrap::driver::cuMemcpyHtoD(p, &regs, sizeof regs);
  cuwrap::driver::cuMemFree(p);
  bool done = cuwrap::driver::cuStreamQuery(s);
  float ms = cuwrap::driver::cuEventElapsedTime(start, stop);
  std::string name = cuwrap::driver::cuDeviceGetName(d);
  std::string bus = cuwrap::driver::cuDeviceGetPCIBusId(d);
  CUresult status = cuwrap::driver::raw::cuMemAlloc(&p, 16);

  auto [major, minor] = cuwrap::nvrtc::nvrtcVersion();
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(src, "k.cu", 0, nullptr, nullptr);
  cuwrap::nvrtc::nvrtcCompileProgram(prog, 0, nullptr);
  std::string ptx = cuwrap::nvrtc::nvrtcGetPTX(prog);
  std::string log = cuwrap::nvrtc::nvrtcGetProgramLog(prog);
  std::vector<char> cubin = cuwrap::nvrtc::nvrtcGetCUBIN(prog);
  cuwrap::nvrtc::nvrtcDestroyProgram(&prog);

  nvJitLinkHandle h = cuwrap::nvjitlink::nvJitLinkCreate(0, nullptr);
  cuwrap::nvjitlink::nvJitLinkAddData(h, NVJITLINK_INPUT_CUBIN, cubin.data(), cubin.size(), "k");
  cuwrap::nvjitlink::nvJitLinkComplete(h);
  std::vector<char> linked = cuwrap::nvjitlink::nvJitLinkGetLinkedCubin(h);
  std::string errors = cuwrap::nvjitlink::nvJitLinkGetErrorLog(h);
  cuwrap::nvjitlink::nvJitLinkDestroy(&h);

  std::cout << n << warp << free << total << done << ms << name << bus << status << major << minor
            << ptx << log << linked.size() << errors << CUDA_ERROR_OUT_OF_MEMORY
            << cuwrap::to_string(NVRTC_ERROR_COMPILATION)
            << cuwrap::detail::describe(NVJITLINK_ERROR_INTERNAL) << '\n';
}

// The second typed forms: vectors from enumerations, aggregates of vectors, typed
// attributes, spans, fixed-size and caller-sized outputs, typed shareable handles.
void use_typed_forms(CUgraph graph, CUgraphNode node, CUmodule mod, CUdeviceptr ptr,
                     CUmemoryPool pool, CUmemGenericAllocationHandle alloc, CUdevice dev,
                     CUgraphExec exec, const char* src) {
  std::vector<CUgraphNode> nodes = cuwrap::driver::cuGraphGetNodes(graph);
#if CUDA_VERSION >= 13000
  auto [from, to, edgeData] = cuwrap::driver::cuGraphGetEdges(graph);
  auto [deps, depEdges] = cuwrap::driver::cuGraphNodeGetDependencies(node);
#else  // CUDA 12.x: the forms with edge data are the _v2 functions
  auto [from, to, edgeData] = cuwrap::driver::cuGraphGetEdges_v2(graph);
  auto [deps, depEdges] = cuwrap::driver::cuGraphNodeGetDependencies_v2(node);
#endif
  std::vector<CUfunction> functions = cuwrap::driver::cuModuleEnumerateFunctions(mod);
  CUcontext ctx = cuwrap::driver::cuPointerGetAttribute<CU_POINTER_ATTRIBUTE_CONTEXT>(ptr);
  cuuint64_t threshold =
      cuwrap::driver::cuMemPoolGetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool);
  cuwrap::driver::cuMemPoolSetAttribute<CU_MEMPOOL_ATTR_RELEASE_THRESHOLD>(pool, threshold);
  cuuint64_t used =
      cuwrap::driver::cuDeviceGetGraphMemAttribute<CU_GRAPH_MEM_ATTR_USED_MEM_HIGH>(dev);
  bool on_exception = cuwrap::driver::cuCoredumpGetAttribute<CU_COREDUMP_ENABLE_ON_EXCEPTION>();
  int read_mostly =
      cuwrap::driver::cuMemRangeGetAttribute<CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY>(ptr, 64);
  int fd = cuwrap::driver::cuMemExportToShareableHandle<CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR>(
      alloc, 0);
  CUmemFabricHandle fabric =
      cuwrap::driver::cuMemPoolExportToShareableHandle<CU_MEM_HANDLE_TYPE_FABRIC>(pool, 0);
  auto [luid, mask] = cuwrap::driver::cuDeviceGetLuid(dev);
#if CUDA_VERSION >= 13000  // cuDeviceGetHostAtomicCapabilities is new in CUDA 13.0
  const CUatomicOperation ops[] = {CU_ATOMIC_OPERATION_INTEGER_ADD};
  std::vector<unsigned int> caps = cuwrap::driver::cuDeviceGetHostAtomicCapabilities(ops, dev);
#else
  std::vector<unsigned int> caps;
#endif
  CUgraphExecUpdateResultInfo info = cuwrap::driver::cuGraphExecUpdate(exec, graph);
  CUgraphNode empty = cuwrap::driver::cuGraphAddEmptyNode(graph, std::span(nodes));
  cuwrap::driver::cuGraphAddEmptyNode(graph, nodes.data(), nodes.size());  // pointer + count
  CUstreamCaptureMode old =
      cuwrap::driver::cuThreadExchangeStreamCaptureMode(CU_STREAM_CAPTURE_MODE_RELAXED);
  std::vector<int> archs = cuwrap::nvrtc::nvrtcGetSupportedArchs();
  const char* const headers[] = {"#pragma once\n"};
  const char* const names[] = {"h.cuh"};
  nvrtcProgram prog = cuwrap::nvrtc::nvrtcCreateProgram(src, "k.cu", headers, names);
  const char* const options[] = {"-arch=sm_90"};
  cuwrap::nvrtc::nvrtcCompileProgram(prog, options);
  nvJitLinkHandle h = cuwrap::nvjitlink::nvJitLinkCreate(options);
  std::cout << nodes.size() << from.size() << to.size() << edgeData.size() << deps.size()
            << depEdges.size() << functions.size() << ctx << threshold << used << on_exception
            << read_mostly << fd << sizeof fabric << luid[0] << mask << caps.size() << info.result
            << empty << old << archs.size() << prog << h << '\n';
}

// Several attributes at once: a tuple of their value types.
void use_plural_attributes(CUdeviceptr ptr) {
  auto [ctx, type] = cuwrap::driver::cuPointerGetAttributes<CU_POINTER_ATTRIBUTE_CONTEXT,
                                                            CU_POINTER_ATTRIBUTE_MEMORY_TYPE>(ptr);
  auto [read_mostly, location] =
      cuwrap::driver::cuMemRangeGetAttributes<CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                              CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION>(ptr, 64);
  std::cout << ctx << type << read_mostly << location << '\n';
}
