// The harness must turn every kind of child failure into a test failure: a
// failed check, a crash, a hang, an exception, a library error line, a bad
// payload. Each case runs a body that fails on purpose and expects run_ranks()
// to report it (and to report success for a body that does nothing wrong).

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

#include "test/transport/harness.hpp"

namespace {

using weft::test::rank_ctx;

class harness : public ::testing::Test {
  protected:
    void SetUp() override
    {
        // The cases need two processes, so they use the first transport that
        // reaches another process.
        for (const std::string &t : weft::test::all_transports()) {
            if (t != "self" &&
                weft::test::transport_unavailable(t, weft::test::base_caps).empty()) {
                transport_ = t;
                return;
            }
        }
        GTEST_SKIP() << "no transport reaches another process";
    }
    std::string transport_;
};

/// Message of a run that must have failed.
std::string failure_of(const ::testing::AssertionResult &r)
{
    return r ? std::string("(run succeeded)") : std::string(r.message());
}

TEST_F(harness, succeeds_when_nothing_fails)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        WEFT_TCHECK_EQ(c.nranks, 2);
        c.barrier();
    });
    EXPECT_TRUE(r);
}

TEST_F(harness, failed_check_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        if (c.rank == 1) {
            WEFT_TCHECK_EQ(c.rank, 0);
        }
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("rank 1 exited with 1"), std::string::npos) << failure_of(r);
}

TEST_F(harness, crash_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        if (c.rank == 0) {
            std::raise(SIGSEGV);
        }
    });
    EXPECT_FALSE(r);
    // A signal, or exit status 1 when AddressSanitizer's handler reports the SEGV.
    EXPECT_NE(failure_of(r).find("rank 0 "), std::string::npos) << failure_of(r);
}

TEST_F(harness, hang_fails_the_run_within_the_time_limit)
{
    weft::test::run_options opt;
    opt.timeout_s = 2;
    const ::testing::AssertionResult r = weft::test::run_ranks(
        2, transport_,
        [](rank_ctx &c) {
            if (c.rank == 1) {
                for (;;) {
                    pause();  // never returns: the parent must kill us
                }
            }
        },
        opt);
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("time limit"), std::string::npos) << failure_of(r);
}

TEST_F(harness, exception_in_a_child_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        if (c.rank == 0) {
            std::vector<unsigned char> v;
            v.resize(static_cast<std::size_t>(-1));  // throws std::length_error
        }
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("rank 0 exited with 1"), std::string::npos) << failure_of(r);
}

TEST_F(harness, library_error_line_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        if (c.rank == 1) {
            std::fprintf(stderr, "[host:1:-] weft shm error: injected by the test\n");
        }
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("logged a weft error"), std::string::npos) << failure_of(r);
}

TEST_F(harness, unclaimed_completion_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        static unsigned char buf[8];
        if (c.rank == 0) {
            c.post("tsend", [&] {
                return weft_tsend(c.ep, buf, 8, nullptr, c.peer(1), 1, weft::test::op_ctx(1));
            });
        } else {
            c.post("trecv", [&] {
                return weft_trecv(c.ep, buf, 8, nullptr, c.peer(0), 1, 0, weft::test::op_ctx(2));
            });
            (void)c.wait_ok(weft::test::op_ctx(2));
        }
        // Rank 0 never waits for its send completion.
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("rank 0 exited with 1"), std::string::npos) << failure_of(r);
}

#ifdef __SANITIZE_ADDRESS__
volatile std::uintptr_t leak_sink;

[[gnu::noinline]] void leak_some_memory()
{
    auto *p = new char[100];
    p[0] = 1;
    leak_sink = reinterpret_cast<std::uintptr_t>(p) & 1;  // use it, keep no pointer to it
}
#endif

TEST_F(harness, leak_fails_the_run_under_asan)
{
#ifndef __SANITIZE_ADDRESS__
    GTEST_SKIP() << "leak checks need an AddressSanitizer build (configure --enable-asan)";
#else
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        if (c.rank == 1) {
            leak_some_memory();
        }
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("rank 1 exited with 1"), std::string::npos) << failure_of(r);
#endif
}

TEST_F(harness, corrupted_payload_fails_the_run)
{
    const ::testing::AssertionResult r = weft::test::run_ranks(2, transport_, [](rank_ctx &c) {
        std::vector<unsigned char> buf(4096 + 64, weft::test::fill_byte);
        if (c.rank == 0) {
            weft::test::fill_pattern(buf.data(), 4096, weft::test::seed_of(1));
            buf[1234] ^= 1;  // one flipped bit
            c.post("tsend", [&] {
                return weft_tsend(c.ep, buf.data(), 4096, nullptr, c.peer(1), 1,
                                  weft::test::op_ctx(1));
            });
            (void)c.wait_ok(weft::test::op_ctx(1));
        } else {
            c.post("trecv", [&] {
                return weft_trecv(c.ep, buf.data(), 4096, nullptr, c.peer(0), 1, 0,
                                  weft::test::op_ctx(2));
            });
            (void)c.wait_ok(weft::test::op_ctx(2));
            weft::test::check_payload(buf.data(), 4096, 4096 + 64, weft::test::seed_of(1),
                                      "corrupted on purpose");
        }
    });
    EXPECT_FALSE(r);
    EXPECT_NE(failure_of(r).find("rank 1 exited with 1"), std::string::npos) << failure_of(r);
}

}  // namespace
