// Object-model tests over the public C API (self transport, one process):
// discovery, argument checking, object lifetimes, CQ formats and overflow,
// counters, selective completion, address vectors, threading and auto progress.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/topo.hpp"
#include "core/objects.hpp"
#include "log_expect.hpp"
#include "proto/stack.hpp"
#include "weft/weft.h"

namespace {

struct info_deleter {
    void operator()(weft_info *i) const { weft_info_free(i); }
};
using info_ptr = std::unique_ptr<weft_info, info_deleter>;

info_ptr get_info(const char *transport, weft_threading threading = WEFT_THREAD_UNSPEC,
                  weft_progress progress = WEFT_PROGRESS_UNSPEC)
{
    info_ptr hints(weft_info_alloc());
    std::snprintf(hints->transport, sizeof(hints->transport), "%s", transport);
    hints->caps = WEFT_TAGGED | WEFT_SOURCE;
    hints->domain_attr.threading = threading;
    hints->domain_attr.progress = progress;
    weft_info *info = nullptr;
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), nullptr, &info), 0);
    return info_ptr(info);
}

/// One endpoint on the self transport, with its address inserted at index 0.
struct self_ep {
    info_ptr info;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_cntr_t *cntr = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
    weft_addr_t me = 0;

    explicit self_ep(weft_cq_format format = WEFT_CQ_FORMAT_TAGGED, std::size_t cq_size = 0,
                     std::uint64_t cq_flags = 0, weft_threading threading = WEFT_THREAD_UNSPEC,
                     weft_progress progress = WEFT_PROGRESS_UNSPEC)
        : info(get_info("self", threading, progress))
    {
        EXPECT_EQ(weft_fabric_open(info.get(), nullptr, &fabric), 0);
        EXPECT_EQ(weft_domain_open(fabric, info.get(), &domain), 0);
        const weft_cq_attr attr{cq_size, format};
        EXPECT_EQ(weft_cq_open(domain, &attr, &cq), 0);
        EXPECT_EQ(weft_cntr_open(domain, nullptr, &cntr), 0);
        EXPECT_EQ(weft_av_open(domain, nullptr, &av), 0);
        EXPECT_EQ(weft_ep_open(domain, info.get(), &ep, nullptr), 0);
        EXPECT_EQ(weft_ep_bind_cq(ep, cq, WEFT_TRANSMIT | WEFT_RECV | cq_flags), 0);
        EXPECT_EQ(weft_ep_bind_cntr(ep, cntr, WEFT_SEND | WEFT_RECV), 0);
        EXPECT_EQ(weft_ep_bind_av(ep, av), 0);
        EXPECT_EQ(weft_ep_enable(ep), 0);
        std::uint8_t addr[256];
        std::size_t len = sizeof(addr);
        EXPECT_EQ(weft_ep_getname(ep, addr, &len), 0);
        EXPECT_LE(len, info->addr_len);
        EXPECT_EQ(weft_av_insert(av, addr, 1, &me, 0), 1);
    }
    ~self_ep()
    {
        EXPECT_EQ(weft_ep_close(ep), 0);
        EXPECT_EQ(weft_av_close(av), 0);
        EXPECT_EQ(weft_cntr_close(cntr), 0);
        EXPECT_EQ(weft_cq_close(cq), 0);
        EXPECT_EQ(weft_domain_close(domain), 0);
        EXPECT_EQ(weft_fabric_close(fabric), 0);
    }
};

/// Two shm endpoints of one process, each with its own CQ and AV (neither AV
/// filled): for tests of what one endpoint sees of another.
struct shm_pair {
    info_ptr info;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq[2] = {};
    weft_av_t *av[2] = {};
    weft_ep_t *ep[2] = {};
    std::uint8_t addr[2][256] = {};

    /// False when this build or machine has no shm transport (the caller skips).
    /// `inject_direct`: set WEFT_OPT_INJECT_DIRECT on both endpoints;
    /// `rndv0`: WEFT_OPT_RNDV_THRESHOLD on endpoint 0.
    bool open(const weft_config_t *config = nullptr, bool inject_direct = false,
              const std::size_t *rndv0 = nullptr)
    {
        info_ptr hints(weft_info_alloc());
        std::snprintf(hints->transport, sizeof(hints->transport), "shm");
        hints->caps = WEFT_TAGGED | WEFT_SOURCE;
        weft_info *raw = nullptr;
        if (weft_getinfo(WEFT_API_VERSION, hints.get(), config, &raw) != 0) {
            return false;
        }
        info.reset(raw);
        EXPECT_EQ(weft_fabric_open(info.get(), config, &fabric), 0);
        EXPECT_EQ(weft_domain_open(fabric, info.get(), &domain), 0);
        const weft_cq_attr tagged{0, WEFT_CQ_FORMAT_TAGGED};
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(weft_cq_open(domain, &tagged, &cq[i]), 0);
            EXPECT_EQ(weft_av_open(domain, nullptr, &av[i]), 0);
            EXPECT_EQ(weft_ep_open(domain, info.get(), &ep[i], nullptr), 0);
            EXPECT_EQ(weft_ep_bind_cq(ep[i], cq[i], WEFT_TRANSMIT | WEFT_RECV), 0);
            EXPECT_EQ(weft_ep_bind_av(ep[i], av[i]), 0);
            if (inject_direct) {
                const int on = 1;
                EXPECT_EQ(weft_ep_setopt(ep[i], WEFT_OPT_INJECT_DIRECT, &on, sizeof(on)), 0);
            }
            if (rndv0 != nullptr && i == 0) {
                EXPECT_EQ(weft_ep_setopt(ep[i], WEFT_OPT_RNDV_THRESHOLD, rndv0, sizeof(*rndv0)), 0);
            }
            EXPECT_EQ(weft_ep_enable(ep[i]), 0);
            std::size_t len = sizeof(addr[i]);
            EXPECT_EQ(weft_ep_getname(ep[i], addr[i], &len), 0);
        }
        return true;
    }
    ~shm_pair()
    {
        if (fabric == nullptr) {
            return;
        }
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(weft_ep_close(ep[i]), 0);
            EXPECT_EQ(weft_av_close(av[i]), 0);
            EXPECT_EQ(weft_cq_close(cq[i]), 0);
        }
        EXPECT_EQ(weft_domain_close(domain), 0);
        EXPECT_EQ(weft_fabric_close(fabric), 0);
    }
};

}  // namespace

TEST(getinfo, lists_auto_first_and_reports_limits)
{
    weft_info *info = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, nullptr, nullptr, &info), 0);
    info_ptr guard(info);
    ASSERT_NE(info, nullptr);
    EXPECT_STREQ(info->transport, "auto");
    bool self = false;
    for (const weft_info *i = info; i != nullptr; i = i->next) {
        self = self || std::strcmp(i->transport, "self") == 0;
        EXPECT_NE(i->caps & WEFT_TAGGED, 0U);
        EXPECT_GT(i->ep_attr.inject_size, 0U);
        EXPECT_GT(i->ep_attr.max_msg_size, i->ep_attr.inject_size);
        EXPECT_EQ(i->addr_len, 256U);  // the most an address may take (it says its own length)
        EXPECT_NE(i->ep_attr.msg_order & WEFT_ORDER_SAS, 0U);
    }
    EXPECT_TRUE(self);
}

TEST(getinfo, hints_filter_and_bad_hints_fail)
{
    info_ptr self = get_info("self");
    ASSERT_NE(self, nullptr);
    EXPECT_STREQ(self->transport, "self");
    EXPECT_EQ(self->next, nullptr);

    info_ptr hints(weft_info_alloc());
    weft_info *info = nullptr;
    std::snprintf(hints->transport, sizeof(hints->transport), "nosuch");
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), nullptr, &info), -WEFT_ENODEV);
    hints->transport[0] = '\0';
    hints->caps = WEFT_RMA | WEFT_ATOMIC | WEFT_TRIGGER;  // offered by every transport (2.1)
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), nullptr, &info), 0);
    EXPECT_EQ(info->caps & (WEFT_RMA | WEFT_ATOMIC | WEFT_TRIGGER),
              WEFT_RMA | WEFT_ATOMIC | WEFT_TRIGGER);
    weft_info_free(info);
    info = nullptr;
    hints->caps = 1ULL << 15;  // no such capability: nothing matches
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), nullptr, &info), -WEFT_ENODEV);
    hints->caps = 0;
    // What a C caller can store: 42 is no enumerator (a C++ static_cast to the enum
    // would itself be undefined), so write the bytes.
    const int bad_threading = 42;
    std::memcpy(&hints->domain_attr.threading, &bad_threading, sizeof(bad_threading));
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), nullptr, &info), -WEFT_EINVAL);
    {
        weft::test::expect_log_errors logged(1);  // the version mismatch is logged
        EXPECT_EQ(weft_getinfo(WEFT_VERSION(9, 0), nullptr, nullptr, &info), -WEFT_ENOSYS);
    }
    EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, nullptr, nullptr, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(info, nullptr);
}

TEST(api, null_and_invalid_arguments_return_einval)
{
    EXPECT_EQ(weft_fabric_open(nullptr, nullptr, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_fabric_close(nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_domain_close(nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_ep_close(nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_tsend(nullptr, nullptr, 0, nullptr, 0, 0, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_trecv(nullptr, nullptr, 0, nullptr, 0, 0, 0, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_cq_read(nullptr, nullptr, 0), -WEFT_EINVAL);
    EXPECT_EQ(weft_cancel(nullptr, nullptr), -WEFT_EINVAL);
    for (int e :
         {int(WEFT_EAGAIN), int(WEFT_ETRUNC), int(WEFT_EAVAIL), int(WEFT_EHOSTUNREACH), 12345}) {
        EXPECT_NE(weft_strerror(-e), nullptr);
        EXPECT_STREQ(weft_strerror(-e), weft_strerror(e));
    }
    EXPECT_STRNE(weft_strerror(WEFT_EAGAIN), weft_strerror(WEFT_ETRUNC));
    // INT_MIN has no positive counterpart (the old code negated it: UBSan
    // reports that in the sanitizer build).
    EXPECT_NE(weft_strerror(INT_MIN), nullptr);
    EXPECT_NE(weft_strerror(INT_MAX), nullptr);
}

// Issue 10, defect 9: a double close, a call on a closed handle and a handle
// of the wrong type are -WEFT_EINVAL with a log line (they were uses after
// free, or crashes). The registry is consulted, not the freed memory.
TEST(api, closed_and_wrong_handles_are_refused)
{
    info_ptr info = get_info("self");
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_cntr_t *cntr = nullptr;
    weft_av_t *av = nullptr;
    weft_config_t *config = nullptr;
    ASSERT_EQ(weft_config_read(&config), 0);
    ASSERT_EQ(weft_fabric_open(info.get(), config, &fabric), 0);
    ASSERT_EQ(weft_domain_open(fabric, info.get(), &domain), 0);
    ASSERT_EQ(weft_cq_open(domain, nullptr, &cq), 0);
    ASSERT_EQ(weft_cntr_open(domain, nullptr, &cntr), 0);
    ASSERT_EQ(weft_av_open(domain, nullptr, &av), 0);
    int not_a_handle = 0;
    {
        weft::test::expect_log_errors logged(12);
        // Wrong types: each names what it got.
        EXPECT_EQ(weft_fabric_close(reinterpret_cast<weft_fabric_t *>(domain)), -WEFT_EINVAL);
        EXPECT_EQ(weft_domain_close(reinterpret_cast<weft_domain_t *>(fabric)), -WEFT_EINVAL);
        EXPECT_EQ(weft_cq_close(reinterpret_cast<weft_cq_t *>(cntr)), -WEFT_EINVAL);
        EXPECT_EQ(weft_av_close(reinterpret_cast<weft_av_t *>(&not_a_handle)), -WEFT_EINVAL);
        EXPECT_EQ(weft_ep_close(reinterpret_cast<weft_ep_t *>(av)), -WEFT_EINVAL);
        EXPECT_EQ(weft_cq_open(reinterpret_cast<weft_domain_t *>(cq), nullptr, &cq), -WEFT_EINVAL);
        // Closed: a second close, and any control call.
        ASSERT_EQ(weft_cq_close(cq), 0);
        EXPECT_EQ(weft_cq_close(cq), -WEFT_EINVAL);
        EXPECT_EQ(weft_cq_wait(cq, 0), -WEFT_EINVAL);
        ASSERT_EQ(weft_cntr_close(cntr), 0);
        EXPECT_EQ(weft_cntr_add(cntr, 1), -WEFT_EINVAL);
        ASSERT_EQ(weft_av_close(av), 0);
        EXPECT_EQ(weft_av_insert(av, &not_a_handle, 1, nullptr, 0), -WEFT_EINVAL);
        weft_config_release(config);
        weft_config_release(config);  // logged, nothing else
        ASSERT_EQ(weft_domain_close(domain), 0);
        EXPECT_EQ(weft_domain_close(domain), -WEFT_EINVAL);
    }
    ASSERT_EQ(weft_fabric_close(fabric), 0);
    {
        weft::test::expect_log_errors logged(1);
        EXPECT_EQ(weft_fabric_close(fabric), -WEFT_EINVAL);
    }
    // NULL stays a plain invalid argument, without a log line.
    EXPECT_EQ(weft_fabric_close(nullptr), -WEFT_EINVAL);
    weft_config_release(nullptr);
}

TEST(api, endpoint_rules)
{
    info_ptr info = get_info("self");
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_ep_t *ep;
    weft_av_t *av;
    ASSERT_EQ(weft_fabric_open(info.get(), nullptr, &fabric), 0);
    ASSERT_EQ(weft_domain_open(fabric, info.get(), &domain), 0);
    ASSERT_EQ(weft_ep_open(domain, info.get(), &ep, nullptr), 0);
    char buf[8] = {};
    // Not enabled yet: no address, no data transfer; enabling needs an AV.
    std::size_t len = 256;
    std::uint8_t addr[256];
    EXPECT_EQ(weft_ep_getname(ep, addr, &len), -WEFT_EINVAL);
    EXPECT_EQ(weft_tsend(ep, buf, 8, nullptr, 0, 1, nullptr), -WEFT_EINVAL);
    {
        weft::test::expect_log_errors logged(1);  // "bind an address vector first"
        EXPECT_EQ(weft_ep_enable(ep), -WEFT_EINVAL);
    }
    // Parents refuse to close while children are open.
    EXPECT_EQ(weft_domain_close(domain), -WEFT_EBUSY);
    EXPECT_EQ(weft_fabric_close(fabric), -WEFT_EBUSY);
    ASSERT_EQ(weft_av_open(domain, nullptr, &av), 0);
    ASSERT_EQ(weft_ep_bind_av(ep, av), 0);
    EXPECT_EQ(weft_ep_bind_av(ep, av), -WEFT_EBUSY);
    ASSERT_EQ(weft_ep_enable(ep), 0);
    EXPECT_EQ(weft_ep_enable(ep), -WEFT_EINVAL);
    EXPECT_EQ(weft_av_close(av), -WEFT_EBUSY);
    // getname with a short buffer reports the size needed.
    std::size_t full = sizeof(addr);
    ASSERT_EQ(weft_ep_getname(ep, addr, &full), 0);
    EXPECT_GT(full, 24U);  // a header and proto/'s blob at least
    len = 10;
    EXPECT_EQ(weft_ep_getname(ep, addr, &len), -WEFT_ETRUNC);
    EXPECT_EQ(len, full);
    // Sending to an index the AV does not have is an error, not a crash.
    EXPECT_EQ(weft_tsend(ep, buf, 8, nullptr, 0, 1, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_tsend(ep, buf, 8, nullptr, 12345678, 1, nullptr), -WEFT_EINVAL);
    std::size_t inject = 0;
    std::size_t olen = sizeof(inject);
    ASSERT_EQ(weft_ep_getopt(ep, WEFT_OPT_INJECT_SIZE, &inject, &olen), 0);
    std::vector<char> big(inject + 1);
    EXPECT_EQ(weft_tinject(ep, big.data(), big.size(), 0, 1), -WEFT_EINVAL);
    EXPECT_EQ(weft_ep_setopt(ep, WEFT_OPT_INJECT_SIZE, &inject, sizeof(inject)), -WEFT_EINVAL);
    const iovec iov[5] = {};
    EXPECT_EQ(weft_tsendv(ep, iov, nullptr, 5, 0, 1, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_ep_close(ep), 0);
    EXPECT_EQ(weft_av_close(av), 0);
    EXPECT_EQ(weft_domain_close(domain), 0);
    EXPECT_EQ(weft_fabric_close(fabric), 0);
}

// Issue 10, defects 4 and 5: an iovec entry with no base but a length, and
// lengths whose sum wraps, are refused before anything is sent or posted
// (they used to crash in the copy, or send 8 bytes and report success).
TEST(api, bad_iovecs_are_refused)
{
    self_ep s;
    char buf[16] = {};
    const iovec null_base[2] = {{buf, 4}, {nullptr, 4}};
    const iovec wraps[2] = {{buf, SIZE_MAX}, {buf, 9}};
    EXPECT_EQ(weft_tsendv(s.ep, null_base, nullptr, 2, s.me, 1, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_tsendv(s.ep, wraps, nullptr, 2, s.me, 1, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_trecvv(s.ep, null_base, nullptr, 2, s.me, 1, 0, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_trecvv(s.ep, wraps, nullptr, 2, s.me, 1, 0, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_ep_sendv_cost(s.ep, wraps, 2), -WEFT_EINVAL);
    EXPECT_EQ(weft_ep_recvv_cost(s.ep, wraps, 2), -WEFT_EINVAL);
    EXPECT_GT(weft_ep_sendv_cost(s.ep, null_base, 2), 0);  // a cost query reads no data
    // Nothing was sent or posted: the CQ stays empty, and a good pair still works.
    weft_cq_tagged_entry e[2];
    EXPECT_EQ(weft_cq_read(s.cq, e, 2), -WEFT_EAGAIN);
    const iovec zero_len[2] = {{nullptr, 0}, {buf, 8}};  // a null base with no length is fine
    ASSERT_EQ(weft_trecv(s.ep, buf + 8, 8, nullptr, s.me, 7, 0, nullptr), 0);
    ASSERT_EQ(weft_tsendv(s.ep, zero_len, nullptr, 2, s.me, 7, nullptr), 0);
    int got = 0;
    for (int i = 0; i < 1000 && got < 2; ++i) {
        const ssize_t n = weft_cq_read(s.cq, e, 2);
        if (n > 0) {
            got += static_cast<int>(n);
        }
    }
    EXPECT_EQ(got, 2);
}

// Issue 10, defect 6: weft_av_remove is enforced. A removed index (even one
// with a cached connection) takes no sends and no directed receives; what was
// posted for it fails, its unexpected messages are dropped, and a sender that
// is inserted again is reported by its new index.
TEST(av, removed_and_missing_indices_are_refused)
{
    self_ep s;
    char out[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    char in[8] = {};
    weft_cq_tagged_entry e[4];
    auto read_some = [&](int want) {
        int got = 0;
        for (int i = 0; i < 1000 && got < want; ++i) {
            const ssize_t n = weft_cq_read(s.cq, e + got, static_cast<std::size_t>(want - got));
            if (n > 0) {
                got += static_cast<int>(n);
            }
        }
        return got;
    };
    // Connected and used: the peer record is cached.
    ASSERT_EQ(weft_trecv(s.ep, in, 8, nullptr, s.me, 1, 0, nullptr), 0);
    ASSERT_EQ(weft_tsend(s.ep, out, 8, nullptr, s.me, 1, nullptr), 0);
    ASSERT_EQ(read_some(2), 2);
    // Never inserted: refused at once.
    EXPECT_EQ(weft_tsend(s.ep, out, 8, nullptr, 77, 1, nullptr), -WEFT_EINVAL);
    EXPECT_EQ(weft_trecv(s.ep, in, 8, nullptr, 77, 1, 0, nullptr), -WEFT_EINVAL);
    // A directed receive waiting, and an unexpected message, then the removal.
    int ctx = 0;
    ASSERT_EQ(weft_trecv(s.ep, in, 8, nullptr, s.me, 5, 0, &ctx), 0);
    ASSERT_EQ(weft_tsend(s.ep, out, 8, nullptr, s.me, 9, nullptr), 0);
    ASSERT_EQ(read_some(1), 1);  // the send's completion
    ASSERT_EQ(weft_av_remove(s.av, &s.me, 1, 0), 0);
    EXPECT_EQ(weft_av_remove(s.av, &s.me, 1, 0), -WEFT_ENOENT);
    EXPECT_EQ(weft_cq_read(s.cq, e, 1), -WEFT_EAVAIL);
    weft_cq_err_entry err{};
    ASSERT_EQ(weft_cq_readerr(s.cq, &err, 0), 1);
    EXPECT_EQ(err.op_context, &ctx);
    EXPECT_EQ(err.err, WEFT_ENOENT);
    EXPECT_EQ(weft_tsend(s.ep, out, 8, nullptr, s.me, 1, nullptr), -WEFT_ENOENT);
    EXPECT_EQ(weft_trecv(s.ep, in, 8, nullptr, s.me, 9, 0, nullptr), -WEFT_ENOENT);
    // The unexpected message (tag 9) went with the address: nothing matches it.
    weft_msg_tagged peek{nullptr, nullptr, 0, WEFT_ADDR_UNSPEC, 9, 0, nullptr, 0};
    EXPECT_EQ(weft_trecvmsg(s.ep, &peek, WEFT_PEEK), 0);
    EXPECT_EQ(weft_cq_read(s.cq, e, 1), -WEFT_EAVAIL);  // peek: "no message" error entry
    ASSERT_EQ(weft_cq_readerr(s.cq, &err, 0), 1);
    EXPECT_EQ(err.err, WEFT_ENOMSG);
    // Inserted again: a new index, and its messages report it.
    std::uint8_t addr[256];
    std::size_t len = sizeof(addr);
    ASSERT_EQ(weft_ep_getname(s.ep, addr, &len), 0);
    weft_addr_t again = WEFT_ADDR_NOTAVAIL;
    ASSERT_EQ(weft_av_insert(s.av, addr, 1, &again, 0), 1);
    ASSERT_NE(again, s.me);
    ASSERT_EQ(weft_trecv(s.ep, in, 8, nullptr, WEFT_ADDR_UNSPEC, 3, 0, nullptr), 0);
    ASSERT_EQ(weft_tsend(s.ep, out, 8, nullptr, again, 3, nullptr), 0);
    weft_addr_t from[2] = {WEFT_ADDR_NOTAVAIL, WEFT_ADDR_NOTAVAIL};
    int got = 0;
    for (int i = 0; i < 1000 && got < 2; ++i) {
        const ssize_t n =
            weft_cq_readfrom(s.cq, e + got, static_cast<std::size_t>(2 - got), from + got);
        if (n > 0) {
            got += static_cast<int>(n);
        }
    }
    ASSERT_EQ(got, 2);
    const int rx = (e[0].flags & WEFT_RECV) != 0 ? 0 : 1;
    EXPECT_EQ(from[rx], again);
    EXPECT_EQ(std::memcmp(in, out, 8), 0);
}

// Issue 10, defect 10: weft_cancel was linear in the posted receives (100k
// cancels of 100k receives took 38 s). Now one walk indexes them all and each
// cancel is a lookup: counted in walks, not timed.
TEST(api, cancel_of_many_posted_receives_walks_them_once)
{
    self_ep s;
    constexpr std::size_t n = 100000;
    std::vector<char> ctx(n);
    char buf[8];
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(weft_trecv(s.ep, buf, sizeof(buf), nullptr, s.me, 1000 + i, 0, &ctx[i]), 0);
    }
    const weft::proto::tag_module &tag = s.ep->stack->tag;
    const std::uint64_t walks = tag.cancel_walks();
    for (std::size_t i = n; i-- > 0;) {
        ASSERT_EQ(weft_cancel(s.ep, &ctx[i]), 0) << i;
    }
    EXPECT_EQ(tag.cancel_walks(), walks + 1);
    // Canceled already, or never posted: not found, and no walk (nothing was
    // posted since the last one).
    EXPECT_EQ(weft_cancel(s.ep, &ctx[0]), -WEFT_ENOENT);
    EXPECT_EQ(weft_cancel(s.ep, buf), -WEFT_ENOENT);
    EXPECT_EQ(tag.cancel_walks(), walks + 1);
    std::size_t canceled = 0;
    weft_cq_err_entry err{};
    weft_cq_tagged_entry e;
    while (weft_cq_read(s.cq, &e, 1) == -WEFT_EAVAIL && weft_cq_readerr(s.cq, &err, 0) == 1) {
        ASSERT_EQ(err.err, WEFT_ECANCELED);
        ++canceled;
    }
    EXPECT_EQ(canceled, n);
    // A receive posted after the walk is found by a new one.
    ASSERT_EQ(weft_trecv(s.ep, buf, sizeof(buf), nullptr, s.me, 7, 0, &ctx[5]), 0);
    EXPECT_EQ(weft_cancel(s.ep, &ctx[5]), 0);
    EXPECT_EQ(tag.cancel_walks(), walks + 2);
}

// A sender that talks to an endpoint before that endpoint has it in its AV
// (MPI's lazy insertion): the receiver answers its credits through a reply
// record, and once it inserts the sender it also has a peer record for it.
// Several credit windows must still flow both ways, with no error and no
// warning (a lost credit return would stop the sends for good).
TEST(av, sender_inserted_after_its_first_messages_keeps_one_credit_window)
{
    shm_pair pair;
    if (!pair.open()) {
        GTEST_SKIP() << "no shm transport in this build or on this machine";
    }
    auto &ep = pair.ep;
    auto &av = pair.av;
    auto &cq = pair.cq;
    auto &addr = pair.addr;
    weft_credits c{};
    weft_addr_t b_at_a = 0;
    ASSERT_EQ(weft_av_insert(av[0], addr[1], 1, &b_at_a, 0), 1);  // A knows B; B not A yet
    ASSERT_EQ(weft_ep_credits(ep[0], b_at_a, &c), 0);
    const unsigned n = 4 * (c.send_window + 8);  // several windows each way
    std::uint32_t v = 0;
    std::vector<std::uint32_t> sink(n);
    auto poll_both = [&](std::size_t &done0, std::size_t &done1) {
        weft_cq_tagged_entry e[16];
        for (int i = 0; i < 2; ++i) {
            const ssize_t k = weft_cq_read(cq[i], e, 16);
            if (k > 0) {
                (i == 0 ? done0 : done1) += static_cast<std::size_t>(k);
            }
            ASSERT_NE(k, -WEFT_EAVAIL) << "an error completion on endpoint " << i;
        }
    };
    // A -> B before B knows A: B receives from an unknown source and answers
    // A's credits through its reply record.
    std::size_t d0 = 0;
    std::size_t d1 = 0;
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(weft_trecv(ep[1], &sink[i], 4, nullptr, WEFT_ADDR_UNSPEC, 1, 0, nullptr), 0);
    }
    // A send the queue cannot take yet (-WEFT_EAGAIN) is retried while both progress.
    auto send = [&](int from, weft_addr_t to, std::uint64_t tag) {
        ssize_t rc;
        int spins = 0;
        while ((rc = weft_tsend(ep[from], &v, 4, nullptr, to, tag, nullptr)) == -WEFT_EAGAIN &&
               ++spins < 1000000) {
            poll_both(d0, d1);
        }
        return rc;
    };
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(send(0, b_at_a, 1), 0);
    }
    for (int spin = 0; spin < 2000000 && (d0 < n || d1 < n); ++spin) {
        poll_both(d0, d1);
    }
    ASSERT_EQ(d0, n) << "A's sends";
    ASSERT_EQ(d1, n) << "B's receives";
    // Now B inserts A, and both ways carry several windows.
    weft_addr_t a_at_b = 0;
    ASSERT_EQ(weft_av_insert(av[1], addr[0], 1, &a_at_b, 0), 1);
    d0 = d1 = 0;
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(weft_trecv(ep[0], &sink[i], 4, nullptr, WEFT_ADDR_UNSPEC, 2, 0, nullptr), 0);
        ASSERT_EQ(weft_trecv(ep[1], &sink[i], 4, nullptr, WEFT_ADDR_UNSPEC, 3, 0, nullptr), 0);
    }
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(send(1, a_at_b, 2), 0);
        ASSERT_EQ(send(0, b_at_a, 3), 0);
    }
    for (int spin = 0; spin < 2000000 && (d0 < 2 * n || d1 < 2 * n); ++spin) {
        poll_both(d0, d1);
    }
    EXPECT_EQ(d0, 2 * n) << "A: its sends and receives";
    EXPECT_EQ(d1, 2 * n) << "B: its sends to A and its receives";
}

// Messages that arrive before their sender is in the receiver's address vector
// are queued under an unknown source; once the receiver inserts the sender, a
// receive directed at it (and a peek) finds them, in the order they were sent,
// before and among the ones that arrive after the insert. (Open MPI's pml weft
// posts directed receives for specific sources and adds peers lazily.)
TEST(av, directed_receive_finds_messages_that_came_before_the_sender_was_inserted)
{
    shm_pair pair;
    if (!pair.open()) {
        GTEST_SKIP() << "no shm transport in this build or on this machine";
    }
    auto &ep = pair.ep;
    auto &cq = pair.cq;
    weft_addr_t b_at_a = 0;
    ASSERT_EQ(weft_av_insert(pair.av[0], pair.addr[1], 1, &b_at_a, 0), 1);  // B does not know A
    std::uint32_t seq = 0;
    std::vector<std::uint32_t> large(256 * 1024 / 4 + 1);  // lives until it is received
    auto send = [&](std::uint64_t tag, std::size_t len) {
        const bool rndv = len > 4096;  // completes only once a receive takes it
        std::vector<std::uint32_t> small(len / 4 + 1, seq);
        if (rndv) {
            std::fill(large.begin(), large.end(), seq);
        }
        ++seq;
        std::uint32_t *buf = rndv ? large.data() : small.data();
        ssize_t rc;
        int spins = 0;
        while ((rc = weft_tsend(ep[0], buf, len, nullptr, b_at_a, tag, nullptr)) == -WEFT_EAGAIN &&
               ++spins < 1000000) {
            (void)weft_cq_read(cq[1], nullptr, 0);
        }
        ASSERT_EQ(rc, 0);
        if (rndv) {
            for (int spin = 0; spin < 1000; ++spin) {
                (void)weft_cq_read(cq[1], nullptr, 0);  // B takes its header in
            }
            return;
        }
        weft_cq_tagged_entry e{};
        for (int spin = 0; spin < 1000000; ++spin) {
            (void)weft_cq_read(cq[1], &e, 0);  // B's progress takes it in
            const ssize_t k = weft_cq_read(cq[0], &e, 1);
            if (k == 1) {
                return;
            }
            ASSERT_NE(k, -WEFT_EAVAIL);
        }
        FAIL() << "send not completed";
    };
    // Three before the insert (one large enough for the rendezvous), two after.
    send(7, 8);
    send(7, 256 * 1024);
    send(9, 8);
    weft_addr_t a_at_b = 0;
    ASSERT_EQ(weft_av_insert(pair.av[1], pair.addr[0], 1, &a_at_b, 0), 1);
    send(7, 8);
    send(9, 8);
    const weft::proto::tag_module &tagm = ep[1]->stack->tag;
    const std::uint64_t walks = tagm.unknown_walks();
    // A peek directed at A sees the first tag-9 message, sent before the insert.
    weft_context peek_ctx{};
    const weft_msg_tagged peek{nullptr, nullptr, 0, a_at_b, 9, 0, &peek_ctx, 0};
    ASSERT_EQ(weft_trecvmsg(ep[1], &peek, WEFT_PEEK), 0);
    weft_cq_tagged_entry e{};
    ASSERT_EQ(weft_cq_read(cq[1], &e, 1), 1);
    EXPECT_EQ(e.tag, 9U);
    EXPECT_EQ(e.len, 8U);
    // Directed receives take them in the order they were sent, per tag.
    std::vector<std::uint32_t> big(256 * 1024 / 4 + 1);
    int sends_done = 0;
    const std::pair<std::uint64_t, std::uint32_t> expect[] = {
        {7, 0}, {7, 1}, {9, 2}, {7, 3}, {9, 4}};
    for (const auto &[tag, first] : expect) {
        std::fill(big.begin(), big.end(), 0xffffffffU);
        weft_context ctx{};
        ASSERT_EQ(weft_trecv(ep[1], big.data(), 256 * 1024, nullptr, a_at_b, tag, 0, &ctx), 0);
        ssize_t k = 0;
        for (int spin = 0; spin < 1000000 && k <= 0; ++spin) {
            weft_cq_tagged_entry a{};
            if (weft_cq_read(cq[0], &a, 1) == 1) {  // A's progress serves the rendezvous
                ++sends_done;
            }
            k = weft_cq_read(cq[1], &e, 1);
            ASSERT_NE(k, -WEFT_EAVAIL);
        }
        ASSERT_EQ(k, 1) << "the receive for tag " << tag << " (message " << first << ")";
        EXPECT_EQ(e.tag, tag);
        EXPECT_EQ(big[0], first) << "message order for tag " << tag;
    }
    // One walk filed them: later directed receives found nothing unknown.
    EXPECT_EQ(tagm.unknown_walks(), walks + 1);
    // A's rendezvous send is complete now.
    for (int spin = 0; spin < 1000000 && sends_done == 0; ++spin) {
        if (weft_cq_read(cq[0], &e, 1) == 1) {
            ++sends_done;
        }
    }
    EXPECT_EQ(sends_done, 1) << "the rendezvous send's completion";
}

// WEFT_OPT_RNDV_THRESHOLD: A's sends up to 64 KiB go eagerly, so a 48 KiB
// send completes while B makes no call at all (nothing posted, no progress);
// a 96 KiB one is a rendezvous and completes only once B has matched it. B's
// own sends keep WEFT_RNDV_THRESH (the option is per endpoint).
TEST(rndv, the_threshold_option_moves_where_sends_wait_for_the_receiver)
{
    const std::size_t thresh = 64 * 1024;
    shm_pair pair;
    if (!pair.open(nullptr, false, &thresh)) {
        GTEST_SKIP() << "no shm transport in this build or on this machine";
    }
    auto &ep = pair.ep;
    auto &cq = pair.cq;
    std::size_t v = 0;
    std::size_t len = sizeof(v);
    ASSERT_EQ(weft_ep_getopt(ep[0], WEFT_OPT_RNDV_THRESHOLD, &v, &len), 0);
    EXPECT_EQ(v, thresh);
    len = sizeof(v);
    ASSERT_EQ(weft_ep_getopt(ep[1], WEFT_OPT_RNDV_THRESHOLD, &v, &len), 0);
    EXPECT_EQ(v, std::size_t(16 * 1024)) << "the default: WEFT_RNDV_THRESH";
    EXPECT_EQ(weft_ep_setopt(ep[0], WEFT_OPT_RNDV_THRESHOLD, &thresh, sizeof(thresh)), -WEFT_EINVAL)
        << "set after weft_ep_enable";
    EXPECT_EQ(weft_ep_setopt(ep[0], WEFT_OPT_RNDV_THRESHOLD, &thresh, 4), -WEFT_EINVAL);
    weft_addr_t b_at_a = 0;
    weft_addr_t a_at_b = 0;
    ASSERT_EQ(weft_av_insert(pair.av[0], pair.addr[1], 1, &b_at_a, 0), 1);
    ASSERT_EQ(weft_av_insert(pair.av[1], pair.addr[0], 1, &a_at_b, 0), 1);
    // A's completion for its send with context `want`, progressing A only,
    // within `ms`.
    auto completed = [&](void *want, int ms) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < end) {
            weft_cq_tagged_entry e{};
            const ssize_t k = weft_cq_read(cq[0], &e, 1);
            if (k == 1) {
                EXPECT_EQ(e.op_context, want);
                return true;
            }
            EXPECT_EQ(k, -WEFT_EAGAIN);
        }
        return false;
    };
    auto receive = [&](std::size_t n, std::uint8_t fill) {
        std::vector<std::uint8_t> got(n, 0);
        ASSERT_EQ(weft_trecv(ep[1], got.data(), got.size(), nullptr, a_at_b, 9, 0, nullptr), 0);
        weft_cq_tagged_entry e{};
        ssize_t k = 0;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while ((k = weft_cq_read(cq[1], &e, 1)) == -WEFT_EAGAIN &&
               std::chrono::steady_clock::now() < end) {
            (void)weft_cq_read(cq[0], nullptr, 0);  // A serves a rendezvous
        }
        ASSERT_EQ(k, 1);
        EXPECT_EQ(e.len, n);
        EXPECT_EQ(std::count(got.begin(), got.end(), fill), static_cast<std::ptrdiff_t>(n));
    };
    std::vector<std::uint8_t> eager(48 * 1024, 0x5a);
    int eager_ctx = 0;
    ASSERT_EQ(weft_tsend(ep[0], eager.data(), eager.size(), nullptr, b_at_a, 9, &eager_ctx), 0);
    EXPECT_TRUE(completed(&eager_ctx, 2000)) << "48 KiB waited for the receiver";
    std::vector<std::uint8_t> rndv(96 * 1024, 0xa5);
    int rndv_ctx = 0;
    ASSERT_EQ(weft_tsend(ep[0], rndv.data(), rndv.size(), nullptr, b_at_a, 9, &rndv_ctx), 0);
    EXPECT_FALSE(completed(&rndv_ctx, 200)) << "96 KiB completed before the receiver matched it";
    receive(eager.size(), 0x5a);
    receive(rndv.size(), 0xa5);
    EXPECT_TRUE(completed(&rndv_ctx, 5000)) << "the rendezvous send's completion";
}

// WEFT_OPT_INJECT_DIRECT (MPI's progress rule): an inject that returned 0 is on
// its way without the sender's later progress. Here nobody receives at B, so A's
// credits run out: a direct inject is refused with -WEFT_EAGAIN instead of being
// queued at A (or turned into a rendezvous that A would have to serve). Then A
// makes no call at all, and B alone receives every message A was told was sent,
// in order; once B has taken them, A's retried inject goes through.
TEST(inject, a_direct_inject_is_refused_rather_than_left_for_the_senders_progress)
{
    shm_pair pair;
    if (!pair.open(nullptr, true)) {
        GTEST_SKIP() << "no shm transport in this build or on this machine";
    }
    auto &ep = pair.ep;
    auto &cq = pair.cq;
    int on = 0;
    std::size_t len = sizeof(on);
    ASSERT_EQ(weft_ep_getopt(ep[0], WEFT_OPT_INJECT_DIRECT, &on, &len), 0);
    EXPECT_EQ(on, 1);
    EXPECT_EQ(weft_ep_setopt(ep[0], WEFT_OPT_INJECT_DIRECT, &on, sizeof(on)), -WEFT_EINVAL)
        << "set after weft_ep_enable";
    std::size_t inject = 0;
    len = sizeof(inject);
    ASSERT_EQ(weft_ep_getopt(ep[0], WEFT_OPT_INJECT_SIZE, &inject, &len), 0);
    EXPECT_GE(inject, 64U);
    weft_addr_t b_at_a = 0;
    weft_addr_t a_at_b = 0;
    ASSERT_EQ(weft_av_insert(pair.av[0], pair.addr[1], 1, &b_at_a, 0), 1);
    ASSERT_EQ(weft_av_insert(pair.av[1], pair.addr[0], 1, &a_at_b, 0), 1);
    std::vector<std::uint8_t> msg(inject);
    std::uint32_t sent = 0;
    ssize_t rc;
    auto fill = [&](std::uint32_t v) {
        std::fill(msg.begin(), msg.end(), static_cast<std::uint8_t>(v));
        std::memcpy(msg.data(), &v, sizeof(v));
    };
    for (fill(sent); (rc = weft_tinject(ep[0], msg.data(), msg.size(), b_at_a, 5)) == 0;
         fill(++sent)) {
        ASSERT_LT(sent, 100000U) << "every inject was taken: some must have been queued";
    }
    ASSERT_EQ(rc, -WEFT_EAGAIN);
    ASSERT_GE(sent, 2U);
    // A is silent from here. B receives all of them, in order.
    std::vector<std::uint8_t> got(inject);
    for (std::uint32_t i = 0; i < sent; ++i) {
        std::fill(got.begin(), got.end(), 0xee);
        ASSERT_EQ(weft_trecv(ep[1], got.data(), got.size(), nullptr, a_at_b, 5, 0, nullptr), 0);
        weft_cq_tagged_entry e{};
        ssize_t k = 0;
        for (int spin = 0; spin < 1000000 && (k = weft_cq_read(cq[1], &e, 1)) == -WEFT_EAGAIN;
             ++spin) {
        }
        ASSERT_EQ(k, 1) << "message " << i << " of " << sent << " without the sender's progress";
        ASSERT_EQ(e.len, inject);
        std::uint32_t v = 0;
        std::memcpy(&v, got.data(), sizeof(v));
        ASSERT_EQ(v, i) << "order";
        ASSERT_EQ(got.back(), static_cast<std::uint8_t>(i)) << "payload of message " << i;
    }
    // The refused one goes once A progresses (B's credits come back to it).
    fill(sent);
    std::uint8_t last[8];
    ASSERT_EQ(weft_trecv(ep[1], got.data(), got.size(), nullptr, a_at_b, 5, 0, nullptr), 0);
    for (int spin = 0; spin < 1000000 && (rc = weft_tinject(ep[0], msg.data(), msg.size(), b_at_a,
                                                            5)) == -WEFT_EAGAIN;
         ++spin) {
        (void)weft_cq_read(cq[1], last, 0);
    }
    ASSERT_EQ(rc, 0);
    weft_cq_tagged_entry e{};
    ssize_t k = 0;
    for (int spin = 0; spin < 1000000 && (k = weft_cq_read(cq[1], &e, 1)) == -WEFT_EAGAIN; ++spin) {
    }
    ASSERT_EQ(k, 1);
    std::uint32_t v = 0;
    std::memcpy(&v, got.data(), sizeof(v));
    EXPECT_EQ(v, sent);
    // A larger inject than one transport message is refused as an argument error.
    std::vector<std::uint8_t> big(inject + 1);
    EXPECT_EQ(weft_tinject(ep[0], big.data(), big.size(), b_at_a, 5), -WEFT_EINVAL);
}

// Issue 10, limits: unexpected rendezvous headers are bounded per sender
// (WEFT_UNEXPECTED_RNDV_MAX). One more is refused, and that send fails at the
// sender with WEFT_ENOMEM: nothing is dropped silently. The kept ones are
// received whole later.
TEST(limits, unexpected_rendezvous_headers_beyond_the_limit_fail_their_sends)
{
    weft_config_t *config = nullptr;
    ASSERT_EQ(weft_config_read(&config), 0);
    ASSERT_EQ(weft_config_modify(config, "UNEXPECTED_RNDV_MAX", "4"), 0);
    ASSERT_EQ(weft_config_modify(config, "RNDV_THRESH", "1k"), 0);
    shm_pair pair;
    const bool have_shm = pair.open(config);
    weft_config_release(config);
    if (!have_shm) {
        GTEST_SKIP() << "no shm transport in this build or on this machine";
    }
    auto &ep = pair.ep;
    auto &av = pair.av;
    auto &cq = pair.cq;
    auto &addr = pair.addr;
    weft_addr_t to_b = 0;
    weft_addr_t to_a = 0;
    ASSERT_EQ(weft_av_insert(av[0], addr[1], 1, &to_b, 0), 1);
    ASSERT_EQ(weft_av_insert(av[1], addr[0], 1, &to_a, 0), 1);
    constexpr int sends = 10;
    constexpr std::size_t len = 64 * 1024;  // rendezvous (threshold 1 KiB)
    std::vector<std::vector<unsigned char>> buf(sends, std::vector<unsigned char>(len));
    for (int i = 0; i < sends; ++i) {
        std::memset(buf[i].data(), 'a' + i, len);
        ASSERT_EQ(weft_tsend(ep[0], buf[i].data(), len, nullptr, to_b, 100 + i, &buf[i]), 0);
    }
    // B progresses without receiving: 4 headers kept, 6 refused.
    int failed = 0;
    {
        weft::test::expect_log_errors refused(1);  // B says why (rate-limited)
        for (int spin = 0; spin < 200000 && failed < sends - 4; ++spin) {
            (void)weft_ep_progress(ep[1]);
            weft_cq_tagged_entry e;
            if (weft_cq_read(cq[0], &e, 1) == -WEFT_EAVAIL) {
                weft_cq_err_entry err{};
                ASSERT_EQ(weft_cq_readerr(cq[0], &err, 0), 1);
                EXPECT_EQ(err.err, WEFT_ENOMEM) << err.err_str;
                ++failed;
            }
        }
    }
    EXPECT_EQ(failed, sends - 4) << "every header beyond the limit fails its send";
    // The 4 kept ones are received whole, in order (the first four sent).
    std::vector<unsigned char> rbuf(len);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(weft_trecv(ep[1], rbuf.data(), len, nullptr, to_a, 100 + i, 0, &rbuf), 0);
        int done = 0;
        for (int spin = 0; spin < 2000000 && done < 2; ++spin) {
            weft_cq_tagged_entry e;
            for (int k = 0; k < 2; ++k) {
                const ssize_t n = weft_cq_read(cq[k], &e, 1);
                ASSERT_NE(n, -WEFT_EAVAIL) << "no other error on endpoint " << k;
                done += n > 0 ? 1 : 0;
            }
        }
        ASSERT_EQ(done, 2) << "message " << i << ": the receive and its send";
        EXPECT_EQ(rbuf, buf[i]);
    }
}

TEST(av, entries_are_compact_and_round_trip)
{
    static_assert(sizeof(weft::core::av_entry) <= 16);
    self_ep s;
    std::uint8_t addr[256];
    std::size_t len = sizeof(addr);
    ASSERT_EQ(weft_ep_getname(s.ep, addr, &len), 0);
    // Addresses are packed back to back, each with its own length: two copies
    // of the same address get the next indices.
    weft_addr_t idx[3];
    std::vector<std::uint8_t> two(2 * len);
    std::memcpy(two.data(), addr, len);
    std::memcpy(two.data() + len, addr, len);
    EXPECT_EQ(weft_av_insert(s.av, two.data(), 2, idx, 0), 2);
    EXPECT_EQ(idx[0], 1U);
    EXPECT_EQ(idx[1], 2U);
    // Garbage: its length cannot be trusted, so it and everything after it are
    // refused; it takes one index.
    std::vector<std::uint8_t> bad(2 * len, 0xab);
    std::memcpy(bad.data() + len, addr, len);
    {
        weft::test::expect_log_warnings warned(1);
        EXPECT_EQ(weft_av_insert(s.av, bad.data(), 2, idx, 0), -WEFT_EBADMSG);
    }
    EXPECT_EQ(idx[0], WEFT_ADDR_NOTAVAIL);
    EXPECT_EQ(idx[1], WEFT_ADDR_NOTAVAIL);
    EXPECT_EQ(weft_av_count(s.av), 4U);
    std::uint8_t out[256];
    std::size_t olen = sizeof(out);
    ASSERT_EQ(weft_av_lookup(s.av, 1, out, &olen), 0);
    ASSERT_EQ(olen, len);
    EXPECT_EQ(std::memcmp(out, addr, len), 0);  // rebuilt byte for byte from the compact entry
    olen = sizeof(out);
    EXPECT_EQ(weft_av_lookup(s.av, 3, out, &olen), -WEFT_ENOENT);
    ASSERT_EQ(weft_av_remove(s.av, &idx[0], 1, 0), -WEFT_ENOENT);
    const weft_addr_t one = 1;
    ASSERT_EQ(weft_av_remove(s.av, &one, 1, 0), 0);
    EXPECT_EQ(weft_av_lookup(s.av, 1, out, &olen), -WEFT_ENOENT);
    EXPECT_EQ(weft_av_remove(s.av, &one, 1, 0), -WEFT_ENOENT);
}

TEST(cq, every_format_carries_its_fields)
{
    for (weft_cq_format f :
         {WEFT_CQ_FORMAT_CONTEXT, WEFT_CQ_FORMAT_MSG, WEFT_CQ_FORMAT_DATA, WEFT_CQ_FORMAT_TAGGED}) {
        self_ep s(f);
        char out[16] = "hello, weft";
        char in[16] = {};
        int rctx = 0;
        ASSERT_EQ(weft_trecv(s.ep, in, sizeof(in), nullptr, s.me, 77, 0, &rctx), 0);
        ASSERT_EQ(weft_tsenddata(s.ep, out, 12, nullptr, 0xdada, s.me, 77, nullptr), 0);
        weft_cq_tagged_entry e[2] = {};
        weft_addr_t src[2] = {99, 99};
        ASSERT_EQ(weft_cq_readfrom(s.cq, e, 2, src), 2) << "format " << f;
        // The entries are packed at the format's size: find the receive.
        const auto *bytes = reinterpret_cast<const std::uint8_t *>(e);
        const std::size_t size = f == WEFT_CQ_FORMAT_CONTEXT ? sizeof(weft_cq_entry)
                                 : f == WEFT_CQ_FORMAT_MSG   ? sizeof(weft_cq_msg_entry)
                                 : f == WEFT_CQ_FORMAT_DATA  ? sizeof(weft_cq_data_entry)
                                                             : sizeof(weft_cq_tagged_entry);
        // The send completes when sent; self delivers from the next progress (the
        // read): the receive is the second entry.
        weft_cq_tagged_entry r{};
        std::memcpy(&r, bytes + size, size);
        EXPECT_EQ(r.op_context, &rctx);
        EXPECT_EQ(src[1], s.me);
        if (f != WEFT_CQ_FORMAT_CONTEXT) {
            EXPECT_EQ(r.flags & (WEFT_RECV | WEFT_TAGGED | WEFT_REMOTE_CQ_DATA),
                      WEFT_RECV | WEFT_TAGGED | WEFT_REMOTE_CQ_DATA);
            EXPECT_EQ(r.len, 12U);
        }
        if (f == WEFT_CQ_FORMAT_DATA || f == WEFT_CQ_FORMAT_TAGGED) {
            EXPECT_EQ(r.buf, in);
            EXPECT_EQ(r.data, 0xdadaU);
        }
        if (f == WEFT_CQ_FORMAT_TAGGED) {
            EXPECT_EQ(r.tag, 77U);
        }
        EXPECT_STREQ(in, "hello, weft");
    }
}

TEST(cq, overflow_keeps_every_entry_in_order)
{
    self_ep s(WEFT_CQ_FORMAT_CONTEXT, 4);
    std::vector<int> ctx(40);
    for (int i = 0; i < 40; ++i) {
        ASSERT_EQ(weft_tsend(s.ep, nullptr, 0, nullptr, s.me, 5, &ctx[i]), 0);
    }
    // 40 sends + 40 unexpected messages: receive them all.
    std::vector<int> rctx(40);
    for (int i = 0; i < 40; ++i) {
        ASSERT_EQ(weft_trecv(s.ep, nullptr, 0, nullptr, s.me, 5, 0, &rctx[i]), 0);
    }
    std::vector<void *> got;
    weft_cq_entry e[7];
    for (ssize_t n; (n = weft_cq_read(s.cq, e, 7)) != -WEFT_EAGAIN;) {
        ASSERT_GT(n, 0);
        for (ssize_t i = 0; i < n; ++i) {
            got.push_back(e[i].op_context);
        }
    }
    ASSERT_EQ(got.size(), 80U);
    for (int i = 0; i < 40; ++i) {
        EXPECT_EQ(got[i], &ctx[i]);
        EXPECT_EQ(got[40 + i], &rctx[i]);
    }
}

TEST(cq, selective_completion_and_counters)
{
    self_ep s(WEFT_CQ_FORMAT_CONTEXT, 0, WEFT_SELECTIVE_COMPLETION);
    int a = 0;
    int b = 0;
    ASSERT_EQ(weft_tsend(s.ep, nullptr, 0, nullptr, s.me, 1, &a), 0);  // no entry
    const weft_msg_tagged msg{nullptr, nullptr, 0, s.me, 1, 0, &b, 0};
    ASSERT_EQ(weft_tsendmsg(s.ep, &msg, WEFT_COMPLETION), 0);  // entry
    ASSERT_EQ(weft_tinject(s.ep, "x", 1, s.me, 1), 0);         // never an entry
    weft_cq_entry e;
    ASSERT_EQ(weft_cq_read(s.cq, &e, 1), 1);
    EXPECT_EQ(e.op_context, &b);
    EXPECT_EQ(weft_cq_read(s.cq, &e, 1), -WEFT_EAGAIN);
    // The counter counts every completion, selective or not: 3 sends.
    EXPECT_EQ(weft_cntr_read(s.cntr), 3U);
    char buf[4];
    for (int i = 0; i < 3; ++i) {
        const iovec iov{buf, sizeof(buf)};
        const weft_msg_tagged r{&iov, nullptr, 1, WEFT_ADDR_UNSPEC, 1, 0, nullptr, 0};
        ASSERT_EQ(weft_trecvmsg(s.ep, &r, 0), 0);
    }
    EXPECT_EQ(weft_cntr_wait(s.cntr, 6, 1000), 0);
    EXPECT_EQ(weft_cntr_wait(s.cntr, 7, 10), -WEFT_ETIMEDOUT);
    EXPECT_EQ(weft_cntr_readerr(s.cntr), 0U);
    EXPECT_EQ(weft_cq_read(s.cq, &e, 1), -WEFT_EAGAIN);  // receives were not flagged either
    EXPECT_EQ(weft_cntr_set(s.cntr, 100), 0);
    EXPECT_EQ(weft_cntr_add(s.cntr, 1), 0);
    EXPECT_EQ(weft_cntr_read(s.cntr), 101U);
}

TEST(cq, errors_take_precedence_and_are_readable)
{
    self_ep s;
    char small[4];
    int ctx = 0;
    ASSERT_EQ(weft_tsend(s.ep, "0123456789", 10, nullptr, s.me, 3, nullptr), 0);
    ASSERT_EQ(weft_trecv(s.ep, small, sizeof(small), nullptr, s.me, 3, 0, &ctx), 0);
    weft_cq_tagged_entry e;
    EXPECT_EQ(weft_cq_read(s.cq, &e, 1), -WEFT_EAVAIL);
    weft_cq_err_entry err{};
    ASSERT_EQ(weft_cq_readerr(s.cq, &err, 0), 1);
    EXPECT_EQ(err.err, WEFT_ETRUNC);
    EXPECT_EQ(err.op_context, &ctx);
    EXPECT_EQ(err.len, 4U);
    EXPECT_EQ(err.olen, 6U);
    EXPECT_NE(std::string(err.err_str).find("sent 10 bytes"), std::string::npos) << err.err_str;
    EXPECT_EQ(std::memcmp(small, "0123", 4), 0);
    EXPECT_EQ(weft_cq_readerr(s.cq, &err, 0), -WEFT_EAGAIN);
    ASSERT_EQ(weft_cq_read(s.cq, &e, 1), 1);  // the send's completion
    EXPECT_EQ(e.flags & WEFT_SEND, WEFT_SEND);
    EXPECT_EQ(weft_cq_wait(s.cq, 5), -WEFT_ETIMEDOUT);
}

TEST(threading, safe_level_with_concurrent_senders_and_auto_progress)
{
    self_ep s(WEFT_CQ_FORMAT_CONTEXT, 0, 0, WEFT_THREAD_SAFE, WEFT_PROGRESS_AUTO);
    constexpr int per_thread = 2000;
    std::atomic<int> failures{0};
    auto sender = [&](std::uint64_t tag) {
        for (int i = 0; i < per_thread; ++i) {
            std::uint32_t v = static_cast<std::uint32_t>(i);
            ssize_t rc;
            while ((rc = weft_tinject(s.ep, &v, sizeof(v), s.me, tag)) == -WEFT_EAGAIN) {
            }
            if (rc != 0) {
                failures.fetch_add(1);
            }
        }
    };
    std::thread t1(sender, 1);
    std::thread t2(sender, 2);
    // Receive per tag in order: messages from one source with one tag match in send order.
    std::vector<std::uint32_t> in(2 * per_thread);
    for (int i = 0; i < per_thread; ++i) {
        ASSERT_EQ(weft_trecv(s.ep, &in[i], 4, nullptr, s.me, 1, 0, nullptr), 0);
        ASSERT_EQ(weft_trecv(s.ep, &in[per_thread + i], 4, nullptr, s.me, 2, 0, nullptr), 0);
    }
    t1.join();
    t2.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(weft_cntr_wait(s.cntr, 4 * per_thread, 10000), 0);
    for (int i = 0; i < per_thread; ++i) {
        ASSERT_EQ(in[i], static_cast<std::uint32_t>(i));
        ASSERT_EQ(in[per_thread + i], static_cast<std::uint32_t>(i));
    }
}

/// The threads of this process other than the caller, and the CPUs each may run on.
static std::map<int, std::string> other_threads()
{
    std::map<int, std::string> out;
    const int me = static_cast<int>(syscall(SYS_gettid));
    for (const auto &e : std::filesystem::directory_iterator("/proc/self/task")) {
        const int tid = std::atoi(e.path().filename().c_str());
        if (tid == me) {
            continue;
        }
        std::ifstream f(e.path() / "status");
        for (std::string line; std::getline(f, line);) {
            if (line.rfind("Cpus_allowed_list:", 0) == 0) {
                out[tid] = line.substr(line.find_first_not_of(" \t", 18));
            }
        }
    }
    return out;
}

/// The CPUs of the auto-progress thread of a domain opened by this thread,
/// with WEFT_TOPO_PLACEMENT=`placement`. The thread binds itself when it
/// starts: wait (up to 2 s) for it to differ from the CPUs it inherits, then
/// read it once more.
static std::string progress_thread_cpus(const char *placement)
{
    const std::string inherited = weft::base::id_set_text(weft::base::caller_cpus());
    setenv("WEFT_TOPO_PLACEMENT", placement, 1);
    const std::map<int, std::string> before = other_threads();
    std::string cpus;
    {
        self_ep s(WEFT_CQ_FORMAT_CONTEXT, 0, 0, WEFT_THREAD_SAFE, WEFT_PROGRESS_AUTO);
        for (int i = 0; i < 200 && (cpus.empty() || cpus == inherited); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            for (const auto &[tid, list] : other_threads()) {
                if (before.count(tid) == 0) {
                    cpus = list;
                }
            }
        }
    }
    unsetenv("WEFT_TOPO_PLACEMENT");
    return cpus;
}

TEST(threading, auto_progress_thread_runs_near_the_caller)
{
    const weft::base::topology &t = weft::base::topology::machine();
    const weft::base::id_set all = weft::base::caller_cpus();
    ASSERT_FALSE(all.empty());
    std::string why;
    const weft::base::id_set node_cpus = weft::base::helper_cpus(t, {all[0]}, why);
    if (node_cpus.size() < 2) {
        GTEST_SKIP() << "CPU " << all[0] << "'s NUMA node has no other CPU: " << why;
    }
    ASSERT_TRUE(weft::base::bind_this_thread({all[0]}));
    // Placement on: the CPUs of the caller's node; off: the caller's one CPU,
    // inherited.
    EXPECT_EQ(progress_thread_cpus("auto"), weft::base::id_set_text(node_cpus));
    EXPECT_EQ(progress_thread_cpus("off"), std::to_string(all[0]));
    ASSERT_TRUE(weft::base::bind_this_thread(all));
}

// `window`: WEFT_CREDIT_WINDOW for this run (nullptr: the default).
static void eagain_mode_on_self(const char *window)
{
    weft_config_t *config = nullptr;
    ASSERT_EQ(weft_config_read(&config), 0);
    if (window != nullptr) {
        ASSERT_EQ(weft_config_modify(config, "CREDIT_WINDOW", window), 0);
    }
    info_ptr hints(weft_info_alloc());
    std::snprintf(hints->transport, sizeof(hints->transport), "self");
    hints->caps = WEFT_TAGGED;
    hints->ep_attr.credit_mode = WEFT_CREDITS_EAGAIN;
    weft_info *raw = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), config, &raw), 0);
    info_ptr info(raw);
    ASSERT_EQ(info->ep_attr.credit_mode, WEFT_CREDITS_EAGAIN);
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_cq_t *cq;
    weft_av_t *av;
    weft_ep_t *ep;
    const weft_cq_attr attr{0, WEFT_CQ_FORMAT_CONTEXT};
    ASSERT_EQ(weft_fabric_open(info.get(), config, &fabric), 0);
    weft_config_release(config);
    ASSERT_EQ(weft_domain_open(fabric, info.get(), &domain), 0);
    ASSERT_EQ(weft_cq_open(domain, &attr, &cq), 0);
    ASSERT_EQ(weft_av_open(domain, nullptr, &av), 0);
    ASSERT_EQ(weft_ep_open(domain, info.get(), &ep, nullptr), 0);
    ASSERT_EQ(weft_ep_bind_cq(ep, cq, WEFT_TRANSMIT | WEFT_RECV), 0);
    ASSERT_EQ(weft_ep_bind_av(ep, av), 0);
    ASSERT_EQ(weft_ep_enable(ep), 0);
    std::uint8_t addr[256];
    std::size_t len = sizeof(addr);
    weft_addr_t me;
    ASSERT_EQ(weft_ep_getname(ep, addr, &len), 0);
    ASSERT_EQ(weft_av_insert(av, addr, 1, &me, 0), 1);

    weft_credits c{};
    ASSERT_EQ(weft_ep_credits(ep, me, &c), 0);
    EXPECT_GT(c.send, 0U);
    EXPECT_GE(c.recv_window, c.send_window);
    if (window != nullptr) {
        // Flow control is on with this window (issue 10, defect 7: 512 and
        // more used to turn it off, with a message that did not name it).
        EXPECT_EQ(c.recv_window, std::strtoull(window, nullptr, 10));
    }
    const iovec small{nullptr, 8};
    EXPECT_EQ(weft_ep_sendv_cost(ep, &small, 1), 1);
    EXPECT_EQ(weft_ep_credits(ep, 12345, &c), -WEFT_EINVAL);

    // Nobody receives: every message is held unexpected, so credits run out.
    std::uint32_t sent = 0;
    ssize_t rc;
    while ((rc = weft_tinject(ep, &sent, sizeof(sent), me, 1)) == 0) {
        ++sent;
        ASSERT_LT(sent, 100000U) << "credits never ran out";
    }
    ASSERT_EQ(rc, -WEFT_EAGAIN);
    ASSERT_EQ(weft_ep_credits(ep, me, &c), 0);
    EXPECT_LE(c.send, 1U);
    EXPECT_GE(sent, 3U);
    // Receive everything, in order; credits come back and sending works again.
    for (std::uint32_t i = 0; i < sent; ++i) {
        std::uint32_t v = ~0U;
        ASSERT_EQ(weft_trecv(ep, &v, sizeof(v), nullptr, me, 1, 0, nullptr), 0);
        weft_cq_entry e;
        ssize_t n;
        while ((n = weft_cq_read(cq, &e, 1)) == -WEFT_EAGAIN) {
        }
        ASSERT_EQ(n, 1);
        ASSERT_EQ(v, i);
    }
    EXPECT_EQ(weft_tinject(ep, &sent, sizeof(sent), me, 1), 0);
    ASSERT_EQ(weft_ep_credits(ep, me, &c), 0);
    EXPECT_GT(c.send, 1U);
    EXPECT_EQ(weft_ep_close(ep), 0);
    EXPECT_EQ(weft_av_close(av), 0);
    EXPECT_EQ(weft_cq_close(cq), 0);
    EXPECT_EQ(weft_domain_close(domain), 0);
    EXPECT_EQ(weft_fabric_close(fabric), 0);
}

TEST(credits, eagain_mode_pushes_back_and_recovers_on_self)
{
    eagain_mode_on_self(nullptr);
}

TEST(credits, windows_of_512_and_more_keep_flow_control_on)
{
    eagain_mode_on_self("512");
    eagain_mode_on_self("4096");
}

// ------------------------------------------------------------------ configuration objects

namespace {

struct config_deleter {
    void operator()(weft_config_t *c) const { weft_config_release(c); }
};
using config_ptr = std::unique_ptr<weft_config_t, config_deleter>;

config_ptr read_config()
{
    weft_config_t *c = nullptr;
    EXPECT_EQ(weft_config_read(&c), 0);
    return config_ptr(c);
}

std::string get_value(const weft_config_t *c, const char *name)
{
    char buf[64];
    std::size_t len = sizeof(buf);
    EXPECT_EQ(weft_config_get(c, name, buf, &len), 0) << name;
    return buf;
}

std::string print_config(const weft_config_t *c, std::uint64_t flags)
{
    char *text = nullptr;
    std::size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(weft_config_print(c, f, flags), 0);
    std::fclose(f);
    std::string s(text, size);
    std::free(text);
    return s;
}

/// Sets an environment variable for its lifetime.
struct scoped_env {
    scoped_env(const char *n, const char *v) : name(n) { setenv(n, v, 1); }
    ~scoped_env() { unsetenv(name); }
    const char *name;
};

}  // namespace

TEST(config, modify_get_and_print)
{
    config_ptr c = read_config();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(get_value(c.get(), "WEFT_TX_SIZE"), "4k") << "the default, as declared";
    EXPECT_EQ(weft_config_modify(c.get(), "TX_SIZE", "8192"), 0);
    EXPECT_EQ(weft_config_modify(c.get(), "weft_shm_fifo_size", "1k"), 0) << "any case, prefix";
    EXPECT_EQ(get_value(c.get(), "tx_size"), "8192");
    EXPECT_EQ(get_value(c.get(), "WEFT_SHM_FIFO_SIZE"), "1k");
    // Only what was set, then everything with descriptions and ranges.
    const std::string set = print_config(c.get(), WEFT_CONFIG_PRINT_SET);
    EXPECT_EQ(set, "WEFT_TX_SIZE=8192\nWEFT_SHM_FIFO_SIZE=1k\n");
    const std::string doc = print_config(c.get(), WEFT_CONFIG_PRINT_DOC);
    EXPECT_NE(doc.find("WEFT_CREDIT_INITIAL=64\n"), std::string::npos);
    EXPECT_NE(doc.find("uint 3..65535"), std::string::npos) << "ranges are printed";
    EXPECT_NE(doc.find("WEFT_LOG_LEVEL="), std::string::npos);
    // A value that does not fit: ETRUNC and the size needed.
    char small[3];
    std::size_t len = sizeof(small);
    EXPECT_EQ(weft_config_get(c.get(), "TX_SIZE", small, &len), -WEFT_ETRUNC);
    EXPECT_EQ(len, 5U);
    EXPECT_EQ(weft_config_print(c.get(), stdout, 1u << 7), -WEFT_EINVAL) << "unknown flag";
    // The fabric and what getinfo reports use the configuration's values.
    info_ptr hints(weft_info_alloc());
    std::snprintf(hints->transport, sizeof(hints->transport), "self");
    weft_info *info = nullptr;
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), c.get(), &info), 0);
    EXPECT_EQ(info->ep_attr.tx_size, 8192U);
    weft_info_free(info);
    config_ptr other = read_config();
    ASSERT_EQ(weft_getinfo(WEFT_API_VERSION, hints.get(), other.get(), &info), 0);
    EXPECT_EQ(info->ep_attr.tx_size, 4096U) << "another configuration, its own value";
    weft_info_free(info);
}

TEST(config, out_of_range_and_unknown_names_fail_loudly)
{
    config_ptr c = read_config();
    ASSERT_NE(c, nullptr);
    {
        weft::test::expect_log_errors one(1);
        weft::test::stderr_capture err;
        EXPECT_EQ(weft_config_modify(c.get(), "CREDIT_INITIAL", "2"), -WEFT_EINVAL);
        const std::string text = err.text();
        EXPECT_NE(text.find("WEFT_CREDIT_INITIAL"), std::string::npos) << text;
        EXPECT_NE(text.find("3..65535"), std::string::npos) << text;
    }
    {
        weft::test::expect_log_errors one(1);
        EXPECT_EQ(weft_config_modify(c.get(), "SHM_FIFO_SIZE", "12q"), -WEFT_EINVAL);
    }
    {
        weft::test::expect_log_errors one(1);
        weft::test::stderr_capture err;
        EXPECT_EQ(weft_config_modify(c.get(), "SHM_FIFO_SZIE", "64"), -WEFT_ENOENT);
        const std::string text = err.text();
        EXPECT_NE(text.find("WEFT_SHM_FIFO_SIZE"), std::string::npos) << "nearest name: " << text;
    }
    EXPECT_EQ(get_value(c.get(), "CREDIT_INITIAL"), "64") << "a refused value changes nothing";
    // From the environment: weft_config_read and weft_getinfo fail, naming it.
    {
        scoped_env bad("WEFT_VERBS_RETRY_COUNT", "9");
        weft::test::expect_log_errors some(1);
        weft::test::stderr_capture err;
        weft_config_t *r = nullptr;
        EXPECT_EQ(weft_config_read(&r), -WEFT_EINVAL);
        EXPECT_EQ(r, nullptr);
        weft_info *info = nullptr;
        EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, nullptr, nullptr, &info), -WEFT_EINVAL);
        EXPECT_EQ(info, nullptr);
        EXPECT_NE(err.text().find("WEFT_VERBS_RETRY_COUNT"), std::string::npos);
    }
    {
        scoped_env typo("WEFT_SHM_FIFO_SZIE", "64");
        weft::test::expect_log_warnings one(1);
        weft::test::stderr_capture err;
        config_ptr r = read_config();
        EXPECT_NE(r, nullptr) << "an unknown name warns, it does not fail";
        const std::string text = err.text();
        EXPECT_NE(text.find("did you mean WEFT_SHM_FIFO_SIZE"), std::string::npos) << text;
    }
    // A transport name that does not exist: a warning with the nearest one.
    {
        EXPECT_EQ(weft_config_modify(c.get(), "TRANSPORTS", "self,shn"), 0);
        weft::test::expect_log_warnings one(1);
        weft::test::stderr_capture err;
        weft_info *info = nullptr;
        EXPECT_EQ(weft_getinfo(WEFT_API_VERSION, nullptr, c.get(), &info), 0);
        weft_info_free(info);
        const std::string text = err.text();
        EXPECT_NE(text.find("did you mean 'shm'"), std::string::npos) << text;
    }
    // A newer minor version of the API than this library.
    {
        weft::test::expect_log_errors one(1);
        weft_info *info = nullptr;
        EXPECT_EQ(weft_getinfo(WEFT_VERSION(2, 99), nullptr, nullptr, &info), -WEFT_ENOSYS);
    }
}
