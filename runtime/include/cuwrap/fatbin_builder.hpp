// FatbinBuilder: a fat binary made at run time from cubins, PTX and LTO-IR (nvFatbin).
//
// Exists where the build has nvFatbin.h and its generated bindings (CUWRAP_HAS_NVFATBIN);
// docs/nvfatbin.md says where they come from.
#pragma once

#include <cuwrap/error.hpp>

#if CUWRAP_HAS_NVFATBIN
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuwrap {

/// Builds a fat binary (the bytes ObjectCode::from_fatbin loads) from code for several
/// architectures, through nvFatbin.
///
/// Example:
/// \code
///   cuwrap::FatbinBuilder builder;
///   builder.add_cubin(cubin_sm80, "sm_80").add_cubin(cubin_sm90, "sm_90");
///   const std::vector<char> image = builder.build();
///   auto code = cuwrap::ObjectCode::from_fatbin(std::as_bytes(std::span(image)), "kernels");
/// \endcode
class FatbinBuilder {
 public:
  /// Create an empty fat binary with nvFatbin's `options` ("-64", "-compress=true", ...).
  /// \throws NvFatbinError when nvFatbinCreate refuses them; LoadError without libnvfatbin.
  explicit FatbinBuilder(std::span<const std::string> options = {});
  FatbinBuilder(FatbinBuilder&& other) noexcept;
  FatbinBuilder& operator=(FatbinBuilder&& other) noexcept;
  FatbinBuilder(const FatbinBuilder&) = delete;
  FatbinBuilder& operator=(const FatbinBuilder&) = delete;
  /// Destroy the nvFatbin handle (a failure goes to the release-failure handler).
  ~FatbinBuilder();

  /// Add a cubin for `arch` ("sm_80" or "80"), labelled `identifier` in nvFatbin's messages.
  /// \throws std::invalid_argument for an empty `cubin` or `arch`; NvFatbinError.
  FatbinBuilder& add_cubin(std::span<const char> cubin, std::string_view arch,
                           std::string_view identifier = "cubin");
  /// Add PTX text for `arch` ("sm_80", "compute_80" or "80"), compiled by nvFatbin with
  /// `options` (ptxas options, e.g. "-O3"; "" for none).
  /// \throws std::invalid_argument for empty `ptx` or `arch`; NvFatbinError.
  FatbinBuilder& add_ptx(std::string_view ptx, std::string_view arch,
                         std::string_view identifier = "ptx", std::string_view options = "");
  /// Add LTO-IR for `arch` ("sm_80" or "80"), with `options` ("" for none).
  /// \throws std::invalid_argument for an empty `ltoir` or `arch`; NvFatbinError.
  FatbinBuilder& add_ltoir(std::span<const char> ltoir, std::string_view arch,
                           std::string_view identifier = "ltoir", std::string_view options = "");

  /// Return the fat binary holding everything added so far.
  /// \throws NvFatbinError (e.g. when nothing was added).
  std::vector<char> build() const;

  /// Return the nvFatbin handle, for the cuwrap::nvfatbin forms the builder does not cover.
  nvFatbinHandle handle() const noexcept { return handle_; }

 private:
  nvFatbinHandle handle_ = nullptr;
};

}  // namespace cuwrap
#endif  // CUWRAP_HAS_NVFATBIN
