// FatbinBuilder over the generated nvFatbin forms. See fatbin_builder.hpp.
#include <cuwrap/fatbin_builder.hpp>

#if CUWRAP_HAS_NVFATBIN
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/nvfatbin.hpp>

#include <stdexcept>
#include <utility>

namespace cuwrap {
namespace {

// nvFatbin names an architecture by its number ("80"): "sm_80" and "compute_80" are
// accepted and cut to it.
std::string arch_number(std::string_view arch, const char* function) {
  for (const std::string_view prefix : {"sm_", "compute_", "lto_"}) {
    if (arch.substr(0, prefix.size()) == prefix) {
      arch.remove_prefix(prefix.size());
      break;
    }
  }
  if (arch.empty()) {
    throw std::invalid_argument(std::string("FatbinBuilder::") + function +
                                ": arch is empty (expected e.g. \"sm_80\")");
  }
  return std::string(arch);
}

void require_code(std::size_t size, const char* function, const char* what) {
  if (size == 0) {
    throw std::invalid_argument(std::string("FatbinBuilder::") + function + ": " + what +
                                " is empty");
  }
}

}  // namespace

FatbinBuilder::FatbinBuilder(std::span<const std::string> options) {
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const auto& o : options) {
    pointers.push_back(o.c_str());
  }
  handle_ = nvfatbin::nvFatbinCreate(pointers.data(), pointers.size());
}

FatbinBuilder::FatbinBuilder(FatbinBuilder&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

FatbinBuilder& FatbinBuilder::operator=(FatbinBuilder&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

FatbinBuilder::~FatbinBuilder() {
  if (handle_ != nullptr) {
    detail::report_release_failure(nvfatbin::raw::nvFatbinDestroy(&handle_), "nvFatbinDestroy",
                                   "FatbinBuilder");
  }
}

FatbinBuilder& FatbinBuilder::add_cubin(std::span<const char> cubin, std::string_view arch,
                                        std::string_view identifier) {
  require_code(cubin.size(), "add_cubin", "cubin");
  const std::string number = arch_number(arch, "add_cubin");
  nvfatbin::nvFatbinAddCubin(handle_, cubin.data(), cubin.size(), number.c_str(),
                             std::string(identifier).c_str());
  return *this;
}

FatbinBuilder& FatbinBuilder::add_ptx(std::string_view ptx, std::string_view arch,
                                      std::string_view identifier, std::string_view options) {
  require_code(ptx.size(), "add_ptx", "ptx");
  const std::string number = arch_number(arch, "add_ptx");
  const std::string text(ptx);  // nvFatbin reads `size` bytes, the NUL included
  nvfatbin::nvFatbinAddPTX(handle_, text.c_str(), text.size() + 1, number.c_str(),
                           std::string(identifier).c_str(), std::string(options).c_str());
  return *this;
}

FatbinBuilder& FatbinBuilder::add_ltoir(std::span<const char> ltoir, std::string_view arch,
                                        std::string_view identifier, std::string_view options) {
  require_code(ltoir.size(), "add_ltoir", "ltoir");
  const std::string number = arch_number(arch, "add_ltoir");
  nvfatbin::nvFatbinAddLTOIR(handle_, ltoir.data(), ltoir.size(), number.c_str(),
                             std::string(identifier).c_str(), std::string(options).c_str());
  return *this;
}

std::vector<char> FatbinBuilder::build() const {
  std::vector<char> bytes(nvfatbin::nvFatbinSize(handle_));
  nvfatbin::nvFatbinGet(handle_, bytes.data());
  return bytes;
}

}  // namespace cuwrap
#endif  // CUWRAP_HAS_NVFATBIN
