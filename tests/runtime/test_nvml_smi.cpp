// NVML through cuwrap agrees with nvidia-smi for the same device, read at the same
// moment: the name and memory size exactly, the PCIe link width and power limit exactly,
// the temperature within a few degrees. The device is cuwrap::Device(0), matched to
// nvidia-smi's row by UUID. Needs the NVML bindings (CUWRAP_HAS_NVML: docs/nvml.md),
// libnvidia-ml.so.1, nvidia-smi and a GPU.
#include <cuwrap/cuwrap.hpp>

#include <gtest/gtest.h>

#include "gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#if CUWRAP_HAS_NVML
#include <cuwrap/nvml.hpp>
#endif

namespace {

#if CUWRAP_HAS_NVML
// Return the output of `command`, or "" when it cannot be run.
std::string output_of(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r"); pipe != nullptr) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
      out.append(buffer, n);
    }
    if (::pclose(pipe) != 0) {
      return "";
    }
  }
  return out;
}

// Split a CSV line of nvidia-smi (", " between fields).
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at; (at = line.find(", ", start)) != std::string::npos; start = at + 2) {
    out.push_back(line.substr(start, at - start));
  }
  out.push_back(line.substr(start));
  return out;
}
#endif

TEST(NvmlSmi, DeviceZeroAgreesWithNvidiaSmi) {
#if !CUWRAP_HAS_NVML
  GTEST_SKIP() << "the build has no NVML bindings (CUWRAP_EXTRA_HEADERS_DIR: docs/nvml.md)";
#else
  CUWRAP_REQUIRE_GPU();
  namespace nvml = cuwrap::nvml;
  try {
    nvml::nvmlInit_v2();
  } catch (const cuwrap::LoadError& e) {
    GTEST_SKIP() << "needs libnvidia-ml.so.1: " << e.what();
  }
  const cuwrap::Device device(0);
  const std::string uuid = "GPU-" + device.uuid();
  const nvmlDevice_t handle = nvml::nvmlDeviceGetHandleByUUID(uuid.c_str());
  const std::string name = nvml::nvmlDeviceGetName(handle);
  const nvmlMemory_t memory = nvml::nvmlDeviceGetMemoryInfo(handle);
  const unsigned int width = nvml::nvmlDeviceGetCurrPcieLinkWidth(handle);
  const unsigned int limit_mw = nvml::nvmlDeviceGetEnforcedPowerLimit(handle);
  unsigned int temperature = 0;
  ASSERT_EQ(nvml::raw::nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU, &temperature),
            NVML_SUCCESS);
  const std::string smi = output_of(
      "nvidia-smi --query-gpu=uuid,name,memory.total,pcie.link.width.current,"
      "enforced.power.limit,temperature.gpu --format=csv,noheader,nounits --id=" +
      uuid);
  if (smi.empty()) {
    GTEST_SKIP() << "nvidia-smi cannot be run";
  }
  const std::vector<std::string> row = fields(smi.substr(0, smi.find('\n')));
  ASSERT_EQ(row.size(), 6u) << smi;
  EXPECT_EQ(row[0], uuid);
  EXPECT_EQ(row[1], name);
  EXPECT_EQ(std::stoull(row[2]), memory.total >> 20) << "MiB";
  EXPECT_EQ(std::stoul(row[3]), width);
  EXPECT_NEAR(std::stod(row[4]), limit_mw / 1000.0, 1.0) << "W";
  EXPECT_NEAR(std::stod(row[5]), static_cast<double>(temperature), 5.0) << "C";
  nvml::nvmlShutdown();
#endif
}

}  // namespace
