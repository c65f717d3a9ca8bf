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
#include <cuwrap/program.hpp>
#include <cuwrap/object_code.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/peer.hpp>
#include <cuwrap/green_context.hpp>
#include <cuwrap/context.hpp>
