#include "broker/call_context.h"

#include "broker/wire_error.h"

namespace airlock::broker {

audit::AuditRecord CallContext::Record(audit::AuditEvent event) const {
  audit::AuditRecord record;
  record.event = event;
  record.channel = channel;
  record.request_id = request_id;
  record.tool = tool;
  if (policy != nullptr) {
    record.preset = std::string(PresetName(policy->preset()));
    record.mode = std::string(ModeName(policy->mode()));
    record.policy_epoch = policy->epoch();
  }
  return record;
}

}  // namespace airlock::broker
