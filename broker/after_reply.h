// Work a call leaves until its reply has been sent: the release of a shell call's mask mount
// points, say, which the worker need not wait for. The thread that handles a request and sends
// its reply holds a Scope around both; what is deferred under it runs when it ends, right after
// the reply went out, on that thread. Without a Scope (the one-shot `airlock exec`, tests) the
// work runs at once.
//
// Deferred work must leave nothing that a later call could observe wrongly in the meantime:
// the mask release is safe because a later call's scan finds the entries still held by this
// process and masks them again (mask_mount_points.h).
#ifndef BROKER_AFTER_REPLY_H_
#define BROKER_AFTER_REPLY_H_

#include <functional>
#include <vector>

namespace airlock::broker {

class AfterReply {
 public:
  // Installs itself as the current thread's scope (scopes nest: the innermost collects).
  class Scope {
   public:
    Scope();
    // Runs what was deferred, in order.
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    friend class AfterReply;
    Scope* outer_;
    std::vector<std::function<void()>> deferred_;
  };

  // Runs `work` when the current thread's scope ends, or now if there is none.
  static void Defer(std::function<void()> work);
};

}  // namespace airlock::broker

#endif  // BROKER_AFTER_REPLY_H_
