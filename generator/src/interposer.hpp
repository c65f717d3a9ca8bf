// The interposer: a stand-in for libcuda (loaded through CUWRAP_LIBCUDA) that wraps
// every driver entry point it hands out, to inject faults, count live handles, trace
// calls and answer as an older driver. The engine is handwritten (interposer/src);
// what is generated here is its table: one wrapper per cuda.h function and ABI variant,
// the create/destroy pairs whose handles it counts, and the names of the statuses.
#pragma once

#include "render.hpp"
#include "rules.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cuwrap::gen {

/// How a function changes the set of live handles of one kind.
struct HandleEffect {
  std::string kind;       ///< "memory", "stream", ... (what the report prints)
  bool create = false;    ///< true: the call makes a handle; false: it releases one
  std::string param;      ///< the parameter that holds the handle
  bool by_value = false;  ///< a create keyed by an input's value (primary context retain)
};

/// Return the handle effect of driver function `name` ("cuMemAlloc"), if it has one.
std::optional<HandleEffect> handle_effect(const std::string& name);

/// Return true when the interposer wraps `function` (status-returning, not variadic,
/// not one of the entry points it implements itself).
bool interposer_wraps(const Function& function);

/// Render the interposer's table for the cuda.h library of `plan` with
/// templates/interposer.cpp.tpl; nullopt when the plan has no cuda.h.
/// \throws RenderFailure when the template fails or a handle rule names a parameter
///         the function does not have (cuda.h renamed it: the rule needs updating).
std::optional<OutputFile> render_interposer(const Plan& plan,
                                            const std::filesystem::path& template_dir);

}  // namespace cuwrap::gen
