// cuwrap's high-level layer: include this one header.
//
// Device, Stream, Event, memory resources and Buffer; Program, ObjectCode, Kernel,
// LaunchConfig and launch; Linker; GraphBuilder and Graph. Modelled on cuda.core.
#pragma once

#include <cuwrap/error.hpp>
#include <cuwrap/version.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/buffer.hpp>
#include <cuwrap/ipc.hpp>
#include <cuwrap/virtual_memory_resource.hpp>
#include <cuwrap/managed_memory.hpp>
#include <cuwrap/copy.hpp>
#include <cuwrap/array.hpp>
#include <cuwrap/texture.hpp>
#include <cuwrap/tensor_map.hpp>
#include <cuwrap/dlpack.hpp>
#include <cuwrap/program.hpp>
#include <cuwrap/object_code.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/host_function.hpp>
#include <cuwrap/program_cache.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/graph_memory_resource.hpp>
#include <cuwrap/peer.hpp>
#include <cuwrap/green_context.hpp>
#include <cuwrap/context.hpp>
