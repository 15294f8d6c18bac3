#include "broker/after_reply.h"

#include <utility>

namespace airlock::broker {
namespace {

thread_local AfterReply::Scope* current_scope = nullptr;

}  // namespace

AfterReply::Scope::Scope() : outer_(current_scope) { current_scope = this; }

AfterReply::Scope::~Scope() {
  current_scope = outer_;
  // Work deferred by deferred work goes to the enclosing scope, or runs at once.
  for (std::function<void()>& work : deferred_) work();
}

void AfterReply::Defer(std::function<void()> work) {
  if (current_scope == nullptr) {
    work();
    return;
  }
  current_scope->deferred_.push_back(std::move(work));
}

}  // namespace airlock::broker
