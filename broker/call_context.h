// What the broker knows about one call while it is being served: which channel and request,
// the policy it started under, and the services that record it. Built by the dispatcher for
// every request and handed to the pieces that record or gate its action.
#ifndef BROKER_CALL_CONTEXT_H_
#define BROKER_CALL_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "broker/audit/audit_log.h"
#include "broker/policy/policy.h"
#include "broker/policy_state.h"

namespace airlock::broker {

struct CallContext {
  uint64_t channel = 0;
  uint64_t request_id = 0;
  std::string tool;
  std::shared_ptr<const Policy> policy;  // the policy in force when the call arrived
  audit::AuditLog* audit = nullptr;
  PolicyState* policy_state = nullptr;

  // An audit record for this call with channel, request id, tool, preset, mode and epoch set.
  audit::AuditRecord Record(audit::AuditEvent event) const;
};

}  // namespace airlock::broker

#endif  // BROKER_CALL_CONTEXT_H_
