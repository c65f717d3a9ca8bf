// List every CUDA device with its main properties, as `deviceQuery` does, and check
// that the high-level view (Device, DeviceProperties) agrees with the driver API.
//
// Needs a GPU; without one it says so and exits 0.
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/driver.hpp>

#include "support.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace {

// Print one device; return the number of inconsistencies found.
int describe(const cuwrap::Device& device) {
  const cuwrap::DeviceProperties props = device.properties();
  const std::size_t total_memory = cuwrap::driver::cuDeviceTotalMem(device.handle());
  std::cout << device << '\n'
            << "  compute capability      " << device.compute_capability() << " (sm_"
            << device.arch() << ")\n"
            << "  PCI bus id              " << device.pci_bus_id() << '\n'
            << "  UUID                    " << device.uuid() << '\n'
            << "  global memory           " << (total_memory >> 20) << " MiB\n"
            << "  multiprocessors         " << props.multiprocessor_count() << '\n'
            << "  max threads per block   " << props.max_threads_per_block() << '\n'
            << "  max shared memory/block " << props.max_shared_memory_per_block() << " bytes\n"
            << "  warp size               " << props.warp_size() << '\n'
            << "  L2 cache                " << (props.l2_cache_size() >> 10) << " KiB\n"
            << "  memory pools supported  " << (props.memory_pools_supported() != 0 ? "yes" : "no")
            << '\n'
            << "  concurrent managed mem  "
            << (props.concurrent_managed_access() != 0 ? "yes" : "no") << '\n';

  int problems = 0;
  const auto expect = [&problems](bool ok, const char* what) {
    if (!ok) {
      std::cerr << "device_query: FAILED: " << what << '\n';
      ++problems;
    }
  };
  expect(!device.name().empty(), "the device has a name");
  expect(device.name() == cuwrap::driver::cuDeviceGetName(device.handle()),
         "Device::name() matches cuDeviceGetName");
  expect(props.warp_size() == 32, "the warp size is 32");
  expect(props.warp_size() == device.attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE),
         "properties() and attribute() agree");
  expect(device.compute_capability().major ==
             device.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
         "compute_capability() matches the attribute");
  expect(total_memory > 0, "the device has memory");
  expect(device.can_access_peer(device), "a device can access its own memory");
  return problems;
}

int device_query_example() {
  const int count = cuwrap::Device::count();
  std::cout << "cuwrap " << cuwrap::kVersion << " (bindings from CUDA "
            << cuwrap::kBindingsCudaVersion / 1000 << '.'
            << cuwrap::kBindingsCudaVersion % 1000 / 10 << "), driver API "
            << cuwrap::driver::cuDriverGetVersion() << ", " << count << " device(s)\n";

  int problems = count == cuwrap::driver::cuDeviceGetCount() ? 0 : 1;
  const std::vector<cuwrap::Device> devices = cuwrap::Device::all();
  if (static_cast<int>(devices.size()) != count) {
    ++problems;
  }
  for (const cuwrap::Device& device : devices) {
    problems += describe(device);
  }
  if (problems != 0) {
    return 1;
  }
  std::cout << "device_query: OK\n";
  return 0;
}

}  // namespace

int main() { return example::run_on_gpu("device_query", device_query_example); }
