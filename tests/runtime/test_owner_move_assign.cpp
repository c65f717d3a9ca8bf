// detail::move_assign, the one move-assignment of every owner (docs/ownership.md): moving
// into an open owner releases its old resource exactly once, self-assignment keeps it, the
// moved-from owner is closed, also for an owner that derives from its Ref type, for one in
// a container and for one that is a member. The owners of cuwrap that need no GPU to open
// (file descriptors) check the same through their real move-assignment. No GPU needed.
#include <cuwrap/detail/owner.hpp>
#include <cuwrap/ipc.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

// How many times each handle (1 to 7) was released.
using Releases = std::array<int, 8>;

// A Ref-like view: a handle, trivially copyable, owning nothing (0: closed).
class HandleRef {
 public:
  HandleRef() = default;
  explicit HandleRef(int handle) noexcept : handle_(handle) {}
  int handle() const noexcept { return handle_; }

 protected:
  int handle_ = 0;  // NOLINT(misc-non-private-member-variables-in-classes): the owner's too
};

// An owner as cuwrap writes them: its Ref plus the duty to release, with a member that
// has resources of its own (the label), and the one move-assignment.
class Handle : public HandleRef {
 public:
  Handle() = default;
  Handle(int handle, Releases* releases, std::string label)
      : HandleRef(handle), releases_(releases), label_(std::move(label)) {}
  Handle(Handle&& other) noexcept
      : HandleRef(std::exchange(other.handle_, 0)),
        releases_(other.releases_),
        label_(std::move(other.label_)) {}
  Handle& operator=(Handle&& other) noexcept {
    return cuwrap::detail::move_assign(*this, std::move(other));
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  void close() noexcept {
    if (handle_ != 0) {
      ++(*releases_)[static_cast<std::size_t>(std::exchange(handle_, 0))];
    }
  }
  bool is_open() const noexcept { return handle_ != 0; }
  const std::string& label() const noexcept { return label_; }

 private:
  Releases* releases_ = nullptr;
  std::string label_;
};

static_assert(std::is_nothrow_move_assignable_v<Handle>);
static_assert(std::is_same_v<decltype(cuwrap::detail::move_assign(std::declval<Handle&>(),
                                                                  std::declval<Handle&&>())),
                             Handle&>);

TEST(OwnerMoveAssign, IntoAnOpenOwnerReleasesItsOldResourceOnce) {
  Releases releases{};
  {
    Handle a(1, &releases, "a label long enough to live on the heap, not in the string");
    Handle b(2, &releases, "b");
    Handle& result = (a = std::move(b));
    EXPECT_EQ(&result, &a);
    EXPECT_EQ(releases[1], 1);
    EXPECT_EQ(releases[2], 0);
    EXPECT_TRUE(a.is_open());
    EXPECT_EQ(a.handle(), 2);
    EXPECT_EQ(a.label(), "b");
    EXPECT_FALSE(b.is_open());  // NOLINT(bugprone-use-after-move): moved-from is closed
    EXPECT_EQ(b.handle(), 0);
  }
  EXPECT_EQ(releases[1], 1);
  EXPECT_EQ(releases[2], 1);  // once, by `a`; the moved-from `b` released nothing
}

TEST(OwnerMoveAssign, SelfAssignmentKeepsTheResource) {
  Releases releases{};
  {
    Handle a(3, &releases, "kept");
    Handle& same = a;
    a = std::move(same);
    EXPECT_TRUE(a.is_open());
    EXPECT_EQ(a.handle(), 3);
    EXPECT_EQ(a.label(), "kept");
    EXPECT_EQ(releases[3], 0);
  }
  EXPECT_EQ(releases[3], 1);
}

TEST(OwnerMoveAssign, IntoAClosedOwnerReleasesNothingAndAMovedFromOwnerIsReusable) {
  Releases releases{};
  {
    Handle closed;
    Handle b(4, &releases, "b");
    closed = std::move(b);
    EXPECT_EQ(closed.handle(), 4);
    EXPECT_EQ(releases[4], 0);
    b = Handle(5, &releases, "again");  // NOLINT(bugprone-use-after-move): reused on purpose
    EXPECT_EQ(b.handle(), 5);
    EXPECT_EQ(b.label(), "again");
    closed = std::move(b);  // releases 4, takes 5
    EXPECT_EQ(releases[4], 1);
    EXPECT_EQ(closed.handle(), 5);
    closed = Handle();  // a closed one: releases 5, closed after
    EXPECT_EQ(releases[5], 1);
    EXPECT_FALSE(closed.is_open());
  }
  EXPECT_EQ(releases[4], 1);
  EXPECT_EQ(releases[5], 1);
}

TEST(OwnerMoveAssign, TheRefBaseAndReferencesNameTheNewState) {
  Releases releases{};
  Handle a(1, &releases, "a");
  const HandleRef& view = a;  // a reference to the Ref base of the owner
  const Handle* address = &a;
  a = Handle(6, &releases, "six");
  EXPECT_EQ(view.handle(), 6);
  EXPECT_EQ(address->label(), "six");
  const HandleRef copy = a;  // a Ref made from the owner after the assignment
  EXPECT_EQ(copy.handle(), 6);
  EXPECT_EQ(releases[1], 1);
  EXPECT_EQ(releases[6], 0);
}

TEST(OwnerMoveAssign, OwnersInContainersAndAsMembers) {
  Releases releases{};
  {
    std::vector<Handle> handles;
    handles.emplace_back(1, &releases, "one");
    handles.emplace_back(2, &releases, "two");
    handles[0] = std::move(handles[1]);
    EXPECT_EQ(releases[1], 1);
    EXPECT_EQ(handles[0].handle(), 2);
    EXPECT_FALSE(handles[1].is_open());

    struct Holder {
      Handle handle;
      int after = 42;
    };
    Holder holder{Handle(3, &releases, "three")};
    holder.handle = std::move(handles[0]);
    EXPECT_EQ(releases[3], 1);
    EXPECT_EQ(holder.handle.handle(), 2);
    EXPECT_EQ(holder.after, 42);  // the neighbouring member is untouched
  }
  EXPECT_EQ(releases[1], 1);
  EXPECT_EQ(releases[2], 1);
  EXPECT_EQ(releases[3], 1);
}

// Return whether `fd` is an open file descriptor of this process.
bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(OwnerMoveAssign, IPCChannelClosesItsOldSocketAndTakesTheOther) {
  std::array<cuwrap::IPCChannel, 2> pair = cuwrap::IPCChannel::create_pair();
  const int first = pair[0].handle();
  const int second = pair[1].handle();
  pair[0] = std::move(pair[1]);
  EXPECT_FALSE(fd_is_open(first));
  EXPECT_TRUE(fd_is_open(second));
  EXPECT_EQ(pair[0].handle(), second);
  EXPECT_FALSE(pair[1].is_open());  // NOLINT(bugprone-use-after-move): moved-from is closed
  cuwrap::IPCChannel& same = pair[0];
  pair[0] = std::move(same);
  EXPECT_TRUE(fd_is_open(second));
  EXPECT_EQ(pair[0].handle(), second);
  pair[0].close();
  EXPECT_FALSE(fd_is_open(second));
}

TEST(OwnerMoveAssign, IPCAllocationHandleClosesItsOldDescriptor) {
  int pipe_fds[2] = {-1, -1};
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  cuwrap::IPCAllocationHandle a(pipe_fds[0], cuwrap::IPCPoolId{});
  cuwrap::IPCAllocationHandle b(pipe_fds[1], cuwrap::IPCPoolId{});
  a = std::move(b);
  EXPECT_FALSE(fd_is_open(pipe_fds[0]));
  EXPECT_TRUE(fd_is_open(pipe_fds[1]));
  EXPECT_EQ(a.handle(), pipe_fds[1]);
  EXPECT_FALSE(b.is_open());  // NOLINT(bugprone-use-after-move): moved-from is closed
  a.close();
  EXPECT_FALSE(fd_is_open(pipe_fds[1]));
}

}  // namespace
