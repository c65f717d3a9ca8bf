// The ownership model (docs/ownership.md), asserted at compile time: every owner X with a
// Ref type is an XRef (public base), from_handle of a foreign handle returns the Ref type,
// every owner says whether it is open and can be closed, and every owner moves without
// throwing. The TESTs check the run-time half that needs no GPU: a default-constructed owner
// is a closed one, moving it leaves both closed, and a ref made from it refuses to be used.
#include <cuwrap/cufile_handle.hpp>
#include <cuwrap/cuwrap.hpp>
#include <cuwrap/fatbin_builder.hpp>
#include <cuwrap/graphics.hpp>
#include <cuwrap/ipc.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <type_traits>
#include <utility>

namespace {

// An owner: closable, and says whether it is open.
template <class X>
concept Owner = requires(X& owner, const X& view) {
  { view.is_open() } -> std::same_as<bool>;
  owner.close();
};

// Every owner is its Ref plus the duty to release.
static_assert(std::is_base_of_v<cuwrap::StreamRef, cuwrap::Stream>);
static_assert(std::is_base_of_v<cuwrap::EventRef, cuwrap::Event>);
static_assert(std::is_base_of_v<cuwrap::BufferRef, cuwrap::Buffer>);
static_assert(std::is_base_of_v<cuwrap::ContextRef, cuwrap::Context>);
static_assert(std::is_base_of_v<cuwrap::ArrayRef, cuwrap::Array>);
// ... publicly: an owner passes where its Ref is taken.
static_assert(std::is_convertible_v<cuwrap::Stream*, cuwrap::StreamRef*>);
static_assert(std::is_convertible_v<cuwrap::Event*, cuwrap::EventRef*>);
static_assert(std::is_convertible_v<cuwrap::Buffer*, cuwrap::BufferRef*>);
static_assert(std::is_convertible_v<cuwrap::Context*, cuwrap::ContextRef*>);
static_assert(std::is_convertible_v<cuwrap::Array*, cuwrap::ArrayRef*>);
// Refs are views: trivially copyable.
static_assert(std::is_trivially_copyable_v<cuwrap::StreamRef>);
static_assert(std::is_trivially_copyable_v<cuwrap::EventRef>);
static_assert(std::is_trivially_copyable_v<cuwrap::BufferRef>);
static_assert(std::is_trivially_copyable_v<cuwrap::ContextRef>);

// A view of a foreign handle is the Ref type, asked of the owner or of the Ref.
static_assert(std::is_same_v<decltype(cuwrap::Stream::from_handle(CUstream{})), cuwrap::StreamRef>);
static_assert(std::is_same_v<decltype(cuwrap::Event::from_handle(CUevent{})), cuwrap::EventRef>);
static_assert(
    std::is_same_v<decltype(cuwrap::Buffer::from_handle(CUdeviceptr{}, 0)), cuwrap::BufferRef>);
static_assert(
    std::is_same_v<decltype(cuwrap::Context::from_handle(CUcontext{})), cuwrap::ContextRef>);
static_assert(std::is_same_v<decltype(cuwrap::Array::from_handle(CUarray{})), cuwrap::ArrayRef>);
static_assert(
    std::is_same_v<decltype(cuwrap::StreamRef::from_handle(CUstream{})), cuwrap::StreamRef>);
static_assert(std::is_same_v<decltype(cuwrap::EventRef::from_handle(CUevent{})), cuwrap::EventRef>);

// Every owner has close() and is_open().
static_assert(Owner<cuwrap::Stream>);
static_assert(Owner<cuwrap::Event>);
static_assert(Owner<cuwrap::Buffer>);
static_assert(Owner<cuwrap::Context>);
static_assert(Owner<cuwrap::Array>);
static_assert(Owner<cuwrap::MipmappedArray>);
static_assert(Owner<cuwrap::TextureObject>);
static_assert(Owner<cuwrap::SurfaceObject>);
static_assert(Owner<cuwrap::Program>);
static_assert(Owner<cuwrap::Linker>);
static_assert(Owner<cuwrap::GraphBuilder>);
static_assert(Owner<cuwrap::Graph>);
static_assert(Owner<cuwrap::GraphDefinition>);
static_assert(Owner<cuwrap::GraphicsResource>);
static_assert(Owner<cuwrap::DeviceMemoryResource>);
static_assert(Owner<cuwrap::PinnedMemoryResource>);
static_assert(Owner<cuwrap::LegacyPinnedMemoryResource>);
static_assert(Owner<cuwrap::ManagedMemoryResource>);
static_assert(Owner<cuwrap::SynchronousMemoryResource>);
static_assert(Owner<cuwrap::VirtualMemoryResource>);
static_assert(Owner<cuwrap::GraphMemoryResource>);
static_assert(Owner<cuwrap::IPCAllocationHandle>);

// Owners are move-only.
static_assert(!std::is_copy_constructible_v<cuwrap::Stream>);
static_assert(!std::is_copy_constructible_v<cuwrap::Event>);
static_assert(!std::is_copy_constructible_v<cuwrap::Buffer>);
static_assert(!std::is_copy_constructible_v<cuwrap::Context>);
static_assert(!std::is_copy_constructible_v<cuwrap::Array>);

// Every owner moves without throwing: its move-assignment is detail::move_assign
// (<cuwrap/detail/owner.hpp>), which releases first and then cannot fail.
template <class... X>
constexpr bool kMoveWithoutThrowing = (... && (std::is_nothrow_move_constructible_v<X> &&
                                               std::is_nothrow_move_assignable_v<X>));
static_assert(kMoveWithoutThrowing<cuwrap::Stream, cuwrap::Event, cuwrap::Buffer, cuwrap::Context,
                                   cuwrap::Array, cuwrap::MipmappedArray, cuwrap::PitchedBuffer,
                                   cuwrap::TextureObject, cuwrap::SurfaceObject,
                                   cuwrap::RegisteredHostMemory>);
// DLPackTensor is declared where a dlpack.h is found (<cuwrap/dlpack.hpp>).
#if CUWRAP_DLPACK_DECLARED
static_assert(kMoveWithoutThrowing<cuwrap::DLPackTensor>);
#endif
static_assert(kMoveWithoutThrowing<cuwrap::Program, cuwrap::Linker, cuwrap::GraphBuilder,
                                   cuwrap::Graph, cuwrap::GraphDefinition>);
#if CUWRAP_HAS_NVFATBIN
static_assert(kMoveWithoutThrowing<cuwrap::FatbinBuilder>);
#endif
// cuFile's owners exist also without cufile.h (their operations then say it is missing).
static_assert(kMoveWithoutThrowing<cuwrap::CuFileHandle, cuwrap::CuFileDriver,
                                   cuwrap::CuFileBufferRegistration>);
static_assert(std::is_base_of_v<cuwrap::CuFileHandleRef, cuwrap::CuFileHandle>);
static_assert(std::is_same_v<decltype(cuwrap::CuFileHandle::from_handle(nullptr, 0)),
                             cuwrap::CuFileHandleRef>);
static_assert(Owner<cuwrap::CuFileHandle> && Owner<cuwrap::CuFileDriver> &&
              Owner<cuwrap::CuFileBufferRegistration>);
static_assert(kMoveWithoutThrowing<cuwrap::GraphicsResource, cuwrap::MappedGraphicsResource>);
static_assert(kMoveWithoutThrowing<cuwrap::IPCAllocationHandle, cuwrap::IPCChannel,
                                   cuwrap::IPCListener, cuwrap::IPCChildProcess>);

TEST(OwnershipModel, DefaultConstructedOwnersAreClosed) {
  const cuwrap::Stream stream;
  const cuwrap::Event event;
  const cuwrap::Buffer buffer;
  const cuwrap::Graph graph;
  EXPECT_FALSE(stream.is_open());
  EXPECT_FALSE(event.is_open());
  EXPECT_FALSE(buffer.is_open());
  EXPECT_FALSE(graph.is_open());
}

TEST(OwnershipModel, MovingAClosedOwnerLeavesBothClosed) {
  cuwrap::Stream stream;
  cuwrap::Event event;
  cuwrap::Buffer buffer;
  cuwrap::Graph graph;
  cuwrap::Stream other_stream;
  cuwrap::Event other_event;
  cuwrap::Buffer other_buffer;
  cuwrap::Graph other_graph;
  stream = std::move(other_stream);
  event = std::move(other_event);
  buffer = std::move(other_buffer);
  graph = std::move(other_graph);
  EXPECT_FALSE(stream.is_open());
  EXPECT_FALSE(event.is_open());
  EXPECT_FALSE(buffer.is_open());
  EXPECT_FALSE(graph.is_open());
  // NOLINTBEGIN(bugprone-use-after-move): moved-from owners are closed
  EXPECT_FALSE(other_stream.is_open());
  EXPECT_FALSE(other_event.is_open());
  EXPECT_FALSE(other_buffer.is_open());
  EXPECT_FALSE(other_graph.is_open());
  // NOLINTEND(bugprone-use-after-move)
  EXPECT_THROW(static_cast<void>(stream.handle()), std::logic_error);
}

TEST(OwnershipModel, ARefOfAClosedOwnerRefusesUse) {
  const cuwrap::Stream stream;
  const cuwrap::Event event;
  const cuwrap::Buffer buffer;
  const cuwrap::StreamRef stream_ref = stream;
  const cuwrap::EventRef& event_ref = event;
  const cuwrap::BufferRef& buffer_ref = buffer;
  EXPECT_THROW(static_cast<void>(stream_ref.handle()), std::logic_error);
  EXPECT_THROW(static_cast<void>(event_ref.handle()), std::logic_error);
  EXPECT_THROW(static_cast<void>(buffer_ref.handle()), std::logic_error);
  EXPECT_THROW(static_cast<void>(buffer_ref.slice(0, 0)), std::logic_error);
  // The converting constructor refuses a closed Buffer as well.
  EXPECT_THROW(static_cast<void>(cuwrap::BufferRef(buffer)), std::logic_error);
}

TEST(OwnershipModel, FromHandleViewsTheSameHandle) {
  const auto foreign = reinterpret_cast<CUstream>(std::uintptr_t{0x1234});
  EXPECT_EQ(cuwrap::Stream::from_handle(foreign).handle(), foreign);
  EXPECT_EQ(cuwrap::Stream::from_handle(nullptr), cuwrap::kLegacyDefaultStream);
  const cuwrap::BufferRef memory = cuwrap::Buffer::from_handle(0x1000, 64);
  EXPECT_EQ(memory.handle(), CUdeviceptr{0x1000});
  EXPECT_EQ(memory.size(), 64U);
  EXPECT_EQ(memory.slice(16, 8), cuwrap::BufferRef(0x1010, 8));
}

TEST(OwnershipModel, AdoptingNeedsTheOneWhoFrees) {
  // A Buffer frees through a memory resource: adopting without one is refused.
  EXPECT_THROW(static_cast<void>(cuwrap::Buffer::adopt(0x1000, 64, nullptr)),
               std::invalid_argument);
}

TEST(OwnershipModel, ResourcesCloseThroughTheBaseClass) {
  cuwrap::LegacyPinnedMemoryResource resource;  // no driver call to make it
  cuwrap::MemoryResource& base = resource;
  EXPECT_TRUE(base.is_open());
  base.close();
  EXPECT_FALSE(resource.is_open());
  EXPECT_THROW(static_cast<void>(resource.allocate(16, cuwrap::kLegacyDefaultStream)),
               std::logic_error);
}

}  // namespace
