// Linker over nvJitLink, and the architecture helpers shared with Program.
#include "compile/option_text.hpp"
#include "launch/kernel_impl.hpp"

#include <cuwrap/detail/context.hpp>
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/error.hpp>
#include <cuwrap/kernel.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/version.hpp>

#include <cctype>
#include <cstdint>
#include <cstring>
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
    case TargetType::Object:
      return NVJITLINK_INPUT_OBJECT;
    case TargetType::Library:
      return NVJITLINK_INPUT_LIBRARY;
  }
  return NVJITLINK_INPUT_ANY;
}

CUjitInputType driver_input_type(const ObjectCode& input) {
  switch (input.code_type()) {
    case TargetType::Cubin:
      return CU_JIT_INPUT_CUBIN;
    case TargetType::Ptx:
      return CU_JIT_INPUT_PTX;
    case TargetType::Fatbin:
      return CU_JIT_INPUT_FATBINARY;
    case TargetType::Object:
      return CU_JIT_INPUT_OBJECT;
    case TargetType::Library:
      return CU_JIT_INPUT_LIBRARY;
    case TargetType::Ltoir:
      break;
  }
  throw std::invalid_argument("Linker: input '" + input.name() +
                              "' is LTO-IR, which the driver linker cannot link; install "
                              "nvJitLink 12.3 or newer");
}

// "sm_90" → CU_TARGET_COMPUTE_90, "sm_90a" → CU_TARGET_COMPUTE_90A (CUjit_target).
unsigned driver_target(const std::string& arch) {
  std::string digits = arch.substr(3);  // normalize_arch gives "sm_NN[a|f]"
  unsigned base = 0;
  if (digits.back() == 'a') {
    base = CU_COMPUTE_ACCELERATED_TARGET_BASE;
    digits.pop_back();
  } else if (digits.back() == 'f') {
#if CUDA_VERSION >= 12090
    base = CU_COMPUTE_FAMILY_TARGET_BASE;
    digits.pop_back();
#else
    detail::throw_toolkit_too_old(12090, "family-specific targets (sm_XXXf) for the driver linker");
#endif
  }
  return base + static_cast<unsigned>(std::stoul(digits));
}

// The driver linker's log buffers: 64 KiB each, ample for link logs.
constexpr std::size_t kDriverLogSize = std::size_t{64} * 1024;

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
    options.push_back(std::string("-ftz=") + detail::flag(*ftz));
  }
  if (prec_div) {
    options.push_back(std::string("-prec-div=") + detail::flag(*prec_div));
  }
  if (prec_sqrt) {
    options.push_back(std::string("-prec-sqrt=") + detail::flag(*prec_sqrt));
  }
  if (fma) {
    options.push_back(std::string("-fma=") + detail::flag(*fma));
  }
  if (verbose) {
    options.emplace_back("-verbose");
  }
  if (optimization_level) {
    if (*optimization_level < 0 || *optimization_level > 4) {
      throw std::invalid_argument("LinkerOptions::optimization_level must be 0..4, got " +
                                  std::to_string(*optimization_level));
    }
    options.push_back("-O" + std::to_string(*optimization_level));
  }
  if (time) {
    options.emplace_back("-time");
  }
  if (optimize_unused_variables) {
    options.emplace_back("-optimize-unused-variables");
  }
  const auto each = [&](const std::vector<std::string>& values, const char* option,
                        const char* field) {
    for (const std::string& value : values) {
      if (value.empty()) {
        throw std::invalid_argument(std::string("LinkerOptions::") + field +
                                    " holds an empty entry");
      }
      options.push_back(std::string(option) + value);
    }
  };
  each(ptxas_options, "-Xptxas=", "ptxas_options");
  each(kernels_used, "-kernels-used=", "kernels_used");
  each(variables_used, "-variables-used=", "variables_used");
  const auto threads = [&](const std::optional<int>& value, const char* option, const char* field) {
    if (value) {
      if (*value < 0) {
        throw std::invalid_argument(std::string("LinkerOptions::") + field + " must be >= 0, got " +
                                    std::to_string(*value));
      }
      options.push_back(std::string(option) + std::to_string(*value));
    }
  };
  threads(split_compile, "-split-compile=", "split_compile");
  threads(split_compile_extended, "-split-compile-extended=", "split_compile_extended");
  if (no_cache) {
    options.emplace_back("-no-cache");
  }
  if (ptx) {
    options.emplace_back("-ptx");
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
  use_driver_ = !detail::nvjitlink_usable();
  if (use_driver_) {
    check_driver_options();
    for (const ObjectCode& input : inputs_) {
      static_cast<void>(driver_input_type(input));
    }
    return;
  }
  create(options_.ptx);
}

void Linker::check_driver_options() const {
  const auto reject = [](const char* field) {
    throw std::invalid_argument(std::string("LinkerOptions::") + field +
                                " needs nvJitLink (12.3 or newer, of the driver's major "
                                "version); this Linker uses the driver's linker because " +
                                detail::nvjitlink_fallback_reason());
  };
  if (options_.link_time_optimization) {
    reject("link_time_optimization");
  }
  if (options_.ftz || options_.prec_div || options_.prec_sqrt || options_.fma) {
    reject("ftz/prec_div/prec_sqrt/fma");
  }
  if (!options_.extra_options.empty()) {
    reject("extra_options");
  }
  if (options_.time) {
    reject("time");
  }
  if (options_.optimize_unused_variables || !options_.kernels_used.empty() ||
      !options_.variables_used.empty()) {
    reject("optimize_unused_variables/kernels_used/variables_used");
  }
  if (!options_.ptxas_options.empty()) {
    reject("ptxas_options");
  }
  if (options_.split_compile || options_.split_compile_extended) {
    reject("split_compile/split_compile_extended");
  }
  if (options_.ptx) {
    reject("ptx");
  }
  if (options_.optimization_level &&
      (*options_.optimization_level < 0 || *options_.optimization_level > 4)) {
    throw std::invalid_argument("LinkerOptions::optimization_level must be 0..4, got " +
                                std::to_string(*options_.optimization_level));
  }
  if (options_.max_register_count && *options_.max_register_count <= 0) {
    throw std::invalid_argument("LinkerOptions::max_register_count must be > 0, got " +
                                std::to_string(*options_.max_register_count));
  }
  static_cast<void>(detail::resolve_arch(options_.arch, "LinkerOptions::arch"));
}

ObjectCode Linker::link_with_driver() {
  const std::string arch = detail::resolve_arch(options_.arch, "LinkerOptions::arch");
  // cuLinkCreate works in the current context: device 0's primary context for the link
  // when none is current (and none afterwards).
  const detail::ScopedCurrentOrPrimary scope(0);
  driver_info_log_.assign(kDriverLogSize, '\0');
  driver_error_log_.assign(kDriverLogSize, '\0');
  // Option values are passed as pointer-sized integers or pointers, as cuLinkCreate wants.
  std::vector<CUjit_option> keys;
  std::vector<void*> values;
  const auto add = [&](CUjit_option key, std::uintptr_t value) {
    keys.push_back(key);
    values.push_back(reinterpret_cast<void*>(value));  // NOLINT(performance-no-int-to-ptr)
  };
  add(CU_JIT_TARGET, driver_target(arch));
  add(CU_JIT_INFO_LOG_BUFFER, reinterpret_cast<std::uintptr_t>(driver_info_log_.data()));
  add(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, kDriverLogSize);
  add(CU_JIT_ERROR_LOG_BUFFER, reinterpret_cast<std::uintptr_t>(driver_error_log_.data()));
  add(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, kDriverLogSize);
  add(CU_JIT_LOG_VERBOSE, 1);  // always: the logs are kept (LinkerOptions::verbose too)
  if (options_.optimization_level) {
    add(CU_JIT_OPTIMIZATION_LEVEL, static_cast<std::uintptr_t>(*options_.optimization_level));
  }
  if (options_.no_cache) {
    add(CU_JIT_CACHE_MODE, CU_JIT_CACHE_OPTION_NONE);
  }
  if (options_.debug) {
    add(CU_JIT_GENERATE_DEBUG_INFO, 1);
  }
  if (options_.lineinfo) {
    add(CU_JIT_GENERATE_LINE_INFO, 1);
  }
  if (options_.max_register_count) {
    add(CU_JIT_MAX_REGISTERS, static_cast<std::uintptr_t>(*options_.max_register_count));
  }
  // The logs are written in place; keep each at its NUL-terminated length afterwards.
  const auto trim_logs = [this] {
    driver_info_log_.resize(std::strlen(driver_info_log_.c_str()));
    driver_error_log_.resize(std::strlen(driver_error_log_.c_str()));
  };
  CUlinkState state = nullptr;
  CUresult status = driver::raw::cuLinkCreate(static_cast<unsigned>(keys.size()), keys.data(),
                                              values.data(), &state);
  if (status != CUDA_SUCCESS) {
    trim_logs();
    detail::check(status, "cuLinkCreate");
  }
  std::string cubin;
  const char* failed = nullptr;
  for (std::size_t i = 0; i < inputs_.size() && status == CUDA_SUCCESS; ++i) {
    const ObjectCode& input = inputs_[i];
    const std::string name = input.name().empty() ? "input" + std::to_string(i) : input.name();
    const std::span<const char> code = input.code();
    // PTX must reach the driver NUL-terminated; ObjectCode keeps it in a std::string.
    const std::size_t size = input.code_type() == TargetType::Ptx ? code.size() + 1 : code.size();
    status =
        driver::raw::cuLinkAddData(state, driver_input_type(input), const_cast<char*>(code.data()),
                                   size, name.c_str(), 0, nullptr, nullptr);
    failed = "cuLinkAddData";
  }
  if (status == CUDA_SUCCESS) {
    void* out = nullptr;
    std::size_t out_size = 0;
    status = driver::raw::cuLinkComplete(state, &out, &out_size);
    failed = "cuLinkComplete";
    if (status == CUDA_SUCCESS) {
      cubin.assign(static_cast<const char*>(out), out_size);  // owned by the state
    }
  }
  detail::report_release_failure(driver::raw::cuLinkDestroy(state), "cuLinkDestroy", "Linker");
  trim_logs();
  if (status != CUDA_SUCCESS && !driver_error_log_.empty()) {
    throw DriverError::with_log(status, failed, driver_error_log_);  // the driver's reason
  }
  detail::check(status, failed);
  std::vector<std::pair<std::string, std::string>> lowered;
  for (const ObjectCode& input : inputs_) {
    const auto& expressions = input.name_expressions();
    lowered.insert(lowered.end(), expressions.begin(), expressions.end());
  }
  completed_ = true;
  return ObjectCode::from_parts(TargetType::Cubin, std::move(cubin), options_.name,
                                std::move(lowered));
}

Linker::Linker(Linker&& other) noexcept
    : inputs_(std::move(other.inputs_)),
      options_(std::move(other.options_)),
      handle_(std::exchange(other.handle_, nullptr)),
      created_with_ptx_(other.created_with_ptx_),
      completed_(other.completed_),
      use_driver_(other.use_driver_),
      closed_(std::exchange(other.closed_, true)),
      driver_info_log_(std::move(other.driver_info_log_)),
      driver_error_log_(std::move(other.driver_error_log_)) {}

Linker& Linker::operator=(Linker&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Linker::~Linker() { close(); }

void Linker::close() noexcept {
  if (handle_ != nullptr) {
    detail::report_release_failure(nvjitlink::raw::nvJitLinkDestroy(&handle_), "nvJitLinkDestroy",
                                   "Linker");
    handle_ = nullptr;
  }
  closed_ = true;
}

void Linker::require_open(const char* operation) const {
  if (closed_ || (!use_driver_ && handle_ == nullptr)) {
    throw std::logic_error(std::string("Linker::") + operation + " on a closed Linker");
  }
}

void Linker::create(bool ptx) {
  std::vector<std::string> options = options_.to_nvjitlink_options();
  std::erase(options, std::string("-ptx"));  // LinkerOptions::ptx: decided by `ptx`
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
    detail::report_release_failure(nvjitlink::raw::nvJitLinkDestroy(&handle), "nvJitLinkDestroy",
                                   "Linker");
    throw;
  }
  close();
  handle_ = handle;
  closed_ = false;
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
  if (use_driver_) {
    if (target != TargetType::Cubin) {
      throw std::invalid_argument("Linker::link: the driver linker (used because " +
                                  detail::nvjitlink_fallback_reason() +
                                  ") links to TargetType::Cubin only");
    }
    return link_with_driver();
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

std::string Linker::get_info_log() const {
  require_open("get_info_log");
  return use_driver_ ? driver_info_log_ : nvjitlink::nvJitLinkGetInfoLog(handle_);
}

std::string Linker::get_error_log() const {
  require_open("get_error_log");
  return use_driver_ ? driver_error_log_ : nvjitlink::nvJitLinkGetErrorLog(handle_);
}

std::string Linker::backend() const { return use_driver_ ? "driver" : "nvJitLink"; }

// ---- detail ----------------------------------------------------------------------

namespace detail {

namespace {

// Why the Linker uses the driver's linker ("" when nvJitLink is used), decided once.
const std::string& fallback_reason() noexcept {
  // nvJitLinkVersion arrived in nvJitLink 12.3: its absence means too old, and a library
  // that does not load fails the call the same way (raw:: never throws).
  static const std::string reason = []() -> std::string {
    unsigned major = 0;
    unsigned minor = 0;
    if (nvjitlink::raw::nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS ||
        major * 1000 + minor * 10 < 12030) {
      return "nvJitLink is absent or older than 12.3 (set CUWRAP_LIBNVJITLINK to its path)";
    }
    // As cuda.core: nvJitLink of another major version than the driver's produces code
    // the driver may not load, so the driver links (without LTO). No driver: nothing to
    // compare, nvJitLink links.
    int driver = 0;
    try {
      driver = driver_version();
    } catch (const std::exception&) {
      driver = 0;
    }
    if (driver != 0 && driver / 1000 != static_cast<int>(major)) {
      return "nvJitLink " + std::to_string(major) + "." + std::to_string(minor) +
             " is of another major version than the driver (" + std::to_string(driver / 1000) +
             "." + std::to_string(driver % 1000 / 10) + ")";
    }
    // The entry points are versioned symbols (__nvJitLinkCreate_12_4): a library of
    // another major version (CUWRAP_LIBNVJITLINK pointing elsewhere) may lack the ones
    // the bindings name. Only a handle that can be created counts as usable.
    const char* options[] = {"-arch=sm_90"};
    nvJitLinkHandle handle = nullptr;
    if (nvjitlink::raw::nvJitLinkCreate(&handle, 1, options) != NVJITLINK_SUCCESS) {
      return "nvJitLink " + std::to_string(major) + "." + std::to_string(minor) +
             " lacks the entry points the bindings name (another major version)";
    }
    detail::report_release_failure(nvjitlink::raw::nvJitLinkDestroy(&handle), "nvJitLinkDestroy",
                                   "Linker");
    return {};
  }();
  return reason;
}

}  // namespace

bool nvjitlink_usable() noexcept { return fallback_reason().empty(); }

std::string nvjitlink_fallback_reason() { return fallback_reason(); }

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
  // Only a missing driver (LoadError), a failing cuInit or no device at all mean "no
  // device": a failure after that (cuCtxGetCurrent, cuDeviceGet) is a DriverError of its own.
  const auto no_device = [what](const std::string& reason) {
    return std::invalid_argument(std::string(what) +
                                 " is required when no CUDA device is available (" + reason + ")");
  };
  try {
    ensure_driver_initialized();
  } catch (const Error& e) {
    throw no_device(e.what());
  }
  if (device_count() == 0) {
    throw no_device("no CUDA device is available");
  }
  const CUdevice device = current_or_default_device();
  const int major =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  const int minor =
      driver::cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace detail
}  // namespace cuwrap
