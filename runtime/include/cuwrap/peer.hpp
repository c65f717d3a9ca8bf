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
void copy_peer(CUdeviceptr dst, const Device& dst_device, CUdeviceptr src,
               const Device& src_device, std::size_t size, StreamRef stream);

}  // namespace cuwrap
