// cuwrap's high-level layer alone: Device, Stream, Event, memory resources and Buffer;
// Program, ObjectCode, Kernel, LaunchConfig and launch; Linker; GraphBuilder and Graph;
// cuwrap::system (NVML's view of the GPUs). Modelled on cuda.core.
//
// <cuwrap/cuwrap.hpp> gives this and the generated low-level layer (cuwrap::driver,
// cuwrap::nvrtc, cuwrap::nvjitlink). Include this header instead where only the
// high-level layer is used: it compiles in a fraction of the time, since the generated
// headers declare every function of cuda.h, nvrtc.h and nvJitLink.h (docs/performance.md,
// "Include cost").
#pragma once

#include <cuwrap/array.hpp>
#include <cuwrap/buffer.hpp>
#include <cuwrap/checkpoint.hpp>
#include <cuwrap/context.hpp>
#include <cuwrap/copy.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/device_span.hpp>
#include <cuwrap/dlpack.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/graph_definition.hpp>
#include <cuwrap/graph_memory_resource.hpp>
#include <cuwrap/green_context.hpp>
#include <cuwrap/host_function.hpp>
#include <cuwrap/host_memory.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/managed_memory.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/object_code.hpp>
#include <cuwrap/peer.hpp>
#include <cuwrap/pitched_buffer.hpp>
#include <cuwrap/pointer_attributes.hpp>
#include <cuwrap/program.hpp>
#include <cuwrap/program_cache.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/strided_memory_view.hpp>
#include <cuwrap/synchronous_memory_resource.hpp>
#include <cuwrap/system.hpp>
#include <cuwrap/tensor_map.hpp>
#include <cuwrap/texture.hpp>
#include <cuwrap/version.hpp>
#include <cuwrap/virtual_memory_resource.hpp>
