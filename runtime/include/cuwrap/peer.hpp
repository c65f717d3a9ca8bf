// Work across several GPUs of one host: copies between buffers of different devices.
//
// Peer access itself (Device::enable_peer_access, disable_peer_access,
// peer_access_enabled) is declared with Device in device.hpp and defined in peer.cpp;
// this header adds the copies. A peer copy does not need peer access: without it the
// driver stages the data through host memory; with it the copy goes over NVLink or PCIe
// directly.
#pragma once

#include <cuwrap/buffer.hpp>
#include <cuwrap/device.hpp>
#include <cuwrap/stream.hpp>

#include <type_traits>

namespace cuwrap {

/// Copy `src` (memory of one device) into `dst` (memory of the same or another device),
/// ordered on `stream` (cuMemcpyPeerAsync).
///
/// The devices are the buffers' own (Buffer::device_id()); `stream` may belong to either
/// device (the copy is ordered on it; to order it after work on the other device, make
/// the stream wait for an event recorded there). Throws std::invalid_argument naming
/// both sizes when they differ, or naming the buffer when it is host memory tied to no
/// device; std::logic_error for a closed buffer; DriverError naming cuMemcpyPeerAsync.
///
/// Example:
/// \code
///   cuwrap::Buffer a = dev0.allocate(n, s0);
///   cuwrap::Buffer b = dev1.allocate(n, s1);
///   s1.wait(s0.record());              // b's copy starts after a is written on s0
///   cuwrap::copy_peer(b, a, s1);       // device 0 → device 1, on device 1's stream
/// \endcode
void copy_peer(Buffer& dst, const Buffer& src, StreamRef stream);

/// Copy `size` bytes from `src` on `src_device` to `dst` on `dst_device`, ordered on
/// `stream` (cuMemcpyPeerAsync), for device pointers that no Buffer owns.
///
/// Throws DriverError naming cuMemcpyPeerAsync when the driver refuses the copy.
void copy_peer(CUdeviceptr dst, const Device& dst_device, CUdeviceptr src, const Device& src_device,
               std::size_t size, StreamRef stream);

/// Copy the bytes of `src` into `dst`, both parts of device memory (slices of buffers,
/// BufferRef), ordered on `stream` (cuMemcpyPeerAsync); the devices are given.
///
/// For a part of a neighbour's buffer: `copy_peer(mine.slice(0, n), dev0,
/// theirs.slice(off, n), dev1, s)`. Throws std::invalid_argument naming both sizes
/// when they differ; DriverError naming cuMemcpyPeerAsync when the driver refuses.
void copy_peer(BufferRef dst, const Device& dst_device, BufferRef src, const Device& src_device,
               StreamRef stream);

/// Copy the bytes of `src` into `dst` (slices of buffers of the same or different
/// devices), ordered on `stream` (cuMemcpyPeerAsync); each one's device is the one its
/// memory belongs to (cuPointerGetAttribute, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).
///
/// Two whole Buffers pick the Buffer form above; a Buffer and a BufferRef, or two
/// BufferRefs, pick this one. Throws std::invalid_argument naming both sizes when they
/// differ, or naming the side that is host memory (not device memory); DriverError
/// when the driver cannot tell a pointer's device or refuses the copy.
///
/// Example:
/// \code
///   // the last `halo` bytes of device 0's slice into the first of device 1's
///   cuwrap::copy_peer(b.slice(0, halo), a.slice(a.size() - halo, halo), s1);
/// \endcode
void copy_peer(BufferRef dst, BufferRef src, StreamRef stream);

/// Copy the elements of `src` into `dst` (typed views of device memory of the same or
/// different devices, of the same element type), ordered on `stream`; as
/// copy_peer(BufferRef, BufferRef, StreamRef) over their bytes.
///
/// Throws std::invalid_argument naming both sizes when the element counts differ.
template <class T, class U>
requires(std::is_same_v<std::remove_const_t<U>, T> &&
         !std::is_const_v<T>) void copy_peer(DeviceSpan<T> dst, DeviceSpan<U> src,
                                             StreamRef stream) {
  copy_peer(dst.bytes(), src.bytes(), stream);
}
/// Copy the elements of `src` on `src_device` into `dst` on `dst_device`, ordered on
/// `stream`; as copy_peer(BufferRef, const Device&, BufferRef, const Device&, StreamRef).
template <class T, class U>
requires(std::is_same_v<std::remove_const_t<U>, T> &&
         !std::is_const_v<T>) void copy_peer(DeviceSpan<T> dst, const Device& dst_device,
                                             DeviceSpan<U> src, const Device& src_device,
                                             StreamRef stream) {
  copy_peer(dst.bytes(), dst_device, src.bytes(), src_device, stream);
}

}  // namespace cuwrap
