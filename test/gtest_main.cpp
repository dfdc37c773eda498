// The main of every weft GoogleTest program. Besides running the tests, it
// honours WEFT_LOG_LEVEL, and fails any test during which the library logged a
// warning or an error that the test did not declare with
// weft::test::expect_log_warnings / expect_log_errors (test/log_expect.hpp).
//
// Lines logged by forked child processes are not counted (each process has its
// own counters), nor lines logged outside tests (suite set-up, static init).

#include <gtest/gtest.h>

#include "base/log.hpp"
#include "log_expect.hpp"

namespace {

using weft::test::detail::log_allowance;

class log_check_listener final : public testing::EmptyTestEventListener {
  public:
    void OnTestStart(const testing::TestInfo &) override
    {
        start_ = weft::base::log_get_counts();
        reset(weft::test::detail::warning_allowance);
        reset(weft::test::detail::error_allowance);
    }

    // Runs before the default printer's OnTestEnd (gtest calls the end events
    // in reverse order of the listeners), and while the test is still the
    // current one: a failure added here is reported as this test's.
    void OnTestEnd(const testing::TestInfo &) override
    {
        const weft::base::log_counts now = weft::base::log_get_counts();
        check("error", now.errors - start_.errors, weft::test::detail::error_allowance,
              "expect_log_errors");
        check("warning", now.warnings - start_.warnings, weft::test::detail::warning_allowance,
              "expect_log_warnings");
    }

  private:
    static void reset(log_allowance &a)
    {
        a.depth.store(0);
        a.allowed.store(0);
    }

    static void check(const char *what, std::uint64_t logged, const log_allowance &a,
                      const char *guard)
    {
        const std::uint64_t allowed = a.allowed.load();
        if (logged > allowed) {
            ADD_FAILURE() << "the library logged " << logged - allowed << " unexpected " << what
                          << "(s) during this test (see stderr); if the test expects them, "
                          << "declare it with weft::test::" << guard;
        }
    }

    weft::base::log_counts start_{};
};

}  // namespace

int main(int argc, char **argv)
{
    testing::InitGoogleTest(&argc, argv);
    weft::base::log_init();  // WEFT_LOG_LEVEL, as in any weft process
    testing::UnitTest::GetInstance()->listeners().Append(new log_check_listener);
    return RUN_ALL_TESTS();
}
