// The mount points of shell masks (protection_plan.h): made, shared between sandboxes, removed.
//
// A missing protected name is masked by mounting an empty read-only directory (or file) at it
// inside the sandbox, so the mount point is an entry on the host, in the user's tree. It must
// exist exactly as long as some sandbox has a mask mounted there: unlinking a mount point
// detaches the mounts on it in every namespace, and the name becomes creatable inside that
// sandbox. Sandboxes of several airlock processes may share a workspace, so use is tracked on
// the entry itself:
//  - the broker makes the mount point (bwrap finds it there), marks it with the extended
//    attribute user.airlock.mask, and holds it with a shared flock while its sandbox runs;
//    the calls of one process share one hold (counted here);
//  - the scan takes an entry that carries the mark and is still empty for a mask (another
//    process's, or one a killed broker left) — never for the user's own file;
//  - at release the last holder here asks for an exclusive flock without waiting: granted, no
//    other process holds it, and the entry (still that inode, still empty) is removed; refused,
//    another process still uses it and removes it when it is done.
// On a file system without user extended attributes the mark is missing: the mount point is
// still held and removed by this process, but another process's scan cannot recognise it.
// Every change on the host goes through the directory holding the entry, opened without
// following a link in any component: the sandbox may swap a workspace directory for a link
// to anywhere at any moment.
#ifndef BROKER_EXEC_MASK_MOUNT_POINTS_H_
#define BROKER_EXEC_MASK_MOUNT_POINTS_H_

#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "platform/base/scoped_fd.h"
#include "platform/linux/bwrap_launcher.h"

namespace airlock::broker {

// Makes (or joins) and holds the mount points of `masks` for one call.
void AcquireMasks(const std::vector<linux_sandbox::CoveredPath>& masks);

// Ends one call's use; the last user anywhere removes what the broker made: a file is
// unlinked; a directory leaves its name at once — the directories of one release in one
// directory are moved together into a fresh aside directory beside them, a lone one is renamed
// aside (aside names: kMaskAsidePrefix + 16 hex digits) — and is removed by a background
// thread (an rmdir can wait for a synchronous discard while holding its parent's lock). An
// entry someone wrote into stays. Pending removals are drained at process exit.
void ReleaseMasks(const std::vector<linux_sandbox::CoveredPath>& masks);

// One call's hold on existing entries its sandbox re-binds read-only that could be another
// process's mask mount point not (yet) marked (ProtectionPlan::held_read_only): a shared flock
// on each, taken without waiting, so that the process that made one is refused its exclusive
// lock at release and leaves it in place — removing it would move the read-only mount with it
// and make the name creatable in this sandbox. Nothing held this way is ever removed here.
// Each call holds on its own (its own descriptors); the locks go with the object.
class ReadOnlyHolds {
 public:
  // Unavailable when an entry cannot be held — gone, or held exclusively (its maker removing
  // it right now): the call is refused rather than run with a read-only bind nobody holds.
  static absl::StatusOr<ReadOnlyHolds> Take(const std::vector<std::string>& paths);
  // Unavailable unless every path still names the entry held (checked once bwrap has bound
  // them, before the command starts: what was bound is what is held).
  absl::Status StillInPlace() const;

 private:
  struct Held {
    std::string path;
    ScopedFd fd;
    dev_t device = 0;
    ino_t inode = 0;
  };
  std::vector<Held> held_;
};

// Waits until the background removals queued so far are done (tests; the exit handler).
void DrainMaskRemovals();
// The bound on how long one queued removal waits for layouts (MaskSetupScope); 200 ms unless a
// test that looks at what is held off sets it longer.
void SetMaskRemovalHoldOffForTesting(std::chrono::milliseconds bound);

// A call of this process laying out its sandbox: from before its scan until bwrap has mounted
// its masks (End, or the end of the scope). Background removals wait meanwhile (each queued
// directory 200 ms at most): an rmdir waiting for a discard holds its parent directory's
// lock, which the scan, the mount points and bwrap's lookups need.
class MaskSetupScope {
 public:
  MaskSetupScope();
  ~MaskSetupScope();
  MaskSetupScope(const MaskSetupScope&) = delete;
  MaskSetupScope& operator=(const MaskSetupScope&) = delete;
  void End();

 private:
  bool ended_ = false;
};

// What an existing protected entry `path` (lstat'ed as `st`) is to the masks. "Unwritten":
// as a broker makes a mask's mount point — an empty directory, or a file holding nothing or
// what a content mask holds.
enum class ExistingEntry {
  // Held by a call of this process, or marked and unwritten: a mask's mount point in use or
  // left behind. The scan masks it again rather than take it for an existing protected file.
  kMaskMountPoint,
  // Unwritten but not marked: perhaps another process's mount point not marked yet (or on a
  // file system without user extended attributes). Re-bound read-only and held for the call
  // (ReadOnlyHolds).
  kUnmarkedUnwritten,
  // Anything else: the user's, re-bound read-only.
  kOther,
};
ExistingEntry ClassifyExistingEntry(const std::string& path, const struct stat& st);
// The same for a path that lstat does not find: held here (made, not yet seen by the scan).
bool IsHeldHere(const std::string& path);

// The prefix of renamed-aside mask directories: not a protected name.
inline constexpr char kMaskAsidePrefix[] = ".airlock-mask-";

// kMaskAsidePrefix and 16 lowercase hex digits.
bool IsMaskAsideName(absl::string_view name);
// Whether `path` is an aside directory as a release leaves it: an aside name, holding nothing
// but empty directories with aside names (or nothing at all).
bool IsLeftAside(const std::string& path);
// Queues an aside directory (one a killed broker left, found by the scan) for removal: the
// empty aside directories in it, then itself if it is empty then.
void RemoveAsideLater(const std::string& path);

}  // namespace airlock::broker

#endif  // BROKER_EXEC_MASK_MOUNT_POINTS_H_
