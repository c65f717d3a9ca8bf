// StreamRef, EventRef and BufferRef: the non-owning forms beside Stream, Event and
// Buffer. Conversions, null handles, empty owners and memory resources written for
// either allocate/deallocate signature need no GPU (fake handles never reach the
// driver); the operations through refs on real streams run on a GPU.
#include <cuwrap/buffer.hpp>
#include <cuwrap/driver.hpp>
#include <cuwrap/event.hpp>
#include <cuwrap/graph.hpp>
#include <cuwrap/launch.hpp>
#include <cuwrap/memory_resource.hpp>
#include <cuwrap/stream.hpp>

#include <gtest/gtest.h>

#include "bytes.hpp"
#include "device_fixture.hpp"
#include "fake_buffer.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using cuwrap::Buffer;
using cuwrap::BufferRef;
using cuwrap::Event;
using cuwrap::EventRef;
using cuwrap::kLegacyDefaultStream;
using cuwrap::kPerThreadDefaultStream;
using cuwrap::Stream;
using cuwrap::StreamRef;

// Never dereferenced: no test below hands these to the driver.
const CUstream kFakeStream = reinterpret_cast<CUstream>(std::uintptr_t{0x7000});
const CUevent kFakeEvent = reinterpret_cast<CUevent>(std::uintptr_t{0x7100});
constexpr CUdeviceptr kStreamRefFakePointer = 0x10000;

// ---- The types say what they are -------------------------------------------------------

static_assert(std::is_trivially_copyable_v<StreamRef>);
static_assert(std::is_trivially_copyable_v<EventRef>);
static_assert(std::is_trivially_copyable_v<BufferRef>);
static_assert(sizeof(StreamRef) <= 2 * sizeof(void*), "passed in registers");
// An owner is its ref (as cuda::stream is a cuda::stream_ref), not the other way round.
static_assert(std::is_base_of_v<StreamRef, Stream>);
static_assert(std::is_base_of_v<EventRef, Event>);
static_assert(!std::is_convertible_v<StreamRef, const Stream&>);
static_assert(!std::is_convertible_v<EventRef, const Event&>);
// Implicit conversions from the owners and from the handles of any library.
static_assert(std::is_convertible_v<const Stream&, StreamRef>);
static_assert(std::is_convertible_v<CUstream, StreamRef>);
static_assert(std::is_convertible_v<const cuwrap::GraphBuilder&, StreamRef>);
static_assert(std::is_convertible_v<const Event&, EventRef>);
static_assert(std::is_convertible_v<CUevent, EventRef>);
static_assert(std::is_convertible_v<const Buffer&, BufferRef>);
// A ref always names something: no default, no null literal.
static_assert(!std::is_default_constructible_v<StreamRef>);
static_assert(!std::is_default_constructible_v<EventRef>);
static_assert(!std::is_default_constructible_v<BufferRef>);
static_assert(!std::is_constructible_v<StreamRef, std::nullptr_t>);
static_assert(!std::is_constructible_v<EventRef, std::nullptr_t>);
// The default streams are named, constant-initialisable values.
static_assert(kLegacyDefaultStream == kLegacyDefaultStream);
static_assert(!(kLegacyDefaultStream == kPerThreadDefaultStream));
// A BufferRef is a kernel argument as its device pointer.
static_assert(std::is_same_v<cuwrap::detail::LaunchArgument<BufferRef>::type, CUdeviceptr>);

template <class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(NoGpuStreamRef, HandleOfAnyLibraryIsKeptAsIs) {
  const StreamRef ref = kFakeStream;  // implicit, no driver call
  EXPECT_EQ(ref.handle(), kFakeStream);
  EXPECT_FALSE(ref.is_default());
  const StreamRef copy = ref;
  EXPECT_EQ(copy, ref);
  EXPECT_EQ(copy.handle(), kFakeStream);
}

TEST(NoGpuStreamRef, DefaultStreamsAreNamed) {
  EXPECT_EQ(kLegacyDefaultStream.handle(), CU_STREAM_LEGACY);
  EXPECT_EQ(kPerThreadDefaultStream.handle(), CU_STREAM_PER_THREAD);
  EXPECT_TRUE(kLegacyDefaultStream.is_default());
  EXPECT_TRUE(kPerThreadDefaultStream.is_default());
  EXPECT_EQ(StreamRef(cuwrap::kLegacyDefaultStream), kLegacyDefaultStream);
  EXPECT_EQ(StreamRef(cuwrap::kPerThreadDefaultStream), kPerThreadDefaultStream);
  EXPECT_EQ(StreamRef(CU_STREAM_LEGACY), kLegacyDefaultStream);
}

TEST(NoGpuStreamRef, StreamConvertsWithItsHandle) {
  const StreamRef per_thread = StreamRef::from_handle(CU_STREAM_PER_THREAD);
  const StreamRef ref = per_thread;
  EXPECT_EQ(ref.handle(), per_thread.handle());
  EXPECT_EQ(ref, kPerThreadDefaultStream);
  // from_handle(nullptr) names the null stream, which is the legacy default stream.
  const StreamRef null_stream = StreamRef::from_handle(nullptr);
  EXPECT_EQ(null_stream, kLegacyDefaultStream);
  EXPECT_TRUE(null_stream.is_default());
}

TEST(NoGpuStreamRef, NullHandleIsRefusedNamingTheConstructor) {
  const CUstream null_handle = nullptr;
  EXPECT_THROW(static_cast<void>(StreamRef(null_handle)), std::invalid_argument);
  const std::string message = message_of([&] { static_cast<void>(StreamRef(null_handle)); });
  EXPECT_NE(message.find("StreamRef(CUstream)"), std::string::npos) << message;
  EXPECT_NE(message.find("kLegacyDefaultStream"), std::string::npos) << message;
  // Where a function takes a StreamRef, the null handle is refused before the call.
  Buffer buffer = cuwrap::testing::fake_buffer(kStreamRefFakePointer, 4);
  EXPECT_THROW(buffer.fill(std::uint8_t{1}, null_handle), std::invalid_argument);
}

TEST(NoGpuStreamRef, EmptyStreamThroughARefThrowsLogicError) {
  Stream empty;  // default-constructed: an empty owner
  EXPECT_FALSE(empty.is_open());
  const StreamRef from_empty = empty;
  EXPECT_EQ(message_of([&] { static_cast<void>(from_empty.handle()); }),
            "Stream::handle on a closed Stream");
  EXPECT_EQ(message_of([&] { from_empty.sync(); }), "Stream::sync on a closed Stream");
  Stream closed;
  closed.close();  // idempotent on an empty owner
  const StreamRef from_closed = closed;
  EXPECT_THROW(static_cast<void>(from_closed.is_done()), std::logic_error);
  Buffer buffer = cuwrap::testing::fake_buffer(kStreamRefFakePointer, 4);
  EXPECT_THROW(buffer.fill(std::uint8_t{1}, from_closed), std::logic_error);
  EXPECT_THROW(kPerThreadDefaultStream.wait(from_closed), std::logic_error);
}

TEST(NoGpuStreamRef, MovedFromStreamIsEmpty) {
  Stream first;
  Stream second = std::move(first);
  EXPECT_FALSE(first.is_open());  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_FALSE(second.is_open());
  EXPECT_THROW(static_cast<void>(StreamRef(first).handle()), std::logic_error);
}

TEST(NoGpuEventRef, HandleOfAnyLibraryAndNull) {
  const EventRef ref = kFakeEvent;
  EXPECT_EQ(ref.handle(), kFakeEvent);
  EXPECT_EQ(ref.context(), nullptr);
  const CUevent null_event = nullptr;
  const std::string message = message_of([&] { static_cast<void>(EventRef(null_event)); });
  EXPECT_NE(message.find("EventRef(CUevent)"), std::string::npos) << message;
  EXPECT_THROW(static_cast<void>(EventRef(null_event)), std::invalid_argument);
}

TEST(NoGpuEventRef, EventConvertsAndAClosedOneThrows) {
  const EventRef ref = Event::from_handle(kFakeEvent);  // a view: nothing to destroy
  EXPECT_EQ(ref.handle(), kFakeEvent);
  EXPECT_EQ(ref, EventRef(kFakeEvent));
  Event event;  // default-constructed: an empty owner
  EXPECT_FALSE(event.is_open());
  event.close();  // idempotent
  const EventRef from_closed = event;
  EXPECT_EQ(message_of([&] { static_cast<void>(from_closed.handle()); }),
            "Event::handle on a closed Event");
  EXPECT_EQ(message_of([&] { from_closed.sync(); }), "Event::sync on a closed Event");
}

TEST(NoGpuBufferRef, ViewsAndSlices) {
  const Buffer whole = cuwrap::testing::fake_buffer(kStreamRefFakePointer, 64);
  const BufferRef ref = whole;
  EXPECT_EQ(ref.handle(), kStreamRefFakePointer);
  EXPECT_EQ(ref.size(), 64U);
  const BufferRef part = ref.slice(8, 16);
  EXPECT_EQ(part, BufferRef(kStreamRefFakePointer + 8, 16));
  // Buffer::slice gives the same view.
  EXPECT_EQ(whole.slice(8, 16), part);
  EXPECT_EQ(ref.slice(64, 0).size(), 0U);
  const std::string message = message_of([&] { static_cast<void>(ref.slice(60, 8)); });
  EXPECT_NE(message.find("BufferRef::slice: offset 60 and count 8"), std::string::npos) << message;
  EXPECT_THROW(static_cast<void>(whole.slice(60, 8)), std::invalid_argument);
}

TEST(NoGpuBufferRef, NullAddressOnlyWhenEmpty) {
  EXPECT_EQ(BufferRef(0, 0).size(), 0U);
  const std::string message = message_of([] { static_cast<void>(BufferRef(0, 4)); });
  EXPECT_NE(message.find("BufferRef(CUdeviceptr, size)"), std::string::npos) << message;
  EXPECT_THROW(static_cast<void>(BufferRef(0, 4)), std::invalid_argument);
  Buffer closed = cuwrap::testing::fake_buffer(kStreamRefFakePointer, 4);
  closed.close();
  EXPECT_THROW(static_cast<void>(BufferRef(closed)), std::logic_error);
}

TEST(NoGpuBufferRef, CopySizeMismatchIsCheckedBeforeTheDriver) {
  Buffer buffer = cuwrap::testing::fake_buffer(kStreamRefFakePointer, 16);
  const BufferRef other(kStreamRefFakePointer + 64, 8);
  const std::string message = message_of([&] { buffer.copy_from(other, kFakeStream); });
  EXPECT_NE(message.find("16 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("8 bytes"), std::string::npos) << message;
  EXPECT_THROW(buffer.copy_to(other, kFakeStream), std::invalid_argument);
}

// ---- Memory resources take the stream as a StreamRef -------------------------------------

// What a resource saw: the operation, the form it came through and the stream handle.
struct Call {
  std::string what;
  CUstream stream;
  bool operator==(const Call&) const = default;
};

// Records every allocate and deallocate with the stream it was given.
class NewSignatureResource : public cuwrap::MemoryResource {
 public:
  Buffer allocate(std::size_t size, StreamRef stream) override {
    calls.push_back({"allocate(StreamRef)", stream.handle()});
    return Buffer::adopt(kStreamRefFakePointer, size, this, stream);
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, StreamRef stream) override {
    calls.push_back({"deallocate(StreamRef)", stream.handle()});
  }
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }
  std::vector<Call> calls;
};

// Allocate through the interface with a StreamRef, a Stream and (directly) a CUstream,
// close each buffer; return what the resource saw.
template <class Resource>
std::vector<Call> exercise(Resource& resource) {
  cuwrap::MemoryResource& mr = resource;
  const StreamRef per_thread = StreamRef::from_handle(CU_STREAM_PER_THREAD);
  {
    Buffer a = mr.allocate(8, StreamRef(kFakeStream));
    EXPECT_EQ(a.handle(), kStreamRefFakePointer);
    EXPECT_EQ(a.size(), 8U);
  }  // freed on its allocation stream
  {
    Buffer b = mr.allocate(16, per_thread);
    b.close(kLegacyDefaultStream);
  }
  return resource.calls;
}

TEST(NoGpuStreamRefResource, OverrideReceivesEveryStream) {
  NewSignatureResource resource;
  const std::vector<Call> expected{{"allocate(StreamRef)", kFakeStream},
                                   {"deallocate(StreamRef)", kFakeStream},
                                   {"allocate(StreamRef)", CU_STREAM_PER_THREAD},
                                   {"deallocate(StreamRef)", CU_STREAM_LEGACY}};
  EXPECT_EQ(exercise(resource), expected);
  // Called on the derived type with a foreign handle, as user code does.
  Buffer c = resource.allocate(4, kFakeStream);
  EXPECT_EQ(resource.calls.back(), (Call{"allocate(StreamRef)", kFakeStream}));
}

// One virtual pair: a resource that implements neither allocate nor deallocate does not
// compile (it stays abstract).
static_assert(std::is_abstract_v<cuwrap::MemoryResource>);

// A resource forwarding to another (a user's adaptor).
class ForwardingResource : public cuwrap::MemoryResource {
 public:
  explicit ForwardingResource(cuwrap::MemoryResource& upstream) : upstream_(upstream) {}
  Buffer allocate(std::size_t size, StreamRef stream) override {
    Buffer inner = upstream_.allocate(size, stream);
    const CUdeviceptr ptr = inner.release();
    return Buffer::adopt(ptr, size, this, stream);
  }
  void deallocate(CUdeviceptr ptr, std::size_t size, StreamRef stream) override {
    upstream_.deallocate(ptr, size, stream);
  }
  bool is_device_accessible() const override { return true; }
  bool is_host_accessible() const override { return false; }

 private:
  cuwrap::MemoryResource& upstream_;
};

TEST(NoGpuStreamRefResource, NestedResourcesWork) {
  NewSignatureResource upstream;
  ForwardingResource outer(upstream);
  cuwrap::MemoryResource& mr = outer;
  {
    Buffer buffer = mr.allocate(8, kFakeStream);
    EXPECT_EQ(buffer.memory_resource(), &outer);
  }
  const std::vector<Call> expected{{"allocate(StreamRef)", kFakeStream},
                                   {"deallocate(StreamRef)", kFakeStream}};
  EXPECT_EQ(upstream.calls, expected);
}

// Derived from a built-in resource (made without a driver call), overriding its pair;
// every call must reach the override, none the built-in allocation.
class NewFormOnBuiltIn : public cuwrap::LegacyPinnedMemoryResource {
 public:
  using LegacyPinnedMemoryResource::allocate;
  using LegacyPinnedMemoryResource::deallocate;
  Buffer allocate(std::size_t size, StreamRef stream) override {
    calls.push_back({"allocate(StreamRef)", stream.handle()});
    return Buffer::adopt(kStreamRefFakePointer, size, this, stream);
  }
  void deallocate(CUdeviceptr /*ptr*/, std::size_t /*size*/, StreamRef stream) override {
    calls.push_back({"deallocate(StreamRef)", stream.handle()});
  }
  std::vector<Call> calls;
};

TEST(NoGpuStreamRefResource, OverridesOfABuiltInResourceReceiveEveryCall) {
  NewFormOnBuiltIn new_form;
  EXPECT_EQ(exercise(new_form), (std::vector<Call>{{"allocate(StreamRef)", kFakeStream},
                                                   {"deallocate(StreamRef)", kFakeStream},
                                                   {"allocate(StreamRef)", CU_STREAM_PER_THREAD},
                                                   {"deallocate(StreamRef)", CU_STREAM_LEGACY}}));
}

// ---- Operations through refs on real streams (GPU) --------------------------------------

// A stream made by the driver directly, as another library would; destroyed at the end.
class ForeignStreamTest : public cuwrap::testing::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    foreign_ = cuwrap::driver::cuStreamCreate(CU_STREAM_NON_BLOCKING);
  }
  void TearDown() override {
    if (foreign_ != nullptr) {
      EXPECT_EQ(cuwrap::driver::raw::cuStreamDestroy(foreign_), CUDA_SUCCESS);
    }
  }
  CUstream foreign_ = nullptr;
};

// Fill and copy through any StreamRef; return the bytes read back.
std::vector<std::byte> fill_copy_read(const cuwrap::Device& device, StreamRef stream,
                                      std::uint8_t value) {
  Buffer a = device.allocate(256, stream);
  Buffer b = device.allocate(256, stream);
  a.fill(value, stream);
  b.copy_from(BufferRef(a), stream);
  std::vector<std::byte> host(256);
  b.copy_to(std::span<std::byte>(host), stream);
  stream.sync();
  return host;
}

TEST_F(ForeignStreamTest, OperationsThroughAForeignHandle) {
  const StreamRef ref = foreign_;
  EXPECT_EQ(ref.handle(), foreign_);
  EXPECT_EQ(ref.device().device_id(), device().device_id());
  EXPECT_EQ(ref.context(), device().context());
  EXPECT_TRUE(ref.is_nonblocking());
  EXPECT_EQ(ref.priority(), cuwrap::driver::cuStreamGetPriority(foreign_));
  const std::vector<std::byte> host = fill_copy_read(device(), ref, 0x5A);
  EXPECT_EQ(host, std::vector<std::byte>(256, std::byte{0x5A}));
  EXPECT_TRUE(ref.is_done());
}

TEST_F(ForeignStreamTest, EventsThroughRefs) {
  const StreamRef ref = foreign_;
  Event recorded = ref.record({.enable_timing = true});
  recorded.sync();
  EXPECT_TRUE(recorded.is_done());
  // A foreign event, recorded and waited for through refs.
  const CUevent foreign_event = cuwrap::driver::cuEventCreate(CU_EVENT_DISABLE_TIMING);
  const EventRef event_ref = foreign_event;
  ref.record(event_ref);
  Stream other = device().create_stream();
  other.wait(event_ref);
  other.sync();
  EXPECT_TRUE(event_ref.is_done());
  EXPECT_EQ(cuwrap::driver::raw::cuEventDestroy(foreign_event), CUDA_SUCCESS);
}

TEST_F(ForeignStreamTest, DefaultStreamsAndAStreamThroughRefs) {
  EXPECT_EQ(fill_copy_read(device(), kPerThreadDefaultStream, 3),
            std::vector<std::byte>(256, std::byte{3}));
  EXPECT_EQ(fill_copy_read(device(), kLegacyDefaultStream, 4),
            std::vector<std::byte>(256, std::byte{4}));
  const Stream owned = device().create_stream();
  EXPECT_EQ(fill_copy_read(device(), owned, 5), std::vector<std::byte>(256, std::byte{5}));
  kPerThreadDefaultStream.wait(StreamRef(foreign_));
  kPerThreadDefaultStream.sync();
  EXPECT_TRUE(StreamRef(foreign_).is_done());
}

TEST_F(ForeignStreamTest, BufferAllocatedOnAForeignStreamFreesOnIt) {
  Buffer buffer = device().allocate(64, StreamRef(foreign_));
  buffer.fill(std::uint8_t{9}, foreign_);
  std::vector<std::byte> host(64);
  buffer.copy_to(std::span<std::byte>(host), foreign_);
  buffer.close();  // ordered on the foreign stream, which is still alive
  cuwrap::driver::cuStreamSynchronize(foreign_);
  EXPECT_FALSE(buffer.is_open());
  EXPECT_EQ(host, std::vector<std::byte>(64, std::byte{9}));
}

// A function written for StreamRef captures into a graph when given a builder.
void zero_then_fill(Buffer& buffer, StreamRef stream, std::uint8_t value) {
  buffer.fill(std::uint8_t{0}, stream);
  buffer.fill(value, stream);
}

TEST_F(ForeignStreamTest, BuilderPassesAsAStreamRef) {
  const Stream stream = device().create_stream();
  Buffer buffer = device().allocate(128, stream);
  stream.sync();
  cuwrap::GraphBuilder builder = stream.create_graph_builder();
  builder.begin_building();
  zero_then_fill(buffer, builder, 0x21);
  cuwrap::Graph graph = builder.end_building().complete();
  EXPECT_EQ(cuwrap::driver::cuGraphGetNodes(builder.handle()).size(), 2U);
  graph.launch(StreamRef(foreign_));  // launched on another library's stream
  std::vector<std::byte> host(128);
  buffer.copy_to(std::span<std::byte>(host), foreign_);
  StreamRef(foreign_).sync();
  EXPECT_EQ(host, std::vector<std::byte>(128, std::byte{0x21}));
}

}  // namespace
