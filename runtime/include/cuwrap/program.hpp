// Program: compile CUDA C++ (NVRTC) or PTX (nvJitLink) into an ObjectCode.
//
// ProgramOptions map to NVRTC options as follows (ProgramOptions::to_nvrtc_options()):
//
// | ProgramOptions field               | NVRTC option                              |
// |------------------------------------|-------------------------------------------|
// | arch "sm_90" / "90" / "compute_90" | -arch=sm_90 (default: the current device) |
// | std = "c++17"                      | -std=c++17                                |
// | relocatable_device_code            | -rdc=true                                 |
// | debug                              | -G                                        |
// | lineinfo                           | -lineinfo                                 |
// | ftz = b                            | -ftz=true / -ftz=false                    |
// | prec_sqrt = b                      | -prec-sqrt=true / false                   |
// | prec_div = b                       | -prec-div=true / false                    |
// | fma = b                            | -fmad=true / false                        |
// | use_fast_math                      | -use_fast_math                            |
// | max_register_count = N             | -maxrregcount=N                           |
// | define_macro "NAME[=VALUE]"        | -DNAME[=VALUE]                            |
// | include_path dir                   | -I<dir>                                   |
// | link_time_optimization             | -dlto (also added for TargetType::Ltoir;  |
// |                                    | left out for TargetType::Ptx: real PTX)   |
// | extra_options                      | passed verbatim                           |
// | cuda.core's other options          | as each field's comment says (cuda.core's |
// |                                    | spelling); the pch fields need NVRTC 12.8 |
//
// When `arch` is not given it is the architecture of the current context's device, or
// of device 0 when no context is current; without a usable device it is required.
//
// Code types: CodeType::Cxx is compiled by NVRTC to PTX, CUBIN or LTO-IR (backend()
// "NVRTC"). CodeType::Ptx is assembled to CUBIN by nvJitLink (backend() "nvJitLink";
// the options arch, debug, lineinfo, max_register_count, ftz, prec_div, prec_sqrt, fma,
// link_time_optimization, ptxas_options, split_compile, time and no_cache apply, as
// the LinkerOptions of that name; setting any other field throws std::invalid_argument
// naming them, as for NVVM IR). CodeType::Nvvm is NVVM IR (LLVM text or bitcode)
// compiled by libNVVM to PTX or LTO-IR (backend() "NVVM"), with these options
// (ProgramOptions::to_nvvm_options()):
//
// | ProgramOptions field               | libNVVM option                            |
// |------------------------------------|-------------------------------------------|
// | arch "sm_90" / "90" / "compute_90" | -arch=compute_90 (default: the device's)  |
// | debug                              | -g                                        |
// | device_code_optimize = b           | -opt=3 / -opt=0                           |
// | ftz, prec_sqrt, prec_div, fma = b  | -ftz=1/0, -prec-sqrt=, -prec-div=, -fma=  |
// | link_time_optimization             | -gen-lto (also added for TargetType::Ltoir;|
// |                                    | left out for TargetType::Ptx: real PTX)   |
// | extra_options                      | passed verbatim                           |
//
// The other fields (std, relocatable_device_code, lineinfo, use_fast_math,
// max_register_count, define_macro, include_path and the NVRTC-only ones of cuda.core)
// have no libNVVM option: setting one for NVVM IR throws std::invalid_argument naming
// them. libNVVM is loaded at run time
// (libnvvm.so.4; CUWRAP_LIBNVVM names another file); where cuwrap was built without
// nvvm.h, an NVVM Program throws LoadError saying so.
#pragma once

#include <cuwrap/object_code.hpp>
#include <cuwrap/program_cache.hpp>

#include <nvrtc.h>

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

// nvvm.h's program type, declared here so that this header needs no nvvm.h (which a
// toolkit may lack).
struct _nvvmProgram;  // NOLINT(bugprone-reserved-identifier): nvvm.h's own name

namespace cuwrap {

/// Source kinds a Program accepts.
enum class CodeType {
  Cxx,   ///< CUDA C++, compiled by NVRTC
  Ptx,   ///< PTX, assembled by nvJitLink
  Nvvm,  ///< NVVM IR (LLVM text or bitcode), compiled by libNVVM
};

/// Compile options of a Program (cuda.core's ProgramOptions); see the table above.
struct ProgramOptions {
  std::string name = "default_program";  ///< program (source file) name in logs
  std::optional<std::string> arch{};     ///< "sm_90"; default: current device
  std::optional<std::string> std{};      ///< "c++17"
  bool relocatable_device_code = false;  ///< -rdc=true
  bool debug = false, lineinfo = false;  ///< -G, -lineinfo
  /// -ftz=, -prec-sqrt=, -prec-div=, -fmad= (true/false); unset leaves NVRTC's default.
  std::optional<bool> ftz{}, prec_sqrt{}, prec_div{}, fma{};
  bool use_fast_math = false;                ///< -use_fast_math
  std::optional<int> max_register_count{};   ///< -maxrregcount=N
  std::vector<std::string> define_macro{};   ///< "NAME" or "NAME=VALUE"
  std::vector<std::string> include_path{};   ///< `-I<dir>`
  std::vector<std::string> extra_options{};  ///< passed through verbatim
  bool link_time_optimization = false;       ///< -dlto

  /// \name cuda.core's other NVRTC options (NVRTC's own spelling in each comment)
  /// Kept after the fields above, so that designated initialisers written before
  /// still compile. Unset (false, empty) passes nothing.
  /// @{
  bool extensible_whole_program = false;            ///< --extensible-whole-program
  std::optional<bool> device_code_optimize{};       ///< --dopt=on (true); libNVVM -opt=3 / -opt=0
  std::vector<std::string> ptxas_options{};         ///< `--ptxas-options=<each>`
  bool extra_device_vectorization = false;          ///< --extra-device-vectorization
  bool gen_opt_lto = false;                         ///< --gen-opt-lto
  std::vector<std::string> undefine_macro{};        ///< `--undefine-macro=<each>`
  std::vector<std::string> pre_include{};           ///< `--pre-include=<each>`
  bool no_source_include = false;                   ///< --no-source-include
  std::optional<bool> builtin_move_forward{};       ///< --builtin-move-forward=true/false
  std::optional<bool> builtin_initializer_list{};   ///< --builtin-initializer-list=true/false
  bool disable_warnings = false;                    ///< --disable-warnings
  bool restrict = false;                            ///< --restrict
  bool device_as_default_execution_space = false;   ///< --device-as-default-execution-space
  bool device_int128 = false;                       ///< --device-int128
  bool device_float128 = false;                     ///< --device-float128
  std::optional<std::string> optimization_info{};   ///< `--optimization-info=<kind>`
  bool no_display_error_number = false;             ///< --no-display-error-number
  std::vector<int> diag_error{};                    ///< `--diag-error=<each>`
  std::vector<int> diag_suppress{};                 ///< `--diag-suppress=<each>`
  std::vector<int> diag_warn{};                     ///< `--diag-warn=<each>`
  std::optional<bool> brief_diagnostics{};          ///< --brief-diagnostics=true/false
  std::optional<std::string> time{};                ///< `--time=<csv file>`
  std::optional<int> split_compile{};               ///< --split-compile=N (0: all threads)
  bool fdevice_syntax_only = false;                 ///< --fdevice-syntax-only
  bool minimal = false;                             ///< --minimal
  bool no_cache = false;                            ///< --no-cache
  std::optional<std::string> fdevice_time_trace{};  ///< `--fdevice-time-trace=<file>`
  std::optional<std::string> frandom_seed{};        ///< `--frandom-seed=<seed>`
  std::optional<std::string> ofast_compile{};       ///< --Ofast-compile=0/min/mid/max
  bool pch = false;                                 ///< --pch (NVRTC 12.8)
  std::optional<std::string> create_pch{};          ///< `--create-pch=<file>` (NVRTC 12.8)
  std::optional<std::string> use_pch{};             ///< `--use-pch=<file>` (NVRTC 12.8)
  std::optional<std::string> pch_dir{};             ///< `--pch-dir=<dir>` (NVRTC 12.8)
  std::optional<bool> pch_verbose{};                ///< --pch-verbose=true/false (NVRTC 12.8)
  std::optional<bool> pch_messages{};               ///< --pch-messages=true/false (NVRTC 12.8)
  /// --instantiate-templates-in-pch=true/false (NVRTC 12.8)
  std::optional<bool> instantiate_templates_in_pch{};
  /// @}

  /// Return the NVRTC options these settings stand for (see the table above).
  ///
  /// Throws std::invalid_argument naming the field for a malformed arch, std, macro,
  /// or register count, and when no arch is given and no CUDA device is available.
  std::vector<std::string> to_nvrtc_options() const;

  /// Return the libNVVM options these settings stand for (see the second table above).
  ///
  /// Throws std::invalid_argument naming every set field that libNVVM has no option for,
  /// for a malformed arch, and when no arch is given and no CUDA device is available.
  std::vector<std::string> to_nvvm_options() const;
};

/// Where Program::compile writes its log and which cache it uses (cuda.core's `logs=`
/// and program cache), named so that neither is passed as a positional null pointer:
/// `prog.compile(TargetType::Cubin, {.cache = &cache})`.
struct CompileOptions {
  std::string* log = nullptr;     ///< receives the compile log (also on failure) when set
  ProgramCache* cache = nullptr;  ///< looked up first and filled on a miss when set
};

/// A CUDA C++, PTX or NVVM IR program that compiles to an ObjectCode; move-only owner
/// of the NVRTC (or libNVVM) program.
///
/// Example:
/// \code
///   cuwrap::Program prog(source, cuwrap::CodeType::Cxx, {.arch = "sm_90"});
///   std::vector<std::string> exprs{"vector_add<float>"};
///   cuwrap::ObjectCode obj = prog.compile(cuwrap::TargetType::Cubin, exprs);
///   cuwrap::Kernel k = obj.get_kernel("vector_add<float>");
/// \endcode
class Program {
 public:
  /// Create a program from `code` of kind `type`.
  ///
  /// For CodeType::Nvvm, `code` is NVVM IR as LLVM text (.ll) or bitcode (.bc), added to
  /// a libNVVM program as one module named options.name. Throws std::invalid_argument for
  /// empty PTX or NVVM IR, NvvmError when libNVVM rejects the module, and LoadError when
  /// libNVVM cannot be loaded (or cuwrap was built without nvvm.h).
  Program(std::string code, CodeType type, ProgramOptions options = {});
  Program(Program&& other) noexcept;
  Program& operator=(Program&& other) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  /// Destroy the NVRTC or libNVVM program.
  ~Program();

  /// Compile to `target`, registering `name_expressions` (e.g. "vector_add<float>").
  ///
  /// The lowered names of the expressions are stored in the returned ObjectCode, so
  /// get_kernel() accepts the expressions. `options.log`, when set, receives the compile
  /// log (also on failure). Throws NvrtcError whose log() holds NVRTC's log when the
  /// compilation fails, NvJitLinkError for PTX that does not assemble, NvvmError whose
  /// log() holds libNVVM's log for NVVM IR that does not verify or compile,
  /// std::invalid_argument for a target the code type cannot produce (NVVM IR: Ptx and
  /// Ltoir) and for name expressions with PTX or NVVM IR.
  ///
  /// With `options.cache`, the result is looked up first under a key made of the code, code
  /// type, every option (arch resolved), the target, the name expressions and the NVRTC
  /// and driver versions (program_cache_key()); a hit returns the stored code and log
  /// without compiling, a miss compiles and stores. Files pulled in through
  /// include_path are not part of the key: change define_macro or the name to tell
  /// the cache that they changed. C++ with an option that writes a file as a side
  /// effect (create_pch, time, fdevice_time_trace) throws std::invalid_argument with a
  /// cache: a hit would not write it.
  ObjectCode compile(TargetType target, std::span<const std::string> name_expressions,
                     const CompileOptions& options = {});
  /// Compile to `target` with name expressions written in place:
  /// `compile(TargetType::Cubin, {"vector_add<float>"}, {.log = &log})`; see above.
  ObjectCode compile(TargetType target, std::initializer_list<std::string> name_expressions = {},
                     const CompileOptions& options = {});
  /// Compile to `target` without name expressions: `compile(TargetType::Cubin,
  /// {.cache = &cache})`; see above.
  ObjectCode compile(TargetType target, const CompileOptions& options);
  /// Compile with the log and cache as positional pointers; compile(target,
  /// name_expressions, {.log = compile_log, .cache = program_cache}) says which is which.
  [[deprecated("pass {.log = log, .cache = cache} (CompileOptions)")]] ObjectCode compile(
      TargetType target, std::span<const std::string> name_expressions, std::string* compile_log,
      ProgramCache* program_cache = nullptr) {
    return compile(target, name_expressions, CompileOptions{compile_log, program_cache});
  }
  /// Compile with the log and cache as positional pointers; see the overload above.
  [[deprecated("pass {.log = log, .cache = cache} (CompileOptions)")]] ObjectCode compile(
      TargetType target, std::initializer_list<std::string> name_expressions,
      std::string* compile_log, ProgramCache* program_cache = nullptr) {
    return compile(target, name_expressions, CompileOptions{compile_log, program_cache});
  }
  /// Return the cache key compile(target, name_expressions, {.cache = ...}) uses: that of
  /// make_program_cache_key(code, code_type(), options(), target, name_expressions).
  ///
  /// Throws as make_program_cache_key does.
  std::string program_cache_key(TargetType target,
                                std::span<const std::string> name_expressions = {}) const;

  /// Return "NVRTC" for C++, "nvJitLink" (or "driver") for PTX and "NVVM" for NVVM IR.
  std::string backend() const;
  /// Return the source kind.
  CodeType code_type() const noexcept { return type_; }
  /// Return the options given at construction.
  const ProgramOptions& options() const noexcept { return options_; }
  /// Return the NVRTC program (nullptr for PTX and NVVM IR programs and once closed).
  nvrtcProgram handle() const noexcept { return program_; }
  /// Return the libNVVM program of an NVVM IR program (nvm.h's nvvmProgram; nullptr for
  /// C++ and PTX programs and once closed), as cuda.core's handle of the NVVM backend.
  _nvvmProgram* nvvm_handle() const noexcept { return nvvm_program_; }
  /// Compile an NVRTC program made elsewhere (nvrtcCreateProgram), as C++ of `options`;
  /// the caller destroys it, after the Program is gone.
  ///
  /// Its source is not known to cuwrap, so it compiles once (a second compile() throws
  /// std::logic_error) and has no cache key (compile with a cache and
  /// program_cache_key() throw std::logic_error). Throws std::invalid_argument for a
  /// null handle.
  static Program from_handle(nvrtcProgram handle, ProgramOptions options = {});
  /// Take over an NVRTC program made elsewhere: as from_handle, and close() (or the
  /// destructor) destroys it (nvrtcDestroyProgram).
  static Program adopt(nvrtcProgram handle, ProgramOptions options = {});
  /// Release the NVRTC program; idempotent. Any later compile() throws logic_error.
  void close() noexcept;
  /// Return whether the program is still usable (false after close or a move).
  bool is_open() const noexcept { return !closed_; }

 private:
  struct AdoptTag {};
  Program(AdoptTag /*tag*/, ProgramOptions options);
  void require_open(const char* operation) const;
  ObjectCode compile_cxx(TargetType target, std::span<const std::string> name_expressions,
                         std::string* log);
  ObjectCode compile_ptx(TargetType target, std::string* log);
  ObjectCode compile_nvvm(TargetType target, std::string* log);
  void create_nvvm_program();
  void destroy_nvvm_program() noexcept;
  ObjectCode compile_uncached(TargetType target, std::span<const std::string> name_expressions,
                              std::string* log);

  std::string code_;
  CodeType type_;
  ProgramOptions options_;
  nvrtcProgram program_ = nullptr;
  _nvvmProgram* nvvm_program_ = nullptr;  ///< nvvm.h's nvvmProgram (CodeType::Nvvm)
  bool compiled_ = false;  ///< program_ was compiled once; the next compile re-creates it
  bool closed_ = false;
  bool owning_ = true;    ///< close() destroys program_ (false: from_handle, not owning)
  bool adopted_ = false;  ///< from_handle: the source is unknown
};

/// Return the ProgramCache key of compiling `code` of `code_type` with `options` to
/// `target`, registering `name_expressions` (cuda.core's make_program_cache_key).
///
/// The key is what Program(code, code_type, options).compile(target, name_expressions,
/// log, cache) looks up, so a user who stores an ObjectCode under it with
/// ProgramCache::put(key, code) makes that compile a hit. It holds the code, the code
/// type, the program name and every NVRTC option (the architecture resolved: an empty
/// ProgramOptions::arch is the current device's), the target, the name expressions,
/// the NVRTC version, for PTX the assembler (nvJitLink and its version, or the
/// driver's linker) and the driver version. Files pulled in through include_path are
/// not part of it (as cuda.core's extra_digest: change define_macro or the name). The
/// order of the name expressions does not matter, nor, for PTX, the file named by
/// `time` (the linker is told -time).
///
/// Throws std::invalid_argument, before anything else, for a target the code type
/// cannot produce (C++: Ptx, Cubin, Ltoir; PTX: Ptx, Cubin; NVVM IR: Ptx, Ltoir), name
/// expressions with PTX or NVVM IR, an empty name expression, or, for C++, an option
/// that writes a file as a side effect (create_pch, time, fdevice_time_trace: a cache
/// hit would skip it); otherwise as ProgramOptions::to_nvrtc_options() (to_nvvm_options()
/// for NVVM IR) does.
std::string make_program_cache_key(std::string_view code, CodeType code_type,
                                   const ProgramOptions& options, TargetType target,
                                   std::span<const std::string> name_expressions = {});
/// Return the key as above, with name expressions written in place.
std::string make_program_cache_key(std::string_view code, CodeType code_type,
                                   const ProgramOptions& options, TargetType target,
                                   std::initializer_list<std::string> name_expressions);

}  // namespace cuwrap
