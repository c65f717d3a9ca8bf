// API.md sections 5.2 to 5.4 (launch sizing, globals and pointers, typed memory, pools),
// checked at compile time: the names and signatures as the contract writes them. The one
// runtime test exercises what needs no GPU.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// A named namespace around the anonymous one: the using-directive stays in this file when
// the file is compiled with others (CUWRAP_UNITY_TESTS).
namespace api_contract_launch_memory {
namespace {

using namespace cuwrap;

// 5.2 Launching.
static_assert(std::is_same_v<decltype(LaunchConfig::for_elements(std::declval<const Kernel&>(),
                                                                 std::size_t{1})),
                             LaunchConfig>);
static_assert(std::is_same_v<decltype(LaunchConfig::for_elements(std::declval<const Kernel&>(),
                                                                 std::size_t{1}, std::size_t{0})),
                             LaunchConfig>);
static_assert(
    std::is_same_v<
        decltype(std::declval<const LaunchConfig&>().check(std::declval<const Device&>())), void>);
static_assert(std::is_invocable_v<decltype(static_cast<void (KernelAttributes::*)(int) const>(
                                      &KernelAttributes::set_max_dynamic_shared_size_bytes)),
                                  const KernelAttributes&, int>);
static_assert(std::is_invocable_v<decltype(static_cast<void (KernelAttributes::*)(int) const>(
                                      &KernelAttributes::set_preferred_shared_memory_carveout)),
                                  const KernelAttributes&, int>);
static_assert(
    std::is_invocable_v<decltype(static_cast<void (KernelAttributes::*)(CUfunc_cache) const>(
                            &KernelAttributes::set_cache_config)),
                        const KernelAttributes&, CUfunc_cache>);
static_assert(std::is_invocable_v<decltype(static_cast<void (KernelAttributes::*)(bool) const>(
                                      &KernelAttributes::set_non_portable_cluster_size_allowed)),
                                  const KernelAttributes&, bool>);
static_assert(is_kernel_argument_v<float> && is_kernel_argument_v<Dim3> &&
              !is_kernel_argument_v<std::string>);
static_assert(std::is_same_v<decltype(is_kernel_argument_v<int>), const bool>);
// LaunchConfig stays an aggregate: designated initialisers keep compiling.
static_assert(std::is_aggregate_v<LaunchConfig>);

// 5.3 Code objects and pointers.
static_assert(std::is_same_v<decltype(std::declval<const ObjectCode&>().get_global(
                                 std::string_view(), std::declval<const Device&>())),
                             BufferRef>);
static_assert(std::is_same_v<decltype(std::declval<const ObjectCode&>().kernel_names()),
                             std::vector<std::string>>);
static_assert(std::is_same_v<decltype(PointerAttributes::memory_type), CUmemorytype>);
static_assert(std::is_same_v<decltype(PointerAttributes::device), std::optional<Device>>);
static_assert(std::is_same_v<decltype(PointerAttributes::base), CUdeviceptr>);
static_assert(std::is_same_v<decltype(PointerAttributes::range_size), std::size_t>);
static_assert(std::is_same_v<decltype(PointerAttributes::is_managed), bool>);
static_assert(std::is_same_v<decltype(PointerAttributes::is_mapped), bool>);
static_assert(std::is_same_v<decltype(PointerAttributes::pool), CUmemoryPool>);
static_assert(std::is_same_v<decltype(pointer_attributes(CUdeviceptr{})), PointerAttributes>);
static_assert(std::is_same_v<decltype(pointer_attributes(static_cast<const void*>(nullptr))),
                             PointerAttributes>);

// 5.4 Memory.
static_assert(
    std::is_same_v<decltype(std::declval<const Buffer&>().as<float>()), DeviceSpan<float>>);
static_assert(
    std::is_same_v<decltype(std::declval<const BufferRef&>().as<int>()), DeviceSpan<int>>);
static_assert(std::is_same_v<decltype(std::declval<const DeviceSpan<float>&>().subspan(1, 2)),
                             DeviceSpan<float>>);
static_assert(std::is_same_v<decltype(std::declval<const DeviceSpan<float>&>().copy_to(
                                 std::declval<std::span<float>>(), std::declval<StreamRef>())),
                             void>);
static_assert(
    std::is_same_v<decltype(std::declval<const DeviceSpan<float>&>().copy_from(
                       std::declval<std::span<const float>>(), std::declval<StreamRef>())),
                   void>);
static_assert(std::is_trivially_copyable_v<DeviceSpan<double>>);
static_assert(std::is_same_v<detail::LaunchArgument<DeviceSpan<float>>::type, float*>);
static_assert(std::is_same_v<detail::LaunchArgument<DeviceSpan<const float>>::type, const float*>);
static_assert(std::is_invocable_v<decltype(&MemoryPoolAttributes::set_release_threshold),
                                  const MemoryPoolAttributes&, std::uint64_t>);
static_assert(
    std::is_invocable_v<decltype(&MemoryPoolAttributes::set_reuse_follow_event_dependencies),
                        const MemoryPoolAttributes&, bool>);
static_assert(std::is_invocable_v<decltype(&MemoryPoolAttributes::set_reuse_allow_opportunistic),
                                  const MemoryPoolAttributes&, bool>);
static_assert(
    std::is_invocable_v<decltype(&MemoryPoolAttributes::set_reuse_allow_internal_dependencies),
                        const MemoryPoolAttributes&, bool>);
static_assert(std::is_enum_v<Access>);
static_assert(std::is_same_v<decltype(std::declval<const DeviceMemoryResource&>().access(
                                 std::declval<const Device&>())),
                             Access>);
static_assert(std::is_same_v<decltype(std::declval<DeviceMemoryResource&>().set_access(
                                 std::declval<const Device&>(), Access::Read)),
                             void>);
static_assert(std::is_same_v<decltype(DeviceMemoryResource::from_handle(CUmemoryPool{})),
                             DeviceMemoryResource>);
static_assert(
    std::is_same_v<decltype(DeviceMemoryResource::adopt(CUmemoryPool{})), DeviceMemoryResource>);
static_assert(std::is_same_v<decltype(std::declval<const StreamRef&>().attach(
                                 std::declval<BufferRef>(), CU_MEM_ATTACH_SINGLE)),
                             void>);
static_assert(std::is_same_v<decltype(ManagedMemoryResourceOptions::attach), CUmemAttach_flags>);

TEST(ApiContractLaunchMemory, DefaultsAsWritten) {
  EXPECT_EQ(ManagedMemoryResourceOptions{}.attach, CU_MEM_ATTACH_GLOBAL);
  const Access values[] = {Access::None, Access::Read, Access::ReadWrite};
  EXPECT_NE(values[0], values[1]);
  EXPECT_NE(values[1], values[2]);
  const PointerAttributes empty;
  EXPECT_FALSE(empty.is_cuda_memory());
  EXPECT_FALSE(empty.device.has_value());
}

}  // namespace
}  // namespace api_contract_launch_memory
