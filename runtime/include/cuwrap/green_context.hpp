// The hardware resources green contexts are made of (cuda.core's DeviceResources,
// SMResource and SMResourceOptions): a device's SMs, split into disjoint groups.
//
// A green context (Context in context.hpp) runs its streams' work on the SMs of the
// groups it was created with. The steps, as in the driver: query a device's SM resource
// (Device::resources().sm()), split it (SMResource::split), create a context over one
// or more groups (Device::create_context), create streams in it (Context::create_stream).
// Minimum versions: CUDA 12.4 (toolkit and driver) for all of it, splits into groups of
// different sizes included; streams in a green context need 12.5; the split flag behind
// SMResourceOptions::backfill needs 12.6; the co-scheduling fields of SMResourceOptions
// need 13.1 (cuDevSmResourceSplit).
#pragma once

#include <cuwrap/detail/ref.hpp>

#include <cuda.h>

#include <utility>
#include <vector>

namespace cuwrap {

class Device;

namespace detail {
struct GreenContextState;
void ref_acquire(const GreenContextState* state) noexcept;
void ref_release(const GreenContextState* state) noexcept;
}  // namespace detail

/// Options of SMResource::split, as cuda.core's SMResourceOptions.
///
/// `count` has one entry per group wanted: the minimum SM count of that group (the
/// driver rounds it up to the device's granularity, see SMResource::min_partition_size
/// and coscheduled_alignment); 0 asks for the smallest group the device allows. Empty
/// means one group of the smallest size. The counts may differ (e.g. {112, 16}); see
/// SMResource::split for how. `coscheduled_sm_count` and
/// `preferred_coscheduled_sm_count` are empty or have one entry per group; they need
/// the structured split of CUDA 13.1 (toolkit and driver) and throw UnsupportedError
/// naming 13.1 otherwise.
struct SMResourceOptions {
  /// Requested minimum SM count of each group (one entry per group).
  std::vector<unsigned> count{};
  /// Minimum SMs guaranteed to be co-scheduled in each group (CUDA 13.1 toolkit and driver).
  std::vector<unsigned> coscheduled_sm_count{};
  /// Preferred co-scheduled SM count of each group (CUDA 13.1 toolkit and driver).
  std::vector<unsigned> preferred_coscheduled_sm_count{};
  /// Let the driver treat SMs independently of their co-scheduling hierarchy, allowing
  /// finer groups at the cost of large clusters
  /// (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING; CUDA 12.6).
  bool backfill = false;
};

struct SMResourceSplit;

/// A set of SMs of one device (a CU_DEV_RESOURCE_TYPE_SM CUdevResource); a copyable value.
///
/// Made by DeviceResources::sm() (all of a device's or a green context's SMs) or by
/// split(). The SMs themselves are not named: the driver gives counts, not ids.
class SMResource {
 public:
  /// Return the number of SMs in this resource.
  unsigned sm_count() const noexcept { return resource_.sm.smCount; }
  /// Return the smallest number of SMs a group split from this resource can have.
  unsigned min_partition_size() const noexcept { return min_partition_size_; }
  /// Return the number of SMs guaranteed to be co-scheduled (group sizes are multiples).
  unsigned coscheduled_alignment() const noexcept { return coscheduled_alignment_; }
  /// Return the ordinal of the device the SMs belong to.
  int device_id() const noexcept { return device_id_; }
  /// Return whether a context can be made from this resource (false for dry runs).
  bool is_usable() const noexcept { return usable_; }
  /// Return the driver's resource description.
  const CUdevResource& handle() const noexcept { return resource_; }

  /// Split this resource into groups and a remainder.
  ///
  /// Equal counts (or one group): one cuDevSmResourceSplitByCount (CUDA 12.4); the
  /// driver may make fewer groups than asked (symmetric groups that fit), never more.
  /// Different counts: one cuDevSmResourceSplitByCount per group, in order, each from
  /// the SMs the previous one left (a green context is made over those SMs between
  /// steps, as the driver splits no split result otherwise; the groups keep it alive),
  /// so group i gets options.count[i] rounded up to the granularity while SMs are left.
  /// Groups of different steps cannot share one context (the driver's rule for
  /// cuDevResourceGenerateDesc): give each its own. With coscheduled_sm_count or
  /// preferred_coscheduled_sm_count: one cuDevSmResourceSplit (CUDA 13.1). With
  /// `dry_run` the result only reports the sizes: its resources cannot make a context
  /// (a dry run of different counts still makes, then drops, the intermediate contexts).
  ///
  /// Throws std::invalid_argument, before the driver, for a count above sm_count(), a
  /// co-scheduling field whose length is not the number of groups, or backfill together
  /// with a co-scheduling field; after it, when the driver makes no group for a count
  /// or no SMs are left for the next group. UnsupportedError naming the version needed:
  /// a toolkit or driver older than 12.4 (any split), 12.6 (backfill) or 13.1 (the
  /// co-scheduling fields). DriverError with the driver's reason otherwise. A split made
  /// of a group split before needs a green context over it first (the driver's rule).
  SMResourceSplit split(const SMResourceOptions& options, bool dry_run = false) const;

 private:
  friend class DeviceResources;
  SMResource(const CUdevResource& resource, int device_id, unsigned min_partition_size,
             unsigned coscheduled_alignment, bool usable) noexcept;
  SMResource from_split(const CUdevResource& resource, bool usable,
                        const detail::Ref<const detail::GreenContextState>& keep) const;
  SMResourceSplit split_by_count(unsigned count, unsigned wanted, unsigned flags,
                                 bool dry_run) const;
  SMResourceSplit split_in_steps(const std::vector<unsigned>& counts, unsigned flags,
                                 bool dry_run) const;
  SMResourceSplit split_structured(const SMResourceOptions& options, bool dry_run) const;

  CUdevResource resource_{};
  int device_id_ = -1;
  unsigned min_partition_size_ = 0;
  unsigned coscheduled_alignment_ = 0;
  bool usable_ = false;
  // The green context whose SMs this resource was split from, when a split made one
  // (SMResourceOptions with different counts): kept alive while the resource lives.
  detail::Ref<const detail::GreenContextState> keep_;
};

/// What SMResource::split returns: the groups and the SMs left over.
struct SMResourceSplit {
  std::vector<SMResource> groups;     ///< disjoint groups of SMs, each usable for a context
  std::vector<SMResource> remainder;  ///< the SMs in no group (empty or one resource)
};

/// The hardware resources of a device or of a green context (cuda.core's DeviceResources).
///
/// From Device::resources(): the whole device's. From Context::resources(): those the
/// green context was made with. Keeps a green context it refers to alive.
class DeviceResources {
 public:
  /// Return the SMs (cuDeviceGetDevResource / cuGreenCtxGetDevResource).
  SMResource sm() const;
  /// Return the ordinal of the device.
  int device_id() const noexcept { return device_id_; }

 private:
  friend class Device;
  friend class Context;
  DeviceResources(int device_id, detail::Ref<const detail::GreenContextState> green) noexcept
      : device_id_(device_id), green_(std::move(green)) {}

  int device_id_;
  detail::Ref<const detail::GreenContextState> green_;  // null: the whole device
};

}  // namespace cuwrap
