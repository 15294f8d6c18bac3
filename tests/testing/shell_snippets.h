// Shell fragments tests run inside a sandbox to look at it from the inside.
#ifndef TESTS_TESTING_SHELL_SNIPPETS_H_
#define TESTS_TESTING_SHELL_SNIPPETS_H_

namespace airlock::testing {

// Prints one line, "fds=" and the descriptors a command started by the shell inherits, in
// order, each followed by a space ("fds=0 1 2 \n"). A background sleep inherits exactly the
// shell's descriptors; it is listed from outside, since listing one's own /proc/self/fd shows
// the listing's descriptor too. It is listed only once it sleeps: the kernel names the task
// before exec closes the close-on-exec descriptors (bash's 255), and the dynamic loader and
// setlocale then open files of their own for a moment (a "3" seen there is not inherited).
inline constexpr char kPrintInheritedDescriptors[] =
    "sleep 5 & until [ \"$(cat /proc/$!/comm)\" = sleep ] && read -r _ _ state _ < /proc/$!/stat"
    " && [ \"$state\" = S ]; do :; done;"
    " echo \"fds=$(ls /proc/$!/fd | sort -n | tr '\\n' ' ')\"; kill $!;";

}  // namespace airlock::testing

#endif  // TESTS_TESTING_SHELL_SNIPPETS_H_
