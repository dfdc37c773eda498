// base::self_pid: the pid without a system call, right in forked children.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/pid.hpp"

using weft::base::self_pid;

TEST(self_pid, is_getpid_here_and_in_children_and_grandchildren)
{
    ASSERT_EQ(self_pid(), static_cast<std::uint32_t>(getpid()));
    // The child reports through its exit status: 0 right, 1 stale in the
    // child, 2 stale in the grandchild (fork from a child with the cache set).
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (self_pid() != static_cast<std::uint32_t>(getpid())) {
            _exit(1);
        }
        const pid_t grandchild = fork();
        if (grandchild == 0) {
            _exit(self_pid() == static_cast<std::uint32_t>(getpid()) ? 0 : 2);
        }
        int st = 0;
        if (grandchild < 0 || waitpid(grandchild, &st, 0) != grandchild || !WIFEXITED(st)) {
            _exit(3);
        }
        _exit(WEXITSTATUS(st));
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: stale in the child, 2: in the grandchild";
    EXPECT_EQ(self_pid(), static_cast<std::uint32_t>(getpid())) << "the parent's is unchanged";
}
