// Which CUcontexts are green contexts that cuwrap made and that are alive: what
// ContextRef::is_green asks (the driver has no query for it). Internal to execution.
#pragma once

#include <cuda.h>

namespace cuwrap::detail {

/// Return whether `context` is a green context made by Device::create_context that is
/// not destroyed yet. Never throws.
bool is_live_green_context(CUcontext context) noexcept;

}  // namespace cuwrap::detail
