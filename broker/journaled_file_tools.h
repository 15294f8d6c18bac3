// FileTools for one call, with the write-ahead discipline of SPEC §9 around every mutation:
// right before a plan is committed, the call is marked executing under the policy it was
// decided by (APPROVAL_STALE if that policy is gone) and a durable intent record is written
// (if the log cannot be written, nothing is done). The intent is synced while the file tools
// write and sync the temp file, and awaited right before the rename. The outcome is recorded
// after.
// Everything else passes through to the real FileTools.
#ifndef BROKER_JOURNALED_FILE_TOOLS_H_
#define BROKER_JOURNALED_FILE_TOOLS_H_

#include "broker/call_context.h"
#include "broker/fs/file_tools.h"

namespace airlock::broker {

class JournaledFileTools final : public FileTools {
 public:
  JournaledFileTools(FileTools& files, const CallContext& call) : files_(files), call_(call) {}

  absl::StatusOr<v1::ReadResult> Read(const v1::ReadRequest& request) override {
    return files_.Read(request);
  }
  absl::StatusOr<v1::ListResult> List(const v1::ListRequest& request) override {
    return files_.List(request);
  }
  absl::StatusOr<v1::WriteResult> Write(const v1::WriteRequest& request) override;
  absl::StatusOr<v1::EditResult> Edit(const v1::EditRequest& request) override;
  absl::StatusOr<MutationPlan> PlanWrite(const v1::WriteRequest& request) override {
    return files_.PlanWrite(request);
  }
  absl::StatusOr<MutationPlan> PlanEdit(const v1::EditRequest& request) override {
    return files_.PlanEdit(request);
  }
  absl::StatusOr<v1::WriteResult> Commit(const MutationPlan& plan,
                                         CommitPermission permission) override;
  absl::StatusOr<ClassifiedTarget> Classify(const std::string& requested_path) override {
    return files_.Classify(requested_path);
  }

 private:
  FileTools& files_;
  const CallContext& call_;
};

}  // namespace airlock::broker

#endif  // BROKER_JOURNALED_FILE_TOOLS_H_
