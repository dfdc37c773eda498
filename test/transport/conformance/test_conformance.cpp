// The transport conformance suite: the contract of src/transport/iface.hpp, run
// over every transport of this build (the registry), each through its
// component exactly as the core opens it. Two instances in one process (one
// for self, which reaches only itself) exchange active messages and one-sided
// operations; then proto/'s channel and its rma and amo modules run over the
// same pair, so that every operation is checked both on the transport's own
// path (where it has one) and on the active-message fallback.
//
// The contract checked:
//  - active messages: every size class (short, bcopy with headers up to
//    max_hdr), the 16-bit am word carried unchanged, the sender identified
//    (remote_address gives back its address), per-connection order, `again`
//    when resources run out and delivery once the receiver progresses, and no
//    handler ever runs inside a send;
//  - a peer's failure (close, and a killed process) reported once per side,
//    and later sends refused;
//  - get, put and atomics on the transport's own path where its capabilities
//    say so, with results byte for byte;
//  - hostile input: bad connection ids, oversized headers, short iovecs, bad
//    keys, out-of-range or closed regions: errors, never a crash or a write.
//
// A transport that cannot run here (verbs without an RDMA port) is skipped with
// the reason; test/transport/verbs/run_verbs_vm.sh runs this program in the
// Soft-RoCE VM.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <sys/wait.h>
#include <type_traits>
#include <unistd.h>
#include <span>
#include <vector>

#include "base/config.hpp"
#include "core/core_config.hpp"
#include "core/objects.hpp"
#include "proto/amo.hpp"
#include "proto/key.hpp"
#include "proto/region.hpp"
#include "proto/stack.hpp"
#include "weft/weft.h"
#include "test/log_expect.hpp"
#include "transport/registry.hpp"

namespace {

namespace tl = weft::transport;
namespace proto = weft::proto;
using weft::base::status;

// ------------------------------------------------------------------ one instance

struct message {
    tl::src_id src;
    tl::am_word am;
    std::vector<std::uint8_t> bytes;
};

/// One transport instance with recording handlers.
struct instance {
    std::unique_ptr<tl::iface> t;
    tl::address addr;
    std::vector<message> rx;
    struct failure {
        tl::conn_id conn;
        tl::src_id src;
        status why;
    };
    std::vector<failure> failed;
    std::vector<std::pair<std::uint64_t, status>> done;
    struct immediate {
        tl::src_id src;
        std::uint32_t imm;
        std::size_t len;
    };
    std::vector<immediate> imms;
    bool in_send = false;  ///< set around every send: a handler must never see it
    bool handler_in_send = false;

    static void on_am(void *arg, tl::src_id src, tl::am_word am, const void *d, std::size_t len)
    {
        auto *self = static_cast<instance *>(arg);
        self->handler_in_send = self->handler_in_send || self->in_send;
        const auto *p = static_cast<const std::uint8_t *>(d);
        self->rx.push_back({src, am, std::vector<std::uint8_t>(p, p + len)});
    }
    static void on_failed(void *arg, tl::conn_id c, tl::src_id s, status why)
    {
        static_cast<instance *>(arg)->failed.push_back({c, s, why});
    }
    static void on_done(void *arg, std::uint64_t cookie, status st)
    {
        static_cast<instance *>(arg)->done.emplace_back(cookie, st);
    }
    static void on_wake(void *) {}
    static void on_imm(void *arg, tl::src_id src, std::uint32_t imm, std::size_t len)
    {
        static_cast<instance *>(arg)->imms.push_back({src, imm, len});
    }

    unsigned progress() { return tl::progress(t.get()); }

    status send_short(tl::conn_id c, tl::am_word am, const void *h, std::size_t hl, const void *p,
                      std::size_t len)
    {
        in_send = true;
        const status st = tl::send_short(t.get(), c, am, h, hl, p, len);
        in_send = false;
        return st;
    }
    status send_bcopy(tl::conn_id c, tl::am_word am, const void *h, std::size_t hl,
                      const iovec *iov, std::size_t n, std::size_t off, std::size_t len)
    {
        in_send = true;
        const status st = tl::send_bcopy(t.get(), c, am, h, hl, iov, n, off, len);
        in_send = false;
        return st;
    }
};

/// Everything one transport's tests need: its component, a resource, a memory
/// domain, and instances.
struct fixture_state {
    const tl::component *comp = nullptr;
    tl::resource res;
    weft::base::config_store config;
    std::unique_ptr<tl::memory_domain> md;
};

std::uint64_t node_id()
{
    return weft::core::local_node_id();
}

std::vector<std::string> built_transports()
{
    std::vector<std::string> names;
    for (const tl::component *c : tl::components()) {
        names.emplace_back(c->name);
    }
    return names;
}

class conformance : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override
    {
        weft::core::init_once();
        st_.comp = tl::find_component(GetParam());
        ASSERT_NE(st_.comp, nullptr);
        ASSERT_EQ(st_.config.read_environment(), status::ok);
        std::string why;
        const std::vector<tl::resource> res = st_.comp->query(st_.config, why);
        if (res.empty()) {
            GTEST_SKIP() << "transport " << GetParam() << " is not available here: " << why
                         << (GetParam() == "verbs" ? " (make check-verbs runs this suite in a "
                                                     "Soft-RoCE VM)"
                                                   : "");
        }
        st_.res = res.front();
        auto md = st_.comp->open_md(st_.config, st_.res);
        ASSERT_TRUE(md.ok()) << weft::base::status_string(md.error());
        st_.md = std::move(md.value());
    }

    [[nodiscard]] bool loopback() const { return GetParam() == "self"; }

    /// Open an instance with endpoint number `ep_id`, its handlers and address set.
    std::unique_ptr<instance> open(std::uint32_t ep_id)
    {
        auto in = std::make_unique<instance>();
        const tl::open_params p{node_id(), static_cast<std::uint32_t>(getpid()), ep_id};
        auto r = st_.comp->open(p, st_.res, *st_.md, st_.config);
        EXPECT_TRUE(r.ok()) << weft::base::status_string(r.error());
        if (!r.ok()) {
            return nullptr;
        }
        in->t = std::move(r.value());
        in->t->set_handlers({&instance::on_am, &instance::on_failed, &instance::on_done,
                             &instance::on_wake, &instance::on_imm, in.get()});
        tl::address_builder b({p.node_id, p.pid, p.ep_id});
        EXPECT_EQ(in->t->pack_address(b), status::ok);
        in->addr = b.get();
        in->t->set_local_address(in->addr);
        return in;
    }

    /// A pair: a sends to b (b == a for a loopback transport); conn_ab is a's
    /// connection to b, conn_ba b's to a.
    struct pair {
        std::unique_ptr<instance> a_owned;
        std::unique_ptr<instance> b_owned;
        instance *a = nullptr;
        instance *b = nullptr;
        tl::conn_id ab = tl::invalid_id;
        tl::conn_id ba = tl::invalid_id;
    };

    /// Progress both until `done` is true or 20 s pass (verbs handshakes and
    /// Soft-RoCE are slow); false on timeout.
    template <class Pred>
    bool until(pair &pp, Pred done, int ms = 20000)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (!done()) {
            pp.a->progress();
            if (pp.b != pp.a) {
                pp.b->progress();
            }
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
        }
        return true;
    }

    pair connect_pair()
    {
        pair pp;
        pp.a_owned = open(100);
        pp.a = pp.a_owned.get();
        if (loopback()) {
            pp.b = pp.a;
        } else {
            pp.b_owned = open(101);
            pp.b = pp.b_owned.get();
        }
        if (pp.a == nullptr || pp.b == nullptr) {
            return pp;
        }
        EXPECT_TRUE(pp.a->t->reachable(pp.b->addr));
        EXPECT_EQ(pp.a->t->connect(pp.b->addr, pp.ab), status::ok);
        EXPECT_EQ(pp.b->t->connect(pp.a->addr, pp.ba), status::ok);
        // A first message each way: connection-oriented transports finish their
        // handshakes here (a send answers `again` until then).
        const std::uint8_t hello = 0x42;
        for (auto [from, to, c] : {std::tuple{pp.a, pp.b, pp.ab}, std::tuple{pp.b, pp.a, pp.ba}}) {
            const std::size_t before = to->rx.size();
            EXPECT_TRUE(until(pp, [&] {
                return from->send_short(c, tl::make_am(7, 0), &hello, 1, nullptr, 0) !=
                       status::again;
            }));
            EXPECT_TRUE(until(pp, [&] { return to->rx.size() > before; }));
        }
        pp.a->rx.clear();
        pp.b->rx.clear();
        return pp;
    }

    fixture_state st_;
};

// ------------------------------------------------------------------ active messages

TEST_P(conformance, attributes_are_consistent)
{
    auto in = open(100);
    ASSERT_NE(in, nullptr);
    const tl::attributes &a = in->t->attr();
    EXPECT_NE(a.caps & tl::cap::am, 0U) << "every transport carries active messages";
    EXPECT_GT(a.max_short, 0U);
    EXPECT_GE(a.max_bcopy, a.max_short);
    EXPECT_GE(a.max_hdr, sizeof(proto::credit_prefix) + proto::max_header);
    EXPECT_GT(a.cost.bandwidth_mbps, 0.0);
    EXPECT_GE(a.cost.latency_ns, 0.0);
    EXPECT_EQ((a.caps & tl::cap::put) != 0, in->t->ops().put != nullptr);
    EXPECT_EQ((a.caps & tl::cap::get) != 0, in->t->ops().get != nullptr);
    EXPECT_EQ((a.caps & tl::cap::atomic) != 0, in->t->ops().atomic != nullptr);
    EXPECT_EQ((a.caps & tl::cap::atomic) != 0,
              (a.atomic32 | a.atomic32f | a.atomic64 | a.atomic64f) != 0);
    EXPECT_NE(in->t->ops().send_short, nullptr);
    EXPECT_NE(in->t->ops().send_bcopy, nullptr);
    EXPECT_NE(in->t->ops().progress, nullptr);
    // The address parses back and names this endpoint.
    tl::address back;
    ASSERT_EQ(tl::address::parse(in->addr.data(), in->addr.size(), back), status::ok);
    EXPECT_EQ(back, in->addr);
    EXPECT_EQ(back.pid(), static_cast<std::uint32_t>(getpid()));
}

TEST_P(conformance, every_size_and_am_word_arrives_intact)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    const tl::attributes &a = pp.a->t->attr();
    std::vector<std::uint8_t> data(a.max_bcopy);
    std::mt19937 rng(7);
    for (auto &x : data) {
        x = static_cast<std::uint8_t>(rng());
    }
    struct sent {
        tl::am_word am;
        std::size_t hdr;
        std::size_t len;
        std::size_t off;
    };
    std::vector<sent> log;
    unsigned n = 0;
    auto send_one = [&](bool shortmsg, std::size_t hdr, std::size_t len, std::size_t off) {
        const tl::am_word am = tl::make_am(n % 256, (n / 256 + n) % 256);
        ++n;
        status st;
        ASSERT_TRUE(until(pp, [&] {
            if (shortmsg) {
                st = pp.a->send_short(pp.ab, am, data.data(), hdr, data.data() + hdr, len);
            } else {
                const iovec iov[3] = {{data.data(), 100},
                                      {data.data() + 100, 3},
                                      {data.data() + 103, data.size() - 103}};
                st = pp.a->send_bcopy(pp.ab, am, data.data() + 7, hdr, iov, 3, off, len);
            }
            return st != status::again;
        })) << "never accepted";
        ASSERT_EQ(st, status::ok);
        log.push_back({am, shortmsg ? hdr : hdr | (std::size_t{1} << 63), len, off});
    };
    for (std::size_t len = 0; len + 8 <= a.max_short; len += 1 + len / 3) {
        send_one(true, 8, len, 0);
    }
    send_one(true, 0, 0, 0);
    send_one(true, a.max_short, 0, 0);
    for (std::size_t hdr : {std::size_t{0}, std::size_t{8}, std::size_t{56}, a.max_hdr}) {
        for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{99}, a.max_bcopy / 2,
                                a.max_bcopy - hdr}) {
            for (std::size_t off : {std::size_t{0}, std::size_t{101}}) {
                if (off + len <= data.size() && hdr + len <= a.max_bcopy) {
                    send_one(false, hdr, len, off);
                }
            }
        }
    }
    ASSERT_TRUE(until(pp, [&] { return pp.b->rx.size() >= log.size(); }));
    ASSERT_EQ(pp.b->rx.size(), log.size());
    tl::address from;
    ASSERT_EQ(pp.b->t->remote_address(pp.b->rx[0].src, from), status::ok);
    EXPECT_EQ(from.id(), pp.a->addr.id()) << "the sender is identified";
    for (std::size_t i = 0; i < log.size(); ++i) {
        const message &m = pp.b->rx[i];
        EXPECT_EQ(m.am, log[i].am) << "message " << i << ": the am word is carried unchanged";
        EXPECT_EQ(m.src, pp.b->rx[0].src);
        const bool bcopy = (log[i].hdr >> 63) != 0;
        const std::size_t hdr = log[i].hdr & ~(std::size_t{1} << 63);
        ASSERT_EQ(m.bytes.size(), hdr + log[i].len) << "message " << i;
        const std::uint8_t *h = bcopy ? data.data() + 7 : data.data();
        const std::uint8_t *p = bcopy ? data.data() + log[i].off : data.data() + hdr;
        // (memcmp of 0 bytes: an empty message's buffer may be null, which memcmp may not take)
        EXPECT_TRUE(hdr == 0 || std::memcmp(m.bytes.data(), h, hdr) == 0)
            << "header of message " << i;
        EXPECT_TRUE(log[i].len == 0 || std::memcmp(m.bytes.data() + hdr, p, log[i].len) == 0)
            << "payload of message " << i;
    }
    EXPECT_FALSE(pp.b->handler_in_send) << "a handler ran inside a send";
    EXPECT_FALSE(pp.a->handler_in_send) << "a handler ran inside a send";
}

TEST_P(conformance, order_kept_and_again_when_full)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    const tl::attributes &a = pp.a->t->attr();
    std::vector<std::uint8_t> big(a.max_bcopy - 8, 0x5a);
    // Send without letting the receiver progress until the transport says
    // `again` (resources exhausted), at most 100000 messages.
    std::uint64_t seq = 0;
    bool full = false;
    for (int i = 0; i < 100000 && !full; ++i) {
        status st;
        if (i % 3 == 0) {
            const iovec iov{big.data(), big.size()};
            st = pp.a->send_bcopy(pp.ab, tl::make_am(9, 0), &seq, 8, &iov, 1, 0, big.size());
        } else {
            st = pp.a->send_short(pp.ab, tl::make_am(9, 0), &seq, 8, nullptr, 0);
        }
        if (st == status::again) {
            full = true;
            break;
        }
        ASSERT_EQ(st, status::ok);
        ++seq;
        if (pp.a != pp.b) {
            pp.a->progress();  // the sender's own completions, not the receiver's queue
        }
    }
    EXPECT_TRUE(full) << "100000 messages and never `again`";
    // Everything accepted arrives once the receiver progresses, in order.
    ASSERT_TRUE(until(pp, [&] { return pp.b->rx.size() >= seq; }))
        << pp.b->rx.size() << " of " << seq;
    ASSERT_EQ(pp.b->rx.size(), seq);
    for (std::uint64_t i = 0; i < seq; ++i) {
        std::uint64_t got = 0;
        std::memcpy(&got, pp.b->rx[i].bytes.data(), 8);
        ASSERT_EQ(got, i) << "out of order";
    }
    // And the transport takes messages again.
    EXPECT_TRUE(until(pp, [&] {
        return pp.a->send_short(pp.ab, tl::make_am(9, 0), &seq, 8, nullptr, 0) == status::ok;
    }));
}

TEST_P(conformance, hostile_arguments_are_refused)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    const tl::attributes &a = pp.a->t->attr();
    std::vector<std::uint8_t> data(a.max_bcopy + 64);
    const iovec iov{data.data(), 16};
    {
        weft::test::expect_log_errors any(0);  // a transport may say why
        EXPECT_EQ(pp.a->send_short(12345, tl::make_am(1, 0), data.data(), 8, nullptr, 0),
                  status::invalid);
        EXPECT_EQ(
            pp.a->send_short(pp.ab, tl::make_am(1, 0), data.data(), 8, data.data(), a.max_short),
            status::invalid);
        EXPECT_EQ(
            pp.a->send_bcopy(pp.ab, tl::make_am(1, 0), data.data(), a.max_hdr + 1, &iov, 1, 0, 0),
            status::invalid);
        EXPECT_EQ(
            pp.a->send_bcopy(pp.ab, tl::make_am(1, 0), data.data(), 8, &iov, 1, 0, a.max_bcopy),
            status::invalid);
        // An iovec holding fewer bytes than asked for.
        EXPECT_EQ(pp.a->send_bcopy(pp.ab, tl::make_am(1, 0), data.data(), 8, &iov, 1, 8, 16),
                  status::invalid);
    }
    tl::rkey k{};
    const std::uint8_t junk[3] = {1, 2, 3};
    const status ks = pp.a->t->unpack_rkey(junk, sizeof(junk), k);
    EXPECT_TRUE(ks == status::bad_message || ks == status::not_supported)
        << weft::base::status_string(ks);
    // Nothing of that reached the peer.
    EXPECT_TRUE(until(
                    pp, [] { return false; }, 50) == false);
    EXPECT_TRUE(pp.b->rx.empty());
    tl::address none;
    EXPECT_EQ(pp.b->t->remote_address(99999, none), status::no_entry);
}

// ------------------------------------------------------------------ failures

TEST_P(conformance, closed_peer_is_reported_once)
{
    if (loopback()) {
        GTEST_SKIP() << "self reaches only its own endpoint: it has no peer to lose";
    }
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    pp.b_owned.reset();  // b closes (cleanly)
    pp.b = pp.a;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pp.a->failed.empty() && std::chrono::steady_clock::now() < end) {
        pp.a->progress();
        (void)pp.a->send_short(pp.ab, tl::make_am(1, 0), nullptr, 0, nullptr, 0);
    }
    ASSERT_EQ(pp.a->failed.size(), 1U) << "the peer's close was not reported";
    EXPECT_EQ(pp.a->failed[0].conn, pp.ab);
    EXPECT_EQ(pp.a->failed[0].why, status::unreachable);
    // Once: more progress reports nothing more, and sends are refused.
    for (int i = 0; i < 2000; ++i) {
        pp.a->progress();
    }
    usleep(20000);
    for (int i = 0; i < 2000; ++i) {
        pp.a->progress();
    }
    EXPECT_EQ(pp.a->failed.size(), 1U) << "reported more than once";
    EXPECT_EQ(pp.a->send_short(pp.ab, tl::make_am(1, 0), nullptr, 0, nullptr, 0),
              status::unreachable);
}

TEST_P(conformance, killed_peer_process_is_reported_once)
{
    if (loopback()) {
        GTEST_SKIP() << "self reaches only its own endpoint: it has no peer to lose";
    }
    // The peer is another process, killed with SIGKILL (no clean close).
    int to_child[2];
    int to_parent[2];
    ASSERT_EQ(pipe(to_child), 0);
    ASSERT_EQ(pipe(to_parent), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Everything of its own: a verbs context does not survive fork (the
        // parent's memory domain is left untouched, not closed, here).
        (void)st_.md.release();
        auto md = st_.comp->open_md(st_.config, st_.res);
        if (!md.ok()) {
            _exit(3);
        }
        st_.md = std::move(md.value());
        auto in = open(201);
        if (in == nullptr) {
            _exit(4);
        }
        std::uint8_t bytes[tl::max_address_size] = {};
        std::memcpy(bytes, in->addr.data(), in->addr.size());
        if (write(to_parent[1], bytes, sizeof(bytes)) != sizeof(bytes)) {
            _exit(2);
        }
        for (;;) {
            in->progress();  // answer handshakes until killed
            if (!in->rx.empty()) {
                const char one = 1;
                (void)write(to_parent[1], &one, 1);
                in->rx.clear();
            }
        }
    }
    auto a = open(200);
    ASSERT_NE(a, nullptr);
    std::uint8_t bytes[tl::max_address_size];
    ASSERT_EQ(read(to_parent[0], bytes, sizeof(bytes)), static_cast<ssize_t>(sizeof(bytes)));
    tl::address peer;
    ASSERT_EQ(tl::address::parse(bytes, sizeof(bytes), peer), status::ok);
    tl::conn_id c = tl::invalid_id;
    ASSERT_EQ(a->t->connect(peer, c), status::ok);
    // A message gets through (the connection is up), then the peer dies.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    status st;
    while ((st = a->send_short(c, tl::make_am(3, 0), nullptr, 0, nullptr, 0)) == status::again &&
           std::chrono::steady_clock::now() < end) {
        a->progress();
    }
    ASSERT_EQ(st, status::ok);
    char one = 0;
    ASSERT_EQ(read(to_parent[0], &one, 1), 1);
    // The transport may say what it saw (a warning naming the peer).
    weft::test::expect_log_warnings may_warn(0);
    kill(child, SIGKILL);
    int wst = 0;
    waitpid(child, &wst, 0);
    const auto fail_end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (a->failed.empty() && std::chrono::steady_clock::now() < fail_end) {
        a->progress();
        (void)a->send_short(c, tl::make_am(3, 0), nullptr, 0, nullptr, 0);
        usleep(100);
    }
    ASSERT_EQ(a->failed.size(), 1U) << "the killed peer was not reported within 60 s";
    EXPECT_EQ(a->failed[0].why, status::unreachable);
    for (int i = 0; i < 5000; ++i) {
        a->progress();
    }
    EXPECT_EQ(a->failed.size(), 1U) << "reported more than once";
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
}

// ------------------------------------------------------------------ native one-sided operations

/// A region of b registered with the memory domain, its key unpacked by a.
struct region {
    std::vector<std::uint8_t> mem;
    std::uint64_t handle = 0;
    tl::rkey key{};
    bool keyed = false;  ///< the memory domain packs a key (rkey_size() > 0)
};

TEST_P(conformance, get_reads_an_exposed_buffer)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    if (pp.a->t->ops().get == nullptr) {
        GTEST_SKIP() << GetParam()
                     << " has no get: proto/ reads through active messages "
                        "(fallback tests below)";
    }
    // b exposes a buffer to a (rendezvous's use of get): a reads it in pieces.
    std::vector<std::uint8_t> src(3 * 65536 + 17);
    for (std::size_t i = 0; i < src.size(); ++i) {
        src[i] = static_cast<std::uint8_t>(i * 7 + 3);
    }
    tl::exposure e;
    ASSERT_EQ(pp.b->t->expose(pp.ba, src.data(), src.size(), e), status::ok);
    tl::rkey k{};
    const status ks = pp.a->t->unpack_rkey(e.rkey, e.rkey_len, k);
    ASSERT_TRUE(ks == status::ok || (ks == status::not_supported && e.rkey_len == 0));
    std::vector<std::uint8_t> dst(src.size() + 64, 0xee);
    const iovec iov[2] = {{dst.data(), 1000}, {dst.data() + 1000, src.size() - 1000}};
    status st = status::not_supported;
    // A transport may decline a get for a while (not_supported): retry for
    // a few seconds before taking that as its answer.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        pp.a->done.clear();
        st = pp.a->t->ops().get(pp.a->t.get(), pp.ab, iov, 2, src.size(),
                                reinterpret_cast<std::uint64_t>(src.data()), k, 77);
        if (st == status::not_supported) {
            usleep(1000);
            pp.a->progress();
        }
    } while (st == status::not_supported && std::chrono::steady_clock::now() < end);
    if (st == status::not_supported) {
        pp.b->t->unexpose(e);
        GTEST_SKIP() << GetParam() << " declined the read (its configuration prefers a copy)";
    }
    if (st == status::in_progress) {
        ASSERT_TRUE(until(pp, [&] { return !pp.a->done.empty(); }));
        ASSERT_EQ(pp.a->done[0].first, 77U);
        st = pp.a->done[0].second;
    }
    ASSERT_EQ(st, status::ok);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
    EXPECT_EQ(dst[src.size()], 0xee) << "written past the read";
    pp.b->t->unexpose(e);
}

TEST_P(conformance, native_put_get_and_atomics_on_a_registered_region)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    const tl::attributes &a = pp.a->t->attr();
    if ((a.caps & (tl::cap::put | tl::cap::atomic)) == 0 || st_.md->rkey_size() == 0) {
        GTEST_SKIP() << GetParam()
                     << " has no native put or atomics on registered memory: "
                        "proto/'s active messages carry them (fallback tests below)";
    }
    // The memory domain's own memory where it allocates any (memory_domain::
    // alloc: shm's peers map it, so every operation here runs natively; on
    // other memory shm sends small puts and gets and every atomic to proto/),
    // else ordinary memory.
    std::vector<std::uint8_t> plain(8192, 0);
    std::span<std::uint8_t> mem(plain);
    void *allocated = nullptr;
    std::uint64_t alloc_handle = 0;
    const bool own = st_.md->alloc(plain.size(), allocated, alloc_handle) == status::ok;
    if (own) {
        mem = {static_cast<std::uint8_t *>(allocated), plain.size()};
        EXPECT_TRUE(std::all_of(mem.begin(), mem.end(), [](std::uint8_t b) { return b == 0; }))
            << "allocated memory is zeroed";
    }
    std::uint64_t handle = 0;
    constexpr unsigned all = tl::access::local | tl::access::remote_read |
                             tl::access::remote_write | tl::access::remote_atomic;
    ASSERT_EQ(st_.md->reg(mem.data(), mem.size(), all, handle), status::ok);
    std::vector<std::uint8_t> packed(st_.md->rkey_size());
    ASSERT_EQ(st_.md->pack_rkey(handle, packed.data()), status::ok);
    tl::rkey k{};
    ASSERT_EQ(pp.a->t->unpack_rkey(packed.data(), packed.size(), k), status::ok);
    const auto base = reinterpret_cast<std::uint64_t>(mem.data());
    auto wait = [&](status st, std::uint64_t cookie) {
        if (st == status::in_progress) {
            EXPECT_TRUE(until(pp, [&] {
                for (auto &d : pp.a->done) {
                    if (d.first == cookie) {
                        return true;
                    }
                }
                return false;
            }));
            for (auto &d : pp.a->done) {
                if (d.first == cookie) {
                    return d.second;
                }
            }
        }
        return st;
    };
    if (pp.a->t->ops().put != nullptr) {
        std::vector<std::uint8_t> src(5000);
        for (std::size_t i = 0; i < src.size(); ++i) {
            src[i] = static_cast<std::uint8_t>(i ^ 0x5a);
        }
        const iovec iov{src.data(), src.size()};
        EXPECT_EQ(
            wait(pp.a->t->ops().put(pp.a->t.get(), pp.ab, &iov, 1, src.size(), base + 100, k, 1),
                 1),
            status::ok);
        EXPECT_EQ(std::memcmp(mem.data() + 100, src.data(), src.size()), 0);
        EXPECT_EQ(mem[99], 0);
        EXPECT_EQ(mem[100 + src.size()], 0);
    }
    if (pp.a->t->ops().get != nullptr) {
        std::vector<std::uint8_t> dst(200, 0);
        const iovec iov{dst.data(), dst.size()};
        EXPECT_EQ(
            wait(pp.a->t->ops().get(pp.a->t.get(), pp.ab, &iov, 1, dst.size(), base + 100, k, 2),
                 2),
            status::ok);
        EXPECT_EQ(std::memcmp(dst.data(), mem.data() + 100, dst.size()), 0);
    }
    if (pp.a->t->ops().atomic != nullptr) {
        // Every operation the masks announce, on 4- and 8-byte values, against
        // what the CPU computes.
        std::uint64_t cookie = 100;
        for (unsigned width : {4u, 8u}) {
            for (unsigned op = 0; op < tl::atomic_op_count; ++op) {
                for (bool fetch : {false, true}) {
                    const std::uint32_t mask = width == 4 ? (fetch ? a.atomic32f : a.atomic32)
                                                          : (fetch ? a.atomic64f : a.atomic64);
                    if ((mask & (1u << op)) == 0) {
                        continue;
                    }
                    const std::uint64_t init = 0x1234567890abcdefULL;
                    const std::uint64_t operand = 0x0f0f0f0f00ff00ffULL;
                    std::memcpy(mem.data() + 64, &init, 8);
                    tl::atomic_args args{};
                    args.op = static_cast<tl::atomic_op>(op);
                    args.fetch = fetch;
                    args.width = static_cast<std::uint8_t>(width);
                    args.operand = operand;
                    args.compare = init;  // cswap succeeds
                    std::uint64_t result = 0;
                    args.result = fetch ? &result : nullptr;
                    args.raddr = base + 64;
                    args.key = k;
                    ++cookie;
                    EXPECT_EQ(
                        wait(pp.a->t->ops().atomic(pp.a->t.get(), pp.ab, args, cookie), cookie),
                        status::ok)
                        << "op " << op << " width " << width;
                    const std::uint64_t m = width == 4 ? 0xffffffffULL : ~0ULL;
                    const std::uint64_t x = init & m;
                    const std::uint64_t v = operand & m;
                    std::uint64_t want = x;
                    switch (args.op) {
                        case tl::atomic_op::add:
                            want = (x + v) & m;
                            break;
                        case tl::atomic_op::and_:
                            want = x & v;
                            break;
                        case tl::atomic_op::or_:
                            want = x | v;
                            break;
                        case tl::atomic_op::xor_:
                            want = x ^ v;
                            break;
                        case tl::atomic_op::swap:
                        case tl::atomic_op::cswap:
                            want = v;
                            break;
                    }
                    std::uint64_t now = 0;
                    std::memcpy(&now, mem.data() + 64, width);
                    EXPECT_EQ(now, want) << "op " << op << " width " << width;
                    if (fetch) {
                        EXPECT_EQ(result & m, x) << "old value, op " << op << " width " << width;
                    }
                }
            }
        }
    }
    st_.md->dereg(handle);
    if (own) {
        st_.md->free(alloc_handle);
    }
}

// A put with an immediate (verbs RDMA write with immediate): the target is told
// the value and the length once the bytes are in place, in order with the
// active messages around it, for every size up to the limit and for none; the
// limit is enforced.
TEST_P(conformance, put_imm_delivers_the_value_after_the_data_in_order)
{
    pair pp = connect_pair();
    ASSERT_NE(pp.b, nullptr);
    const tl::attributes &a = pp.a->t->attr();
    if (pp.a->t->ops().put_imm == nullptr) {
        EXPECT_EQ(a.max_put_imm, 0u);
        GTEST_SKIP() << GetParam()
                     << " has no put with immediate: proto/ sends CQ data and remote events "
                        "in an rma_event message after the put (tested in proto_conformance)";
    }
    ASSERT_GE(a.max_put_imm, 4096u);
    ASSERT_GT(st_.md->rkey_size(), 0u);
    std::vector<std::uint8_t> mem(3 * 65536, 0);
    std::uint64_t handle = 0;
    ASSERT_EQ(
        st_.md->reg(mem.data(), mem.size(), tl::access::local | tl::access::remote_write, handle),
        status::ok);
    std::vector<std::uint8_t> packed(st_.md->rkey_size());
    ASSERT_EQ(st_.md->pack_rkey(handle, packed.data()), status::ok);
    tl::rkey k{};
    ASSERT_EQ(pp.a->t->unpack_rkey(packed.data(), packed.size(), k), status::ok);
    const auto base = reinterpret_cast<std::uint64_t>(mem.data());
    std::vector<std::uint8_t> src(65536);
    const std::size_t sizes[] = {0, 1, 8, 4096, 65536};
    std::uint64_t cookie = 500;
    for (std::size_t round = 0; round < std::size(sizes); ++round) {
        const std::size_t len = sizes[round];
        for (std::size_t i = 0; i < len; ++i) {
            src[i] = static_cast<std::uint8_t>(i * 7 + round);
        }
        const iovec iov{src.data(), len};
        const std::uint64_t raddr = base + round * 32768;
        const std::uint32_t imm = 0x80000000u | static_cast<std::uint32_t>(round * 0x01010101u);
        ++cookie;
        const std::size_t before = pp.b->imms.size();
        const std::size_t msgs = pp.b->rx.size();
        status st =
            pp.a->t->ops().put_imm(pp.a->t.get(), pp.ab, &iov, 1, len, raddr, k, imm, cookie);
        ASSERT_TRUE(st == status::ok || st == status::in_progress) << weft::base::status_string(st);
        // An active message right behind it arrives after the immediate.
        const std::uint8_t tag = static_cast<std::uint8_t>(round);
        ASSERT_TRUE(until(pp, [&] {
            return pp.a->send_short(pp.ab, tl::make_am(9, 0), &tag, 1, nullptr, 0) != status::again;
        }));
        ASSERT_TRUE(until(pp, [&] { return pp.b->rx.size() > msgs; }));
        ASSERT_EQ(pp.b->imms.size(), before + 1) << "the immediate comes before the next message";
        const instance::immediate &got = pp.b->imms.back();
        EXPECT_EQ(got.imm, imm);
        EXPECT_EQ(got.len, len);
        EXPECT_EQ(got.src, pp.b->rx.back().src) << "the immediate names its sender";
        EXPECT_EQ(std::memcmp(mem.data() + round * 32768, src.data(), len), 0)
            << "the data is in place when the immediate arrives (" << len << " bytes)";
        if (st == status::in_progress) {
            ASSERT_TRUE(until(pp, [&] {
                return std::any_of(pp.a->done.begin(), pp.a->done.end(),
                                   [&](const auto &d) { return d.first == cookie; });
            }));
            for (const auto &d : pp.a->done) {
                if (d.first == cookie) {
                    EXPECT_EQ(d.second, status::ok);
                }
            }
        }
    }
    // Above the limit: refused, nothing sent.
    std::vector<std::uint8_t> big(a.max_put_imm + 1);
    const iovec biov{big.data(), big.size()};
    EXPECT_EQ(pp.a->t->ops().put_imm(pp.a->t.get(), pp.ab, &biov, 1, big.size(), base, k, 1, 999),
              status::invalid);
    st_.md->dereg(handle);
}

// ------------------------------------------------------------------ proto/ over the transport
//
// The channel with its rma and amo modules over two instances of the
// transport (one for self), as the core builds an endpoint: every one-sided
// operation on the transport's own path (rma_path::best, which is the active
// messages when the transport lacks it) and on the active-message fallback
// (rma_path::fallback), with results byte for byte and the target's checks.

/// The address vector of the test: index i is sides[i]'s address.
struct book final : proto::address_book {
    std::vector<tl::address> addrs;
    status lookup(std::uint64_t index, tl::address &out) const override
    {
        if (index >= addrs.size()) {
            return status::no_entry;
        }
        out = addrs[index];
        return status::ok;
    }
    std::uint32_t reverse(const tl::endpoint_id &id) const override
    {
        for (std::size_t i = 0; i < addrs.size(); ++i) {
            if (addrs[i].id() == id) {
                return static_cast<std::uint32_t>(i);
            }
        }
        return proto::unknown_source;
    }
    std::uint64_t insertions() const noexcept override { return addrs.size(); }
};

/// One endpoint's protocol stack over one transport instance.
struct side {
    std::unique_ptr<tl::iface> t;
    proto::region_table regions;
    std::unique_ptr<proto::stack> stk;
};

/// A completion of a one-sided operation.
struct op_end {
    bool done = false;
    int err = -1;
    static void fn(void *ctx, int err)
    {
        auto *e = static_cast<op_end *>(ctx);
        e->done = true;
        e->err = err;
    }
    proto::rma_completion completion() { return {&op_end::fn, this}; }
};

class proto_conformance : public conformance {
  protected:
    /// Open the sides (one for self) and enable their stacks. Index 0 is the
    /// initiator, the last index the target.
    void build()
    {
        const unsigned n = loopback() ? 1 : 2;
        for (unsigned i = 0; i < n; ++i) {
            auto s = std::make_unique<side>();
            const tl::open_params p{node_id(), static_cast<std::uint32_t>(getpid()), 300 + i};
            auto r = st_.comp->open(p, st_.res, *st_.md, st_.config);
            ASSERT_TRUE(r.ok()) << weft::base::status_string(r.error());
            s->t = std::move(r.value());
            proto::credit_config cr{};
            if (s->t->attr().shared_rx != 0) {
                cr.mode = proto::credit_mode::shared_pool;
                cr.pool_size = static_cast<std::uint32_t>(s->t->attr().shared_rx);
            }
            const proto::stack_params sp{
                .channel = {.tx_size = 4096,
                            .credit_cfg = cr,
                            .credit_eagain = false,
                            .max_msg_size = std::size_t{1} << 30},
                .tag = {.max_msg_size = std::size_t{1} << 30,
                        .inject_size = 64,
                        .match_hash_bits = 8,
                        .rndv_thresh = 16384,
                        .variable = false,
                        .var_thresh = 16384},
            };
            s->stk = std::make_unique<proto::stack>(sp, book_, s->regions);
            ASSERT_EQ(s->stk->ch.add_transport(s->t.get(), st_.comp), status::ok);
            tl::address_builder b({p.node_id, p.pid, p.ep_id});
            const proto::proto_params pp = s->stk->ch.params();
            ASSERT_EQ(b.add(tl::proto_blob_id, nullptr, 0, &pp, sizeof(pp)), status::ok);
            ASSERT_EQ(s->t->pack_address(b), status::ok);
            book_.addrs.push_back(b.get());
            s->t->set_local_address(book_.addrs.back());
            sides_.push_back(std::move(s));
        }
    }

    void TearDown() override
    {
        for (auto &s : sides_) {
            s->stk.reset();  // before its transport
        }
        sides_.clear();
    }

    side &initiator() { return *sides_.front(); }
    side &target() { return *sides_.back(); }
    [[nodiscard]] std::uint64_t target_index() const { return sides_.size() - 1; }

    void progress()
    {
        for (auto &s : sides_) {
            s->stk->ch.progress();
        }
    }

    bool wait(op_end &e, int ms = 30000)
    {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (!e.done && std::chrono::steady_clock::now() < end) {
            progress();
        }
        return e.done;
    }

    /// Register `mem` at the target as the core does (region table and memory
    /// domain), pack its key, and unpack it at the initiator.
    struct reg {
        std::uint64_t am_key = 0;
        std::uint64_t handle = 0;
        bool md_registered = false;
        proto::remote_key key;
    };
    void register_target(std::vector<std::uint8_t> &mem, unsigned access, reg &out)
    {
        ASSERT_EQ(target().regions.add(mem.data(), mem.size(), access, out.am_key), status::ok);
        proto::key_builder kb(reinterpret_cast<std::uint64_t>(mem.data()), mem.size(), access,
                              out.am_key);
        if (st_.md->rkey_size() != 0) {
            ASSERT_EQ(st_.md->reg(mem.data(), mem.size(), access | tl::access::local, out.handle),
                      status::ok);
            out.md_registered = true;
            std::vector<std::uint8_t> part(st_.md->rkey_size());
            ASSERT_EQ(st_.md->pack_rkey(out.handle, part.data()), status::ok);
            ASSERT_EQ(kb.add(st_.comp->wire_id, part.data(), part.size()), status::ok);
        }
        ASSERT_EQ(
            proto::unpack_key(initiator().stk->ch, target_index(), kb.data(), kb.size(), out.key),
            status::ok);
    }
    void deregister(reg &r)
    {
        target().regions.remove(r.am_key);
        if (r.md_registered) {
            st_.md->dereg(r.handle);
            r.md_registered = false;
        }
    }

    book book_;
    std::vector<std::unique_ptr<side>> sides_;
};

constexpr unsigned all_remote =
    tl::access::remote_read | tl::access::remote_write | tl::access::remote_atomic;

const char *path_name(proto::rma_path p)
{
    return p == proto::rma_path::best ? "best" : "fallback";
}

TEST_P(proto_conformance, put_and_get_on_both_paths)
{
    build();
    ASSERT_FALSE(HasFatalFailure());
    std::vector<std::uint8_t> mem(1 << 20, 0);
    reg r;
    register_target(mem, all_remote, r);
    ASSERT_FALSE(HasFatalFailure());
    const auto base = reinterpret_cast<std::uint64_t>(mem.data());
    const std::size_t max_bcopy = initiator().t->attr().max_bcopy;
    std::mt19937 rng(11);
    for (proto::rma_path path : {proto::rma_path::best, proto::rma_path::fallback}) {
        for (std::size_t len : {std::size_t{1}, std::size_t{100}, max_bcopy - 1, max_bcopy * 3 + 5,
                                std::size_t{300000}}) {
            const std::size_t off = rng() % (mem.size() - len);
            std::vector<std::uint8_t> src(len);
            for (auto &x : src) {
                x = static_cast<std::uint8_t>(rng() | 1);
            }
            std::fill(mem.begin(), mem.end(), 0);
            // The source in two pieces: iovecs are gathered.
            const std::size_t cut = len / 3;
            const iovec iov[2] = {{src.data(), cut}, {src.data() + cut, len - cut}};
            op_end pe;
            ASSERT_EQ(
                initiator().stk->rma.put(iov, 2, len, base + off, r.key, pe.completion(), path), 0);
            ASSERT_TRUE(wait(pe)) << path_name(path) << " put of " << len << " never completed";
            ASSERT_EQ(pe.err, 0) << path_name(path) << " put of " << len;
            // Complete means visible at the target.
            EXPECT_EQ(std::memcmp(mem.data() + off, src.data(), len), 0)
                << path_name(path) << " put of " << len;
            EXPECT_EQ(std::count(mem.begin(), mem.end(), 0), static_cast<long>(mem.size() - len))
                << path_name(path) << " put of " << len << " wrote outside its range";
            // Read it back, scattered.
            std::vector<std::uint8_t> back(len + 16, 0xee);
            const iovec biov[2] = {{back.data(), len - cut}, {back.data() + len - cut, cut}};
            op_end ge;
            ASSERT_EQ(
                initiator().stk->rma.get(biov, 2, len, base + off, r.key, ge.completion(), path),
                0);
            ASSERT_TRUE(wait(ge)) << path_name(path) << " get of " << len << " never completed";
            ASSERT_EQ(ge.err, 0);
            EXPECT_EQ(std::memcmp(back.data(), src.data(), len), 0)
                << path_name(path) << " get of " << len;
            EXPECT_EQ(back[len], 0xee) << "get wrote past its buffer";
        }
    }
    // Many at once on the fallback (pieces of several operations interleave).
    std::vector<op_end> ends(64);
    std::vector<std::uint8_t> src(4096);
    for (std::size_t i = 0; i < src.size(); ++i) {
        src[i] = static_cast<std::uint8_t>(i * 13 + 1);
    }
    for (std::size_t i = 0; i < ends.size(); ++i) {
        const iovec iov{src.data(), src.size()};
        int rc;
        while ((rc = initiator().stk->rma.put(&iov, 1, src.size(), base + i * src.size(), r.key,
                                              ends[i].completion(), proto::rma_path::fallback)) ==
               -WEFT_EAGAIN) {
            progress();
        }
        ASSERT_EQ(rc, 0);
    }
    for (auto &e : ends) {
        ASSERT_TRUE(wait(e));
        EXPECT_EQ(e.err, 0);
    }
    for (std::size_t i = 0; i < ends.size(); ++i) {
        ASSERT_EQ(std::memcmp(mem.data() + i * src.size(), src.data(), src.size()), 0) << i;
    }
    EXPECT_EQ(initiator().stk->rma.outstanding(), 0U);
    deregister(r);
}

TEST_P(proto_conformance, out_of_range_forbidden_and_closed_regions_are_refused)
{
    build();
    ASSERT_FALSE(HasFatalFailure());
    std::vector<std::uint8_t> mem(8192, 0x11);
    reg r;
    register_target(mem, tl::access::remote_read, r);  // no write, no atomics
    ASSERT_FALSE(HasFatalFailure());
    const auto base = reinterpret_cast<std::uint64_t>(mem.data());
    std::vector<std::uint8_t> src(256, 0x77);
    const iovec iov{src.data(), src.size()};
    auto untouched = [&] { return std::count(mem.begin(), mem.end(), 0x11) == 8192; };
    for (proto::rma_path path : {proto::rma_path::best, proto::rma_path::fallback}) {
        struct bad {
            bool get;
            std::uint64_t addr;
            std::size_t len;
            const char *what;
        };
        const bad cases[] = {
            {false, base, 16, "put without remote write"},
            {true, base + 8000, 256, "get past the end"},
            {true, base - 8, 16, "get before the start"},
            {true, base + 8192, 1, "get one past the end"},
            {true, ~std::uint64_t{0} - 4, 16, "get with a wrapping address"},
        };
        for (const bad &c : cases) {
            op_end e;
            std::vector<std::uint8_t> dst(c.len, 0xcc);
            const iovec div{dst.data(), dst.size()};
            const int rc =
                c.get
                    ? initiator().stk->rma.get(&div, 1, c.len, c.addr, r.key, e.completion(), path)
                    : initiator().stk->rma.put(&iov, 1, c.len, c.addr, r.key, e.completion(), path);
            if (rc == 0) {
                ASSERT_TRUE(wait(e)) << c.what;
                EXPECT_EQ(e.err, WEFT_EACCES) << path_name(path) << ": " << c.what;
            } else {
                EXPECT_EQ(rc, -WEFT_EACCES) << path_name(path) << ": " << c.what;
            }
            EXPECT_TRUE(untouched()) << c.what;
            EXPECT_EQ(std::count(dst.begin(), dst.end(), 0xcc), static_cast<long>(dst.size()))
                << c.what << ": the destination was written";
        }
        proto::amo_request ar{
            proto::amo_op::add, proto::amo_type::u64, 1, &src[0], nullptr, nullptr, base};
        op_end ae;
        const int rc = initiator().stk->amo.start(ar, r.key, ae.completion(), path);
        if (rc == 0) {
            ASSERT_TRUE(wait(ae));
            EXPECT_EQ(ae.err, WEFT_EACCES) << path_name(path) << ": atomic without the right";
        } else {
            EXPECT_EQ(rc, -WEFT_EACCES);
        }
        EXPECT_TRUE(untouched());
    }
    // A forged key: the initiator's view widened, the target's table is the
    // judge (active messages; a transport's own key is checked by its hardware).
    {
        proto::remote_key forged = r.key;
        forged.access = all_remote;
        forged.len = ~std::uint64_t{0} - forged.base;
        op_end e;
        ASSERT_EQ(initiator().stk->rma.put(&iov, 1, 16, base, forged, e.completion(),
                                           proto::rma_path::fallback),
                  0);
        ASSERT_TRUE(wait(e));
        EXPECT_EQ(e.err, WEFT_EACCES) << "the target accepted a write the region does not allow";
        forged.am_key ^= 0x5555;
        op_end g;
        std::vector<std::uint8_t> dst(16, 0xcc);
        const iovec div{dst.data(), dst.size()};
        ASSERT_EQ(initiator().stk->rma.get(&div, 1, 16, base, forged, g.completion(),
                                           proto::rma_path::fallback),
                  0);
        ASSERT_TRUE(wait(g));
        EXPECT_EQ(g.err, WEFT_EACCES) << "a get with an unknown region key";
        EXPECT_TRUE(untouched());
    }
    // A closed region: the key the initiator holds is stale.
    target().regions.remove(r.am_key);
    {
        std::vector<std::uint8_t> dst(16, 0xcc);
        const iovec div{dst.data(), dst.size()};
        op_end g;
        ASSERT_EQ(initiator().stk->rma.get(&div, 1, 16, base, r.key, g.completion(),
                                           proto::rma_path::fallback),
                  0);
        ASSERT_TRUE(wait(g));
        EXPECT_EQ(g.err, WEFT_EACCES) << "a get from a closed region";
        EXPECT_EQ(dst[0], 0xcc);
    }
    if (r.md_registered) {
        st_.md->dereg(r.handle);
    }
    // Both sides still work afterwards.
    std::vector<std::uint8_t> mem2(64, 0);
    reg r2;
    register_target(mem2, all_remote, r2);
    op_end e;
    ASSERT_EQ(initiator().stk->rma.put(&iov, 1, 64, reinterpret_cast<std::uint64_t>(mem2.data()),
                                       r2.key, e.completion(), proto::rma_path::fallback),
              0);
    ASSERT_TRUE(wait(e));
    EXPECT_EQ(e.err, 0);
    EXPECT_EQ(mem2[63], 0x77);
    deregister(r2);
}

/// The reference the atomics are checked against: plain arithmetic, one
/// element after the other (independent of proto::amo_apply, which the
/// active-message path runs at the target).
template <class T>
void reference_one(proto::amo_op op, std::size_t count, std::uint8_t *target,
                   const std::uint8_t *operand, const std::uint8_t *compare, std::uint8_t *old)
{
    for (std::size_t i = 0; i < count; ++i) {
        T x;
        T v;
        T c;
        std::memcpy(&x, target + i * sizeof(T), sizeof(T));
        std::memcpy(&v, operand + i * sizeof(T), sizeof(T));
        std::memcpy(&c, compare + i * sizeof(T), sizeof(T));
        std::memcpy(old + i * sizeof(T), &x, sizeof(T));
        T r = x;
        switch (op) {
            case proto::amo_op::add:
                r = static_cast<T>(x + v);
                break;
            case proto::amo_op::prod:
                r = static_cast<T>(x * v);
                break;
            case proto::amo_op::min:
                r = v < x ? v : x;
                break;
            case proto::amo_op::max:
                r = v > x ? v : x;
                break;
            case proto::amo_op::swap:
                r = v;
                break;
            case proto::amo_op::cswap:
                r = x == c ? v : x;
                break;
            case proto::amo_op::read:
                break;
            case proto::amo_op::land:
                r = static_cast<T>((x != 0) && (v != 0));
                break;
            case proto::amo_op::lor:
                r = static_cast<T>((x != 0) || (v != 0));
                break;
            case proto::amo_op::lxor:
                r = static_cast<T>((x != 0) != (v != 0));
                break;
            default:
                if constexpr (std::is_integral_v<T>) {
                    r = op == proto::amo_op::band  ? static_cast<T>(x & v)
                        : op == proto::amo_op::bor ? static_cast<T>(x | v)
                                                   : static_cast<T>(x ^ v);
                }
                break;
        }
        std::memcpy(target + i * sizeof(T), &r, sizeof(T));
    }
}

void reference_apply(proto::amo_op op, proto::amo_type t, std::size_t count, std::uint8_t *target,
                     const std::uint8_t *operand, const std::uint8_t *compare, std::uint8_t *old)
{
    switch (t) {
        case proto::amo_type::i8:
            return reference_one<std::int8_t>(op, count, target, operand, compare, old);
        case proto::amo_type::u8:
            return reference_one<std::uint8_t>(op, count, target, operand, compare, old);
        case proto::amo_type::i16:
            return reference_one<std::int16_t>(op, count, target, operand, compare, old);
        case proto::amo_type::u16:
            return reference_one<std::uint16_t>(op, count, target, operand, compare, old);
        case proto::amo_type::i32:
            return reference_one<std::int32_t>(op, count, target, operand, compare, old);
        case proto::amo_type::u32:
            return reference_one<std::uint32_t>(op, count, target, operand, compare, old);
        case proto::amo_type::i64:
            return reference_one<std::int64_t>(op, count, target, operand, compare, old);
        case proto::amo_type::u64:
            return reference_one<std::uint64_t>(op, count, target, operand, compare, old);
        case proto::amo_type::f32:
            return reference_one<float>(op, count, target, operand, compare, old);
        case proto::amo_type::f64:
            return reference_one<double>(op, count, target, operand, compare, old);
        case proto::amo_type::f80:
        case proto::amo_type::c32:
        case proto::amo_type::c64:
            break;  // not byte-comparable: test_transport_rma.cpp checks them by value
    }
    ADD_FAILURE() << "no byte reference for type " << unsigned(t);
}

TEST_P(proto_conformance, every_atomic_on_every_type_on_both_paths)
{
    build();
    ASSERT_FALSE(HasFatalFailure());
    std::vector<std::uint8_t> mem(4096, 0);
    reg r;
    register_target(mem, all_remote, r);
    ASSERT_FALSE(HasFatalFailure());
    const auto base = reinterpret_cast<std::uint64_t>(mem.data());
    std::mt19937_64 rng(5);
    unsigned checked = 0;
    for (proto::rma_path path : {proto::rma_path::best, proto::rma_path::fallback}) {
        for (unsigned o = 0; o < proto::amo_op_count; ++o) {
            // The ten scalar types (byte-compared); long double and the complex
            // types are checked by value in test_transport_rma.cpp.
            for (unsigned t = 0; t <= unsigned(proto::amo_type::f64); ++t) {
                const auto op = static_cast<proto::amo_op>(o);
                const auto ty = static_cast<proto::amo_type>(t);
                if (!proto::amo_valid(op, ty)) {
                    continue;
                }
                const std::size_t sz = proto::amo_size(ty);
                for (std::size_t count : {std::size_t{1}, std::size_t{3}}) {
                    for (bool fetch : {false, true}) {
                        if ((op == proto::amo_op::cswap || op == proto::amo_op::read) && !fetch) {
                            continue;  // fetching only
                        }
                        // Small values, so that floating sums are exact and
                        // products do not overflow into undefined behaviour.
                        std::uint8_t init[64];
                        std::uint8_t operand[64];
                        std::uint8_t compare[64];
                        for (std::size_t i = 0; i < count; ++i) {
                            auto fill = [&](std::uint8_t *dst, std::int64_t v) {
                                if (ty == proto::amo_type::f32) {
                                    const float f = static_cast<float>(v);
                                    std::memcpy(dst + i * sz, &f, 4);
                                } else if (ty == proto::amo_type::f64) {
                                    const double d = static_cast<double>(v);
                                    std::memcpy(dst + i * sz, &d, 8);
                                } else {
                                    std::memcpy(dst + i * sz, &v, sz);  // little endian
                                }
                            };
                            const auto a = static_cast<std::int64_t>(rng() % 50) - 10;
                            const auto b = static_cast<std::int64_t>(rng() % 50) - 10;
                            fill(init, a);
                            fill(operand, b);
                            // cswap: element 0 matches, the others (count 3) do not.
                            fill(compare, i == 0 ? a : a + 1);
                        }
                        const std::size_t off = 64 * (1 + rng() % 30);
                        std::memcpy(mem.data() + off, init, count * sz);
                        // What the CPU computes, on a copy.
                        std::uint8_t want[64];
                        std::uint8_t want_old[64];
                        std::memcpy(want, init, count * sz);
                        reference_apply(op, ty, count, want, operand, compare, want_old);
                        std::uint8_t result[64];
                        std::memset(result, 0xab, sizeof(result));
                        const proto::amo_request ar{
                            op, ty, count, operand, compare, fetch ? result : nullptr, base + off};
                        op_end e;
                        int rc;
                        while ((rc = initiator().stk->amo.start(ar, r.key, e.completion(), path)) ==
                               -WEFT_EAGAIN) {
                            progress();
                        }
                        ASSERT_EQ(rc, 0) << path_name(path) << " op " << o << " type " << t;
                        ASSERT_TRUE(wait(e));
                        ASSERT_EQ(e.err, 0) << path_name(path) << " op " << o << " type " << t;
                        EXPECT_EQ(std::memcmp(mem.data() + off, want, count * sz), 0)
                            << path_name(path) << " op " << o << " type " << t << " count "
                            << count;
                        if (fetch) {
                            EXPECT_EQ(std::memcmp(result, want_old, count * sz), 0)
                                << path_name(path) << " old values, op " << o << " type " << t;
                            EXPECT_EQ(result[count * sz], 0xab) << "result written past its end";
                        }
                        ++checked;
                    }
                }
            }
        }
    }
    EXPECT_GT(checked, 300U);
    // An invalid operation is refused before anything is sent.
    std::uint64_t v = 1;
    op_end e;
    const proto::amo_request bad{
        proto::amo_op::band, proto::amo_type::f64, 1, &v, nullptr, nullptr, base};
    EXPECT_EQ(initiator().stk->amo.start(bad, r.key, e.completion()), -WEFT_EINVAL);
    const proto::amo_request misaligned{
        proto::amo_op::add, proto::amo_type::u64, 1, &v, nullptr, nullptr, base + 4};
    const int rc = initiator().stk->amo.start(misaligned, r.key, e.completion());
    EXPECT_EQ(rc, -WEFT_EINVAL) << "a misaligned target address";
    EXPECT_EQ(initiator().stk->amo.outstanding(), 0U);
    deregister(r);
}

INSTANTIATE_TEST_SUITE_P(transports, proto_conformance, ::testing::ValuesIn(built_transports()),
                         [](const ::testing::TestParamInfo<std::string> &p) { return p.param; });

INSTANTIATE_TEST_SUITE_P(transports, conformance, ::testing::ValuesIn(built_transports()),
                         [](const ::testing::TestParamInfo<std::string> &p) { return p.param; });

}  // namespace
