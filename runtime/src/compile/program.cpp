// Program: NVRTC for CUDA C++, nvJitLink (through Linker) for PTX, libNVVM for NVVM IR.
#include "compile/option_text.hpp"

#include <cuwrap/error.hpp>
#include <cuwrap/linker.hpp>
#include <cuwrap/nvjitlink.hpp>
#include <cuwrap/nvrtc.hpp>
#if CUWRAP_HAS_NVVM
#include <cuwrap/nvvm.hpp>
#endif
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/detail/symbols.hpp>
#include <cuwrap/program.hpp>
#include <cuwrap/version.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuwrap {
namespace {

// A macro definition is NAME or NAME=VALUE with NAME an identifier.
void check_macro(const std::string& macro) {
  const std::string name = macro.substr(0, macro.find('='));
  const bool valid = !name.empty() &&
                     (std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_') &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                     });
  if (!valid) {
    throw std::invalid_argument("ProgramOptions::define_macro '" + macro +
                                "' is not NAME or NAME=VALUE");
  }
}

// Length-prefixed so that no choice of field contents can make two keys collide.
void append_field(std::string& out, std::string_view field) {
  out += '\n';
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
}

// A field appended by append_field, read back from `data` at `offset`.
std::optional<std::string> read_field(std::string_view data, std::size_t& offset) {
  if (offset >= data.size() || data[offset] != '\n') {
    return std::nullopt;
  }
  const std::size_t colon = data.find(':', offset);
  if (colon == std::string_view::npos || colon == offset + 1 || colon - offset > 21) {
    return std::nullopt;
  }
  std::size_t size = 0;
  for (std::size_t i = offset + 1; i < colon; ++i) {
    if (data[i] < '0' || data[i] > '9') {
      return std::nullopt;
    }
    size = size * 10 + static_cast<std::size_t>(data[i] - '0');
  }
  if (data.size() - (colon + 1) < size) {
    return std::nullopt;
  }
  offset = colon + 1 + size;
  return std::string(data.substr(colon + 1, size));
}

// The driver's version, or 0 where no driver is installed (NVRTC works without one).
int driver_version_or_zero() noexcept {
  try {
    return driver_version();
  } catch (const std::exception&) {
    return 0;
  }
}

// The first bytes of every ObjectCode entry a ProgramCache holds.
constexpr std::string_view kCachedProgramHeader = "cuwrap cached program 1";

struct CachedProgram {
  ObjectCode code;
  std::string log;
};

// The cache value: kind, name, compile log, name-expression pairs, then the code.
std::string encode_cached_program(const ObjectCode& code, const std::string& log) {
  std::string out(kCachedProgramHeader);
  append_field(out, to_string(code.code_type()));
  append_field(out, code.name());
  append_field(out, log);
  append_field(out, std::to_string(code.name_expressions().size()));
  for (const auto& [expression, lowered] : code.name_expressions()) {
    append_field(out, expression);
    append_field(out, lowered);
  }
  const std::span<const char> bytes = code.code();
  append_field(out, std::string_view(bytes.data(), bytes.size()));
  return out;
}

// Decode encode_cached_program's output; nothing for anything malformed (a miss).
std::optional<CachedProgram> decode_cached_program(std::string_view data) {
  if (!data.starts_with(kCachedProgramHeader)) {
    return std::nullopt;
  }
  std::size_t offset = kCachedProgramHeader.size();
  const auto kind = read_field(data, offset);
  auto name = read_field(data, offset);
  auto log = read_field(data, offset);
  const auto count_text = read_field(data, offset);
  if (!kind || !name || !log || !count_text || count_text->empty() || count_text->size() > 9 ||
      !std::all_of(count_text->begin(), count_text->end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::optional<TargetType> type;
  for (TargetType t : {TargetType::Ptx, TargetType::Cubin, TargetType::Ltoir, TargetType::Fatbin,
                       TargetType::Object, TargetType::Library}) {
    if (to_string(t) == *kind) {
      type = t;
    }
  }
  const std::size_t count = std::stoul(*count_text);
  std::vector<std::pair<std::string, std::string>> lowered;
  for (std::size_t i = 0; i < count; ++i) {
    auto expression = read_field(data, offset);
    auto symbol = read_field(data, offset);
    if (!expression || !symbol) {
      return std::nullopt;
    }
    lowered.emplace_back(std::move(*expression), std::move(*symbol));
  }
  auto code = read_field(data, offset);
  if (!type || !code || code->empty() || offset != data.size()) {
    return std::nullopt;
  }
  return CachedProgram{
      ObjectCode::from_parts(*type, std::move(*code), std::move(*name), std::move(lowered)),
      std::move(*log)};
}

// The ObjectCode entry under `key`: nothing for a miss, an entry that is not one
// (bytes put by hand, a damaged value) or, with `kind`, one of another kind.
std::optional<CachedProgram> get_cached_program(ProgramCache& cache, std::string_view key,
                                                std::optional<TargetType> kind) {
  std::optional<std::string> stored = cache.get(key);
  if (!stored) {
    return std::nullopt;
  }
  std::optional<CachedProgram> cached = decode_cached_program(*stored);
  if (!cached || (kind && cached->code.code_type() != *kind)) {
    return std::nullopt;
  }
  return cached;
}

std::string_view to_key_string(CodeType type) {
  switch (type) {
    case CodeType::Cxx:
      return "c++";
    case CodeType::Ptx:
      return "ptx";
    case CodeType::Nvvm:
      return "nvvm";
  }
  return "unknown";
}

// Refuse what no compile could do, before any key is built.
void check_cache_key_inputs(CodeType code_type, TargetType target,
                            std::span<const std::string> name_expressions) {
  constexpr const char* kWhere = "make_program_cache_key: ";
  if (code_type != CodeType::Cxx && code_type != CodeType::Ptx && code_type != CodeType::Nvvm) {
    throw std::invalid_argument(std::string(kWhere) + "code_type " +
                                std::to_string(static_cast<int>(code_type)) + " is not a CodeType");
  }
  const bool cxx = code_type == CodeType::Cxx;
  const bool nvvm = code_type == CodeType::Nvvm;
  const bool supported = nvvm ? (target == TargetType::Ptx || target == TargetType::Ltoir)
                              : (target == TargetType::Ptx || target == TargetType::Cubin ||
                                 (cxx && target == TargetType::Ltoir));
  const char* source = cxx ? "C++" : nvvm ? "NVVM IR" : "PTX";
  if (!supported) {
    throw std::invalid_argument(std::string(kWhere) + source + " does not compile to TargetType::" +
                                std::string(to_string(target)) +
                                (cxx    ? "; use Ptx, Cubin or Ltoir"
                                 : nvvm ? "; use Ptx or Ltoir"
                                        : "; use Ptx or Cubin"));
  }
  if (!cxx && !name_expressions.empty()) {
    throw std::invalid_argument(std::string(kWhere) +
                                "name_expressions need C++ source; the code is " + source);
  }
  for (std::size_t i = 0; i < name_expressions.size(); ++i) {
    if (name_expressions[i].empty()) {
      throw std::invalid_argument(std::string(kWhere) + "name_expressions[" + std::to_string(i) +
                                  "] is empty");
    }
  }
}

// Refuse the NVRTC options that write a file as a side effect of compiling: a cache hit
// skips the compile, so the file would silently not be written.
void check_no_side_effects(const ProgramOptions& options) {
  const auto refuse = [](bool set, const char* field) {
    if (set) {
      throw std::invalid_argument(
          std::string("make_program_cache_key: ProgramOptions::") + field +
          " writes a file as a side effect of compiling, which a cache hit would skip; "
          "compile without a cache");
    }
  };
  refuse(options.create_pch.has_value(), "create_pch");
  refuse(options.time.has_value(), "time");
  refuse(options.fdevice_time_trace.has_value(), "fdevice_time_trace");
}

// A text option must not be empty (NVRTC would read the next option as its value).
void check_text(const std::optional<std::string>& value, const char* field) {
  if (value && value->empty()) {
    throw std::invalid_argument(std::string("ProgramOptions::") + field + " is empty");
  }
}

// cuda.core's NVRTC options beyond the first table, spelled as cuda.core spells them.
void append_cuda_core_nvrtc_options(const ProgramOptions& o, std::vector<std::string>& options) {
  const auto on = [&](bool set, const char* option) {
    if (set) {
      options.emplace_back(option);
    }
  };
  const auto boolean = [&](const std::optional<bool>& value, const char* option) {
    if (value) {
      options.push_back(std::string(option) + "=" + detail::flag(*value));
    }
  };
  const auto text = [&](const std::optional<std::string>& value, const char* option,
                        const char* field) {
    check_text(value, field);
    if (value) {
      options.push_back(std::string(option) + "=" + *value);
    }
  };
  const auto each = [&](const std::vector<std::string>& values, const char* option,
                        const char* field) {
    for (const std::string& value : values) {
      if (value.empty()) {
        throw std::invalid_argument(std::string("ProgramOptions::") + field +
                                    " holds an empty entry");
      }
      options.push_back(std::string(option) + "=" + value);
    }
  };
  const auto numbers = [&](const std::vector<int>& values, const char* option) {
    for (const int value : values) {
      options.push_back(std::string(option) + "=" + std::to_string(value));
    }
  };
  on(o.extensible_whole_program, "--extensible-whole-program");
  on(o.device_code_optimize.value_or(false), "--dopt=on");
  each(o.ptxas_options, "--ptxas-options", "ptxas_options");
  on(o.extra_device_vectorization, "--extra-device-vectorization");
  on(o.gen_opt_lto, "--gen-opt-lto");
  each(o.undefine_macro, "--undefine-macro", "undefine_macro");
  each(o.pre_include, "--pre-include", "pre_include");
  on(o.no_source_include, "--no-source-include");
  boolean(o.builtin_move_forward, "--builtin-move-forward");
  boolean(o.builtin_initializer_list, "--builtin-initializer-list");
  on(o.disable_warnings, "--disable-warnings");
  on(o.restrict, "--restrict");
  on(o.device_as_default_execution_space, "--device-as-default-execution-space");
  on(o.device_int128, "--device-int128");
  on(o.device_float128, "--device-float128");
  text(o.optimization_info, "--optimization-info", "optimization_info");
  on(o.no_display_error_number, "--no-display-error-number");
  numbers(o.diag_error, "--diag-error");
  numbers(o.diag_suppress, "--diag-suppress");
  numbers(o.diag_warn, "--diag-warn");
  boolean(o.brief_diagnostics, "--brief-diagnostics");
  text(o.time, "--time", "time");
  if (o.split_compile) {
    if (*o.split_compile < 0) {
      throw std::invalid_argument("ProgramOptions::split_compile must be >= 0, got " +
                                  std::to_string(*o.split_compile));
    }
    options.push_back("--split-compile=" + std::to_string(*o.split_compile));
  }
  on(o.fdevice_syntax_only, "--fdevice-syntax-only");
  on(o.minimal, "--minimal");
  on(o.no_cache, "--no-cache");
  text(o.fdevice_time_trace, "--fdevice-time-trace", "fdevice_time_trace");
  text(o.frandom_seed, "--frandom-seed", "frandom_seed");
  if (o.ofast_compile && *o.ofast_compile != "0" && *o.ofast_compile != "min" &&
      *o.ofast_compile != "mid" && *o.ofast_compile != "max") {
    throw std::invalid_argument("ProgramOptions::ofast_compile '" + *o.ofast_compile +
                                R"(' is not "0", "min", "mid" or "max")");
  }
  text(o.ofast_compile, "--Ofast-compile", "ofast_compile");
  const bool wants_pch = o.pch || o.create_pch || o.use_pch || o.pch_dir || o.pch_verbose ||
                         o.pch_messages || o.instantiate_templates_in_pch;
  if (wants_pch) {
    const auto [major, minor] = nvrtc::nvrtcVersion();
    const int version = major * 1000 + minor * 10;
    if (version < 12080) {
      throw UnsupportedError("ProgramOptions' precompiled-header fields (pch, ...)", 12080, version,
                             "the installed NVRTC");
    }
  }
  on(o.pch, "--pch");
  text(o.create_pch, "--create-pch", "create_pch");
  text(o.use_pch, "--use-pch", "use_pch");
  text(o.pch_dir, "--pch-dir", "pch_dir");
  boolean(o.pch_verbose, "--pch-verbose");
  boolean(o.pch_messages, "--pch-messages");
  boolean(o.instantiate_templates_in_pch, "--instantiate-templates-in-pch");
}

// The fields set in `o` that a PTX Program (the linker) or libNVVM cannot be told, by
// name; `nvvm` tells which (libNVVM maps device_code_optimize, the linker
// ptxas_options, split_compile, time and no_cache).
std::string unmapped_fields(const ProgramOptions& o, bool nvvm) {
  std::string fields;
  const auto reject = [&](bool set, const char* field) {
    if (set) {
      fields += (fields.empty() ? "" : ", ") + std::string(field);
    }
  };
  reject(o.std.has_value(), "std");
  reject(o.relocatable_device_code, "relocatable_device_code");
  reject(nvvm && o.lineinfo, "lineinfo");
  reject(o.use_fast_math, "use_fast_math");
  reject(nvvm && o.max_register_count.has_value(), "max_register_count");
  reject(!o.define_macro.empty(), "define_macro");
  reject(!o.include_path.empty(), "include_path");
  reject(!nvvm && !o.extra_options.empty(), "extra_options");
  reject(o.extensible_whole_program, "extensible_whole_program");
  reject(!nvvm && o.device_code_optimize.has_value(), "device_code_optimize");
  reject(nvvm && !o.ptxas_options.empty(), "ptxas_options");
  reject(o.extra_device_vectorization, "extra_device_vectorization");
  reject(o.gen_opt_lto, "gen_opt_lto");
  reject(!o.undefine_macro.empty(), "undefine_macro");
  reject(!o.pre_include.empty(), "pre_include");
  reject(o.no_source_include, "no_source_include");
  reject(o.builtin_move_forward.has_value(), "builtin_move_forward");
  reject(o.builtin_initializer_list.has_value(), "builtin_initializer_list");
  reject(o.disable_warnings, "disable_warnings");
  reject(o.restrict, "restrict");
  reject(o.device_as_default_execution_space, "device_as_default_execution_space");
  reject(o.device_int128, "device_int128");
  reject(o.device_float128, "device_float128");
  reject(o.optimization_info.has_value(), "optimization_info");
  reject(o.no_display_error_number, "no_display_error_number");
  reject(!o.diag_error.empty(), "diag_error");
  reject(!o.diag_suppress.empty(), "diag_suppress");
  reject(!o.diag_warn.empty(), "diag_warn");
  reject(o.brief_diagnostics.has_value(), "brief_diagnostics");
  reject(nvvm && o.time.has_value(), "time");
  reject(nvvm && o.split_compile.has_value(), "split_compile");
  reject(o.fdevice_syntax_only, "fdevice_syntax_only");
  reject(o.minimal, "minimal");
  reject(nvvm && o.no_cache, "no_cache");
  reject(o.fdevice_time_trace.has_value(), "fdevice_time_trace");
  reject(o.frandom_seed.has_value(), "frandom_seed");
  reject(o.ofast_compile.has_value(), "ofast_compile");
  reject(o.pch, "pch");
  reject(o.create_pch.has_value(), "create_pch");
  reject(o.use_pch.has_value(), "use_pch");
  reject(o.pch_dir.has_value(), "pch_dir");
  reject(o.pch_verbose.has_value(), "pch_verbose");
  reject(o.pch_messages.has_value(), "pch_messages");
  reject(o.instantiate_templates_in_pch.has_value(), "instantiate_templates_in_pch");
  return fields;
}

nvrtcProgram create_nvrtc_program(const std::string& code, const std::string& name) {
  return nvrtc::nvrtcCreateProgram(code.c_str(), name.c_str(), 0, nullptr, nullptr);
}

}  // namespace

// ---- ProgramOptions --------------------------------------------------------------

std::vector<std::string> ProgramOptions::to_nvrtc_options() const {
  std::vector<std::string> options;
  options.push_back("-arch=" + detail::resolve_arch(arch, "ProgramOptions::arch"));
  if (std) {
    if (std->empty()) {
      throw std::invalid_argument("ProgramOptions::std is empty; expected e.g. \"c++17\"");
    }
    options.push_back("-std=" + *std);
  }
  if (relocatable_device_code) {
    options.emplace_back("-rdc=true");
  }
  if (debug) {
    options.emplace_back("-G");
  }
  if (lineinfo) {
    options.emplace_back("-lineinfo");
  }
  if (ftz) {
    options.push_back(std::string("-ftz=") + detail::flag(*ftz));
  }
  if (prec_sqrt) {
    options.push_back(std::string("-prec-sqrt=") + detail::flag(*prec_sqrt));
  }
  if (prec_div) {
    options.push_back(std::string("-prec-div=") + detail::flag(*prec_div));
  }
  if (fma) {
    options.push_back(std::string("-fmad=") + detail::flag(*fma));
  }
  if (use_fast_math) {
    options.emplace_back("-use_fast_math");
  }
  if (max_register_count) {
    if (*max_register_count <= 0) {
      throw std::invalid_argument("ProgramOptions::max_register_count must be > 0, got " +
                                  std::to_string(*max_register_count));
    }
    options.push_back("-maxrregcount=" + std::to_string(*max_register_count));
  }
  for (const auto& macro : define_macro) {
    check_macro(macro);
    options.push_back("-D" + macro);
  }
  for (const auto& dir : include_path) {
    if (dir.empty()) {
      throw std::invalid_argument("ProgramOptions::include_path holds an empty directory");
    }
    options.push_back("-I" + dir);
  }
  if (link_time_optimization) {
    options.emplace_back("-dlto");
  }
  append_cuda_core_nvrtc_options(*this, options);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

std::vector<std::string> ProgramOptions::to_nvvm_options() const {
  // What libNVVM cannot be told: named all at once, so one fix suffices.
  const std::string unsupported = unmapped_fields(*this, true);
  if (!unsupported.empty()) {
    throw std::invalid_argument("ProgramOptions: libNVVM (CodeType::Nvvm) has no option for " +
                                unsupported + "; leave them unset for NVVM IR");
  }
  // libNVVM names virtual architectures: sm_90 → compute_90 (sm_90a → compute_90a).
  const std::string arch_name = detail::resolve_arch(arch, "ProgramOptions::arch");
  std::vector<std::string> options{"-arch=compute_" + arch_name.substr(3)};
  if (debug) {
    options.emplace_back("-g");
  }
  if (device_code_optimize) {
    options.emplace_back(*device_code_optimize ? "-opt=3" : "-opt=0");
  }
  // libNVVM spells booleans 1 and 0.
  const auto bit = [](bool value) { return value ? "1" : "0"; };
  if (ftz) {
    options.push_back(std::string("-ftz=") + bit(*ftz));
  }
  if (prec_sqrt) {
    options.push_back(std::string("-prec-sqrt=") + bit(*prec_sqrt));
  }
  if (prec_div) {
    options.push_back(std::string("-prec-div=") + bit(*prec_div));
  }
  if (fma) {
    options.push_back(std::string("-fma=") + bit(*fma));
  }
  if (link_time_optimization) {
    options.emplace_back("-gen-lto");
  }
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

// ---- Program ---------------------------------------------------------------------

Program::Program(std::string code, CodeType type, ProgramOptions options)
    : code_(std::move(code)), type_(type), options_(std::move(options)) {
  switch (type_) {
    case CodeType::Cxx:
      program_ = create_nvrtc_program(code_, options_.name);
      break;
    case CodeType::Ptx:
      if (code_.empty()) {
        throw std::invalid_argument("Program: the PTX code is empty");
      }
      break;
    case CodeType::Nvvm:
      if (code_.empty()) {
        throw std::invalid_argument("Program: the NVVM IR is empty");
      }
      create_nvvm_program();
      break;
  }
}

void Program::create_nvvm_program() {
#if CUWRAP_HAS_NVVM
  nvvmProgram program = nvvm::nvvmCreateProgram();
  try {
    nvvm::nvvmAddModuleToProgram(program, code_.data(), code_.size(), options_.name.c_str());
  } catch (...) {
    detail::report_release_failure(nvvm::raw::nvvmDestroyProgram(&program), "nvvmDestroyProgram",
                                   "Program");
    throw;
  }
  nvvm_program_ = program;
#else
  // Built without nvvm.h: the loader's LoadError says that the header was missing.
  static_cast<void>(detail::resolve_entry(detail::Library::Nvvm, 0, false));
  throw LoadError(detail::kLibraries[static_cast<std::size_t>(detail::Library::Nvvm)].soname, "",
                  "cuwrap: nvvm.h was not found when cuwrap was built; NVVM IR cannot be "
                  "compiled");
#endif
}

void Program::destroy_nvvm_program() noexcept {
#if CUWRAP_HAS_NVVM
  if (nvvm_program_ != nullptr) {
    nvvmProgram program = nvvm_program_;
    detail::report_release_failure(nvvm::raw::nvvmDestroyProgram(&program), "nvvmDestroyProgram",
                                   "Program");
  }
#endif
  nvvm_program_ = nullptr;
}

Program::Program(Program&& other) noexcept
    : code_(std::move(other.code_)),
      type_(other.type_),
      options_(std::move(other.options_)),
      program_(std::exchange(other.program_, nullptr)),
      nvvm_program_(std::exchange(other.nvvm_program_, nullptr)),
      compiled_(other.compiled_),
      closed_(std::exchange(other.closed_, true)),
      owning_(other.owning_),
      adopted_(other.adopted_) {}

Program& Program::operator=(Program&& other) noexcept {
  return detail::move_assign(*this, std::move(other));
}

Program::~Program() { close(); }

Program::Program(AdoptTag /*tag*/, ProgramOptions options)
    : type_(CodeType::Cxx), options_(std::move(options)) {}

Program Program::from_handle(nvrtcProgram handle, ProgramOptions options) {
  if (handle == nullptr) {
    throw std::invalid_argument("Program::from_handle: handle is nullptr");
  }
  Program program(AdoptTag{}, std::move(options));
  program.program_ = handle;
  program.owning_ = false;
  program.adopted_ = true;
  return program;
}

Program Program::adopt(nvrtcProgram handle, ProgramOptions options) {
  if (handle == nullptr) {
    throw std::invalid_argument("Program::adopt: handle is nullptr");
  }
  Program program = from_handle(handle, std::move(options));
  program.owning_ = true;
  return program;
}

void Program::close() noexcept {
  if (program_ != nullptr && !owning_) {
    program_ = nullptr;  // the caller's to destroy
  }
  if (program_ != nullptr) {
    detail::report_release_failure(nvrtc::raw::nvrtcDestroyProgram(&program_),
                                   "nvrtcDestroyProgram", "Program");
    program_ = nullptr;
  }
  destroy_nvvm_program();
  closed_ = true;
}

void Program::require_open(const char* operation) const {
  if (closed_) {
    throw std::logic_error(std::string("Program::") + operation + " on a closed Program");
  }
}

std::string Program::backend() const {
  if (type_ == CodeType::Nvvm) {
    return "NVVM";
  }
  if (type_ != CodeType::Ptx) {
    return "NVRTC";
  }
  return detail::nvjitlink_usable() ? "nvJitLink" : "driver";
}

ObjectCode Program::compile(TargetType target, const CompileOptions& options) {
  return compile(target, std::span<const std::string>{}, options);
}

ObjectCode Program::compile(TargetType target, std::span<const std::string> name_expressions,
                            const CompileOptions& options) {
  require_open("compile");
  std::string* const log = options.log;
  ProgramCache* const cache = options.cache;
  if (cache == nullptr) {
    return compile_uncached(target, name_expressions, log);
  }
  const std::string key = program_cache_key(target, name_expressions);
  if (std::optional<CachedProgram> cached = get_cached_program(*cache, key, target)) {
    if (log != nullptr) {
      *log = std::move(cached->log);
    }
    return std::move(cached->code);
  }
  std::string compile_log;
  ObjectCode code = compile_uncached(target, name_expressions, &compile_log);
  cache->put(key, encode_cached_program(code, compile_log));
  if (log != nullptr) {
    *log = std::move(compile_log);
  }
  return code;
}

std::string Program::program_cache_key(TargetType target,
                                       std::span<const std::string> name_expressions) const {
  require_open("program_cache_key");
  if (adopted_) {
    throw std::logic_error(
        "Program::program_cache_key: a Program from from_handle has no cache key (its source "
        "is not known)");
  }
  return make_program_cache_key(code_, type_, options_, target, name_expressions);
}

ObjectCode Program::compile_uncached(TargetType target,
                                     std::span<const std::string> name_expressions,
                                     std::string* log) {
  if (type_ == CodeType::Ptx || type_ == CodeType::Nvvm) {
    if (!name_expressions.empty()) {
      throw std::invalid_argument(
          std::string("Program::compile: name_expressions need C++ source; this program holds ") +
          (type_ == CodeType::Ptx ? "PTX" : "NVVM IR"));
    }
    return type_ == CodeType::Ptx ? compile_ptx(target, log) : compile_nvvm(target, log);
  }
  return compile_cxx(target, name_expressions, log);
}

ObjectCode Program::compile(TargetType target, std::initializer_list<std::string> name_expressions,
                            const CompileOptions& options) {
  return compile(target,
                 std::span<const std::string>(name_expressions.begin(), name_expressions.size()),
                 options);
}

ObjectCode Program::compile_cxx(TargetType target, std::span<const std::string> name_expressions,
                                std::string* log) {
  if (target != TargetType::Ptx && target != TargetType::Cubin && target != TargetType::Ltoir) {
    throw std::invalid_argument("Program::compile: NVRTC cannot produce TargetType::" +
                                std::string(to_string(target)) + "; use Ptx, Cubin or Ltoir");
  }
  std::vector<std::string> options = options_.to_nvrtc_options();
  if (target == TargetType::Ltoir && !options_.link_time_optimization) {
    options.emplace_back("-dlto");
  }
  if (target == TargetType::Ptx) {
    // As cuda.core, PTX is PTX also with link_time_optimization: -dlto would make NVRTC
    // produce LTO-IR and no PTX at all.
    std::erase(options, std::string("-dlto"));
  }
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const auto& option : options) {
    pointers.push_back(option.c_str());
  }
  // Name expressions are registered before compiling; a program compiles once, so a
  // second compile() starts from a fresh NVRTC program.
  if (compiled_ && adopted_) {
    throw std::logic_error(
        "Program::compile: a Program from from_handle compiles once (its source is not known, "
        "so no fresh NVRTC program can be made)");
  }
  if (compiled_) {
    nvrtcProgram fresh = create_nvrtc_program(code_, options_.name);
    detail::report_release_failure(nvrtc::raw::nvrtcDestroyProgram(&program_),
                                   "nvrtcDestroyProgram", "Program");
    program_ = fresh;
    compiled_ = false;
  }
  for (const auto& expression : name_expressions) {
    nvrtc::nvrtcAddNameExpression(program_, expression.c_str());
  }
  compiled_ = true;
  try {
    nvrtc::nvrtcCompileProgram(program_, static_cast<int>(pointers.size()), pointers.data());
  } catch (const NvrtcError& e) {
    if (log != nullptr) {
      *log = e.log();
    }
    throw;
  }
  if (log != nullptr) {
    *log = nvrtc::nvrtcGetProgramLog(program_);
  }
  std::vector<std::pair<std::string, std::string>> lowered;
  lowered.reserve(name_expressions.size());
  for (const auto& expression : name_expressions) {
    lowered.emplace_back(expression, nvrtc::nvrtcGetLoweredName(program_, expression.c_str()));
  }
  std::string code;
  switch (target) {
    case TargetType::Ptx:
      code = nvrtc::nvrtcGetPTX(program_);
      break;
    case TargetType::Cubin: {
      const std::vector<char> cubin = nvrtc::nvrtcGetCUBIN(program_);
      code.assign(cubin.begin(), cubin.end());
      break;
    }
    case TargetType::Ltoir: {
      const std::vector<char> ltoir = nvrtc::nvrtcGetLTOIR(program_);
      code.assign(ltoir.begin(), ltoir.end());
      break;
    }
    case TargetType::Fatbin:
    case TargetType::Object:
    case TargetType::Library:
      break;  // rejected above
  }
  if (target == TargetType::Ptx) {
    // The PTX size includes the terminating NUL; keep the text only.
    if (const auto nul = code.find('\0'); nul != std::string::npos) {
      code.resize(nul);
    }
  }
  return ObjectCode::from_parts(target, std::move(code), options_.name, std::move(lowered));
}

ObjectCode Program::compile_ptx(TargetType target, std::string* log) {
  // What the linker cannot be told: named all at once, as for NVVM IR.
  if (const std::string unmapped = unmapped_fields(options_, false); !unmapped.empty()) {
    throw std::invalid_argument("ProgramOptions: a PTX Program (the linker) has no option for " +
                                unmapped + "; leave them unset for PTX");
  }
  if (target == TargetType::Ptx) {
    return ObjectCode::from_ptx(code_, options_.name);
  }
  if (target != TargetType::Cubin) {
    throw std::invalid_argument(
        "Program::compile: PTX compiles to TargetType::Cubin (or Ptx), "
        "not " +
        std::string(to_string(target)));
  }
  LinkerOptions link_options;
  link_options.name = options_.name;
  link_options.arch = detail::resolve_arch(options_.arch, "ProgramOptions::arch");
  link_options.link_time_optimization = options_.link_time_optimization;
  link_options.debug = options_.debug;
  link_options.lineinfo = options_.lineinfo;
  link_options.max_register_count = options_.max_register_count;
  link_options.ftz = options_.ftz;
  link_options.prec_div = options_.prec_div;
  link_options.prec_sqrt = options_.prec_sqrt;
  link_options.fma = options_.fma;
  link_options.ptxas_options = options_.ptxas_options;
  link_options.split_compile = options_.split_compile;
  link_options.time = options_.time.has_value();  // as cuda.core: any value asks for -time
  link_options.no_cache = options_.no_cache;
  try {
    Linker linker({ObjectCode::from_ptx(code_, options_.name)}, std::move(link_options));
    ObjectCode result = linker.link(TargetType::Cubin);
    if (log != nullptr) {
      *log = linker.get_info_log();
    }
    return result;
  } catch (const NvJitLinkError& e) {
    if (log != nullptr) {
      *log = e.log();
    }
    throw;
  }
}

ObjectCode Program::compile_nvvm(TargetType target, std::string* log) {
  if (target != TargetType::Ptx && target != TargetType::Ltoir) {
    throw std::invalid_argument("Program::compile: libNVVM cannot produce TargetType::" +
                                std::string(to_string(target)) + "; use Ptx or Ltoir");
  }
  std::vector<std::string> options = options_.to_nvvm_options();
  if (target == TargetType::Ltoir && !options_.link_time_optimization) {
    options.emplace_back("-gen-lto");
  }
  if (target == TargetType::Ptx) {
    // PTX is PTX also with link_time_optimization: -gen-lto would make libNVVM produce
    // LTO bitcode instead.
    std::erase(options, std::string("-gen-lto"));
  }
#if CUWRAP_HAS_NVVM
  std::vector<const char*> pointers;
  pointers.reserve(options.size());
  for (const auto& option : options) {
    pointers.push_back(option.c_str());
  }
  // A libNVVM program is compiled once: a second compile() starts from a fresh one.
  if (compiled_) {
    destroy_nvvm_program();
    create_nvvm_program();
    compiled_ = false;
  }
  compiled_ = true;
  const int count = static_cast<int>(pointers.size());
  try {
    // As cuda.core does: verify first, so that malformed IR reports the verifier's log.
    nvvm::nvvmVerifyProgram(nvvm_program_, count, pointers.data());
    nvvm::nvvmCompileProgram(nvvm_program_, count, pointers.data());
  } catch (const NvvmError& e) {
    if (log != nullptr) {
      *log = e.log();
    }
    throw;
  }
  if (log != nullptr) {
    *log = nvvm::nvvmGetProgramLog(nvvm_program_);
  }
  const std::vector<char> result = nvvm::nvvmGetCompiledResult(nvvm_program_);
  std::string code(result.begin(), result.end());
  if (target == TargetType::Ptx) {
    // The size includes the terminating NUL; keep the text only.
    if (const auto nul = code.find('\0'); nul != std::string::npos) {
      code.resize(nul);
    }
  }
  return ObjectCode::from_parts(target, std::move(code), options_.name, {});
#else
  static_cast<void>(log);
  create_nvvm_program();  // throws the LoadError naming nvvm.h
  return ObjectCode::from_ptx(code_, options_.name);
#endif
}

// ---- cache keys and entries ------------------------------------------------------

std::string make_program_cache_key(std::string_view code, CodeType code_type,
                                   const ProgramOptions& options, TargetType target,
                                   std::span<const std::string> name_expressions) {
  check_cache_key_inputs(code_type, target, name_expressions);
  if (code_type == CodeType::Cxx) {
    check_no_side_effects(options);
  }
  std::string key = "cuwrap program cache key 1";
  append_field(key, to_key_string(code_type));
  append_field(key, code);
  append_field(key, options.name);
  for (std::string& option :
       code_type == CodeType::Nvvm ? options.to_nvvm_options() : options.to_nvrtc_options()) {
    if (code_type == CodeType::Ptx && option.starts_with("--time=")) {
      option = "--time";  // the linker is told -time, whatever the file: one output
    }
    append_field(key, option);
  }
  append_field(key, "target");
  append_field(key, to_string(target));
  // The order of the name expressions changes neither the code nor the lowered names.
  std::vector<std::string_view> sorted_names(name_expressions.begin(), name_expressions.end());
  std::sort(sorted_names.begin(), sorted_names.end());
  for (const std::string_view expression : sorted_names) {
    append_field(key, expression);
  }
  if (code_type == CodeType::Nvvm) {
#if CUWRAP_HAS_NVVM
    // libNVVM's version decides the output.
    const auto [nvvm_major, nvvm_minor] = nvvm::nvvmVersion();
    append_field(key, "nvvm " + std::to_string(nvvm_major) + "." + std::to_string(nvvm_minor));
#endif
    append_field(key, "driver " + std::to_string(driver_version_or_zero()));
    return key;
  }
  const auto [major, minor] = nvrtc::nvrtcVersion();
  append_field(key, "nvrtc " + std::to_string(major) + "." + std::to_string(minor));
  if (code_type == CodeType::Ptx) {
    // PTX is assembled by nvJitLink or the driver: its version decides the output.
    unsigned link_major = 0;
    unsigned link_minor = 0;
    if (detail::nvjitlink_usable() &&
        nvjitlink::raw::nvJitLinkVersion(&link_major, &link_minor) == NVJITLINK_SUCCESS) {
      append_field(key,
                   "nvJitLink " + std::to_string(link_major) + "." + std::to_string(link_minor));
    } else {
      append_field(key, "driver linker");
    }
  }
  append_field(key, "driver " + std::to_string(driver_version_or_zero()));
  return key;
}

std::string make_program_cache_key(std::string_view code, CodeType code_type,
                                   const ProgramOptions& options, TargetType target,
                                   std::initializer_list<std::string> name_expressions) {
  return make_program_cache_key(
      code, code_type, options, target,
      std::span<const std::string>(name_expressions.begin(), name_expressions.size()));
}

// ProgramCache's ObjectCode entries live here, next to the format Program::compile
// writes, so that both flows share it.
void ProgramCache::put(std::string_view key, const ObjectCode& code) {
  if (key.empty()) {
    throw std::invalid_argument("ProgramCache::put: the key is empty");
  }
  put(key, std::string_view(encode_cached_program(code, "")));
}

std::optional<ObjectCode> ProgramCache::get_object_code(std::string_view key) {
  std::optional<CachedProgram> cached = get_cached_program(*this, key, std::nullopt);
  if (!cached) {
    return std::nullopt;
  }
  return std::move(cached->code);
}

}  // namespace cuwrap
