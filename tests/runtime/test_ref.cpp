// detail::Ref, the intrusive shared ownership behind Kernel, ObjectCode, Stream state,
// GraphBuilder and the green-context types (no <memory> in the public headers): copies
// share, moves transfer, the last release deletes exactly once, also when many threads
// copy and drop references at the same time. No GPU needed.
#include <cuwrap/detail/ref.hpp>

#include <gtest/gtest.h>

#include "../../runtime/src/base/ref_counted.hpp"

#include <atomic>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace reftest {

struct Tracked : cuwrap::detail::RefCounted {
  explicit Tracked(std::atomic<int>* destroyed_count) : destroyed(destroyed_count) {}
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { destroyed->fetch_add(1); }
  std::atomic<int>* destroyed;
  int value = 7;
};

void ref_acquire(const Tracked* object) noexcept { cuwrap::detail::acquire_counted(object); }
void ref_release(const Tracked* object) noexcept { cuwrap::detail::release_counted(object); }

}  // namespace reftest

namespace {

using cuwrap::detail::make_ref;
using cuwrap::detail::Ref;
using reftest::Tracked;

static_assert(std::is_nothrow_copy_constructible_v<Ref<Tracked>>);
static_assert(std::is_nothrow_move_constructible_v<Ref<Tracked>>);
static_assert(std::is_nothrow_move_assignable_v<Ref<Tracked>>);

TEST(Ref, CopiesShareMovesTransferAndTheLastReleaseDeletesOnce) {
  std::atomic<int> destroyed{0};
  Ref<Tracked> a = make_ref<Tracked>(&destroyed);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ref_count, 1UL);
  Ref<Tracked> b = a;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->ref_count, 2UL);
  Ref<Tracked> c = std::move(b);
  EXPECT_TRUE(b == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is null
  EXPECT_EQ(c->ref_count, 2UL);
  a.reset();
  EXPECT_EQ(destroyed.load(), 0);
  EXPECT_EQ(c->value, 7);
  c.reset();
  EXPECT_EQ(destroyed.load(), 1);
  c.reset();  // a null Ref releases nothing
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(Ref, AssignmentReleasesTheOldObjectAndSelfAssignmentKeepsIt) {
  std::atomic<int> destroyed{0};
  Ref<Tracked> a = make_ref<Tracked>(&destroyed);
  Ref<Tracked> b = make_ref<Tracked>(&destroyed);
  const Tracked* kept = b.get();
  a = b;  // the first object's only reference goes
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(a.get(), kept);
  const Ref<Tracked>& same = a;
  a = same;
  EXPECT_EQ(a.get(), kept);
  EXPECT_EQ(kept->ref_count, 2UL);
  a = Ref<Tracked>();
  b = Ref<Tracked>();
  EXPECT_EQ(destroyed.load(), 2);
}

TEST(Ref, ConvertsToConstAndCountsCorrectlyAcrossThreads) {
  std::atomic<int> destroyed{0};
  Ref<Tracked> owner = make_ref<Tracked>(&destroyed);
  const Ref<const Tracked> shared = owner;  // Ref<T> → Ref<const T> shares the object
  EXPECT_EQ(owner->ref_count, 2UL);
  constexpr int kThreads = 8;
  constexpr int kRounds = 20000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < kRounds; ++i) {
        Ref<const Tracked> copy = shared;
        Ref<const Tracked> moved = std::move(copy);
        EXPECT_EQ(moved->value, 7);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(destroyed.load(), 0);
  EXPECT_EQ(shared->ref_count, 2UL);
  owner.reset();
  EXPECT_EQ(destroyed.load(), 0);  // `shared` still holds it
}

}  // namespace
