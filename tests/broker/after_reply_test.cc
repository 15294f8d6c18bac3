#include "broker/after_reply.h"

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace airlock::broker {
namespace {

TEST(AfterReplyTest, WithoutAScopeWorkRunsAtOnce) {
  std::string log;
  AfterReply::Defer([&log] { log += "a"; });
  EXPECT_EQ(log, "a");
}

TEST(AfterReplyTest, UnderAScopeWorkRunsInOrderWhenItEnds) {
  std::string log;
  {
    AfterReply::Scope scope;
    AfterReply::Defer([&log] { log += "a"; });
    AfterReply::Defer([&log] { log += "b"; });
    log += "reply;";
  }
  EXPECT_EQ(log, "reply;ab");
  AfterReply::Defer([&log] { log += "c"; });  // the scope is gone: at once again
  EXPECT_EQ(log, "reply;abc");
}

TEST(AfterReplyTest, TheInnermostScopeCollectsAndWorkDeferredByWorkRunsAtOnce) {
  std::string log;
  {
    AfterReply::Scope outer;
    {
      AfterReply::Scope inner;
      AfterReply::Defer([&log] {
        log += "inner;";
        AfterReply::Defer([&log] { log += "nested;"; });  // runs under `outer`'s end
      });
    }
    EXPECT_EQ(log, "inner;");
  }
  EXPECT_EQ(log, "inner;nested;");
}

TEST(AfterReplyTest, AScopeBelongsToItsThread) {
  std::string log;
  AfterReply::Scope scope;
  std::thread([&log] { AfterReply::Defer([&log] { log += "other thread;"; }); }).join();
  EXPECT_EQ(log, "other thread;");
}

}  // namespace
}  // namespace airlock::broker
