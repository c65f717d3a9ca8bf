// Releasing a driver object in the context it belongs to, for destructors and close().
#pragma once

#include <cuwrap/detail/context.hpp>
#include <cuwrap/error.hpp>

#include <cuda.h>

#include <optional>

namespace cuwrap::detail {

/// Run `destroy` (a raw driver call returning its CUresult) with `context` current, as the
/// driver requires of an object of that context (with none current it answers
/// CUDA_ERROR_INVALID_CONTEXT and the object stays); what was current before is restored.
/// Never throws: a failure goes to the release-failure handler, naming `function` and
/// `object`. A null `context` runs it in whatever context is current.
template <class Destroy>
void destroy_in(CUcontext context, const char* function, const char* object,
                Destroy&& destroy) noexcept {
  std::optional<ScopedContext> scope;
  if (context != nullptr) {
    try {
      scope.emplace(context);
    } catch (...) {
      report_current_exception(function, object);
    }
  }
  report_release_failure(destroy(), function, object);
}

}  // namespace cuwrap::detail
