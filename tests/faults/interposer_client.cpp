// A client of the interposer for its CPU tests (test_interposer.cpp runs it with
// CUWRAP_LIBCUDA=libcuwrap_interposer.so and CUWRAP_INTERPOSER_LIBCUDA=the fake driver):
// one scenario per run, named by argv[1], results on stdout, one fact per line.
#include <cuwrap/device.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/program.hpp>
#include <cuwrap/stream.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace {

// Allocate three blocks and free two: the interposer's report must show one alive.
void alloc() {
  cuwrap::driver::cuInit(0);
  const CUdeviceptr a = cuwrap::driver::cuMemAlloc(256);
  const CUdeviceptr b = cuwrap::driver::cuMemAlloc(512);
  const CUdeviceptr c = cuwrap::driver::cuMemAlloc(1024);
  cuwrap::driver::cuMemFree(a);
  cuwrap::driver::cuMemFree(c);
  std::cout << "kept " << (b != 0 ? "one" : "none") << '\n';
}

// A high-level Stream whose release may be made to fail: the handler is called.
void stream() {
  cuwrap::set_release_failure_handler([](const cuwrap::ReleaseFailure& f) {
    std::cout << "release-failure " << f.function << ' ' << f.object << ' '
              << static_cast<int>(f.code) << '\n';
  });
  {
    const cuwrap::Device device(0);
    device.set_current();
    const cuwrap::Stream s = device.create_stream();
    s.sync();
  }
  std::cout << "stream released\n";
}

// What the driver answers as: its version, and which entry points it has.
void version() {
  std::cout << "driver " << cuwrap::driver::cuDriverGetVersion() << '\n';
  CUcontext context = nullptr;
  std::cout << "cuStreamGetCtx "
            << static_cast<int>(cuwrap::driver::raw::cuStreamGetCtx(nullptr, &context)) << ' '
            << context << '\n';
#if CUDA_VERSION >= 12080
  CUdevice device = -1;
  std::cout << "cuStreamGetDevice "
            << static_cast<int>(cuwrap::driver::raw::cuStreamGetDevice(nullptr, &device)) << '\n';
#else
  std::cout << "cuStreamGetDevice not in these headers\n";
#endif
}

// The current device's architecture for a Program without one: a driver failure while
// finding the device is that call's DriverError, not "no device".
void arch() {
  const cuwrap::ProgramOptions options;
  const std::string arch = options.to_nvrtc_options().front();
  std::cout << "arch " << arch << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: interposer_client alloc|stream|version|arch\n";
    return 2;
  }
  try {
    if (std::strcmp(argv[1], "alloc") == 0) {
      alloc();
    } else if (std::strcmp(argv[1], "stream") == 0) {
      stream();
    } else if (std::strcmp(argv[1], "version") == 0) {
      version();
    } else if (std::strcmp(argv[1], "arch") == 0) {
      arch();
    } else {
      std::cerr << "unknown scenario " << argv[1] << '\n';
      return 2;
    }
  } catch (const cuwrap::DriverError& e) {
    std::cout << "DriverError " << e.function() << ' ' << e.name() << '\n';
  } catch (const cuwrap::Error& e) {
    std::cout << "Error " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cout << "exception " << e.what() << '\n';
  }
  std::cout.flush();
  return 0;
}
