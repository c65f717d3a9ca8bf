// Linker: link several ObjectCodes (CUBIN, PTX, LTO-IR, fatbin) with nvJitLink.
//
// LinkerOptions map to nvJitLink options as follows:
//
// | LinkerOptions field                | nvJitLink option                          |
// |------------------------------------|-------------------------------------------|
// | arch "sm_90" / "90" / "compute_90" | -arch=sm_90 (default: the current device) |
// | link_time_optimization             | -lto                                      |
// | debug                              | -g                                        |
// | lineinfo                           | -lineinfo                                 |
// | max_register_count = N             | -maxrregcount=N                           |
// | ftz, prec_div, prec_sqrt, fma = b  | -ftz=b, -prec-div=b, -prec-sqrt=b, -fma=b |
// | extra_options                      | passed verbatim                           |
// | (link(TargetType::Ptx))            | -ptx (needs -lto)                         |
//
// The nvJitLink handle is created and the inputs added in the constructor, so a bad
// input is reported there; link() completes the link. Linking to PTX needs -ptx at
// creation time, so link(TargetType::Ptx) re-creates the handle with it when needed.
//
// Driver fallback (as cuda.core does): when libnvJitLink cannot be loaded, is older
// than 12.3 (it lacks nvJitLinkVersion) or is of another major version than the driver
// (13.x with a 12.x driver), the Linker uses the driver's cuLinkCreate /
// cuLinkAddData / cuLinkComplete, and backend() returns "driver". The options map to
// CUjit_option as follows; the rest need nvJitLink and throw std::invalid_argument:
//
// | LinkerOptions field      | driver option                                         |
// |--------------------------|-------------------------------------------------------|
// | arch "sm_90" / "sm_90a"  | CU_JIT_TARGET = CU_TARGET_COMPUTE_90 / _90A           |
// | debug                    | CU_JIT_GENERATE_DEBUG_INFO = 1                        |
// | lineinfo                 | CU_JIT_GENERATE_LINE_INFO = 1                         |
// | max_register_count = N   | CU_JIT_MAX_REGISTERS = N                              |
// | (logs)                   | CU_JIT_INFO/ERROR_LOG_BUFFER (+ _SIZE_BYTES), verbose |
// | link_time_optimization, ftz, prec_div, prec_sqrt, fma, extra_options: nvJitLink only |
//
// The driver linker needs a context (device 0's primary context is made current when
// none is), so it runs in link(); the constructor only checks the options and inputs.
// It links CUBIN, PTX, fatbin, object and library inputs, to CUBIN only.
#pragma once

#include <cuwrap/object_code.hpp>

#include <nvJitLink.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {

/// Options of a Linker (cuda.core's LinkerOptions).
struct LinkerOptions {
  std::string name = "linker";               ///< name given to the linked ObjectCode
  std::optional<std::string> arch{};         ///< "sm_90"; default: the current device
  bool link_time_optimization = false;       ///< -lto
  bool debug = false;                        ///< -g
  bool lineinfo = false;                     ///< -lineinfo
  std::vector<std::string> extra_options{};  ///< passed through verbatim
  // Beyond cuda.core's LinkerOptions (kept last so positional initialisation still works).
  std::optional<int> max_register_count{};  ///< -maxrregcount=N
  /// -ftz=, -prec-div=, -prec-sqrt=, -fma= (true/false); unset leaves nvJitLink's default.
  std::optional<bool> ftz{}, prec_div{}, prec_sqrt{}, fma{};
  /// \name cuda.core's other LinkerOptions (nvJitLink's spelling in each comment)
  /// Kept last, so that initialisers written before still compile. With the driver's
  /// linker, verbose, optimization_level and no_cache map to CU_JIT_LOG_VERBOSE,
  /// CU_JIT_OPTIMIZATION_LEVEL and CU_JIT_CACHE_MODE; the others need nvJitLink and
  /// throw std::invalid_argument there.
  /// @{
  bool verbose = false;                         ///< -verbose
  std::optional<int> optimization_level{};      ///< `-O<n>,` 0..4
  bool time = false;                            ///< -time
  bool optimize_unused_variables = false;       ///< -optimize-unused-variables
  std::vector<std::string> ptxas_options{};     ///< `-Xptxas=<each>`
  std::optional<int> split_compile{};           ///< -split-compile=N (0: all threads)
  std::optional<int> split_compile_extended{};  ///< -split-compile-extended=N (LTO)
  std::vector<std::string> kernels_used{};      ///< `-kernels-used=<each>`
  std::vector<std::string> variables_used{};    ///< `-variables-used=<each>`
  bool no_cache = false;                        ///< -no-cache
  bool ptx = false;  ///< -ptx from creation on (link(TargetType::Ptx) adds it anyway)
  /// @} these settings stand for (see the table above).
  ///
  /// Throws std::invalid_argument for a malformed arch or when no arch is given and no
  /// CUDA device is available.
  std::vector<std::string> to_nvjitlink_options() const;
};

/// Links object codes into one CUBIN (or PTX, with link-time optimisation).
///
/// Example:
/// \code
///   cuwrap::Linker linker({obj_a, obj_b}, {.arch = "sm_90"});
///   cuwrap::ObjectCode linked = linker.link(cuwrap::TargetType::Cubin);
/// \endcode
class Linker {
 public:
  /// Create the link with `inputs` (at least one) and `options`.
  ///
  /// Throws std::invalid_argument for no inputs, NvJitLinkError (with the error log)
  /// when nvJitLink rejects an input.
  Linker(std::vector<ObjectCode> inputs, LinkerOptions options = {});
  Linker(Linker&& other) noexcept;
  Linker& operator=(Linker&& other) noexcept;
  Linker(const Linker&) = delete;
  Linker& operator=(const Linker&) = delete;
  /// Destroy the nvJitLink handle.
  ~Linker();

  /// Link the inputs into `target` (Cubin, or Ptx with link_time_optimization).
  ///
  /// Throws NvJitLinkError with the error log when linking fails (an undefined symbol,
  /// ...), std::invalid_argument for another target. With the driver backend a failure
  /// throws DriverError naming cuLinkAddData or cuLinkComplete whose log() holds the
  /// driver's reason. The logs also stay readable here (get_error_log()).
  ObjectCode link(TargetType target);

  /// Return the info log of nvJitLink or of the driver linker ("" before linking), as
  /// cuda.core's Linker.get_info_log().
  std::string get_info_log() const;
  /// Return the error log of nvJitLink or of the driver linker ("" when nothing failed),
  /// as cuda.core's Linker.get_error_log().
  std::string get_error_log() const;
  /// Return get_info_log() (the name before cuwrap followed cuda.core's).
  [[deprecated("use get_info_log()")]] std::string info_log() const { return get_info_log(); }
  /// Return get_error_log() (the name before cuwrap followed cuda.core's).
  [[deprecated("use get_error_log()")]] std::string error_log() const { return get_error_log(); }
  /// Return "nvJitLink", or "driver" when nvJitLink is absent or too old (see above).
  std::string backend() const;
  /// Return the options the linker was created with.
  const LinkerOptions& options() const noexcept { return options_; }
  /// Return the nvJitLink handle (nullptr with the driver backend and once closed).
  nvJitLinkHandle handle() const noexcept { return handle_; }
  /// Release the nvJitLink handle or the driver's link state; idempotent.
  void close() noexcept;
  /// Return whether the linker is still usable (false after close or a move).
  bool is_open() const noexcept { return !closed_ && (use_driver_ || handle_ != nullptr); }

 private:
  void create(bool ptx);
  void require_open(const char* operation) const;
  void check_driver_options() const;
  ObjectCode link_with_driver();

  std::vector<ObjectCode> inputs_;
  LinkerOptions options_;
  nvJitLinkHandle handle_ = nullptr;
  bool created_with_ptx_ = false;
  bool completed_ = false;
  bool use_driver_ = false;
  bool closed_ = false;
  std::string driver_info_log_;  ///< the driver linker's logs, kept after its state is gone
  std::string driver_error_log_;
};

namespace detail {

/// Return `arch` as "sm_NN[a|f]" ("sm_90", "90", "compute_90" → "sm_90").
///
/// Throws std::invalid_argument naming `what` and the value when it is malformed.
std::string normalize_arch(std::string_view arch, std::string_view what);

/// Return true when libnvJitLink loads, is 12.3 or newer and of the driver's major
/// version (decided once per process); otherwise Linker and PTX Programs use the
/// driver's linker, as cuda.core's.
bool nvjitlink_usable() noexcept;

/// Return why the Linker uses the driver's linker ("" when it uses nvJitLink).
std::string nvjitlink_fallback_reason();

/// Return `arch` normalised, or the current device's ("sm_90") when it is empty.
///
/// Throws std::invalid_argument "<what> is required when no CUDA device is available"
/// when libcuda does not load, cuInit fails or there is no device; a later driver
/// failure (finding the current device) is thrown as that call's DriverError.
std::string resolve_arch(const std::optional<std::string>& arch, std::string_view what);

}  // namespace detail
}  // namespace cuwrap
