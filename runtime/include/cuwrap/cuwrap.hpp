// cuwrap: include this one header for the whole library.
//
// The high-level layer (<cuwrap/core.hpp>: Device, Stream, Event, memory resources and
// Buffer, Program, ObjectCode, Kernel, launch, Linker, graphs) and the generated
// low-level layer: every function of cuda.h (cuwrap::driver), nvrtc.h (cuwrap::nvrtc)
// and nvJitLink.h (cuwrap::nvjitlink), typed, throwing, loaded at run time.
//
// Code that uses only the high-level layer may include <cuwrap/core.hpp> instead, which
// compiles faster; each generated header can also be included alone.
#pragma once

#include <cuwrap/core.hpp>
#include <cuwrap/driver.hpp>
// Bindings generated without nvJitLink.h (a toolkit before CUDA 12.0) have no nvJitLink layer.
#if __has_include(<cuwrap/nvjitlink.hpp>)
#include <cuwrap/nvjitlink.hpp>
#endif
#include <cuwrap/nvrtc.hpp>
