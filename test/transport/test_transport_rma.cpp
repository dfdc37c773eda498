// One-sided operations over the public API (issue 11), on every transport:
// put and get of every size and iovecs, every atomic on every type against a
// reference, concurrent atomics from 4 ranks (no lost update), the checks
// (out of range, access rights, closed and re-registered regions: the target
// untouched), remote CQ data and remote counters, inject, flush and fence
// ordering, device-mode atomics, and triggered operations (chains of 1000, in
// threshold order; cancelled at close).
//
// Keys travel as tagged messages. With the self transport (loopback) one
// process plays every rank and targets its own memory.

#include <algorithm>
#include <array>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <sys/mman.h>
#include <vector>

#include "test/transport/harness.hpp"

namespace {

using weft::test::fill_pattern;
using weft::test::find_pattern_mismatch;
using weft::test::op_ctx;
using weft::test::rank_ctx;
using weft::test::seed_of;

class transport_rma : public transport_test {};

constexpr std::uint64_t all_remote =
    WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC;

/// Memory of one rank registered for remote access, and every rank's key to it.
struct region {
    std::uint8_t *mem = nullptr;
    std::size_t len = 0;
    weft_mr_t *mr = nullptr;
    std::vector<weft_rkey_t *> keys;  ///< keys[r]: rank r's region, for this endpoint
    std::vector<std::uint64_t> base;  ///< base[r]: its address at rank r
    bool owns = true;

    region() = default;
    region(const region &) = delete;
    region &operator=(const region &) = delete;
    ~region() { release(); }
    void release_keys()
    {
        for (weft_rkey_t *k : keys) {
            if (k != nullptr) {
                WEFT_TCHECK_OK(weft_rkey_release(k));
            }
        }
        keys.clear();
    }
    void release()
    {
        release_keys();
        if (mr != nullptr) {
            WEFT_TCHECK_OK(weft_mr_close(mr));
            mr = nullptr;
        }
        if (mem != nullptr && owns) {
            munmap(mem, len);
        }
        mem = nullptr;
    }
};

std::uint8_t *map_bytes(std::size_t len)
{
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    WEFT_TCHECK(p != MAP_FAILED);
    return static_cast<std::uint8_t *>(p);
}

/// Every rank packs its key and sends it (with its base address) to every other
/// rank; each unpacks every rank's key for its own endpoint.
void share(rank_ctx &c, region &rg, int ranks, std::uint64_t tag)
{
    struct msg {
        std::uint64_t base;
        std::uint64_t len;
        std::uint8_t key[WEFT_MR_KEY_MAX];
    };
    msg mine{reinterpret_cast<std::uint64_t>(rg.mem), 0, {}};
    std::size_t klen = sizeof(mine.key);
    WEFT_TCHECK_OK(weft_mr_pack_key(rg.mr, mine.key, &klen));
    mine.len = klen;
    std::vector<msg> theirs(static_cast<std::size_t>(ranks));
    if (c.loopback) {
        for (auto &t : theirs) {
            t = mine;
        }
    } else {
        for (int r = 0; r < ranks; ++r) {
            if (r != c.rank) {
                c.post("key recv", [&] {
                    return weft_trecv(c.ep, &theirs[std::size_t(r)], sizeof(msg), nullptr,
                                      c.peer(r), tag, 0, op_ctx(90000 + std::uint64_t(r)));
                });
            }
        }
        for (int r = 0; r < ranks; ++r) {
            if (r != c.rank) {
                c.post("key send", [&] {
                    return weft_tsend(c.ep, &mine, sizeof(msg), nullptr, c.peer(r), tag,
                                      op_ctx(95000 + std::uint64_t(r)));
                });
            }
        }
        for (int r = 0; r < ranks; ++r) {
            if (r != c.rank) {
                (void)c.wait_ok(op_ctx(90000 + std::uint64_t(r)));
                (void)c.wait_ok(op_ctx(95000 + std::uint64_t(r)));
            }
        }
        theirs[std::size_t(c.rank)] = mine;
    }
    rg.release_keys();
    rg.keys.assign(std::size_t(ranks), nullptr);
    rg.base.assign(std::size_t(ranks), 0);
    for (int r = 0; r < ranks; ++r) {
        const msg &m = theirs[std::size_t(r)];
        WEFT_TCHECK(m.len <= sizeof(m.key));
        WEFT_TCHECK_OK(weft_rkey_unpack(c.ep, c.peer(r), m.key, m.len, &rg.keys[std::size_t(r)]));
        rg.base[std::size_t(r)] = m.base;
    }
}

void make_region(rank_ctx &c, region &rg, std::size_t len, std::uint64_t access, int ranks,
                 std::uint64_t tag, std::uint64_t flags = 0)
{
    rg.len = len;
    rg.mem = map_bytes(len);
    std::memset(rg.mem, 0, len);
    WEFT_TCHECK_OK(weft_mr_reg(c.domain, rg.mem, len, access, flags, &rg.mr));
    share(c, rg, ranks, tag);
}

/// Retry while the endpoint has no room; the call must then succeed.
#define POST(what, call) c.post(what, [&]() -> ssize_t { return (call); })

// ------------------------------------------------------------------ put and get

TEST_P(transport_rma, put_and_get_every_size_and_iovecs)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            constexpr std::size_t cap = (4u << 20) + 8192;
            region rg;
            make_region(c, rg, cap, all_remote, 2, 1);
            const std::vector<std::size_t> sizes{
                0, 1, 7, 8, 64, 4095, 8193, 65536, (1u << 20) + 3, 4u << 20};
            std::vector<std::uint8_t> src(cap);
            std::vector<std::uint8_t> back(cap);
            std::uint64_t puts = 0;
            std::uint64_t gets = 0;
            if (c.plays(0)) {
                std::uint64_t n = 0;
                for (std::size_t sz : sizes) {
                    const std::uint64_t seed = seed_of(11, sz);
                    fill_pattern(src.data(), sz, seed);
                    const std::uint64_t at = rg.base[1] + 5;  // not aligned on purpose
                    POST("put",
                         weft_put(c.ep, src.data(), sz, nullptr, at, rg.keys[1], op_ctx(++n)));
                    const weft_cq_tagged_entry e = c.wait_ok(op_ctx(n));
                    WEFT_TCHECK_EQ(e.flags, WEFT_RMA | WEFT_WRITE);
                    ++puts;
                    std::memset(back.data(), 0x5a, sz + 16);
                    POST("get",
                         weft_get(c.ep, back.data(), sz, nullptr, at, rg.keys[1], op_ctx(++n)));
                    const weft_cq_tagged_entry g = c.wait_ok(op_ctx(n));
                    WEFT_TCHECK_EQ(g.flags, WEFT_RMA | WEFT_READ);
                    WEFT_TCHECK_EQ(g.len, sz);
                    ++gets;
                    WEFT_TCHECK_EQ(find_pattern_mismatch(back.data(), sz, seed), SIZE_MAX);
                    WEFT_TCHECK_EQ(back[sz], 0x5a);  // nothing past the end
                }
                // Gather and scatter lists of three pieces.
                fill_pattern(src.data(), 3000, seed_of(12));
                const iovec out[3] = {
                    {src.data(), 1000}, {src.data() + 1000, 1}, {src.data() + 1001, 1999}};
                POST("putv", weft_putv(c.ep, out, nullptr, 3, rg.base[1] + (4u << 20) + 4096,
                                       rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
                ++puts;
                std::vector<std::uint8_t> a(1500);
                std::vector<std::uint8_t> b(1500);
                const iovec in[2] = {{a.data(), 1500}, {b.data(), 1500}};
                POST("getv", weft_getv(c.ep, in, nullptr, 2, rg.base[1] + (4u << 20) + 4096,
                                       rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
                ++gets;
                WEFT_TCHECK(std::memcmp(a.data(), src.data(), 1500) == 0);
                WEFT_TCHECK(std::memcmp(b.data(), src.data() + 1500, 1500) == 0);
                WEFT_TCHECK_EQ(weft_cntr_read(c.write_cntr), puts);
                WEFT_TCHECK_EQ(weft_cntr_read(c.read_cntr), gets);
            }
            c.barrier();
            if (c.plays(1)) {
                // The last put of the size loop, as the target sees it.
                WEFT_TCHECK_EQ(find_pattern_mismatch(rg.mem + 5, 4u << 20, seed_of(11, 4u << 20)),
                               SIZE_MAX);
                WEFT_TCHECK_EQ(find_pattern_mismatch(rg.mem + (4u << 20) + 4096, 3000, seed_of(12)),
                               SIZE_MAX);
            }
            c.barrier();
        },
        opt));
}

// ------------------------------------------------------------------ atomics

template <class T>
T combine_ref(int op, T x, T v, T cmp)
{
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case WEFT_BAND:
                return static_cast<T>(x & v);
            case WEFT_BOR:
                return static_cast<T>(x | v);
            case WEFT_BXOR:
                return static_cast<T>(x ^ v);
            case WEFT_LAND:
                return static_cast<T>((x != 0) && (v != 0));
            case WEFT_LOR:
                return static_cast<T>((x != 0) || (v != 0));
            case WEFT_LXOR:
                return static_cast<T>((x != 0) != (v != 0));
            case WEFT_CSWAP:
                return x == cmp ? v : x;
            default:
                break;
        }
    }
    if constexpr (!std::is_same_v<T, std::complex<float>> &&
                  !std::is_same_v<T, std::complex<double>>) {
        if (op == WEFT_MIN) {
            return v < x ? v : x;
        }
        if (op == WEFT_MAX) {
            return v > x ? v : x;
        }
    }
    switch (op) {
        case WEFT_SUM:
            return static_cast<T>(x + v);
        case WEFT_PROD:
            return static_cast<T>(x * v);
        case WEFT_REPLACE:
            return v;
        default:
            return x;  // WEFT_NOOP
    }
}

template <class T>
T value_of(long long v)
{
    if constexpr (std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
        using R = typename T::value_type;
        return T(static_cast<R>(v), static_cast<R>(v % 3));
    } else {
        return static_cast<T>(v);
    }
}

/// Every valid (op, type) at count 1 and 3, fetching and not, from rank 0 on
/// rank 1's memory; the results read back and compared by value.
template <class T>
void atomics_of_type(rank_ctx &c, region &rg, weft_datatype dt, std::uint64_t &n,
                     std::mt19937_64 &rng)
{
    for (int op = 0; op < WEFT_ATOMIC_OP_COUNT; ++op) {
        if (!weft_atomic_valid(dt, static_cast<weft_atomic_op>(op))) {
            continue;
        }
        for (std::size_t count : {std::size_t{1}, std::size_t{3}}) {
            for (bool fetch : {false, true}) {
                if (op == WEFT_CSWAP && !fetch) {
                    continue;
                }
                T init[3];
                T operand[3];
                T compare[3];
                T want[3];
                T old[3];
                for (std::size_t i = 0; i < count; ++i) {
                    const long long a = static_cast<long long>(rng() % 50) - 10;
                    const long long b = static_cast<long long>(rng() % 50) - 10;
                    init[i] = value_of<T>(a);
                    operand[i] = value_of<T>(b);
                    compare[i] = i == 0 ? init[i] : value_of<T>(a + 1);
                    want[i] = combine_ref<T>(op, init[i], operand[i], compare[i]);
                }
                const std::uint64_t at = rg.base[1] + 64 * (1 + rng() % 60);
                POST("init put",
                     weft_put(c.ep, init, count * sizeof(T), nullptr, at, rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
                weft_msg_atomic m{};
                m.operand = operand;
                m.compare = op == WEFT_CSWAP ? compare : nullptr;
                m.result = fetch ? old : nullptr;
                m.count = count;
                m.datatype = dt;
                m.op = static_cast<weft_atomic_op>(op);
                m.rma_addr = at;
                m.rkey = rg.keys[1];
                m.context = op_ctx(++n);
                POST("atomic", weft_atomicmsg(c.ep, &m, 0));
                const weft_cq_tagged_entry e = c.wait_ok(op_ctx(n));
                WEFT_TCHECK_EQ(e.flags, WEFT_ATOMIC | (fetch ? WEFT_READ : WEFT_WRITE));
                T got[3];
                POST("get",
                     weft_get(c.ep, got, count * sizeof(T), nullptr, at, rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
                const std::string what = "op " + std::to_string(op) + " type " +
                                         std::to_string(int(dt)) + " count " +
                                         std::to_string(count) + (fetch ? " fetch" : "");
                for (std::size_t i = 0; i < count; ++i) {
                    WEFT_TCHECK_MSG(got[i] == want[i], what + " element " + std::to_string(i));
                    if (fetch) {
                        WEFT_TCHECK_MSG(old[i] == init[i],
                                        what + " old value " + std::to_string(i));
                    }
                }
            }
        }
    }
}

TEST_P(transport_rma, every_atomic_on_every_type)
{
    weft::test::run_options opt;
    opt.timeout_s = 240;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rg;
            make_region(c, rg, 4096, all_remote, 2, 2);
            if (c.plays(0)) {
                std::uint64_t n = 0;
                std::mt19937_64 rng(7);
                atomics_of_type<std::int8_t>(c, rg, WEFT_INT8, n, rng);
                atomics_of_type<std::uint8_t>(c, rg, WEFT_UINT8, n, rng);
                atomics_of_type<std::int16_t>(c, rg, WEFT_INT16, n, rng);
                atomics_of_type<std::uint16_t>(c, rg, WEFT_UINT16, n, rng);
                atomics_of_type<std::int32_t>(c, rg, WEFT_INT32, n, rng);
                atomics_of_type<std::uint32_t>(c, rg, WEFT_UINT32, n, rng);
                atomics_of_type<std::int64_t>(c, rg, WEFT_INT64, n, rng);
                atomics_of_type<std::uint64_t>(c, rg, WEFT_UINT64, n, rng);
                atomics_of_type<float>(c, rg, WEFT_FLOAT, n, rng);
                atomics_of_type<double>(c, rg, WEFT_DOUBLE, n, rng);
                atomics_of_type<long double>(c, rg, WEFT_LONG_DOUBLE, n, rng);
                atomics_of_type<std::complex<float>>(c, rg, WEFT_FLOAT_COMPLEX, n, rng);
                atomics_of_type<std::complex<double>>(c, rg, WEFT_DOUBLE_COMPLEX, n, rng);
                // Invalid combinations are refused before anything is sent.
                std::uint64_t v = 1;
                std::uint64_t r = 0;
                WEFT_TCHECK_EQ(weft_atomic(c.ep, &v, 1, rg.base[1], rg.keys[1], WEFT_DOUBLE,
                                           WEFT_BAND, nullptr),
                               -WEFT_EINVAL);
                WEFT_TCHECK_EQ(weft_atomic(c.ep, &v, 1, rg.base[1] + 4, rg.keys[1], WEFT_UINT64,
                                           WEFT_SUM, nullptr),
                               -WEFT_EINVAL);  // misaligned
                WEFT_TCHECK_EQ(weft_atomic(c.ep, &v, 0, rg.base[1], rg.keys[1], WEFT_UINT64,
                                           WEFT_SUM, nullptr),
                               -WEFT_EINVAL);
                WEFT_TCHECK_EQ(weft_atomic(c.ep, &v, weft_atomic_max_count(WEFT_UINT64) + 1,
                                           rg.base[1], rg.keys[1], WEFT_UINT64, WEFT_SUM, nullptr),
                               -WEFT_EINVAL);
                WEFT_TCHECK_EQ(weft_compare_atomic(c.ep, &v, &v, 1, &r, rg.base[1], rg.keys[1],
                                                   WEFT_FLOAT_COMPLEX, nullptr),
                               -WEFT_EINVAL);
                WEFT_TCHECK_EQ(weft_atomic(c.ep, &v, 1, rg.base[1], rg.keys[1], weft_datatype(99),
                                           WEFT_SUM, nullptr),
                               -WEFT_EINVAL);
            }
            c.barrier();
        },
        opt));
}

// 4 ranks (one process on self) update the same locations of rank 0 at once:
// fetch-add on 64 bits, add on 32 bits, and a compare-and-swap loop; nothing is
// lost and every fetched value is seen once.
TEST_P(transport_rma, concurrent_atomics_from_four_ranks_lose_no_update)
{
    weft::test::run_options opt;
    opt.timeout_s = 180;
    ASSERT_TRUE(run(
        4,
        [](rank_ctx &c) {
            constexpr int ranks = 4;
            constexpr std::uint64_t per_rank = 500;
            region rg;
            make_region(c, rg, 4096, all_remote, ranks, 3);
            c.barrier();
            std::vector<std::uint64_t> fetched;
            std::uint64_t n = 0;
            for (int me = 0; me < ranks; ++me) {
                if (!c.plays(me)) {
                    continue;
                }
                for (std::uint64_t i = 0; i < per_rank; ++i) {
                    const std::uint64_t one = 1;
                    std::uint64_t old = 0;
                    POST("fadd", weft_fetch_atomic(c.ep, &one, 1, &old, rg.base[0], rg.keys[0],
                                                   WEFT_UINT64, WEFT_SUM, op_ctx(++n)));
                    const std::uint32_t one32 = 1;
                    POST("add32", weft_atomic(c.ep, &one32, 1, rg.base[0] + 8, rg.keys[0],
                                              WEFT_UINT32, WEFT_SUM, op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n - 1));
                    (void)c.wait_ok(op_ctx(n));
                    fetched.push_back(old);
                    // Increment by compare-and-swap until it takes.
                    std::uint64_t seen = 0;
                    for (int tries = 0;; ++tries) {
                        WEFT_TCHECK(tries < 100000);
                        const std::uint64_t next = seen + 1;
                        std::uint64_t got = 0;
                        POST("cswap",
                             weft_compare_atomic(c.ep, &next, &seen, 1, &got, rg.base[0] + 16,
                                                 rg.keys[0], WEFT_UINT64, op_ctx(++n)));
                        (void)c.wait_ok(op_ctx(n));
                        if (got == seen) {
                            break;
                        }
                        seen = got;
                    }
                }
            }
            std::sort(fetched.begin(), fetched.end());
            WEFT_TCHECK(std::adjacent_find(fetched.begin(), fetched.end()) == fetched.end());
            c.barrier();
            if (c.plays(0)) {
                std::uint64_t a;
                std::uint32_t b;
                std::uint64_t d;
                std::memcpy(&a, rg.mem, 8);
                std::memcpy(&b, rg.mem + 8, 4);
                std::memcpy(&d, rg.mem + 16, 8);
                WEFT_TCHECK_EQ(a, ranks * per_rank);
                WEFT_TCHECK_EQ(b, std::uint32_t(ranks * per_rank));
                WEFT_TCHECK_EQ(d, ranks * per_rank);
            }
            c.barrier();
        },
        opt));
}

// ------------------------------------------------------------------ checks

TEST_P(transport_rma, bad_range_rights_and_closed_regions_leave_the_target_untouched)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rw;    // everything
            region ro;    // remote read only
            region wo;    // remote write only
            region gone;  // closed after its key went out
            make_region(c, rw, 4096, all_remote, 2, 4);
            make_region(c, ro, 4096, WEFT_ACCESS_REMOTE_READ, 2, 5);
            make_region(c, wo, 4096, WEFT_ACCESS_REMOTE_WRITE, 2, 6);
            make_region(c, gone, 4096, all_remote, 2, 7);
            for (region *r : {&rw, &ro, &wo, &gone}) {
                std::memset(r->mem, 0x11, r->len);
            }
            c.barrier();
            if (c.plays(1)) {
                WEFT_TCHECK_OK(weft_mr_close(gone.mr));  // its key is already at rank 0
                gone.mr = nullptr;
            }
            c.barrier();
            if (c.plays(0)) {
                std::uint8_t buf[256];
                std::memset(buf, 0xee, sizeof(buf));
                std::uint64_t n = 500;
                auto expect_eacces = [&](ssize_t rc, const char *what) {
                    WEFT_TCHECK_MSG(rc == 0,
                                    std::string(what) + ": posting returned " + std::to_string(rc));
                    const weft_cq_err_entry e = c.wait_err(op_ctx(n));
                    WEFT_TCHECK_MSG(e.err == WEFT_EACCES,
                                    std::string(what) + ": err " + std::to_string(e.err));
                };
                ++n;
                expect_eacces(
                    weft_put(c.ep, buf, 16, nullptr, rw.base[1] + 4090, rw.keys[1], op_ctx(n)),
                    "put past the end");
                ++n;
                expect_eacces(
                    weft_put(c.ep, buf, 16, nullptr, rw.base[1] - 8, rw.keys[1], op_ctx(n)),
                    "put before the start");
                ++n;
                expect_eacces(
                    weft_get(c.ep, buf, 8, nullptr, rw.base[1] + 4096, rw.keys[1], op_ctx(n)),
                    "get past the end");
                ++n;
                expect_eacces(weft_put(c.ep, buf, 16, nullptr, ro.base[1], ro.keys[1], op_ctx(n)),
                              "put to a read-only region");
                ++n;
                expect_eacces(weft_get(c.ep, buf, 16, nullptr, wo.base[1], wo.keys[1], op_ctx(n)),
                              "get from a write-only region");
                const std::uint64_t one = 1;
                ++n;
                expect_eacces(weft_atomic(c.ep, &one, 1, wo.base[1], wo.keys[1], WEFT_UINT64,
                                          WEFT_SUM, op_ctx(n)),
                              "atomic on a region without atomic access");
                // A missing key is refused at once.
                WEFT_TCHECK_EQ(weft_put(c.ep, buf, 8, nullptr, rw.base[1], nullptr, nullptr),
                               -WEFT_EINVAL);
                // A closed region is known only to its owner. On verbs the NIC
                // refuses the access and the queue pair breaks, failing the
                // connection (docs/verbs.md): only the last operation there.
                const bool nic_refusal_fails_the_connection = c.transport == "verbs";
                ++n;
                expect_eacces(
                    weft_put(c.ep, buf, 16, nullptr, gone.base[1], gone.keys[1], op_ctx(n)),
                    "put to a closed region");
                if (!nic_refusal_fails_the_connection) {
                    ++n;
                    expect_eacces(
                        weft_get(c.ep, buf, 16, nullptr, gone.base[1], gone.keys[1], op_ctx(n)),
                        "get from a closed region");
                    ++n;
                    expect_eacces(weft_atomic(c.ep, &one, 1, gone.base[1], gone.keys[1],
                                              WEFT_UINT64, WEFT_SUM, op_ctx(n)),
                                  "atomic on a closed region");
                }
            }
            c.barrier();
            if (c.plays(1)) {
                for (region *r : {&rw, &ro, &wo, &gone}) {
                    for (std::size_t i = 0; i < r->len; ++i) {
                        WEFT_TCHECK_MSG(r->mem[i] == 0x11,
                                        "target byte " + std::to_string(i) + " changed");
                    }
                }
            }
            c.barrier();
        },
        opt));
}

// Register, close, unmap, map again at (usually) the same address, register:
// the old key must fail and the new one reach the new memory -- no stale
// registration from a cache.
TEST_P(transport_rma, reregistered_memory_gets_a_fresh_key)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            constexpr std::size_t len = 1u << 20;
            region first;
            make_region(c, first, len, all_remote, 2, 8);
            region second;
            c.barrier();
            if (c.plays(1)) {
                WEFT_TCHECK_OK(weft_mr_close(first.mr));
                first.mr = nullptr;
                munmap(first.mem, len);
                first.mem = nullptr;
            }
            second.len = len;
            second.mem = map_bytes(len);
            std::memset(second.mem, 0x22, len);
            WEFT_TCHECK_OK(weft_mr_reg(c.domain, second.mem, len, all_remote, 0, &second.mr));
            share(c, second, 2, 9);
            if (c.plays(0)) {
                std::vector<std::uint8_t> src(len);
                fill_pattern(src.data(), len, seed_of(9));
                POST("new key put", weft_put(c.ep, src.data(), len, nullptr, second.base[1],
                                             second.keys[1], op_ctx(2)));
                (void)c.wait_ok(op_ctx(2));
                // Last: on verbs a refused access fails the connection.
                POST("old key put", weft_put(c.ep, src.data(), 64, nullptr, first.base[1],
                                             first.keys[1], op_ctx(1)));
                WEFT_TCHECK_EQ(c.wait_err(op_ctx(1)).err, WEFT_EACCES);
            }
            c.barrier();
            if (c.plays(1)) {
                WEFT_TCHECK_EQ(find_pattern_mismatch(second.mem, len, seed_of(9)), SIZE_MAX);
            }
            c.barrier();
        },
        opt));
}

// weft_mr_alloc: memory node peers map. Put, get and atomics work as on any
// region; weft_rkey_ptr gives a pointer on self (own memory) and shm (the
// owner's shared object mapped here), and its loads and stores are the
// region's; CPU atomics through it and weft atomics on the same word are
// atomic together. Over verbs and tcp (no mapping between the ranks, which
// may be on two nodes) there is no pointer.
TEST_P(transport_rma, allocated_memory_is_mapped_by_node_peers)
{
    const bool mapped = GetParam() != "verbs" && GetParam() != "tcp";
    ASSERT_TRUE(run(2, [mapped](rank_ctx &c) {
        constexpr std::size_t len = 1 << 20;
        void *mem = nullptr;
        region rg;
        rg.owns = false;  // weft_mr_close frees it
        WEFT_TCHECK_OK(weft_mr_alloc(c.domain, len, all_remote, 0, &mem, &rg.mr));
        WEFT_TCHECK(mem != nullptr && reinterpret_cast<std::uintptr_t>(mem) % 4096 == 0);
        rg.mem = static_cast<std::uint8_t *>(mem);
        rg.len = len;
        for (std::size_t i = 0; i < len; i += 4096) {
            WEFT_TCHECK_EQ(rg.mem[i], 0);  // zeroed
        }
        share(c, rg, 2, 20);
        WEFT_TCHECK(weft_rkey_ptr(nullptr, 0, 8) == nullptr);
        if (c.plays(0)) {
            std::vector<std::uint8_t> src(len);
            fill_pattern(src.data(), len, seed_of(20));
            POST("put",
                 weft_put(c.ep, src.data(), len, nullptr, rg.base[1], rg.keys[1], op_ctx(1)));
            (void)c.wait_ok(op_ctx(1));
            auto *p = static_cast<std::uint8_t *>(weft_rkey_ptr(rg.keys[1], rg.base[1], len));
            WEFT_TCHECK_EQ(p != nullptr, mapped);
            WEFT_TCHECK(weft_rkey_ptr(rg.keys[1], rg.base[1] + len - 4, 8) ==
                        nullptr);  // past the end
            if (p != nullptr) {
                WEFT_TCHECK_EQ(find_pattern_mismatch(p, len, seed_of(20)), SIZE_MAX);
                // Stores through the pointer are the region's.
                std::memset(p + 4096, 0x3c, 64);
                std::uint8_t back[64];
                POST("get",
                     weft_get(c.ep, back, 64, nullptr, rg.base[1] + 4096, rg.keys[1], op_ctx(2)));
                (void)c.wait_ok(op_ctx(2));
                for (std::uint8_t b : back) {
                    WEFT_TCHECK_EQ(b, 0x3c);
                }
                // CPU atomics through the pointer and weft atomics on one word.
                auto *word = reinterpret_cast<std::uint64_t *>(p + 8192);
                __atomic_store_n(word, 0, __ATOMIC_SEQ_CST);
                const std::uint64_t one = 1;
                for (int i = 0; i < 1000; ++i) {
                    __atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
                    POST("add", weft_atomic(c.ep, &one, 1, rg.base[1] + 8192, rg.keys[1],
                                            WEFT_UINT64, WEFT_SUM, op_ctx(3)));
                    (void)c.wait_ok(op_ctx(3));
                }
                WEFT_TCHECK_EQ(__atomic_load_n(word, __ATOMIC_SEQ_CST), std::uint64_t{2000});
            }
        }
        c.barrier();
    }));
}

// ------------------------------------------------------------------ events, inject, ordering

TEST_P(transport_rma, put_data_and_remote_counters)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rg;
            make_region(c, rg, 1 << 20, all_remote, 2, 10, WEFT_MR_RMA_EVENT);
            constexpr int k = 8;  // puts with data, each to its own 64 KiB
            constexpr int m = 7;  // plain puts
            constexpr int a = 5;  // atomics
            constexpr int g = 3;  // gets
            std::vector<std::uint8_t> src(65536);
            if (c.plays(0)) {
                std::uint64_t n = 0;
                for (int i = 0; i < k; ++i) {
                    fill_pattern(src.data(), 65536, seed_of(10, std::uint64_t(i)));
                    POST("putdata",
                         weft_putdata(c.ep, src.data(), 65536, nullptr, 0xd000 + std::uint64_t(i),
                                      rg.base[1] + std::uint64_t(i) * 65536, rg.keys[1],
                                      op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n));
                }
                for (int i = 0; i < m; ++i) {
                    POST("put", weft_put(c.ep, src.data(), 8, nullptr, rg.base[1] + 900000,
                                         rg.keys[1], op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n));
                }
                const std::uint64_t one = 1;
                for (int i = 0; i < a; ++i) {
                    POST("atomic", weft_atomic(c.ep, &one, 1, rg.base[1] + 1000000, rg.keys[1],
                                               WEFT_UINT64, WEFT_SUM, op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n));
                }
                std::uint8_t b[8];
                for (int i = 0; i < g; ++i) {
                    POST("get", weft_get(c.ep, b, 8, nullptr, rg.base[1], rg.keys[1], op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n));
                }
            }
            if (c.plays(1)) {
                // Each put's data arrives as a receive completion (no context),
                // in order, and only once its bytes are in place.
                int seen = 0;
                for (; seen < k; ++seen) {
                    const weft_cq_tagged_entry e = c.wait_ok(nullptr);
                    WEFT_TCHECK_EQ(e.flags, WEFT_RMA | WEFT_REMOTE_WRITE | WEFT_REMOTE_CQ_DATA);
                    WEFT_TCHECK_EQ(e.len, std::size_t{65536});
                    WEFT_TCHECK_EQ(e.data, 0xd000 + std::uint64_t(seen));
                    WEFT_TCHECK_EQ(find_pattern_mismatch(rg.mem + std::size_t(seen) * 65536, 65536,
                                                         seed_of(10, std::uint64_t(seen))),
                                   SIZE_MAX);
                }
                WEFT_TCHECK_EQ(seen, k);
                WEFT_TCHECK_OK(weft_cntr_wait(c.rwrite_cntr, k + m + a, 30000));
                WEFT_TCHECK_OK(weft_cntr_wait(c.rread_cntr, g, 30000));
                WEFT_TCHECK_EQ(weft_cntr_read(c.rwrite_cntr), std::uint64_t(k + m + a));
                WEFT_TCHECK_EQ(weft_cntr_read(c.rread_cntr), std::uint64_t(g));
            }
            c.barrier();
        },
        opt));
}

TEST_P(transport_rma, inject_put_buffer_reusable_and_flush_makes_it_visible)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rg;
            make_region(c, rg, 1 << 20, all_remote, 2, 11);
            constexpr int count = 200;
            if (c.plays(0)) {
                std::uint64_t v[64];
                for (int i = 0; i < count; ++i) {
                    for (auto &x : v) {
                        x = std::uint64_t(i);
                    }
                    POST("inject",
                         weft_inject_put(c.ep, v, sizeof(v), rg.base[1] + std::uint64_t(i) * 512,
                                         rg.keys[1]));
                    std::memset(v, 0xff, sizeof(v));  // reusable at once
                }
                // Big puts, then flush: all of it is at the target on return.
                std::vector<std::uint8_t> big(256 << 10);
                fill_pattern(big.data(), big.size(), seed_of(13));
                const iovec biov{big.data(), big.size()};
                for (int i = 0; i < 3; ++i) {
                    const weft_msg_rma m{
                        &biov,      nullptr, 1, rg.base[1] + 200000 + std::uint64_t(i) * 8,
                        rg.keys[1], nullptr, 0};
                    POST("put", weft_putmsg(c.ep, &m, 0));
                }
                WEFT_TCHECK_OK(weft_ep_flush(c.ep, 30000));
                WEFT_TCHECK_EQ(weft_cntr_read(c.write_cntr), std::uint64_t(count + 3));
                // No CQ entries for injects; the three puts have (NULL context).
                for (int i = 0; i < 3; ++i) {
                    (void)c.wait_ok(nullptr);
                }
            }
            c.barrier();
            if (c.plays(1)) {
                for (int i = 0; i < count; ++i) {
                    std::uint64_t x;
                    std::memcpy(&x, rg.mem + i * 512 + 63 * 8, 8);
                    WEFT_TCHECK_EQ(x, std::uint64_t(i));
                }
                WEFT_TCHECK_EQ(
                    find_pattern_mismatch(rg.mem + 200000 + 16, (256 << 10) - 16, seed_of(13)),
                    SIZE_MAX);
            }
            c.barrier();
        },
        opt));
}

// Large puts, then a fenced put of a flag: once the target sees the flag, every
// earlier put is complete there.
TEST_P(transport_rma, fence_orders_after_earlier_puts)
{
    ASSERT_TRUE(run(2, [](rank_ctx &c) {
        constexpr std::size_t block = 128 << 10;
        constexpr int blocks = 16;
        region rg;
        make_region(c, rg, block * blocks + 4096, all_remote, 2, 12);
        std::vector<std::uint8_t> src(block);
        std::uint64_t n = 0;
        if (c.plays(0)) {
            for (int i = 0; i < blocks; ++i) {
                fill_pattern(src.data(), block, seed_of(14, std::uint64_t(i)));
                // src is rewritten for the next block: wait for each (buffer reuse)
                POST("put",
                     weft_put(c.ep, src.data(), block, nullptr,
                              rg.base[1] + std::uint64_t(i) * block, rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
            }
            static const std::uint64_t flag = 1;
            const iovec iov{const_cast<std::uint64_t *>(&flag), 8};
            const weft_msg_rma m{&iov,       nullptr,     1, rg.base[1] + block * blocks,
                                 rg.keys[1], op_ctx(++n), 0};
            POST("fenced put", weft_putmsg(c.ep, &m, WEFT_FENCE | WEFT_DELIVERY_COMPLETE));
        }
        if (c.plays(1)) {
            std::uint64_t f = 0;
            for (int spins = 0; f == 0 && spins < 50000000; ++spins) {
                (void)weft_ep_progress(c.ep);
                __atomic_load(reinterpret_cast<std::uint64_t *>(rg.mem + block * blocks), &f,
                              __ATOMIC_ACQUIRE);
            }
            WEFT_TCHECK_EQ(f, std::uint64_t{1});
            for (int i = 0; i < blocks; ++i) {
                WEFT_TCHECK_EQ(find_pattern_mismatch(rg.mem + std::size_t(i) * block, block,
                                                     seed_of(14, std::uint64_t(i))),
                               SIZE_MAX);
            }
        }
        if (c.plays(0)) {
            (void)c.wait_ok(op_ctx(n));
        }
        c.barrier();
    }));
}

// Atomics of one initiator to one target run in posting order, whichever path
// each takes (a non-fetching replace may go as an active message where a
// fetch runs natively on mapped memory): a fetch posted right after a replace
// sees it (MPI's default accumulate ordering relies on this; osc weft).
TEST_P(transport_rma, atomics_of_one_initiator_run_in_posting_order)
{
    ASSERT_TRUE(run(2, [](rank_ctx &c) {
        constexpr int k_ops = 200;
        for (int alloc = 0; alloc < 2; ++alloc) {
            region rg;
            if (alloc != 0) {
                void *mem = nullptr;
                rg.owns = false;  // weft_mr_close frees it
                WEFT_TCHECK_OK(weft_mr_alloc(c.domain, 4096, all_remote, 0, &mem, &rg.mr));
                rg.mem = static_cast<std::uint8_t *>(mem);
                rg.len = 4096;
                share(c, rg, 2, 30);
            } else {
                make_region(c, rg, 4096, all_remote, 2, 31);
            }
            if (c.plays(0)) {
                std::vector<std::uint64_t> vals(k_ops);
                std::vector<std::uint64_t> seen(k_ops, ~0ULL);
                std::vector<std::uint64_t> added(k_ops, ~0ULL);
                std::uint64_t n = 0;
                const std::uint64_t one = 1;
                for (int k = 0; k < k_ops; ++k) {
                    vals[std::size_t(k)] = 1000 + std::uint64_t(k) * 3;
                    POST("replace",
                         weft_atomic(c.ep, &vals[std::size_t(k)], 1, rg.base[1], rg.keys[1],
                                     WEFT_UINT64, WEFT_REPLACE, op_ctx(++n)));
                    POST("fetch",
                         weft_fetch_atomic(c.ep, &one, 1, &seen[std::size_t(k)], rg.base[1],
                                           rg.keys[1], WEFT_UINT64, WEFT_NOOP, op_ctx(++n)));
                    POST("fetch-add",
                         weft_fetch_atomic(c.ep, &one, 1, &added[std::size_t(k)], rg.base[1],
                                           rg.keys[1], WEFT_UINT64, WEFT_SUM, op_ctx(++n)));
                }
                for (std::uint64_t i = 1; i <= n; ++i) {
                    (void)c.wait_ok(op_ctx(i));
                }
                for (int k = 0; k < k_ops; ++k) {
                    WEFT_TCHECK_EQ(seen[std::size_t(k)], vals[std::size_t(k)]);
                    WEFT_TCHECK_EQ(added[std::size_t(k)], vals[std::size_t(k)]);
                }
            }
            c.barrier();
            if (c.plays(1)) {
                std::uint64_t last = 0;
                std::memcpy(&last, rg.mem, 8);
                WEFT_TCHECK_EQ(last, 1000 + std::uint64_t(k_ops - 1) * 3 + 1);
            }
            c.barrier();
        }
    }));
}

// Device mode: the NIC's atomics only. verbs offers 64-bit fetch-add; the
// others have no NIC, so their atomics on such a region are refused.
TEST_P(transport_rma, device_atomics_run_on_the_nic_or_are_refused)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    const bool nic = GetParam() == "verbs";
    ASSERT_TRUE(run(
        2,
        [nic](rank_ctx &c) {
            region rg;
            make_region(c, rg, 4096, all_remote, 2, 15, WEFT_MR_DEVICE_ATOMICS);
            if (c.plays(0)) {
                const std::uint64_t five = 5;
                std::uint64_t old = 99;
                const ssize_t rc = c.post_rc([&] {
                    return weft_fetch_atomic(c.ep, &five, 1, &old, rg.base[1], rg.keys[1],
                                             WEFT_UINT64, WEFT_SUM, op_ctx(1));
                });
                if (nic) {
                    WEFT_TCHECK_EQ(rc, ssize_t{0});
                    (void)c.wait_ok(op_ctx(1));
                    WEFT_TCHECK_EQ(old, std::uint64_t{0});
                    const std::uint32_t x = 1;
                    WEFT_TCHECK_EQ(weft_atomic(c.ep, &x, 1, rg.base[1] + 8, rg.keys[1], WEFT_UINT32,
                                               WEFT_BAND, nullptr),
                                   -WEFT_ENOSYS);
                } else {
                    WEFT_TCHECK_EQ(rc, ssize_t{-WEFT_ENOSYS});
                }
            }
            c.barrier();
        },
        opt));
}

// A target that never calls weft (it only waits in the harness's barrier, whose
// CQ reads drive nothing under auto progress): its progress thread serves the
// initiator's atomics and gets, which need the target's CPU.
TEST_P(transport_rma, atomics_complete_while_the_target_never_calls_weft)
{
    weft::test::run_options opt;
    opt.progress = WEFT_PROGRESS_AUTO;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rg;
            make_region(c, rg, 4096, all_remote, 2, 17);
            if (c.plays(0)) {
                std::uint64_t n = 0;
                const std::uint64_t one = 1;
                for (int i = 0; i < 100; ++i) {
                    std::uint64_t old = 0;
                    POST("fadd", weft_fetch_atomic(c.ep, &one, 1, &old, rg.base[1], rg.keys[1],
                                                   WEFT_UINT64, WEFT_SUM, op_ctx(++n)));
                    (void)c.wait_ok(op_ctx(n));
                    WEFT_TCHECK_EQ(old, std::uint64_t(i));
                }
                std::uint64_t v = 0;
                POST("get", weft_get(c.ep, &v, 8, nullptr, rg.base[1], rg.keys[1], op_ctx(++n)));
                (void)c.wait_ok(op_ctx(n));
                WEFT_TCHECK_EQ(v, std::uint64_t{100});
            }
            c.barrier();
        },
        opt));
}

// ------------------------------------------------------------------ triggered operations

// A chain of 1000 fetching atomics, each triggered by the read counter reaching
// its index: they run one after the other from progress alone, in threshold
// order (the fetched values count up). Then counter operations and a triggered
// tagged send.
TEST_P(transport_rma, triggered_chains_of_1000_run_from_progress_in_order)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            region rg;
            make_region(c, rg, 1 << 16, all_remote, 2, 16);
            constexpr int depth = 1000;
            if (c.plays(0)) {
                std::vector<std::uint64_t> got(depth, ~0ull);
                const std::uint64_t one = 1;
                // Posted in reverse: the counter orders them, not the posting.
                for (int i = depth - 1; i >= 1; --i) {
                    weft_trigger t{c.read_cntr, std::uint64_t(i),
                                   op_ctx(100000 + std::uint64_t(i))};
                    weft_msg_atomic m{};
                    m.operand = &one;
                    m.result = &got[std::size_t(i)];
                    m.count = 1;
                    m.datatype = WEFT_UINT64;
                    m.op = WEFT_SUM;
                    m.rma_addr = rg.base[1];
                    m.rkey = rg.keys[1];
                    m.context = &t;
                    WEFT_TCHECK_OK(weft_atomicmsg(c.ep, &m, WEFT_TRIGGER));
                }
                POST("first", weft_fetch_atomic(c.ep, &one, 1, &got[0], rg.base[1], rg.keys[1],
                                                WEFT_UINT64, WEFT_SUM, op_ctx(100000)));
                WEFT_TCHECK_OK(weft_cntr_wait(c.read_cntr, depth, 60000));
                for (int i = 0; i < depth; ++i) {
                    (void)c.wait_ok(op_ctx(100000 + std::uint64_t(i)));
                    WEFT_TCHECK_EQ(got[std::size_t(i)], std::uint64_t(i));
                }
                // A put chain on the write counter: put i fires at write count i.
                std::vector<std::uint32_t> vals(depth);
                for (int i = 0; i < depth; ++i) {
                    vals[std::size_t(i)] = std::uint32_t(i) * 3 + 1;
                }
                for (int i = 1; i < depth; ++i) {
                    weft_trigger t{c.write_cntr, std::uint64_t(i), nullptr};
                    const iovec iov{&vals[std::size_t(i)], 4};
                    const weft_msg_rma m{
                        &iov,       nullptr, 1, rg.base[1] + 64 + std::uint64_t(i) * 4,
                        rg.keys[1], &t,      0};
                    WEFT_TCHECK_OK(weft_putmsg(c.ep, &m, WEFT_TRIGGER | WEFT_INJECT));
                }
                POST("first put", weft_inject_put(c.ep, &vals[0], 4, rg.base[1] + 64, rg.keys[1]));
                WEFT_TCHECK_OK(weft_cntr_wait(c.write_cntr, depth, 60000));
                WEFT_TCHECK_OK(weft_ep_flush(c.ep, 30000));
                // Counter operations chain counters without any endpoint.
                weft_cntr_t *a = nullptr;
                weft_cntr_t *b = nullptr;
                WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &a));
                WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &b));
                const weft_trigger ta{a, 5, nullptr};
                WEFT_TCHECK_OK(weft_cntr_add_triggered(b, 10, &ta));
                const weft_trigger ta2{a, 6, nullptr};
                WEFT_TCHECK_OK(weft_cntr_set_triggered(b, 100, &ta2));
                WEFT_TCHECK_EQ(weft_cntr_close(b), -WEFT_EBUSY);  // the target of armed operations
                WEFT_TCHECK_OK(weft_cntr_add(a, 4));
                WEFT_TCHECK_EQ(weft_cntr_read(b), std::uint64_t{0});
                WEFT_TCHECK_OK(weft_cntr_add(a, 1));
                WEFT_TCHECK_EQ(weft_cntr_read(b), std::uint64_t{10});
                WEFT_TCHECK_OK(weft_cntr_add(a, 1));
                WEFT_TCHECK_EQ(weft_cntr_read(b), std::uint64_t{100});
                // A tagged send triggered by b.
                static const std::uint64_t payload = 0xfeed;
                const weft_trigger tb{b, 101, op_ctx(7777)};
                const iovec siov{const_cast<std::uint64_t *>(&payload), 8};
                const weft_msg_tagged tm{
                    &siov, nullptr, 1, c.peer(1), 0x77, 0, const_cast<weft_trigger *>(&tb), 0};
                WEFT_TCHECK_OK(weft_tsendmsg(c.ep, &tm, WEFT_TRIGGER));
                WEFT_TCHECK_OK(weft_cntr_add(b, 1));
                (void)c.wait_ok(op_ctx(7777));
                WEFT_TCHECK_OK(weft_cntr_close(a));
                WEFT_TCHECK_OK(weft_cntr_close(b));
            }
            if (c.plays(1)) {
                std::uint64_t v = 0;
                c.post("recv", [&] {
                    return weft_trecv(c.ep, &v, 8, nullptr, WEFT_ADDR_UNSPEC, 0x77, 0,
                                      op_ctx(7778));
                });
                (void)c.wait_ok(op_ctx(7778));
                WEFT_TCHECK_EQ(v, std::uint64_t{0xfeed});
            }
            c.barrier();
            if (c.plays(1)) {
                std::uint64_t sum;
                std::memcpy(&sum, rg.mem, 8);
                WEFT_TCHECK_EQ(sum, std::uint64_t(depth));
                for (int i = 0; i < depth; ++i) {
                    std::uint32_t x;
                    std::memcpy(&x, rg.mem + 64 + i * 4, 4);
                    WEFT_TCHECK_EQ(x, std::uint32_t(i) * 3 + 1);
                }
            }
            c.barrier();
        },
        opt));
}

// A binomial-tree barrier posted whole, 50 iterations up front, as triggered
// puts and counter operations: arrivals go up the tree, the release comes down.
// The remote-write counter counts the flag puts that reach a rank (its
// children's arrivals and its parent's release, `per` a round); a local counter
// L gets one from the application entering and one (a triggered counter add)
// when every child has arrived; the put to the parent fires at L = 2 (b + 1),
// the releases to the children when the parent's release came (the root: at
// L). Nothing but progress runs the schedule. Barrier semantics are checked
// with an arrival count at rank 0 that every rank bumps before entering and
// reads after leaving.
TEST_P(transport_rma, triggered_tree_barrier_runs_from_progress)
{
    weft::test::run_options opt;
    opt.rma_counters = true;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        4,
        [](rank_ctx &c) {
            const int n = c.nranks;
            const int me = c.rank;
            const int lowbit = me == 0 ? 1 << 30 : me & -me;
            std::vector<int> children;
            for (int k = 1; k < lowbit && me + k < n; k <<= 1) {
                children.push_back(me + k);
            }
            const int parent = me == 0 ? -1 : me - lowbit;
            const auto nc = std::uint64_t(children.size());
            const std::uint64_t per = nc + (parent >= 0 ? 1 : 0);
            region flags;
            make_region(c, flags, 4096, all_remote, n, 18, WEFT_MR_RMA_EVENT);
            region arrivals;
            make_region(c, arrivals, 4096, all_remote, n, 19);
            weft_cntr_t *local = nullptr;
            WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &local));
            constexpr int iterations = 50;
            static const std::uint64_t one = 1;
            const iovec iov{const_cast<std::uint64_t *>(&one), 8};
            auto put_on = [&](int to, const weft_trigger &t) {
                const weft_msg_rma m{&iov,
                                     nullptr,
                                     1,
                                     flags.base[std::size_t(to)],
                                     flags.keys[std::size_t(to)],
                                     const_cast<weft_trigger *>(&t),
                                     0};
                WEFT_TCHECK_OK(weft_putmsg(c.ep, &m, WEFT_TRIGGER | WEFT_INJECT));
            };
            for (std::uint64_t b = 0; b < iterations; ++b) {
                const weft_trigger all_arrived{c.rwrite_cntr, per * b + nc, nullptr};
                WEFT_TCHECK_OK(weft_cntr_add_triggered(local, 1, &all_arrived));
                const weft_trigger ready{local, 2 * (b + 1), nullptr};
                if (parent >= 0) {
                    put_on(parent, ready);
                }
                const weft_trigger released{c.rwrite_cntr, per * (b + 1), nullptr};
                for (int child : children) {
                    put_on(child, parent >= 0 ? released : ready);
                }
            }
            c.barrier();  // every schedule is armed before anyone enters
            std::uint64_t n_ops = 0;
            for (std::uint64_t b = 0; b < iterations; ++b) {
                POST("arrive", weft_atomic(c.ep, &one, 1, arrivals.base[0], arrivals.keys[0],
                                           WEFT_UINT64, WEFT_SUM, op_ctx(++n_ops)));
                (void)c.wait_ok(op_ctx(n_ops));
                WEFT_TCHECK_OK(weft_cntr_add(local, 1));  // enter
                WEFT_TCHECK_OK(weft_cntr_wait(c.rwrite_cntr, per * (b + 1), 30000));
                if (parent < 0) {
                    // The root leaves once every child arrived and it entered.
                    for (int spins = 0; weft_cntr_read(local) < 2 * (b + 1); ++spins) {
                        WEFT_TCHECK(spins < 100000000);
                    }
                }
                std::uint64_t seen = 0;
                POST("read",
                     weft_fetch_atomic(c.ep, &one, 1, &seen, arrivals.base[0], arrivals.keys[0],
                                       WEFT_UINT64, WEFT_NOOP, op_ctx(++n_ops)));
                (void)c.wait_ok(op_ctx(n_ops));
                WEFT_TCHECK_MSG(seen >= (b + 1) * std::uint64_t(n),
                                "iteration " + std::to_string(b) + ": " + std::to_string(seen) +
                                    " arrivals after the barrier");
            }
            WEFT_TCHECK_OK(weft_ep_flush(c.ep, 30000));
            c.barrier();
            WEFT_TCHECK_OK(weft_cntr_close(local));
        },
        opt));
}

// Closing an endpoint cancels its armed triggered operations with error
// completions, and frees their counters.
TEST_P(transport_rma, closing_the_endpoint_cancels_pending_triggers)
{
    weft::test::run_options opt;
    ASSERT_TRUE(run(
        1,
        [](rank_ctx &c) {
            weft_ep_t *ep = nullptr;
            weft_av_t *av = nullptr;
            weft_cntr_t *watch = nullptr;
            WEFT_TCHECK_OK(weft_av_open(c.domain, nullptr, &av));
            WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &watch));
            WEFT_TCHECK_OK(weft_ep_open(c.domain, c.info, &ep, nullptr));
            WEFT_TCHECK_OK(weft_ep_bind_cq(ep, c.cq, WEFT_TRANSMIT | WEFT_RECV));
            WEFT_TCHECK_OK(weft_ep_bind_av(ep, av));
            WEFT_TCHECK_OK(weft_ep_enable(ep));
            std::uint8_t addr[512];
            std::size_t alen = sizeof(addr);
            WEFT_TCHECK_OK(weft_ep_getname(ep, addr, &alen));
            weft_addr_t me = 0;
            WEFT_TCHECK_EQ(weft_av_insert(av, addr, 1, &me, 0), 1);
            std::uint64_t mem[4] = {};
            weft_mr_t *mr = nullptr;
            WEFT_TCHECK_OK(weft_mr_reg(c.domain, mem, sizeof(mem), all_remote, 0, &mr));
            std::uint8_t key[WEFT_MR_KEY_MAX];
            std::size_t klen = sizeof(key);
            WEFT_TCHECK_OK(weft_mr_pack_key(mr, key, &klen));
            weft_rkey_t *rk = nullptr;
            WEFT_TCHECK_OK(weft_rkey_unpack(ep, me, key, klen, &rk));
            const std::uint64_t one = 1;
            for (int i = 0; i < 5; ++i) {
                weft_trigger t{watch, 1000, op_ctx(4000 + std::uint64_t(i))};
                weft_msg_atomic m{};
                m.operand = &one;
                m.count = 1;
                m.datatype = WEFT_UINT64;
                m.op = WEFT_SUM;
                m.rma_addr = reinterpret_cast<std::uint64_t>(mem);
                m.rkey = rk;
                m.context = &t;
                WEFT_TCHECK_OK(weft_atomicmsg(ep, &m, WEFT_TRIGGER));
            }
            WEFT_TCHECK_EQ(weft_cntr_close(watch), -WEFT_EBUSY);
            WEFT_TCHECK_OK(weft_rkey_release(rk));
            WEFT_TCHECK_OK(weft_ep_close(ep));
            for (int i = 0; i < 5; ++i) {
                WEFT_TCHECK_EQ(c.wait_err(op_ctx(4000 + std::uint64_t(i))).err, WEFT_ECANCELED);
            }
            WEFT_TCHECK_OK(weft_cntr_close(watch));
            WEFT_TCHECK_OK(weft_av_close(av));
            WEFT_TCHECK_OK(weft_mr_close(mr));
            WEFT_TCHECK_EQ(mem[0], std::uint64_t{0});
        },
        opt));
}

// WEFT_COUNT: a ping-pong chain of 20 laps, small and rendezvous-sized, run
// from progress alone: every receive is posted up front and counted, every
// send but the first is triggered by the receive count and counted itself, no
// CQ entry is written. Logical rank 1 forwards what it got; rank 0 forwards
// what came back, so the payload must survive every lap.
TEST_P(transport_rma, counted_operations_chain_from_progress_alone)
{
    weft::test::run_options opt;
    opt.timeout_s = 120;
    ASSERT_TRUE(run(
        2,
        [](rank_ctx &c) {
            constexpr int laps = 20;
            for (const std::size_t len : {std::size_t(8), std::size_t(256) << 10}) {
                struct side {
                    weft_cntr_t *recvd = nullptr;
                    weft_cntr_t *sent = nullptr;
                    std::vector<std::vector<std::uint8_t>> buf;
                    std::vector<weft_count> rc;
                    std::vector<weft_count> sc;
                };
                side s[2];
                auto tag_to = [](int r) { return std::uint64_t(500 + r); };
                std::vector<std::uint8_t> payload(len);
                weft::test::fill_pattern(payload.data(), len, len);
                for (int r = 0; r < 2; ++r) {
                    if (!c.plays(r)) {
                        continue;
                    }
                    side &me = s[r];
                    WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &me.recvd));
                    WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &me.sent));
                    me.buf.assign(laps, std::vector<std::uint8_t>(len, 0));
                    me.rc.resize(laps);
                    me.sc.resize(laps);
                    for (int j = 0; j < laps; ++j) {
                        me.rc[std::size_t(j)] = {me.recvd, op_ctx(6000 + std::uint64_t(j))};
                        me.sc[std::size_t(j)] = {me.sent, op_ctx(7000 + std::uint64_t(j))};
                        const iovec iov{me.buf[std::size_t(j)].data(), len};
                        const weft_msg_tagged m{
                            &iov, nullptr, 1, c.peer(1 - r), tag_to(r), 0, &me.rc[std::size_t(j)],
                            0};
                        POST("counted recv", weft_trecvmsg(c.ep, &m, WEFT_COUNT));
                    }
                }
                c.barrier();  // every receive is posted before any send
                for (int r = 0; r < 2; ++r) {
                    if (!c.plays(r)) {
                        continue;
                    }
                    side &me = s[r];
                    // Rank 1 sends lap j once it received lap j; rank 0 sends lap
                    // j >= 1 once lap j - 1 came back.
                    for (int j = r == 0 ? 1 : 0; j < laps; ++j) {
                        const int from = r == 0 ? j - 1 : j;
                        const iovec iov{me.buf[std::size_t(from)].data(), len};
                        const weft_trigger t{me.recvd, std::uint64_t(from + 1),
                                             &me.sc[std::size_t(j)]};
                        const weft_msg_tagged m{&iov,
                                                nullptr,
                                                1,
                                                c.peer(1 - r),
                                                tag_to(1 - r),
                                                0,
                                                const_cast<weft_trigger *>(&t),
                                                0};
                        POST("triggered counted send",
                             weft_tsendmsg(c.ep, &m, WEFT_TRIGGER | WEFT_COUNT));
                    }
                }
                if (c.plays(0)) {
                    const iovec iov{payload.data(), len};
                    const weft_msg_tagged m{&iov,      nullptr, 1,           c.peer(1),
                                            tag_to(1), 0,       &s[0].sc[0], 0};
                    POST("first counted send", weft_tsendmsg(c.ep, &m, WEFT_COUNT));
                }
                for (int r = 0; r < 2; ++r) {
                    if (!c.plays(r)) {
                        continue;
                    }
                    // The counters are bound to no endpoint: progress drives the chain.
                    for (long spins = 0;
                         weft_cntr_read(s[r].recvd) < laps || weft_cntr_read(s[r].sent) < laps;
                         ++spins) {
                        WEFT_TCHECK_MSG(spins < 200000000, "the chain stalled");
                        (void)weft_ep_progress(c.ep);
                    }
                    WEFT_TCHECK_EQ(weft_cntr_readerr(s[r].recvd), std::uint64_t{0});
                    for (int j = 0; j < laps; ++j) {
                        WEFT_TCHECK_MSG(
                            std::memcmp(s[r].buf[std::size_t(j)].data(), payload.data(), len) == 0,
                            "rank " + std::to_string(r) + " lap " + std::to_string(j) + " of " +
                                std::to_string(len) + " bytes");
                    }
                }
                c.poll();
                WEFT_TCHECK_EQ(c.pending().size(), std::size_t{0});  // counted: no CQ entries
                c.barrier();
                for (auto &x : s) {
                    if (x.recvd != nullptr) {
                        WEFT_TCHECK_OK(weft_cntr_close(x.recvd));
                        WEFT_TCHECK_OK(weft_cntr_close(x.sent));
                    }
                }
            }
        },
        opt));
}

// WEFT_COUNT misuse is refused: no context, a closed counter, with inject, with
// peek; a canceled counted receive counts an error and reports its struct.
TEST_P(transport_rma, counted_operations_refuse_bad_contexts)
{
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    ASSERT_TRUE(run(
        1,
        [](rank_ctx &c) {
            weft_cntr_t *k = nullptr;
            WEFT_TCHECK_OK(weft_cntr_open(c.domain, nullptr, &k));
            std::uint64_t v = 0;
            const iovec iov{&v, sizeof(v)};
            weft_msg_tagged m{&iov, nullptr, 1, c.peer(0), 9, 0, nullptr, 0};
            WEFT_TCHECK_EQ(weft_tsendmsg(c.ep, &m, WEFT_COUNT), -WEFT_EINVAL);
            WEFT_TCHECK_EQ(weft_trecvmsg(c.ep, &m, WEFT_COUNT), -WEFT_EINVAL);
            weft_count bad{nullptr, nullptr};
            m.context = &bad;
            WEFT_TCHECK_EQ(weft_trecvmsg(c.ep, &m, WEFT_COUNT), -WEFT_EINVAL);
            weft_count good{k, op_ctx(1)};
            m.context = &good;
            WEFT_TCHECK_EQ(weft_tsendmsg(c.ep, &m, WEFT_COUNT | WEFT_INJECT), -WEFT_EINVAL);
            WEFT_TCHECK_EQ(weft_trecvmsg(c.ep, &m, WEFT_COUNT | WEFT_PEEK), -WEFT_EINVAL);
            // Canceled: the counter's error count, and an error entry naming the struct.
            WEFT_TCHECK_OK(weft_trecvmsg(c.ep, &m, WEFT_COUNT));
            WEFT_TCHECK_OK(weft_cancel(c.ep, &good));
            WEFT_TCHECK_EQ(c.wait_err(&good).err, WEFT_ECANCELED);
            WEFT_TCHECK_EQ(weft_cntr_readerr(k), std::uint64_t{1});
            WEFT_TCHECK_EQ(weft_cntr_read(k), std::uint64_t{0});
            WEFT_TCHECK_OK(weft_cntr_close(k));
        },
        opt));
}

}  // namespace

WEFT_TRANSPORT_SUITE(transport_rma);
