// The public high-level API, checked at compile time: ownership (copyable values, move-only
// owners), and the signatures users and acceptance tests program against. A drift from
// the contract fails the build; the one runtime test exercises what needs no GPU.
#include <gtest/gtest.h>
#include <cuwrap/cuwrap.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

// A named namespace around the anonymous one: the using-directive stays in this file when
// the file is compiled with others (CUWRAP_UNITY_TESTS).
namespace api_contract {
namespace {

using namespace cuwrap;

template <class T>
constexpr bool kMoveOnly = !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
                           std::is_nothrow_move_constructible_v<T>;

// Ownership, as the public API fixes it.
static_assert(std::is_copy_constructible_v<Device> && std::is_copy_assignable_v<Device>);
static_assert(std::is_copy_constructible_v<ObjectCode> && std::is_copy_constructible_v<Kernel>);
static_assert(kMoveOnly<Stream> && kMoveOnly<Event> && kMoveOnly<Buffer>);
static_assert(kMoveOnly<Program> && kMoveOnly<Linker>);
static_assert(kMoveOnly<GraphBuilder> && kMoveOnly<Graph>);
static_assert(std::is_nothrow_destructible_v<Stream> && std::is_nothrow_destructible_v<Buffer>);

// Options and configuration aggregates with their defaults.
static_assert(StreamOptions{}.nonblocking && StreamOptions{}.priority == 0);
static_assert(!EventOptions{}.enable_timing && !EventOptions{}.blocking_sync &&
              !EventOptions{}.ipc_enabled);
// The fields in cuda.core 1.3's order: positional and designated initialisers both work.
static_assert(EventOptions{true, true, false}.blocking_sync &&
              !EventOptions{true, true, false}.ipc_enabled);
static_assert(
    EventOptions{.enable_timing = true, .blocking_sync = true, .ipc_enabled = false}.blocking_sync);
static_assert(std::is_same_v<decltype(ProgramOptions::arch), std::optional<std::string>>);
static_assert(std::is_same_v<decltype(ProgramOptions::ftz), std::optional<bool>>);
static_assert(std::is_same_v<decltype(ProgramOptions::max_register_count), std::optional<int>>);
static_assert(std::is_same_v<decltype(ProgramOptions::define_macro), std::vector<std::string>>);
static_assert(std::is_same_v<decltype(LaunchConfig::cluster), std::optional<Dim3>>);
static_assert(std::is_same_v<decltype(LaunchConfig::shmem_size), std::size_t>);
static_assert(std::is_same_v<decltype(LinkerOptions::arch), std::optional<std::string>>);

// Device.
static_assert(std::is_same_v<decltype(Device::count()), int>);
static_assert(std::is_same_v<decltype(Device::all()), std::vector<Device>>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().name()), std::string>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().arch()), std::string>);
static_assert(
    std::is_same_v<decltype(std::declval<const Device&>().compute_capability().major), int>);
static_assert(
    std::is_same_v<decltype(std::declval<const Device&>().attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE)),
                   int>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().handle()), CUdevice>);
// The default resource is typed (issue: pools); API.md's `MemoryResource&` still binds to it.
static_assert(std::is_same_v<decltype(std::declval<const Device&>().memory_resource()),
                             cuwrap::DeviceMemoryResource&>);
static_assert(std::is_convertible_v<decltype(std::declval<const Device&>().memory_resource()),
                                    MemoryResource&>);
static_assert(std::is_same_v<
              decltype(std::declval<const Device&>().allocate(1, std::declval<const Stream&>())),
              Buffer>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().create_stream()), Stream>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().create_event()), Event>);
static_assert(
    std::is_same_v<decltype(std::declval<const Device&>().create_graph_builder()), GraphBuilder>);
static_assert(std::is_same_v<decltype(std::declval<const Device&>().can_access_peer(
                                 std::declval<const Device&>())),
                             bool>);

// Stream and Event.
static_assert(std::is_same_v<decltype(Stream::from_handle(CUstream{})), StreamRef>);
static_assert(std::is_same_v<decltype(std::declval<const Stream&>().is_done()), bool>);
static_assert(std::is_same_v<decltype(std::declval<const Stream&>().record()), Event>);
static_assert(std::is_same_v<decltype(std::declval<const Stream&>().handle()), CUstream>);
static_assert(std::is_same_v<decltype(std::declval<const Stream&>().device()), Device>);
static_assert(
    std::is_same_v<decltype(std::declval<const Stream&>().create_graph_builder()), GraphBuilder>);
static_assert(
    std::is_same_v<decltype(std::declval<const Event&>() - std::declval<const Event&>()), float>);
static_assert(std::is_same_v<decltype(std::declval<const Event&>().is_done()), bool>);
static_assert(std::is_same_v<decltype(std::declval<const Event&>().handle()), CUevent>);

// Memory resources and Buffer.
static_assert(std::is_abstract_v<MemoryResource>);
static_assert(std::is_base_of_v<MemoryResource, DeviceMemoryResource>);
static_assert(std::is_constructible_v<DeviceMemoryResource, Device>);
static_assert(std::is_default_constructible_v<PinnedMemoryResource> &&
              std::is_default_constructible_v<LegacyPinnedMemoryResource> &&
              std::is_default_constructible_v<ManagedMemoryResource>);
static_assert(std::is_same_v<decltype(Buffer::from_handle(CUdeviceptr{}, 1)), BufferRef>);
static_assert(std::is_same_v<decltype(std::declval<const Buffer&>().size()), std::size_t>);
static_assert(std::is_same_v<decltype(std::declval<const Buffer&>().handle()), CUdeviceptr>);
// API.md's calls with a Stream: a Stream passes as the StreamRef the operations take.
static_assert(requires(Buffer & b, const Buffer& c, std::span<const std::byte> in,
                       std::span<std::byte> out, const Stream& s) {
  b.copy_from(in, s);
  c.copy_to(out, s);
  c.copy_to(b, s);
  b.copy_from(c, s);
  b.fill(std::uint8_t{1}, s);
  b.close(s);
});

// Program, ObjectCode, Kernel, launch, Linker.
static_assert(std::is_constructible_v<Program, std::string, CodeType, ProgramOptions>);
static_assert(std::is_constructible_v<Program, std::string, CodeType>);
static_assert(
    std::is_same_v<decltype(std::declval<Program&>().compile(TargetType::Ptx)), ObjectCode>);
static_assert(std::is_same_v<decltype(std::declval<const Program&>().backend()), std::string>);
static_assert(std::is_same_v<decltype(ObjectCode::from_ptx(std::string())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_cubin(std::span<const std::byte>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_ltoir(std::span<const std::byte>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_fatbin(std::span<const std::byte>())), ObjectCode>);
static_assert(std::is_same_v<decltype(ObjectCode::from_file(std::filesystem::path())), ObjectCode>);
static_assert(std::is_same_v<decltype(std::declval<const ObjectCode&>().get_kernel("k")), Kernel>);
static_assert(std::is_same_v<decltype(std::declval<const ObjectCode&>().code_type()), TargetType>);
static_assert(
    std::is_same_v<decltype(std::declval<const ObjectCode&>().code()), std::span<const char>>);
static_assert(
    std::is_same_v<decltype(std::declval<const ObjectCode&>().lowered_name("k")), std::string>);
static_assert(std::is_same_v<decltype(std::declval<const Kernel&>().handle()), CUkernel>);
static_assert(std::is_same_v<decltype(std::declval<const Kernel&>().attributes().num_regs()), int>);
static_assert(std::is_same_v<decltype(std::declval<const Kernel&>()
                                          .occupancy()
                                          .max_active_blocks_per_multiprocessor(256, 0)),
                             int>);
static_assert(std::is_constructible_v<Linker, std::vector<ObjectCode>, LinkerOptions>);
static_assert(
    std::is_same_v<decltype(std::declval<Linker&>().link(TargetType::Cubin)), ObjectCode>);
static_assert(std::is_same_v<decltype(std::declval<const Linker&>().get_info_log()), std::string>);
static_assert(std::is_same_v<decltype(std::declval<const Linker&>().get_error_log()), std::string>);

// Graphs.
static_assert(
    std::is_same_v<decltype(std::declval<GraphBuilder&>().end_building()), GraphBuilder&>);
static_assert(std::is_same_v<decltype(std::declval<GraphBuilder&>().complete()), Graph>);
static_assert(
    std::is_same_v<decltype(std::declval<GraphBuilder&>().split(2)), std::vector<GraphBuilder>>);
static_assert(
    std::is_same_v<decltype(GraphBuilder::join(std::declval<std::vector<GraphBuilder>&&>())),
                   GraphBuilder>);
static_assert(std::is_same_v<decltype(std::declval<const GraphBuilder&>().handle()), CUgraph>);
static_assert(std::is_same_v<decltype(std::declval<const Graph&>().handle()), CUgraphExec>);

// Errors (section 3).
static_assert(std::is_base_of_v<std::runtime_error, Error>);
static_assert(std::is_base_of_v<Error, DriverError> && std::is_base_of_v<Error, NvrtcError> &&
              std::is_base_of_v<Error, NvJitLinkError> && std::is_base_of_v<Error, LoadError>);

// One way for each cross-cutting thing (docs/architecture.md): every exception that
// carries a library's log names it log(); compile() takes the log and the cache by name;
// binary inputs are bytes; cuda.core's get_ipc_descriptor() on buffers and events.
static_assert(
    std::is_same_v<decltype(std::declval<const DriverError&>().log()), const std::string&>);
static_assert(
    std::is_same_v<decltype(std::declval<const NvrtcError&>().log()), const std::string&>);
static_assert(
    std::is_same_v<decltype(std::declval<const NvJitLinkError&>().log()), const std::string&>);
static_assert(
    std::is_same_v<decltype(std::declval<Program&>().compile(TargetType::Ptx, CompileOptions{})),
                   ObjectCode>);
static_assert(
    std::is_same_v<decltype(std::declval<Program&>().compile(
                       TargetType::Ptx, std::span<const std::string>(), CompileOptions{})),
                   ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_object(std::span<const std::byte>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_library(std::span<const std::byte>())), ObjectCode>);
static_assert(std::is_same_v<decltype(std::declval<const Buffer&>().get_ipc_descriptor()),
                             IPCBufferDescriptor>);
static_assert(std::is_same_v<decltype(std::declval<const Event&>().get_ipc_descriptor()),
                             IPCEventDescriptor>);

// The names the contract wrote before stay callable (deprecated, CHANGELOG.md).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(
    std::is_same_v<decltype(std::declval<Program&>().compile(
                       TargetType::Ptx, std::span<const std::string>(),
                       static_cast<std::string*>(nullptr), static_cast<ProgramCache*>(nullptr))),
                   ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_cubin(std::span<const char>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_ltoir(std::span<const char>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(ObjectCode::from_fatbin(std::span<const char>())), ObjectCode>);
static_assert(
    std::is_same_v<decltype(std::declval<const Buffer&>().ipc_descriptor()), IPCBufferDescriptor>);
static_assert(
    std::is_same_v<decltype(std::declval<const DriverError&>().error_log()), const std::string&>);
static_assert(std::is_same_v<decltype(std::declval<const Linker&>().info_log()), std::string>);
static_assert(std::is_same_v<decltype(std::declval<const Linker&>().error_log()), std::string>);
#pragma GCC diagnostic pop

// Calls spelled as the public API documents them (compiled, run only with a GPU).
[[maybe_unused]] void api_md_usage() {
  Device dev(0);
  dev.set_current();
  Stream s = dev.create_stream(StreamOptions{.nonblocking = true, .priority = 0});
  Event start = s.record(EventOptions{.enable_timing = true});
  Buffer buf = dev.allocate(1024, s);
  std::vector<std::byte> host(1024);
  buf.copy_from(std::span<const std::byte>(host), s);
  buf.copy_to(std::span<std::byte>(host), s);
  buf.fill(std::uint8_t{7}, s);
  ProgramOptions options{.name = "p", .arch = "sm_90", .std = "c++17"};
  Program prog("extern \"C\" __global__ void k(float* x, float a) { x[0] *= a; }", CodeType::Cxx,
               options);
  std::vector<std::string> names = {"k"};
  std::string log;
  ObjectCode obj = prog.compile(TargetType::Cubin, names, {.log = &log});
  Kernel k = obj.get_kernel("k");
  LaunchConfig config{.grid = Dim3(1), .block = Dim3(32)};
  launch(s, config, k, buf, 2.0f);
  GraphBuilder g = s.create_graph_builder();
  g.begin_building();
  launch(g, config, k, buf, 2.0f);
  Graph graph = g.end_building().complete();
  graph.upload(s);
  graph.launch(s);
  Event end = s.record(EventOptions{.enable_timing = true});
  end.sync();
  [[maybe_unused]] float ms = end - start;
  buf.close(s);
  s.sync();
}

TEST(ApiContract, EnumsAndAggregatesAsWritten) {
  const Dim3 d(4, 2);
  EXPECT_EQ(d.x, 4u);
  EXPECT_EQ(d.y, 2u);
  EXPECT_EQ(d.z, 1u);
  const LaunchConfig c{.grid = Dim3(8), .block = Dim3(128), .cluster = Dim3(2)};
  EXPECT_EQ(c.shmem_size, 0u);
  EXPECT_FALSE(c.cooperative_launch);
  EXPECT_EQ(ProgramOptions{}.name, "default_program");
  EXPECT_EQ(LinkerOptions{}.name, "linker");
  // The enumerators as written, each reported back by what it was given to (no GPU,
  // no NVRTC: a PTX program is only kept until compiled).
  const Program ptx(".version 8.0\n", CodeType::Ptx);
  EXPECT_EQ(ptx.code_type(), CodeType::Ptx);
  EXPECT_EQ(ptx.handle(), nullptr);
  const std::vector<char> chars{'\x7f', 'E', 'L', 'F'};
  const std::span<const std::byte> image = std::as_bytes(std::span(chars));
  EXPECT_EQ(ObjectCode::from_cubin(image).code_type(), TargetType::Cubin);
  EXPECT_EQ(ObjectCode::from_ltoir(image).code_type(), TargetType::Ltoir);
}

}  // namespace
}  // namespace api_contract
