// The progress thread's choice between spinning and sleeping once a pass found nothing to do.
#include "provider/progress_policy.h"

#include <gtest/gtest.h>

namespace uroce::provider {
namespace {

constexpr uint64_t kSpin = 20'000;

TEST(KeepSpinning, WithinTheSpinAfterWorkOrAnApplicationCallOnAnotherCpu) {
  EXPECT_TRUE(keep_spinning(0, 1'000'000, kSpin, 1, 0));
  EXPECT_TRUE(keep_spinning(1'000'000, kSpin - 1, kSpin, 1, 0));
  EXPECT_TRUE(keep_spinning(5'000, 5'000, kSpin, -1, 0)) << "no application call seen yet";
  EXPECT_FALSE(keep_spinning(kSpin, kSpin, kSpin, 1, 0)) << "the spin is over";
  EXPECT_FALSE(keep_spinning(kSpin, kSpin, kSpin, -1, 0));
}

// On the CPU the application thread last called from, spinning would only keep that thread off it.
TEST(KeepSpinning, NeverOnTheApplicationsCpu) {
  EXPECT_FALSE(keep_spinning(0, 0, kSpin, 0, 0));
  EXPECT_FALSE(keep_spinning(0, 1'000'000, kSpin, 1, 1));
  EXPECT_FALSE(keep_spinning(1'000'000, 10, kSpin, 1, 1));
}

// An application thread that called at 1000 and again at 9000 was away 8 us, less what the progress
// thread's turn on its CPU took of that time.
// While applications poll, the thread looks at them after a quarter of how long they have polled: soon
// for one that just started, rarely for one that has polled long; with the bell armed for one-sided
// requests it need not look soon, since such a request wakes it.
TEST(PollingNapNs, AQuarterOfThePollingWithinItsBounds) {
  EXPECT_EQ(polling_nap_ns(0, false), kPollingMinNapNs);
  EXPECT_EQ(polling_nap_ns(400'000, false), 100'000u);
  EXPECT_EQ(polling_nap_ns(60'000'000, false), kPollingMaxNapNs);
  EXPECT_EQ(polling_nap_ns(0, true), kPollingBellMinNapNs);
  EXPECT_EQ(polling_nap_ns(2'000'000, true), 500'000u);
  EXPECT_EQ(polling_nap_ns(60'000'000, true), kPollingMaxNapNs);
  EXPECT_LT(kPollingMinNapNs, kPollingBellMinNapNs);
}

// An application thread that polls: inside a verb or just out of one, with no gap since the thread's last
// look. The gap that counts is 3 us without the bell, 100 us with it (a request wakes the thread whatever
// the application does; shorter absences are preemptions).
TEST(AppPolling, ByTheGapThatCountsWithOrWithoutTheBell) {
  AppSeen a;
  a.last_ns = 1'000'000;
  const uint64_t looked = 900'000;  // the thread's previous look
  a.quiet_ns = 1'000;
  EXPECT_TRUE(app_polling(a, looked, false));
  EXPECT_TRUE(app_polling(a, looked, true));
  a.quiet_ns = 50'000;  // away 50 us now: preempted, or spinning on memory for a WRITE
  EXPECT_FALSE(app_polling(a, looked, false));
  EXPECT_TRUE(app_polling(a, looked, true));
  a.inside = true;
  EXPECT_TRUE(app_polling(a, looked, false)) << "inside a verb now";
  a.inside = false;
  a.quiet_ns = kAppAwayNs;
  EXPECT_FALSE(app_polling(a, looked, true)) << "gone for good";
  a.quiet_ns = 1'000;
  a.gap_at_ns = 950'000;  // a short gap since the last look
  EXPECT_FALSE(app_polling(a, looked, false));
  EXPECT_TRUE(app_polling(a, looked, true));
  a.away_at_ns = 960'000;  // and a long one
  EXPECT_FALSE(app_polling(a, looked, true));
  EXPECT_TRUE(app_polling(a, 970'000, true)) << "both before the last look";
}

// An application that armed a CQ and called at most briefly after is about to block on the channel: the
// thread serves, bell or not. One that went on polling long after arming polls.
TEST(AppPolling, NotWhileAboutToBlockOnAnArmedCq) {
  AppSeen a;
  const uint64_t looked = 500'000;
  a.inside = true;
  a.last_ns = 1'000'000;
  a.armed_at_ns = 999'000;  // armed, then the poll that closes the race
  EXPECT_FALSE(app_polling(a, looked, false));
  EXPECT_FALSE(app_polling(a, looked, true));
  a.armed_at_ns = 1'000'500;  // armed after its last call
  EXPECT_FALSE(app_polling(a, looked, true));
  a.armed_at_ns = a.last_ns - kArmGraceNs;  // armed, then polled on
  EXPECT_TRUE(app_polling(a, looked, false));
  EXPECT_TRUE(app_polling(a, looked, true));
}

// Polls linger once the application has come back kHits times in a row, after a poll that returned
// completions, from an absence in which a one-sided request was placed. An absence without one breaks the
// row; a quick return (a polling application) neither counts nor breaks it.
TEST(Linger, StartsAfterARowOfAbsencesThatEachSawARequest) {
  Linger l(true);
  EXPECT_EQ(l.window_ns(), 0u);
  for (uint32_t i = 0; i + 1 < Linger::kHits; ++i) l.returned(true, true);
  l.returned(false, true);
  l.returned(false, false);
  EXPECT_EQ(l.window_ns(), 0u) << "one short of the row; quick returns count for nothing";
  l.returned(true, false);
  l.returned(true, true);
  EXPECT_EQ(l.window_ns(), 0u) << "an absence with no request started the row again";
  for (uint32_t i = 1; i < Linger::kHits; ++i) l.returned(true, true);
  EXPECT_EQ(l.window_ns(), Linger::kWindowNs);
  l.lingered(true);
  l.returned(true, false);
  EXPECT_EQ(l.window_ns(), Linger::kWindowNs) << "on, only lingers and the thread's finds decide";

  Linger off(false);  // UROCE_LINGER=0
  for (uint32_t i = 0; i < Linger::kHits; ++i) off.returned(true, true);
  EXPECT_EQ(off.window_ns(), 0u);
}

// Through uroced the peer's WRITE crosses a switch on the same cores: a linger waits longer for it there.
TEST(Linger, WaitsLongerWhenTheSwitchSharesTheCores) {
  Linger direct(true), shared(true, /*shared=*/true);
  for (uint32_t i = 0; i < Linger::kHits; ++i) {
    direct.returned(true, true);
    shared.returned(true, true);
  }
  EXPECT_EQ(direct.window_ns(), Linger::kWindowNs);
  EXPECT_EQ(shared.window_ns(), Linger::kSharedWindowNs);
  EXPECT_GT(Linger::kSharedWindowNs, Linger::kWindowNs);
  shared.lingered(false);
  EXPECT_EQ(shared.window_ns(), 0u) << "a miss stops it there too";
}

// A linger that catches nothing stops it, and so do requests the progress thread keeps finding with no
// linger catching one in between; it starts again only after a new row.
TEST(Linger, StopsOnAMissOrWhenTheThreadKeepsPlacingTheRequests) {
  const auto started = [] {
    Linger l(true);
    for (uint32_t i = 0; i < Linger::kHits; ++i) l.returned(true, true);
    return l;
  };
  Linger a = started();
  ASSERT_NE(a.window_ns(), 0u);
  a.lingered(false);
  EXPECT_EQ(a.window_ns(), 0u);
  a.returned(true, true);
  EXPECT_EQ(a.window_ns(), 0u) << "a new row is needed";
  // The thread may look just as a request waits between two lingers: that alone stops nothing.
  Linger b = started();
  b.thread_placed();
  EXPECT_NE(b.window_ns(), 0u) << "the first find after the start";
  b.lingered(true);
  b.thread_placed();
  EXPECT_NE(b.window_ns(), 0u) << "a linger caught one since";
  b.thread_placed();
  EXPECT_EQ(b.window_ns(), 0u) << "the thread places them and no poll lingers";
}

TEST(AwayNs, LessTheProgressThreadsTurnOnItsCpu) {
  EXPECT_EQ(away_ns(1'000, 9'000, 0, 0, 0), 8'000u) << "no turn yet";
  EXPECT_EQ(away_ns(1'000, 9'000, 2'000, 8'000, 0), 2'000u) << "a turn within the gap";
  EXPECT_EQ(away_ns(1'000, 9'000, 500, 4'000, 0), 5'000u) << "a turn that began before the last call";
  EXPECT_EQ(away_ns(1'000, 9'000, 6'000, 12'000, 0), 5'000u) << "a turn that ends after now";
  EXPECT_EQ(away_ns(1'000, 9'000, 6'000, 5'000, 0), 5'000u) << "a turn not ended: it lasts until now";
  EXPECT_EQ(away_ns(1'000, 9'000, 100, 900, 0), 8'000u) << "an earlier turn";
  EXPECT_EQ(away_ns(1'000, 9'000, 9'500, 9'800, 0), 8'000u) << "a later one";
}

// The application gets its CPU back only after the kernel switched from the sleeping thread to it: that
// time is the thread's turn too, but only once the turn has ended.
TEST(AwayNs, AnEndedTurnLastsUntilTheSwitchBack) {
  EXPECT_EQ(away_ns(1'000, 30'000, 2'000, 8'000, 0), 23'000u);
  EXPECT_EQ(away_ns(1'000, 30'000, 2'000, 8'000, 20'000), 3'000u)
      << "back at 28'000: 1'000 before, 2'000 after";
  EXPECT_EQ(away_ns(1'000, 20'000, 2'000, 8'000, 20'000), 1'000u) << "called before the switch-back ended";
  EXPECT_EQ(away_ns(1'000, 30'000, 6'000, 5'000, 20'000), 5'000u) << "a turn not ended: it lasts until now";
  EXPECT_EQ(away_ns(1'000, 30'000, 100, 900, 20'000), 9'100u)
      << "an earlier turn's switch-back, until 20'900";
}

// On another CPU the application's silence runs until now; on its own CPU it ends where the progress
// thread's turn began.
TEST(AppQuietNs, OnTheApplicationsCpuUntilTheTurnBegan) {
  EXPECT_EQ(app_quiet_ns(10'000, 2'000, false, 3'000), 8'000u);
  EXPECT_EQ(app_quiet_ns(10'000, 2'000, true, 3'000), 1'000u);
  EXPECT_EQ(app_quiet_ns(10'000, 4'000, true, 3'000), 0u) << "it called during the turn";
  EXPECT_EQ(app_quiet_ns(10'000, 12'000, false, 0), 0u) << "a stamp a little ahead of this clock";
}

// A burst of posts: the first sends at once, those entering within kBurstNs of the previous one wait, up to
// kMaxWaiting; a pass sends them all.
TEST(PostCoalescer, PostsAfterTheFirstOfABurstWait) {
  using C = PostCoalescer;
  C c(true);
  EXPECT_FALSE(c.may_wait(1'000'000)) << "the first post of a burst";
  uint64_t t = 1'000'000;
  for (uint32_t i = 0; i < C::kMaxWaiting; ++i) EXPECT_TRUE(c.may_wait(t += 300)) << i;
  EXPECT_EQ(c.waiting(), C::kMaxWaiting);
  EXPECT_FALSE(c.may_wait(t += 300)) << "a full burst's worth waits: this one sends them";
  EXPECT_FALSE(c.pass(false, 0));
  EXPECT_EQ(c.waiting(), 0u);
  EXPECT_TRUE(c.may_wait(t += 300));
  EXPECT_FALSE(c.may_wait(t += C::kBurstNs)) << "a post after a pause sends at once";
  EXPECT_FALSE(C(false).may_wait(1)) << "switched off (UROCE_TX_COALESCE=0)";
}

// Bursts left to the progress thread kStrikes times in a row switch coalescing off for kOffNs, then twice
// that; a burst the application ends itself, or frames the thread finds young, start the count again.
TEST(PostCoalescer, BurstsLeftToTheProgressThreadSwitchItOff) {
  using C = PostCoalescer;
  C c(true);
  uint64_t t = 1'000'000;
  auto leave_burst = [&] {
    c.may_wait(t += 10'000);
    EXPECT_TRUE(c.may_wait(t += 100));
    return c.pass(true, t += C::kLeftNs);
  };
  EXPECT_TRUE(leave_burst());
  EXPECT_TRUE(leave_burst());
  c.may_wait(t += 10'000);
  c.may_wait(t += 100);
  EXPECT_FALSE(c.pass(false, 0)) << "the application ended this burst: the count starts again";
  c.may_wait(t += 10'000);
  c.may_wait(t += 100);
  EXPECT_FALSE(c.pass(true, t + C::kLeftNs - 1)) << "found young: a pass of the thread, not a burst left";
  EXPECT_TRUE(leave_burst());
  EXPECT_TRUE(leave_burst());
  EXPECT_FALSE(c.off_at(t));
  EXPECT_TRUE(leave_burst());
  EXPECT_TRUE(c.off_at(t));
  EXPECT_TRUE(c.off_at(t + C::kOffNs - 1));
  EXPECT_FALSE(c.may_wait(t + 100)) << "off";
  EXPECT_FALSE(c.may_wait(t + 200));
  t += C::kOffNs;
  EXPECT_FALSE(c.off_at(t));
  for (int i = 0; i < 3; ++i) leave_burst();
  EXPECT_TRUE(c.off_at(t + 2 * C::kOffNs - 1)) << "twice as long the second time";
  EXPECT_FALSE(c.off_at(t + 2 * C::kOffNs + 1));
}

}  // namespace
}  // namespace uroce::provider
