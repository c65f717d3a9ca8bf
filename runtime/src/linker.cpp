// Linker over nvJitLink, and the architecture helpers shared with Program.
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/nvjitlink.hpp>

#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

nvJitLinkInputType input_type(TargetType type) {
  switch (type) {
    case TargetType::Cubin:
      return NVJITLINK_INPUT_CUBIN;
    case TargetType::Ptx:
      return NVJITLINK_INPUT_PTX;
    case TargetType::Ltoir:
      return NVJITLINK_INPUT_LTOIR;
    case TargetType::Fatbin:
      return NVJITLINK_INPUT_FATBIN;
  }
  return NVJITLINK_INPUT_ANY;
}

const char* flag(bool value) { return value ? "true" : "false"; }

}  // namespace

// ---- LinkerOptions ---------------------------------------------------------------

std::vector<std::string> LinkerOptions::to_nvjitlink_options() const {
  std::vector<std::string> options;
  options.push_back("-arch=" + detail::resolve_arch(arch, "LinkerOptions::arch"));
  if (link_time_optimization) {
    options.emplace_back("-lto");
  }
  if (debug) {
    options.emplace_back("-g");
  }
  if (lineinfo) {
    options.emplace_back("-lineinfo");
  }
  if (max_register_count) {
    if (*max_register_count <= 0) {
      throw std::invalid_argument("LinkerOptions::max_register_count must be > 0, got " +
                                  std::to_string(*max_register_count));
    }
    options.push_back("-maxrregcount=" + std::to_string(*max_register_count));
  }
  if (ftz) {
    options.push_back(std::string("-ftz=") + flag(*ftz));
  }
  if (prec_div) {
    options.push_back(std::string("-prec-div=") + flag(*prec_div));
  }
  if (prec_sqrt) {
    options.push_back(std::string("-prec-sqrt=") + flag(*prec_sqrt));
  }
  if (fma) {
    options.push_back(std::string("-fma=") + flag(*fma));
  }
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

// ---- Linker ----------------------------------------------------------------------

Linker::Linker(std::vector<ObjectCode> inputs, LinkerOptions options)
    : inputs_(std::move(inputs)), options_(std::move(options)) {
  if (inputs_.empty()) {
    throw std::invalid_argument("Linker: inputs is empty; give at least one ObjectCode");
  }
  create(false);
}

Linker::Linker(Linker&& other) noexcept
    : inputs_(std::move(other.inputs_)),
      options_(std::move(other.options_)),
      handle_(std::exchange(other.handle_, nullptr)),
      created_with_ptx_(other.created_with_ptx_),
      completed_(other.completed_) {}

Linker& Linker::operator=(Linker&& other) noexcept {
  if (this != &other) {
    close();
    inputs_ = std::move(other.inputs_);
    options_ = std::move(other.options_);
    handle_ = std::exchange(other.handle_, nullptr);
    created_with_ptx_ = other.created_with_ptx_;
    completed_ = other.completed_;
  }
  return *this;
}

Linker::~Linker() { close(); }

void Linker::close() noexcept {
  if (handle_ != nullptr) {
    static_cast<void>(nvjitlink::raw::nvJitLinkDestroy(&handle_));
    handle_ = nullptr;
  }
}

void Linker::require_open(const char* operation) const {
  if (handle_ == nullptr) {
    throw std::logic_error(std::string("Linker::") + operation + " on a closed Linker");
  }
}

void Linker::create(bool ptx) {
  std::vector<std::string> options = options_.to_nvjitlink_options();
  if (ptx) {
    options.emplace_back("-ptx");
  }
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const auto& option : options) {
    pointers.push_back(option.c_str());
  }
  nvJitLinkHandle handle =
      nvjitlink::nvJitLinkCreate(static_cast<std::uint32_t>(pointers.size()), pointers.data());
  try {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const ObjectCode& input = inputs_[i];
      const std::string name = input.name().empty() ? "input" + std::to_string(i) : input.name();
      const std::span<const char> code = input.code();
      nvjitlink::nvJitLinkAddData(handle, input_type(input.code_type()), code.data(), code.size(),
                                  name.c_str());
    }
  } catch (...) {
    static_cast<void>(nvjitlink::raw::nvJitLinkDestroy(&handle));
    throw;
  }
  close();
  handle_ = handle;
  created_with_ptx_ = ptx;
  completed_ = false;
}

ObjectCode Linker::link(TargetType target) {
  require_open("link");
  if (target != TargetType::Cubin && target != TargetType::Ptx) {
    throw std::invalid_argument(
        "Linker::link: target must be TargetType::Cubin or "
        "TargetType::Ptx, got " +
        std::string(to_string(target)));
  }
  if (target == TargetType::Ptx && !options_.link_time_optimization) {
    throw std::invalid_argument(
        "Linker::link: linking to PTX needs "
        "LinkerOptions::link_time_optimization = true (nvJitLink -lto)");
  }
  const bool want_ptx = target == TargetType::Ptx;
  if (want_ptx != created_with_ptx_) {
    create(want_ptx);  // -ptx is a creation option
  }
  if (!completed_) {
    nvjitlink::nvJitLinkComplete(handle_);
    completed_ = true;
  }
  // Name expressions recorded when the inputs were compiled stay usable on the result.
  std::vector<std::pair<std::string, std::string>> lowered;
  for (const ObjectCode& input : inputs_) {
    const auto& expressions = input.name_expressions();
    lowered.insert(lowered.end(), expressions.begin(), expressions.end());
  }
  if (want_ptx) {
    return ObjectCode::from_parts(TargetType::Ptx, nvjitlink::nvJitLinkGetLinkedPtx(handle_),
                                  options_.name, std::move(lowered));
  }
  const std::vector<char> cubin = nvjitlink::nvJitLinkGetLinkedCubin(handle_);
  return ObjectCode::from_parts(TargetType::Cubin, std::string(cubin.begin(), cubin.end()),
                                options_.name, std::move(lowered));
}

std::string Linker::info_log() const {
  require_open("info_log");
  return nvjitlink::nvJitLinkGetInfoLog(handle_);
}

std::string Linker::error_log() const {
  require_open("error_log");
  return nvjitlink::nvJitLinkGetErrorLog(handle_);
}

std::string Linker::backend() const { return "nvJitLink"; }

// ---- detail ----------------------------------------------------------------------

namespace detail {

std::string normalize_arch(std::string_view arch, std::string_view what) {
  std::string_view rest = arch;
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (rest.starts_with(prefix)) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  std::size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0) {
    ++digits;
  }
  const std::string_view suffix = rest.substr(digits);
  if (digits == 0 || (!suffix.empty() && suffix != "a" && suffix != "f")) {
    throw std::invalid_argument(std::string(what) + " '" + std::string(arch) +
                                "' is not an architecture; expected e.g. \"sm_90\", \"90\" or "
                                "\"compute_90\"");
  }
  return "sm_" + std::string(rest);
}

std::string resolve_arch(const std::optional<std::string>& arch, std::string_view what) {
  if (arch) {
    return normalize_arch(*arch, what);
  }
  CUdevice device = 0;
  try {
    device = current_or_default_device();
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string(what) +
                                " is required when no CUDA device is available (" + e.what() + ")");
  }
  const int major =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  const int minor =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace detail
}  // namespace cuwrap
