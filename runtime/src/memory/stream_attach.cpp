// StreamRef::attach: managed memory associated with a stream (cuStreamAttachMemAsync).
// Declared with StreamRef, defined here: it takes a BufferRef, which execution/ does
// not know.
#include "base/context_registry.hpp"
#include "execution/stream_use.hpp"

#include <cuwrap/buffer.hpp>
#include <cuwrap/detail/context.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/stream.hpp>

#include <stdexcept>
#include <string>

namespace cuwrap {

void StreamRef::attach(BufferRef managed, CUmemAttach_flags flags) const {
  const CUstream stream = handle_for("attach");
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE) {
    throw std::invalid_argument("Stream::attach: flags " +
                                std::to_string(static_cast<unsigned>(flags)) +
                                " are not one of CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_HOST and "
                                "CU_MEM_ATTACH_SINGLE");
  }
  if (managed.size() == 0) {
    throw std::invalid_argument("Stream::attach: the managed memory is empty");
  }
  const detail::ContextUse use = detail::use_stream(*this, "Stream::attach");
  const CUdeviceptr ptr = managed.handle();
  const std::size_t size = managed.size();
  detail::check_on_stream(*this, "cuStreamAttachMemAsync", [&] {
    return driver::raw::cuStreamAttachMemAsync(stream, ptr, size, flags);
  });
}

}  // namespace cuwrap
