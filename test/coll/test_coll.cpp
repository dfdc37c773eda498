// The collectives library (collectives/, weft/coll.h) against references
// computed locally: every operation, algorithm, datatype and op, at 1..8 ranks,
// counts from 0 up (16 MiB in CollLarge), in-place forms, persistent and
// nonblocking requests, and bad input. Each rank forked by the transport
// harness opens a collectives context on its domain; groups are made with an
// out-of-band allgather through memory shared by the forked ranks.

#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "transport/harness.hpp"
#include "weft/coll.h"

using weft::test::rank_ctx;

namespace {

// ------------------------------------------------------------------ set-up

/// Memory shared by the forked ranks for the out-of-band allgather.
struct oob_area {
    static constexpr std::size_t slot = 4096;
    std::byte *mem = nullptr;
    oob_area()
    {
        void *p =
            mmap(nullptr, slot * 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        mem = p == MAP_FAILED ? nullptr : static_cast<std::byte *>(p);
    }
    ~oob_area()
    {
        if (mem != nullptr) {
            munmap(mem, slot * 16);
        }
    }
};

struct oob_arg {
    rank_ctx *c;
    std::byte *mem;
};

int oob_allgather(const void *send, void *recv, std::size_t len, void *arg)
{
    auto *o = static_cast<oob_arg *>(arg);
    if (len > oob_area::slot) {
        return -WEFT_EINVAL;
    }
    std::memcpy(o->mem + std::size_t(o->c->rank) * oob_area::slot, send, len);
    o->c->barrier();
    for (int r = 0; r < o->c->nranks; ++r) {
        std::memcpy(static_cast<std::byte *>(recv) + std::size_t(r) * len,
                    o->mem + std::size_t(r) * oob_area::slot, len);
    }
    o->c->barrier();
    return 0;
}

/// A context and a group of every rank of the run.
struct coll_env {
    weft_coll_context_t *ctx = nullptr;
    weft_coll_group_t *g = nullptr;
    rank_ctx &c;
    coll_env(rank_ctx &rc, std::byte *oob) : c(rc)
    {
        WEFT_TCHECK_EQ(weft_coll_context_open(c.domain, c.info, &ctx), 0);
        c.also_progress = [this] { weft_coll_progress(ctx); };
        oob_arg arg{&c, oob};
        const weft_coll_oob o{oob_allgather, &arg};
        WEFT_TCHECK_EQ(
            weft_coll_group_create(ctx, std::uint32_t(c.nranks), std::uint32_t(c.rank), &o, &g), 0);
        WEFT_TCHECK_EQ(weft_coll_group_size(g), std::uint32_t(c.nranks));
    }
    ~coll_env()
    {
        c.barrier();
        WEFT_TCHECK_EQ(weft_coll_group_destroy(g), 0);
        c.also_progress = nullptr;
        WEFT_TCHECK_EQ(weft_coll_context_close(ctx), 0);
    }
};

// ------------------------------------------------------------------ typed references

template <class V>
struct value_index {
    V value;
    int index;
};
template <class V>
struct value_pair {
    V value;
    V index;
};

template <class T>
struct is_loc : std::false_type {
};
template <class V>
struct is_loc<value_index<V>> : std::true_type {
};
template <class V>
struct is_loc<value_pair<V>> : std::true_type {
};
template <class T>
struct is_complex : std::false_type {
};
template <class V>
struct is_complex<std::complex<V>> : std::true_type {
};

/// Rank r's element i (salt: which test). Floating values are 0.5, 1, 2 or -1,
/// so sums and products are exact in any order.
template <class T>
T gen(int r, std::size_t i, int salt)
{
    const auto k = std::size_t(r) * 37 + i * 11 + std::size_t(salt) * 5;
    static constexpr double exact[] = {0.5, 1, 2, -1};
    if constexpr (is_loc<T>::value) {
        using V = decltype(T{}.value);
        T t{};
        t.value = V(exact[(std::size_t(r) + i) % 3]);  // ties between ranks on purpose
        t.index = decltype(t.index)((std::size_t(r) * 3 + i) % 5);
        return t;
    } else if constexpr (is_complex<T>::value) {
        using V = typename T::value_type;
        return T(V(exact[k % 4]), V(exact[(k / 4) % 4]));
    } else if constexpr (std::is_floating_point_v<T>) {
        return T(exact[k % 4]);
    } else {
        return T(k * 2654435761u >> 7);
    }
}

template <class T>
T ref_op(weft_coll_op op, T a, T b)
{
    if constexpr (is_loc<T>::value) {
        const bool lt = b.value < a.value;
        const bool eq = !(a.value < b.value) && !(b.value < a.value);
        if (op == WEFT_COLL_MINLOC) {
            return lt || (eq && b.index < a.index) ? b : a;
        }
        const bool gt = a.value < b.value;
        return gt || (eq && b.index < a.index) ? b : a;
    } else if constexpr (is_complex<T>::value) {
        return op == WEFT_COLL_SUM ? a + b : a * b;
    } else if constexpr (std::is_floating_point_v<T>) {
        switch (op) {
            case WEFT_COLL_SUM:
                return a + b;
            case WEFT_COLL_PROD:
                return a * b;
            case WEFT_COLL_MIN:
                return std::min(a, b);
            default:
                return std::max(a, b);
        }
    } else {
        using U = std::make_unsigned_t<T>;
        const auto ua = static_cast<unsigned long long>(U(a));
        const auto ub = static_cast<unsigned long long>(U(b));
        switch (op) {
            case WEFT_COLL_SUM:
                return T(U(ua + ub));
            case WEFT_COLL_PROD:
                return T(U(ua * ub));
            case WEFT_COLL_MIN:
                return std::min(a, b);
            case WEFT_COLL_MAX:
                return std::max(a, b);
            case WEFT_COLL_BAND:
                return T(a & b);
            case WEFT_COLL_BOR:
                return T(a | b);
            case WEFT_COLL_BXOR:
                return T(a ^ b);
            case WEFT_COLL_LAND:
                return T(a && b);
            case WEFT_COLL_LOR:
                return T(a || b);
            default:
                return T(!a != !b);
        }
    }
}

template <class T>
bool same(const T &a, const T &b)
{
    if constexpr (is_loc<T>::value) {
        return a.value == b.value && a.index == b.index;
    } else {
        return a == b;
    }
}

/// Which ops a reference type takes.
template <class T>
std::vector<weft_coll_op> ops_of()
{
    if constexpr (is_loc<T>::value) {
        return {WEFT_COLL_MINLOC, WEFT_COLL_MAXLOC};
    } else if constexpr (is_complex<T>::value) {
        return {WEFT_COLL_SUM, WEFT_COLL_PROD};
    } else if constexpr (std::is_floating_point_v<T>) {
        return {WEFT_COLL_SUM, WEFT_COLL_PROD, WEFT_COLL_MIN, WEFT_COLL_MAX};
    } else {
        return {WEFT_COLL_SUM, WEFT_COLL_PROD, WEFT_COLL_MIN,  WEFT_COLL_MAX, WEFT_COLL_BAND,
                WEFT_COLL_BOR, WEFT_COLL_BXOR, WEFT_COLL_LAND, WEFT_COLL_LOR, WEFT_COLL_LXOR};
    }
}

std::string what(const weft_coll_args &a, int n, const char *dt)
{
    return std::string(weft_coll_type_name(a.type)) + " " + dt + " op " + std::to_string(a.op) +
           " count " + std::to_string(a.count) + " root " + std::to_string(a.root) + " alg " +
           weft_coll_algorithm_name(weft_coll_algorithm(a.algorithm)) + " on " + std::to_string(n) +
           " ranks";
}

void run_ok(coll_env &e, const weft_coll_args &a, const std::string &w)
{
    const int rc = weft_coll(e.g, &a);
    WEFT_TCHECK_MSG(rc == 0, w + ": " + weft_strerror(rc));
}

/// Init, start, check that the run took the triggered form, wait, free.
void run_triggered(coll_env &e, const weft_coll_args &a)
{
    weft_coll_request_t *r = nullptr;
    WEFT_TCHECK_EQ(weft_coll_init(e.g, &a, &r), 0);
    WEFT_TCHECK_EQ(weft_coll_start(r), 0);
    WEFT_TCHECK_EQ(weft_coll_request_triggered(r), 1);
    WEFT_TCHECK_EQ(weft_coll_wait(r, 60000), 0);
    WEFT_TCHECK_EQ(weft_coll_request_free(r), 0);
}

/// Every reduction (reduce at each root, allreduce with each algorithm,
/// reduce-scatter and -block, scan, exscan), in place and not, for one type and op.
template <class T>
void check_reductions(coll_env &e, weft_coll_datatype dt, const char *dtname, weft_coll_op op,
                      std::size_t count, const std::vector<weft_coll_algorithm> &allreduce_algs)
{
    const int n = e.c.nranks;
    const int me = e.c.rank;
    static int salt = 0;
    ++salt;
    std::vector<T> in(count);
    for (std::size_t i = 0; i < count; ++i) {
        in[i] = gen<T>(me, i, salt);
    }
    auto fold = [&](int from, int to, std::size_t i) {  // ranks [from, to) in order
        T acc = gen<T>(from, i, salt);
        for (int r = from + 1; r < to; ++r) {
            acc = ref_op(op, acc, gen<T>(r, i, salt));
        }
        return acc;
    };
    std::vector<T> full(count);
    for (std::size_t i = 0; i < count; ++i) {
        full[i] = fold(0, n, i);
    }
    auto expect = [&](const std::vector<T> &got, const std::vector<T> &want, std::size_t off,
                      std::size_t len, const weft_coll_args &a) {
        for (std::size_t i = 0; i < len; ++i) {
            WEFT_TCHECK_MSG(same(got[i], want[off + i]),
                            what(a, n, dtname) + ": element " + std::to_string(i) +
                                " differs on rank " + std::to_string(me));
        }
    };
    std::vector<T> out(count);
    weft_coll_args a{};
    a.datatype = dt;
    a.op = op;
    a.count = count;
    // allreduce, each algorithm, out of place and in place
    for (weft_coll_algorithm alg : allreduce_algs) {
        for (int in_place = 0; in_place < 2; ++in_place) {
            a.type = WEFT_COLL_ALLREDUCE;
            a.algorithm = alg;
            out = in_place ? in : std::vector<T>(count);
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : in.data();
            a.recvbuf = out.data();
            run_ok(e, a, what(a, n, dtname));
            expect(out, full, 0, count, a);
        }
    }
    a.algorithm = 0;
    // reduce at every root
    for (int root = 0; root < n; ++root) {
        a.type = WEFT_COLL_REDUCE;
        a.root = std::uint32_t(root);
        out = me == root ? in : std::vector<T>(count);
        a.sendbuf = me == root && root % 2 == 1 ? WEFT_COLL_IN_PLACE : in.data();
        a.recvbuf = out.data();
        run_ok(e, a, what(a, n, dtname));
        if (me == root) {
            expect(out, full, 0, count, a);
        }
    }
    a.root = 0;
    // scan and exscan
    for (weft_coll_type t : {WEFT_COLL_SCAN, WEFT_COLL_EXSCAN}) {
        a.type = t;
        std::vector<T> sentinel(count, gen<T>(99, 0, 0));
        out = sentinel;
        a.sendbuf = in.data();
        a.recvbuf = out.data();
        run_ok(e, a, what(a, n, dtname));
        const int upto = t == WEFT_COLL_SCAN ? me + 1 : me;
        if (upto == 0) {
            expect(out, sentinel, 0, count, a);  // exscan leaves rank 0's buffer alone
        } else {
            std::vector<T> want(count);
            for (std::size_t i = 0; i < count; ++i) {
                want[i] = fold(0, upto, i);
            }
            expect(out, want, 0, count, a);
        }
    }
    // reduce-scatter: blocks of count + (i % 3) - 1 elements (some empty);
    // the input spans them all.
    for (weft_coll_algorithm alg : {WEFT_COLL_ALG_RING, WEFT_COLL_ALG_REDUCE_SCATTERV}) {
        std::vector<std::size_t> rc(static_cast<std::size_t>(n));
        std::size_t total = 0;
        std::size_t before = 0;
        for (int i = 0; i < n; ++i) {
            rc[std::size_t(i)] = count / 2 + std::size_t(i % 3 == 0 && count > 0 ? 1 : 0);
            before += i < me ? rc[std::size_t(i)] : 0;
            total += rc[std::size_t(i)];
        }
        std::vector<T> vin(total);
        std::vector<T> vfull(total);
        for (std::size_t i = 0; i < total; ++i) {
            vin[i] = gen<T>(me, i, salt);
            vfull[i] = fold(0, n, i);
        }
        a.type = WEFT_COLL_REDUCE_SCATTER;
        a.algorithm = alg;
        a.recvcounts = rc.data();
        out.assign(rc[std::size_t(me)], T{});
        a.sendbuf = vin.data();
        a.recvbuf = out.data();
        run_ok(e, a, what(a, n, dtname));
        expect(out, vfull, before, out.size(), a);
        // the block form, in place
        a.type = WEFT_COLL_REDUCE_SCATTER_BLOCK;
        a.recvcounts = nullptr;
        a.count = count / 2;
        std::vector<T> io(a.count * std::size_t(n));
        for (std::size_t i = 0; i < io.size(); ++i) {
            io[i] = gen<T>(me, i, salt);
        }
        a.sendbuf = WEFT_COLL_IN_PLACE;
        a.recvbuf = io.data();
        run_ok(e, a, what(a, n, dtname));
        std::vector<T> bfull(a.count);
        for (std::size_t i = 0; i < a.count; ++i) {
            bfull[i] = fold(0, n, std::size_t(me) * a.count + i);
        }
        expect(io, bfull, 0, a.count, a);
        a.count = count;
    }
}

template <class T>
void check_type(coll_env &e, weft_coll_datatype dt, const char *name, std::size_t count)
{
    WEFT_TCHECK_EQ(weft_coll_datatype_size(dt), sizeof(T));
    for (weft_coll_op op : ops_of<T>()) {
        WEFT_TCHECK_MSG(weft_coll_op_valid(dt, op),
                        std::string(name) + " op " + std::to_string(op));
        check_reductions<T>(e, dt, name, op, count, {WEFT_COLL_ALG_AUTO});
    }
}

#define CHECK_TYPE(T, DT, count) check_type<T>(e, DT, #DT, count)

void check_all_types(coll_env &e, std::size_t count)
{
    CHECK_TYPE(std::int8_t, WEFT_COLL_INT8, count);
    CHECK_TYPE(std::uint8_t, WEFT_COLL_UINT8, count);
    CHECK_TYPE(std::int16_t, WEFT_COLL_INT16, count);
    CHECK_TYPE(std::uint16_t, WEFT_COLL_UINT16, count);
    CHECK_TYPE(std::int32_t, WEFT_COLL_INT32, count);
    CHECK_TYPE(std::uint32_t, WEFT_COLL_UINT32, count);
    CHECK_TYPE(std::int64_t, WEFT_COLL_INT64, count);
    CHECK_TYPE(std::uint64_t, WEFT_COLL_UINT64, count);
    CHECK_TYPE(float, WEFT_COLL_FLOAT, count);
    CHECK_TYPE(double, WEFT_COLL_DOUBLE, count);
    CHECK_TYPE(long double, WEFT_COLL_LONG_DOUBLE, count);
    CHECK_TYPE(std::complex<float>, WEFT_COLL_FLOAT_COMPLEX, count);
    CHECK_TYPE(std::complex<double>, WEFT_COLL_DOUBLE_COMPLEX, count);
    CHECK_TYPE(value_index<float>, WEFT_COLL_FLOAT_INT, count);
    CHECK_TYPE(value_index<double>, WEFT_COLL_DOUBLE_INT, count);
    CHECK_TYPE(value_index<long>, WEFT_COLL_LONG_INT, count);
    CHECK_TYPE(value_index<int>, WEFT_COLL_2INT, count);
    CHECK_TYPE(value_index<short>, WEFT_COLL_SHORT_INT, count);
    CHECK_TYPE(value_index<long double>, WEFT_COLL_LONG_DOUBLE_INT, count);
    CHECK_TYPE(value_pair<float>, WEFT_COLL_2FLOAT, count);
    CHECK_TYPE(value_pair<double>, WEFT_COLL_2DOUBLE, count);
    // Ops a type does not take are refused.
    WEFT_TCHECK(!weft_coll_op_valid(WEFT_COLL_DOUBLE, WEFT_COLL_BAND));
    WEFT_TCHECK(!weft_coll_op_valid(WEFT_COLL_DOUBLE_COMPLEX, WEFT_COLL_MAX));
    WEFT_TCHECK(!weft_coll_op_valid(WEFT_COLL_INT32, WEFT_COLL_MINLOC));
}

// ------------------------------------------------------------------ data movement

/// Byte i of what rank `from` sends to rank `to` (salted).
std::byte pat(int from, int to, std::size_t i, int salt)
{
    return std::byte((from * 131 + to * 17 + int(i % 251) * 7 + salt * 3) & 0xff);
}

/// Broadcast, gather(v), scatter(v), allgather(v), alltoall(v) and barrier,
/// with every algorithm that applies, for blocks of `blk` bytes.
void check_movement(coll_env &e, std::size_t blk, int salt)
{
    const int n = e.c.nranks;
    const int me = e.c.rank;
    const auto un = std::size_t(n);
    weft_coll_args a{};
    a.datatype = WEFT_COLL_BYTE;
    auto tag = [&](const char *alg) {
        return std::string(weft_coll_type_name(a.type)) + " " + alg + " blk " +
               std::to_string(blk) + " root " + std::to_string(a.root) + " on " +
               std::to_string(n) + " rank " + std::to_string(me);
    };
    auto check_bytes = [&](const std::vector<std::byte> &got, std::size_t off, int from, int to,
                           std::size_t len, const std::string &w) {
        for (std::size_t i = 0; i < len; ++i) {
            if (got[off + i] != pat(from, to, i, salt)) {
                WEFT_TCHECK_MSG(false, w + ": byte " + std::to_string(i) + " of block from " +
                                           std::to_string(from) + " differs");
            }
        }
    };
    // broadcast: each root, both algorithms
    for (weft_coll_algorithm alg : {WEFT_COLL_ALG_BINOMIAL, WEFT_COLL_ALG_SCATTER_ALLGATHER}) {
        for (int root = 0; root < n; ++root) {
            a.type = WEFT_COLL_BCAST;
            a.algorithm = alg;
            a.root = std::uint32_t(root);
            a.count = blk * 3 + 1;
            std::vector<std::byte> buf(a.count);
            for (std::size_t i = 0; i < a.count; ++i) {
                buf[i] = me == root ? pat(root, 0, i, salt) : std::byte{0};
            }
            a.recvbuf = buf.data();
            run_ok(e, a, tag(weft_coll_algorithm_name(alg)));
            check_bytes(buf, 0, root, 0, a.count, tag(weft_coll_algorithm_name(alg)));
        }
    }
    a.root = 0;
    // allgather: each algorithm, in place and not (recursive doubling: powers of two only)
    for (weft_coll_algorithm alg : {WEFT_COLL_ALG_RING, WEFT_COLL_ALG_BRUCK,
                                    WEFT_COLL_ALG_RECURSIVE_DOUBLING, WEFT_COLL_ALG_AUTO}) {
        for (int in_place = 0; in_place < 2; ++in_place) {
            a.type = WEFT_COLL_ALLGATHER;
            a.algorithm = alg;
            a.count = blk;
            std::vector<std::byte> mine(blk);
            std::vector<std::byte> all(blk * un, std::byte{0});
            for (std::size_t i = 0; i < blk; ++i) {
                mine[i] = pat(me, 0, i, salt);
                if (in_place) {
                    all[std::size_t(me) * blk + i] = mine[i];
                }
            }
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : mine.data();
            a.recvbuf = all.data();
            if (alg == WEFT_COLL_ALG_RECURSIVE_DOUBLING && (n & (n - 1)) != 0) {
                continue;  // powers of two only (bad_input checks the refusal)
            }
            run_ok(e, a, tag(weft_coll_algorithm_name(alg)));
            for (int r = 0; r < n; ++r) {
                check_bytes(all, std::size_t(r) * blk, r, 0, blk,
                            tag(weft_coll_algorithm_name(alg)));
            }
        }
    }
    // allgatherv: rank r gives blk + r bytes (or none when blk is 0), with gaps
    {
        std::vector<std::size_t> cnt(un);
        std::vector<std::size_t> disp(un);
        std::size_t end = 0;
        for (std::size_t r = 0; r < un; ++r) {
            cnt[r] = blk == 0 ? 0 : blk + r;
            disp[r] = end + 3;
            end = disp[r] + cnt[r];
        }
        a.type = WEFT_COLL_ALLGATHERV;
        a.algorithm = 0;
        a.count = cnt[std::size_t(me)];
        std::vector<std::byte> mine(a.count);
        for (std::size_t i = 0; i < a.count; ++i) {
            mine[i] = pat(me, 0, i, salt);
        }
        std::vector<std::byte> all(end);
        a.sendbuf = mine.data();
        a.recvbuf = all.data();
        a.recvcounts = cnt.data();
        a.rdispls = disp.data();
        run_ok(e, a, tag("ring"));
        for (int r = 0; r < n; ++r) {
            check_bytes(all, disp[std::size_t(r)], r, 0, cnt[std::size_t(r)], tag("ring"));
        }
        // gatherv and scatterv with the same layout, at each root
        for (int root = 0; root < n; ++root) {
            a.type = WEFT_COLL_GATHERV;
            a.root = std::uint32_t(root);
            std::fill(all.begin(), all.end(), std::byte{0});
            run_ok(e, a, tag("linear"));
            if (me == root) {
                for (int r = 0; r < n; ++r) {
                    check_bytes(all, disp[std::size_t(r)], r, 0, cnt[std::size_t(r)],
                                tag("linear"));
                }
            }
            a.type = WEFT_COLL_SCATTERV;
            for (int r = 0; r < n; ++r) {
                for (std::size_t i = 0; i < cnt[std::size_t(r)]; ++i) {
                    all[disp[std::size_t(r)] + i] =
                        me == root ? pat(root, r, i, salt) : std::byte{0};
                }
            }
            std::vector<std::byte> got(a.count);
            a.sendbuf = all.data();
            a.sendcounts = cnt.data();
            a.sdispls = disp.data();
            a.recvbuf = got.data();
            run_ok(e, a, tag("linear"));
            check_bytes(got, 0, root, me, a.count, tag("linear"));
            a.sendbuf = mine.data();
            a.recvbuf = all.data();
        }
        a.recvcounts = a.rdispls = a.sendcounts = a.sdispls = nullptr;
    }
    // gather and scatter: each root, both algorithms, the root in place on odd roots
    for (weft_coll_algorithm alg : {WEFT_COLL_ALG_BINOMIAL, WEFT_COLL_ALG_LINEAR}) {
        for (int root = 0; root < n; ++root) {
            const bool in_place = me == root && root % 2 == 1;
            a.algorithm = alg;
            a.root = std::uint32_t(root);
            a.count = blk;
            a.type = WEFT_COLL_GATHER;
            std::vector<std::byte> mine(blk);
            std::vector<std::byte> all(blk * un, std::byte{0});
            for (std::size_t i = 0; i < blk; ++i) {
                mine[i] = pat(me, root, i, salt);
                if (in_place) {
                    all[std::size_t(me) * blk + i] = mine[i];
                }
            }
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : mine.data();
            a.recvbuf = all.data();
            run_ok(e, a, tag(weft_coll_algorithm_name(alg)));
            if (me == root) {
                for (int r = 0; r < n; ++r) {
                    check_bytes(all, std::size_t(r) * blk, r, root, blk,
                                tag(weft_coll_algorithm_name(alg)));
                }
            }
            a.type = WEFT_COLL_SCATTER;
            for (int r = 0; r < n; ++r) {
                for (std::size_t i = 0; i < blk; ++i) {
                    all[std::size_t(r) * blk + i] =
                        me == root ? pat(root, r, i, salt) : std::byte{0};
                }
            }
            std::vector<std::byte> got(blk, std::byte{0});
            a.sendbuf = all.data();
            a.recvbuf = in_place ? WEFT_COLL_IN_PLACE : got.data();
            run_ok(e, a, tag(weft_coll_algorithm_name(alg)));
            if (!in_place) {
                check_bytes(got, 0, root, me, blk, tag(weft_coll_algorithm_name(alg)));
            }
        }
    }
    a.root = 0;
    // alltoall: every algorithm, in place and not
    for (weft_coll_algorithm alg :
         {WEFT_COLL_ALG_PAIRWISE, WEFT_COLL_ALG_LINEAR, WEFT_COLL_ALG_BRUCK}) {
        for (int in_place = 0; in_place < 2; ++in_place) {
            a.type = WEFT_COLL_ALLTOALL;
            a.algorithm = alg;
            a.count = blk;
            std::vector<std::byte> send(blk * un);
            std::vector<std::byte> recv(blk * un, std::byte{0});
            for (int to = 0; to < n; ++to) {
                for (std::size_t i = 0; i < blk; ++i) {
                    send[std::size_t(to) * blk + i] = pat(me, to, i, salt);
                }
            }
            if (in_place) {
                recv = send;
            }
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : send.data();
            a.recvbuf = recv.data();
            run_ok(e, a, tag(weft_coll_algorithm_name(alg)));
            for (int from = 0; from < n; ++from) {
                check_bytes(recv, std::size_t(from) * blk, from, me, blk,
                            tag(weft_coll_algorithm_name(alg)));
            }
        }
    }
    // alltoallv: rank j sends (j + 2k) % 4 * blk / 2 bytes to k, packed with gaps
    {
        auto c = [&](int j, int k) { return std::size_t((j + 2 * k) % 4) * blk / 2; };
        std::vector<std::size_t> sc(un), sd(un), rc(un), rd(un);
        std::size_t send_end = 0;
        std::size_t recv_end = 0;
        for (int k = 0; k < n; ++k) {
            sc[std::size_t(k)] = c(me, k);
            sd[std::size_t(k)] = send_end + 1;
            send_end = sd[std::size_t(k)] + sc[std::size_t(k)];
            rc[std::size_t(k)] = c(k, me);
            rd[std::size_t(k)] = recv_end + 2;
            recv_end = rd[std::size_t(k)] + rc[std::size_t(k)];
        }
        std::vector<std::byte> send(send_end);
        std::vector<std::byte> recv(recv_end);
        for (int k = 0; k < n; ++k) {
            for (std::size_t i = 0; i < sc[std::size_t(k)]; ++i) {
                send[sd[std::size_t(k)] + i] = pat(me, k, i, salt);
            }
        }
        a.type = WEFT_COLL_ALLTOALLV;
        a.sendbuf = send.data();
        a.recvbuf = recv.data();
        a.sendcounts = sc.data();
        a.sdispls = sd.data();
        a.recvcounts = rc.data();
        a.rdispls = rd.data();
        for (weft_coll_algorithm alg : {WEFT_COLL_ALG_AUTO, WEFT_COLL_ALG_LINEAR}) {
            const std::string w =
                tag(alg == WEFT_COLL_ALG_AUTO ? "alltoallv, automatic" : "alltoallv, linear");
            std::fill(recv.begin(), recv.end(), std::byte{0});
            a.algorithm = alg;
            run_ok(e, a, w);
            for (int k = 0; k < n; ++k) {
                check_bytes(recv, rd[std::size_t(k)], k, me, rc[std::size_t(k)], w);
            }
        }
        a.algorithm = 0;
        a.recvcounts = a.rdispls = a.sendcounts = a.sdispls = nullptr;
    }
}

/// Barrier semantics: every rank bumps a shared count before; after, all bumps are in.
void check_barrier(coll_env &e, std::uint64_t *arrivals, int iterations)
{
    weft_coll_args a{};
    a.type = WEFT_COLL_BARRIER;
    for (int it = 0; it < iterations; ++it) {
        __atomic_fetch_add(arrivals, 1, __ATOMIC_SEQ_CST);
        run_ok(e, a, "barrier");
        const std::uint64_t seen = __atomic_load_n(arrivals, __ATOMIC_SEQ_CST);
        WEFT_TCHECK_MSG(
            seen >= std::uint64_t(it + 1) * std::uint64_t(e.c.nranks),
            "barrier " + std::to_string(it) + ": " + std::to_string(seen) + " arrivals");
    }
}

/// Symmetric buffers (WEFT_COLL_SYMMETRIC, weft_coll_group_add_segment): the
/// members' buffers are at the same offset of a weft_mr_alloc segment, as an
/// OpenSHMEM team's are; on shm the stage reads and writes them in place.
void check_symmetric(coll_env &e, std::byte *seg, std::size_t seg_len)
{
    const int n = e.c.nranks;
    const int me = e.c.rank;
    std::byte *const src = seg;
    std::byte *const dst = seg + seg_len / 2;
    auto run = [&](weft_coll_args a, const std::string &w) {
        a.flags = WEFT_COLL_SYMMETRIC;
        run_ok(e, a, w);
    };
    auto word = [](int rank, std::size_t i, int salt) {
        return std::uint32_t(rank) << 24 ^ std::uint32_t(i * 2654435761u) ^ std::uint32_t(salt);
    };
    auto *s32 = reinterpret_cast<std::uint32_t *>(src);
    auto *d32 = reinterpret_cast<std::uint32_t *>(dst);
    // Bytes 0 .. above the push limit (256 KiB / (n - 1)): pushed and pulled broadcasts.
    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(3000), std::size_t(40000),
                              std::size_t(140000)}) {
        const std::string at = " count " + std::to_string(count) + " on " + std::to_string(n);
        for (int root = 0; root < n; ++root) {
            // The caller's side of the rule: a buffer others write is ready
            // (initialized, the last result read) on every member before any
            // member starts; here a barrier of the harness says so.
            // Salt 2: the root's data in a separate source (OpenSHMEM's
            // form), which every member names; the root's recvbuf gets it too.
            for (int salt : {1, 2}) {
                for (std::size_t i = 0; i < count; ++i) {
                    d32[i] = me == root && salt == 1 ? word(root, i, salt) : 0;
                    s32[i] = me == root && salt == 2 ? word(root, i, salt) : 0;
                }
                e.c.barrier();
                weft_coll_args a{};
                a.type = WEFT_COLL_BCAST;
                a.datatype = WEFT_COLL_UINT32;
                a.count = count;
                a.root = std::uint32_t(root);
                a.recvbuf = dst;
                a.sendbuf = salt == 2 ? src : nullptr;
                run(a, "symmetric bcast root " + std::to_string(root) + at);
                for (std::size_t i = 0; i < count; ++i) {
                    if (d32[i] != word(root, i, salt)) {
                        WEFT_TCHECK_MSG(false, "symmetric bcast root " + std::to_string(root) + at +
                                                   ": element " + std::to_string(i));
                        break;
                    }
                }
                e.c.barrier();
            }
        }
        if (count * std::size_t(n) * 4 > seg_len / 2) {
            continue;
        }
        // allgather, in place and not; alltoall.
        for (bool in_place : {false, true}) {
            for (std::size_t i = 0; i < count * std::size_t(n); ++i) {
                d32[i] = 0;
            }
            for (std::size_t i = 0; i < count; ++i) {
                (in_place ? d32 + std::size_t(me) * count : s32)[i] = word(me, i, 3);
            }
            e.c.barrier();
            weft_coll_args a{};
            a.type = WEFT_COLL_ALLGATHER;
            a.datatype = WEFT_COLL_UINT32;
            a.count = count;
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : src;
            a.recvbuf = dst;
            run(a, "symmetric allgather" + at);
            for (int r = 0; r < n; ++r) {
                for (std::size_t i = 0; i < count; ++i) {
                    if (d32[std::size_t(r) * count + i] != word(r, i, 3)) {
                        WEFT_TCHECK_MSG(false, "symmetric allgather" + at + ": block " +
                                                   std::to_string(r) + " element " +
                                                   std::to_string(i));
                        r = n;
                        break;
                    }
                }
            }
            e.c.barrier();
        }
        for (std::size_t i = 0; i < count * std::size_t(n); ++i) {
            s32[i] = word(me, i, 4);
        }
        weft_coll_args t{};
        t.type = WEFT_COLL_ALLTOALL;
        t.datatype = WEFT_COLL_UINT32;
        t.count = count;
        t.sendbuf = src;
        t.recvbuf = dst;
        run(t, "symmetric alltoall" + at);
        for (int r = 0; r < n; ++r) {
            for (std::size_t i = 0; i < count; ++i) {
                if (d32[std::size_t(r) * count + i] != word(r, std::size_t(me) * count + i, 4)) {
                    WEFT_TCHECK_MSG(false, "symmetric alltoall" + at + ": block " +
                                               std::to_string(r) + " element " + std::to_string(i));
                    r = n;
                    break;
                }
            }
        }
        e.c.barrier();
        // allgatherv: member r brings count + r elements, packed in rank order.
        std::vector<std::size_t> counts(static_cast<std::size_t>(n));
        std::vector<std::size_t> displs(static_cast<std::size_t>(n));
        std::size_t total = 0;
        for (int r = 0; r < n; ++r) {
            counts[std::size_t(r)] = count + std::size_t(r);
            displs[std::size_t(r)] = total;
            total += count + std::size_t(r);
        }
        if (total * 4 <= seg_len / 2) {
            for (std::size_t i = 0; i < counts[std::size_t(me)]; ++i) {
                s32[i] = word(me, i, 5);
            }
            weft_coll_args v{};
            v.type = WEFT_COLL_ALLGATHERV;
            v.datatype = WEFT_COLL_UINT32;
            v.count = counts[std::size_t(me)];
            v.recvcounts = counts.data();
            v.rdispls = displs.data();
            v.sendbuf = src;
            v.recvbuf = dst;
            run(v, "symmetric allgatherv" + at);
            for (int r = 0; r < n; ++r) {
                for (std::size_t i = 0; i < counts[std::size_t(r)]; ++i) {
                    if (d32[displs[std::size_t(r)] + i] != word(r, i, 5)) {
                        WEFT_TCHECK_MSG(false, "symmetric allgatherv" + at + ": block " +
                                                   std::to_string(r) + " element " +
                                                   std::to_string(i));
                        r = n;
                        break;
                    }
                }
            }
        }
        // Reductions (above a slot they combine from the members' sources):
        // allreduce in place and not, reduce at every root; int64 sums.
        auto *s64 = reinterpret_cast<std::int64_t *>(src);
        auto *d64 = reinterpret_cast<std::int64_t *>(dst);
        const std::size_t rc = count / 2;
        auto contribution = [](int r, std::size_t i) { return std::int64_t(i) * (r + 1) - r; };
        auto sum = [&](std::size_t i) {
            std::int64_t x = 0;
            for (int r = 0; r < n; ++r) {
                x += contribution(r, i);
            }
            return x;
        };
        for (int form = 0; form < 2 + n; ++form) {  // allreduce, in place, reduce at each root
            const bool in_place = form == 1;
            for (std::size_t i = 0; i < rc; ++i) {
                (in_place ? d64 : s64)[i] = contribution(me, i);
                if (!in_place) {
                    d64[i] = -1;
                }
            }
            weft_coll_args a{};
            a.type = form < 2 ? WEFT_COLL_ALLREDUCE : WEFT_COLL_REDUCE;
            a.root = form < 2 ? 0 : std::uint32_t(form - 2);
            a.datatype = WEFT_COLL_INT64;
            a.op = WEFT_COLL_SUM;
            a.count = rc;
            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : src;
            a.recvbuf = dst;
            const std::string w =
                std::string(form < 2 ? "symmetric allreduce" : "symmetric reduce") +
                (in_place ? " in place" : "") + " root " + std::to_string(a.root) + at;
            run(a, w);
            if (form >= 2 && me != form - 2) {
                continue;
            }
            for (std::size_t i = 0; i < rc; ++i) {
                if (d64[i] != sum(i)) {
                    WEFT_TCHECK_MSG(false, w + ": element " + std::to_string(i));
                    break;
                }
            }
        }
    }
    // Buffers outside every segment: the flag changes nothing (the slot
    // path, and the network schedules above a slot), the root's separate
    // source included.
    for (std::size_t count : {std::size_t(100), std::size_t(50000)}) {
        std::vector<std::uint32_t> plain(count, 0u);
        std::vector<std::uint32_t> source(count, me == 0 ? 7u : 0u);
        weft_coll_args a{};
        a.type = WEFT_COLL_BCAST;
        a.datatype = WEFT_COLL_UINT32;
        a.count = plain.size();
        a.recvbuf = plain.data();
        a.sendbuf = source.data();
        run(a, "symmetric flag on a buffer in no segment");
        WEFT_TCHECK_MSG(
            std::all_of(plain.begin(), plain.end(), [](std::uint32_t x) { return x == 7; }),
            "bcast of a buffer in no segment, count " + std::to_string(count));
    }
    // Counts that differ between members: an error on the members that see
    // it, and no hang.
    if (n >= 2) {
        weft_coll_args m{};
        m.type = WEFT_COLL_BCAST;
        m.datatype = WEFT_COLL_UINT32;
        m.count = me == 0 ? 10 : 12;
        m.recvbuf = dst;
        m.flags = WEFT_COLL_SYMMETRIC;
        const int mrc = weft_coll(e.g, &m);
        WEFT_TCHECK_MSG(
            me == 0 ? mrc == 0 : mrc == -WEFT_EINVAL,
            "mismatched symmetric bcast on rank " + std::to_string(me) + ": " + weft_strerror(mrc));
    }
}

const char *transport()
{
    return "shm";
}

class CollRanks : public ::testing::TestWithParam<int> {
  protected:
    void SetUp() override
    {
        const std::string why =
            weft::test::transport_unavailable(transport(), weft::test::base_caps);
        if (!why.empty()) {
            GTEST_SKIP() << "shm unavailable: " << why;
        }
    }
    oob_area oob;
};

// Every type and op through every reduction, with counts 0, 1 and 5.
TEST_P(CollRanks, every_reduction_type_and_op_matches_the_reference)
{
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            for (std::size_t count : {0, 1, 5}) {
                check_all_types(e, count);
            }
        },
        opt));
}

// Allreduce algorithms over sizes that straddle their switch points, for a
// sum (int64: exact) and a double sum.
TEST_P(CollRanks, allreduce_algorithms_at_every_size)
{
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            const std::vector<weft_coll_algorithm> algs = {WEFT_COLL_ALG_RECURSIVE_DOUBLING,
                                                           WEFT_COLL_ALG_RABENSEIFNER,
                                                           WEFT_COLL_ALG_RING, WEFT_COLL_ALG_AUTO};
            for (std::size_t count : {0, 1, 2, 3, 7, 8, 100, 1025, 20000}) {
                check_reductions<std::int64_t>(e, WEFT_COLL_INT64, "WEFT_COLL_INT64", WEFT_COLL_SUM,
                                               count, algs);
                check_reductions<double>(e, WEFT_COLL_DOUBLE, "WEFT_COLL_DOUBLE", WEFT_COLL_MAX,
                                         count, algs);
            }
        },
        opt));
}

// Data movement at block sizes 0 .. 64 KiB, and barriers.
TEST_P(CollRanks, data_movement_and_barrier_match_the_reference)
{
    ASSERT_NE(oob.mem, nullptr);
    auto *arrivals = reinterpret_cast<std::uint64_t *>(oob.mem + oob_area::slot * 15);
    *arrivals = 0;
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            // Linear alltoalls in rounds of one peer on odd ranks, of 32 on
            // even ones (this child only): the rounds need not agree.
            if (c.rank % 2 != 0) {
                setenv("WEFT_COLL_ALLTOALL_BATCH", "1", 1);
            }
            coll_env e(c, oob.mem);
            int salt = 0;
            for (std::size_t blk : {0, 1, 8, 100, 4096, 65536}) {
                check_movement(e, blk, ++salt);
            }
            check_barrier(e, arrivals, 50);
        },
        opt));
}

// The same with every schedule that allows it in the triggered form
// (WEFT_COLL_TRIGGERED=always: even weft_coll()'s): data movement and barriers.
TEST_P(CollRanks, data_movement_triggered_matches_the_reference)
{
    ASSERT_NE(oob.mem, nullptr);
    auto *arrivals = reinterpret_cast<std::uint64_t *>(oob.mem + oob_area::slot * 15);
    *arrivals = 0;
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            setenv("WEFT_COLL_TRIGGERED", "always", 1);  // this child only
            setenv("WEFT_COLL_ALLTOALL_BATCH", "2", 1);  // linear in rounds of 2 peers
            coll_env e(c, oob.mem);
            int salt = 100;
            for (std::size_t blk : {0, 1, 100, 65536}) {
                check_movement(e, blk, ++salt);
            }
            // Reductions whose schedules allow it (binomial reduce, small
            // recursive doubling allreduce, scan) run triggered too.
            for (std::size_t count : {1, 7, 300}) {
                check_reductions<std::int64_t>(e, WEFT_COLL_INT64, "WEFT_COLL_INT64", WEFT_COLL_SUM,
                                               count, {WEFT_COLL_ALG_RECURSIVE_DOUBLING});
                check_reductions<double>(e, WEFT_COLL_DOUBLE, "WEFT_COLL_DOUBLE", WEFT_COLL_MIN,
                                         count, {WEFT_COLL_ALG_RECURSIVE_DOUBLING});
            }
            {
                std::vector<double> x(5, 1.0 + c.rank);
                std::vector<double> y(5);
                weft_coll_args a{};
                a.type = WEFT_COLL_ALLREDUCE;
                a.datatype = WEFT_COLL_DOUBLE;
                a.op = WEFT_COLL_SUM;
                a.count = 5;
                a.sendbuf = x.data();
                a.recvbuf = y.data();
                run_triggered(e, a);
                WEFT_TCHECK_EQ(y[4], double(c.nranks * (c.nranks + 1) / 2));
            }
            {
                // A linear alltoall (rounds of 2 peers here) runs triggered.
                const auto un = std::size_t(c.nranks);
                std::vector<std::uint32_t> x(2 * un);
                std::vector<std::uint32_t> y(2 * un, 0);
                for (std::size_t i = 0; i < x.size(); ++i) {
                    x[i] = std::uint32_t(c.rank) << 16 | std::uint32_t(i);
                }
                weft_coll_args a{};
                a.type = WEFT_COLL_ALLTOALL;
                a.datatype = WEFT_COLL_UINT32;
                a.algorithm = WEFT_COLL_ALG_LINEAR;
                a.count = 2;
                a.sendbuf = x.data();
                a.recvbuf = y.data();
                run_triggered(e, a);
                for (std::size_t p = 0; p < un; ++p) {
                    for (std::size_t i = 0; i < 2; ++i) {
                        WEFT_TCHECK_EQ(y[2 * p + i],
                                       std::uint32_t(p) << 16 | std::uint32_t(2 * c.rank + i));
                    }
                }
            }
            check_barrier(e, arrivals, 50);
            weft_coll_args a{};
            a.type = WEFT_COLL_BARRIER;
            run_triggered(e, a);
        },
        opt));
}

// Persistent requests restart with new buffer contents; several nonblocking
// collectives of different kinds are in flight at once; weft_coll() reuses
// its kept schedules (more distinct calls than it keeps, then the first again).
TEST_P(CollRanks, persistent_and_overlapping_requests)
{
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            const int n = c.nranks;
            const int me = c.rank;
            constexpr std::size_t count = 300;
            std::vector<std::int64_t> in(count);
            std::vector<std::int64_t> out(count);
            weft_coll_args a{};
            a.type = WEFT_COLL_ALLREDUCE;
            a.datatype = WEFT_COLL_INT64;
            a.op = WEFT_COLL_SUM;
            a.count = count;
            a.sendbuf = in.data();
            a.recvbuf = out.data();
            a.flags = WEFT_COLL_PERSISTENT;
            weft_coll_request_t *r = nullptr;
            WEFT_TCHECK_EQ(weft_coll_init(e.g, &a, &r), 0);
            for (int it = 0; it < 20; ++it) {
                for (std::size_t i = 0; i < count; ++i) {
                    in[i] = std::int64_t(i) * (me + 1) + it;
                }
                WEFT_TCHECK_EQ(weft_coll_start(r), 0);
                if (n > 1) {  // waits for its peers: still active, so refused
                    WEFT_TCHECK_EQ(weft_coll_start(r), -WEFT_EBUSY);
                }
                WEFT_TCHECK_EQ(weft_coll_wait(r, 60000), 0);
                for (std::size_t i = 0; i < count; ++i) {
                    const std::int64_t want =
                        std::int64_t(i) * n * (n + 1) / 2 + std::int64_t(it) * n;
                    WEFT_TCHECK_EQ(out[i], want);
                }
            }
            WEFT_TCHECK_EQ(weft_coll_request_free(r), 0);

            // In flight together: a broadcast, an allgather, an alltoall and a barrier.
            std::vector<std::uint32_t> b(1000);
            std::vector<std::uint32_t> ag(std::size_t(n) * 7);
            std::vector<std::uint32_t> mine(7);
            std::vector<std::uint32_t> s2(std::size_t(n) * 3);
            std::vector<std::uint32_t> r2(std::size_t(n) * 3);
            for (std::size_t i = 0; i < b.size(); ++i) {
                b[i] = me == n - 1 ? std::uint32_t(i * 3) : 0;
            }
            for (std::size_t i = 0; i < 7; ++i) {
                mine[i] = std::uint32_t(me * 100 + int(i));
            }
            for (std::size_t i = 0; i < s2.size(); ++i) {
                s2[i] = std::uint32_t(me * 1000) + std::uint32_t(i);
            }
            weft_coll_args x[4]{};
            x[0].type = WEFT_COLL_BCAST;
            x[0].datatype = WEFT_COLL_UINT32;
            x[0].count = b.size();
            x[0].recvbuf = b.data();
            x[0].root = std::uint32_t(n - 1);
            x[1].type = WEFT_COLL_ALLGATHER;
            x[1].datatype = WEFT_COLL_UINT32;
            x[1].count = 7;
            x[1].sendbuf = mine.data();
            x[1].recvbuf = ag.data();
            x[2].type = WEFT_COLL_ALLTOALL;
            x[2].datatype = WEFT_COLL_UINT32;
            x[2].count = 3;
            x[2].sendbuf = s2.data();
            x[2].recvbuf = r2.data();
            x[3].type = WEFT_COLL_BARRIER;
            weft_coll_request_t *rq[4] = {};
            for (int i = 0; i < 4; ++i) {
                WEFT_TCHECK_EQ(weft_coll_init(e.g, &x[i], &rq[i]), 0);
                WEFT_TCHECK_EQ(weft_coll_start(rq[i]), 0);
            }
            // Started by the caller: data movement runs triggered (WEFT_COLL_TRIGGERED
            // auto); Bruck's alltoall reuses its buffers between rounds, so not it.
            WEFT_TCHECK_EQ(weft_coll_request_triggered(rq[0]), 1);
            WEFT_TCHECK_EQ(weft_coll_request_triggered(rq[1]), 1);
            WEFT_TCHECK_EQ(weft_coll_request_triggered(rq[2]),
                           weft_coll_request_algorithm(rq[2]) == WEFT_COLL_ALG_BRUCK ? 0 : 1);
            WEFT_TCHECK_EQ(weft_coll_request_triggered(rq[3]), 1);
            for (int i = 3; i >= 0; --i) {  // waited for in the other order
                WEFT_TCHECK_EQ(weft_coll_wait(rq[i], 60000), 0);
                WEFT_TCHECK_EQ(weft_coll_test(rq[i]), 1);
                WEFT_TCHECK_EQ(weft_coll_request_free(rq[i]), 0);
            }
            for (std::size_t i = 0; i < b.size(); ++i) {
                WEFT_TCHECK_EQ(b[i], std::uint32_t(i * 3));
            }
            for (int from = 0; from < n; ++from) {
                for (std::size_t i = 0; i < 7; ++i) {
                    WEFT_TCHECK_EQ(ag[std::size_t(from) * 7 + i],
                                   std::uint32_t(from * 100 + int(i)));
                }
                for (std::size_t i = 0; i < 3; ++i) {
                    WEFT_TCHECK_EQ(
                        r2[std::size_t(from) * 3 + i],
                        std::uint32_t(from * 1000) + std::uint32_t(me * 3) + std::uint32_t(i));
                }
            }

            // weft_coll(): 20 distinct calls (more than the 16 kept), twice over.
            std::vector<std::int32_t> v(64);
            std::vector<std::int32_t> w(64);
            for (int pass = 0; pass < 2; ++pass) {
                for (std::size_t k = 1; k <= 20; ++k) {
                    for (std::size_t i = 0; i < k; ++i) {
                        v[i] = std::int32_t(me + pass);
                    }
                    weft_coll_args m{};
                    m.type = WEFT_COLL_ALLREDUCE;
                    m.datatype = WEFT_COLL_INT32;
                    m.op = WEFT_COLL_MAX;
                    m.count = k;
                    m.sendbuf = v.data();
                    m.recvbuf = w.data();
                    WEFT_TCHECK_EQ(weft_coll(e.g, &m), 0);
                    for (std::size_t i = 0; i < k; ++i) {
                        WEFT_TCHECK_EQ(w[i], std::int32_t(n - 1 + pass));
                    }
                }
            }
        },
        opt));
}

// Floating-point allreduce: every rank gets the same bits, whatever the algorithm.
TEST_P(CollRanks, float_allreduce_gives_every_rank_the_same_bits)
{
    ASSERT_NE(oob.mem, nullptr);
    auto *shared = reinterpret_cast<double *>(oob.mem + oob_area::slot * 8);
    weft::test::run_options opt;
    opt.timeout_s = 600;
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            constexpr std::size_t count = 64;
            std::vector<double> in(count);
            std::vector<double> out(count);
            for (std::size_t i = 0; i < count; ++i) {  // sums that round differently by order
                in[i] = 1.0 / double(3 + c.rank * 7 + int(i)) * (c.rank % 2 != 0 ? 1e8 : 1e-3);
            }
            for (weft_coll_algorithm alg : {WEFT_COLL_ALG_RECURSIVE_DOUBLING,
                                            WEFT_COLL_ALG_RABENSEIFNER, WEFT_COLL_ALG_RING}) {
                weft_coll_args a{};
                a.type = WEFT_COLL_ALLREDUCE;
                a.datatype = WEFT_COLL_DOUBLE;
                a.op = WEFT_COLL_SUM;
                a.count = count;
                a.sendbuf = in.data();
                a.recvbuf = out.data();
                a.algorithm = alg;
                WEFT_TCHECK_EQ(weft_coll(e.g, &a), 0);
                if (c.rank == 0) {
                    std::memcpy(shared, out.data(), count * sizeof(double));
                }
                c.barrier();
                WEFT_TCHECK_MSG(std::memcmp(shared, out.data(), count * sizeof(double)) == 0,
                                std::string("rank ") + std::to_string(c.rank) +
                                    " got other bits with " + weft_coll_algorithm_name(alg));
                c.barrier();
            }
        },
        opt));
}

// Symmetric buffers in a weft_mr_alloc segment every member maps.
TEST_P(CollRanks, symmetric_buffers_match_the_reference)
{
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.timeout_s = 600;
    opt.allow_log_errors = true;  // the mismatched counts at the end
    ASSERT_TRUE(weft::test::run_ranks(
        GetParam(), transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            constexpr std::size_t seg_len = std::size_t(8) << 20;
            void *mem = nullptr;
            weft_mr_t *mr = nullptr;
            WEFT_TCHECK_OK(weft_mr_alloc(
                c.domain, seg_len,
                WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE, 0, &mem,
                &mr));
            oob_arg arg{&c, oob.mem};
            const weft_coll_oob o{oob_allgather, &arg};
            WEFT_TCHECK_OK(weft_coll_group_add_segment(e.g, mem, seg_len, mr, &o));
            check_symmetric(e, static_cast<std::byte *>(mem), seg_len);
            c.barrier();
            weft_coll_args bar{};
            bar.type = WEFT_COLL_BARRIER;
            run_ok(e, bar, "barrier before the segment goes");
            WEFT_TCHECK_OK(weft_mr_close(mr));
        },
        opt));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollRanks, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int> &i) {
                             return std::to_string(i.param) + "ranks";
                         });

// Counts up to 16 MiB (4 Mi int32 elements) on 3 and 4 ranks: allreduce (ring
// and Rabenseifner), broadcast (scatter + allgather), allgather, alltoall.
TEST(CollLarge, sixteen_mebibytes)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    for (int n : {3, 4}) {
        weft::test::run_options opt;
        opt.timeout_s = 600;
        ASSERT_TRUE(weft::test::run_ranks(
            n, transport(),
            [&](rank_ctx &c) {
                coll_env e(c, oob.mem);
                constexpr std::size_t total = std::size_t(16) << 20;
                const std::size_t count = total / 4;
                std::vector<std::uint32_t> in(count);
                std::vector<std::uint32_t> out(count);
                for (std::size_t i = 0; i < count; ++i) {
                    in[i] = std::uint32_t(i * 2654435761u) + std::uint32_t(c.rank);
                }
                for (weft_coll_algorithm alg : {WEFT_COLL_ALG_RING, WEFT_COLL_ALG_RABENSEIFNER}) {
                    weft_coll_args a{};
                    a.type = WEFT_COLL_ALLREDUCE;
                    a.datatype = WEFT_COLL_UINT32;
                    a.op = WEFT_COLL_SUM;
                    a.count = count;
                    a.sendbuf = in.data();
                    a.recvbuf = out.data();
                    a.algorithm = alg;
                    run_ok(e, a, "16 MiB allreduce");
                    for (std::size_t i = 0; i < count; ++i) {
                        const std::uint32_t want =
                            std::uint32_t(i * 2654435761u) * std::uint32_t(n) +
                            std::uint32_t(n * (n - 1) / 2);
                        if (out[i] != want) {
                            WEFT_TCHECK_MSG(false, "16 MiB allreduce " +
                                                       std::string(weft_coll_algorithm_name(alg)) +
                                                       ": element " + std::to_string(i));
                        }
                    }
                }
                weft_coll_args b{};
                b.type = WEFT_COLL_BCAST;
                b.datatype = WEFT_COLL_UINT32;
                b.count = count;
                b.root = 1;
                b.recvbuf = in.data();
                run_ok(e, b, "16 MiB bcast");
                for (std::size_t i = 0; i < count; ++i) {
                    if (in[i] != std::uint32_t(i * 2654435761u) + 1) {
                        WEFT_TCHECK_MSG(false, "16 MiB bcast: element " + std::to_string(i));
                    }
                }
                weft_coll_args g{};
                g.type = WEFT_COLL_ALLGATHER;
                g.datatype = WEFT_COLL_UINT32;
                g.count = count / std::size_t(n);
                g.sendbuf = WEFT_COLL_IN_PLACE;
                for (std::size_t i = 0; i < g.count; ++i) {
                    out[std::size_t(c.rank) * g.count + i] =
                        std::uint32_t(c.rank) << 24 | std::uint32_t(i);
                }
                g.recvbuf = out.data();
                run_ok(e, g, "16 MiB allgather");
                // A rank done with the ring may still owe its neighbour the rest
                // of a large message: the (shared-memory) barrier that follows
                // must keep the library's endpoint moving, or it never ends.
                weft_coll_args bar{};
                bar.type = WEFT_COLL_BARRIER;
                run_ok(e, bar, "barrier after the 16 MiB allgather");
                g.type = WEFT_COLL_ALLTOALL;
                g.sendbuf = out.data();
                g.recvbuf = in.data();
                run_ok(e, g, "16 MiB alltoall");
                for (int r = 0; r < n; ++r) {
                    for (std::size_t i = 0; i < g.count; ++i) {
                        // allgather put r's block at r; alltoall sent block `me` of r's copy to me
                        const std::uint32_t want = std::uint32_t(c.rank) << 24 | std::uint32_t(i);
                        if (in[std::size_t(r) * g.count + i] != want) {
                            WEFT_TCHECK_MSG(false, "16 MiB allgather + alltoall: block " +
                                                       std::to_string(r) + " element " +
                                                       std::to_string(i));
                        }
                    }
                }
            },
            opt));
    }
}

/// Bcast of `count` uint32 from every root, checked on every rank; with
/// `separate`, also with the root's data in a separate sendbuf.
void check_bcast_every_root(coll_env &e, std::size_t count, bool separate, const std::string &at)
{
    const int n = e.c.nranks;
    const int me = e.c.rank;
    auto value = [](int root, std::size_t i) {
        return std::uint32_t(root * 7919) ^ std::uint32_t(i * 2654435761u);
    };
    std::vector<std::uint32_t> buf(count);
    std::vector<std::uint32_t> src(count);
    for (int root = 0; root < n; ++root) {
        for (bool sep : {false, true}) {
            if (sep && !separate) {
                continue;
            }
            for (std::size_t i = 0; i < count; ++i) {
                buf[i] = me == root && !sep ? value(root, i) : 0;
                src[i] = me == root && sep ? value(root, i) : 0;
            }
            weft_coll_args a{};
            a.type = WEFT_COLL_BCAST;
            a.datatype = WEFT_COLL_UINT32;
            a.count = count;
            a.root = std::uint32_t(root);
            a.recvbuf = buf.data();
            a.sendbuf = sep ? src.data() : nullptr;
            run_ok(e, a, "bcast " + at);
            for (std::size_t i = 0; i < count; ++i) {
                if (buf[i] != value(root, i)) {
                    WEFT_TCHECK_MSG(false, "bcast root " + std::to_string(root) + " " + at +
                                               ": element " + std::to_string(i));
                    break;
                }
            }
        }
    }
}

/// int64 sums of `count` elements: allreduce, allreduce in place, reduce at
/// every root (the root in place), checked where the result lands.
void check_sum_forms(coll_env &e, std::size_t count, const std::string &at)
{
    const int n = e.c.nranks;
    const int me = e.c.rank;
    std::vector<std::int64_t> in(count);
    std::vector<std::int64_t> out(count);
    auto value = [](int r, std::size_t i) { return std::int64_t(i) * (r + 3) - r * 11; };
    auto sum = [&](std::size_t i) {
        std::int64_t x = 0;
        for (int r = 0; r < n; ++r) {
            x += value(r, i);
        }
        return x;
    };
    for (int form = 0; form < 2 + n; ++form) {
        const bool in_place = form == 1 || form == 2 + me;
        for (std::size_t i = 0; i < count; ++i) {
            (in_place ? out : in)[i] = value(me, i);
            if (!in_place) {
                out[i] = -1;
            }
        }
        weft_coll_args a{};
        a.type = form < 2 ? WEFT_COLL_ALLREDUCE : WEFT_COLL_REDUCE;
        a.root = form < 2 ? 0 : std::uint32_t(form - 2);
        a.datatype = WEFT_COLL_INT64;
        a.op = WEFT_COLL_SUM;
        a.count = count;
        a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : in.data();
        a.recvbuf = out.data();
        const std::string what = std::string(weft_coll_type_name(a.type)) + " root " +
                                 std::to_string(a.root) + (in_place ? " in place " : " ") + at;
        run_ok(e, a, what);
        if (form >= 2 && me != form - 2) {
            continue;
        }
        for (std::size_t i = 0; i < count; ++i) {
            if (out[i] != sum(i)) {
                WEFT_TCHECK_MSG(false, what + ": element " + std::to_string(i));
                break;
            }
        }
    }
}

// Groups that span nodes: WEFT_COLL_NODE gives forked ranks of this host
// node names of their own, so the node / leaders / node form runs for real
// (the stage on each "node", messages among the leaders): barrier, broadcast
// from every root (with and without a separate source), allreduce and reduce
// at every root, in place and not, the same bits everywhere, a size above a
// slot (the flat schedules), and data movement on the same group.
TEST(CollNodes, node_leaders_node_matches_the_reference)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    struct layout {
        const char *name;
        int (*node)(int rank);
    };
    const layout layouts[] = {
        {"pairs", [](int r) { return r / 2; }},
        {"one alone", [](int r) { return r == 0 ? 0 : 1; }},
        {"interleaved", [](int r) { return r % 2; }},
    };
    for (int n : {3, 4, 5, 6}) {
        for (const layout &l : layouts) {
            weft::test::run_options opt;
            opt.timeout_s = 600;
            ASSERT_TRUE(weft::test::run_ranks(
                n, transport(),
                [&](rank_ctx &c) {
                    const std::string node = "node" + std::to_string(l.node(c.rank));
                    setenv("WEFT_COLL_NODE", node.c_str(), 1);
                    coll_env e(c, oob.mem);
                    int nodes = 0;
                    for (int r = 0; r < n; ++r) {
                        nodes = std::max(nodes, l.node(r) + 1);
                    }
                    const std::string at = std::string(l.name) + " on " + std::to_string(n);
                    WEFT_TCHECK_EQ(weft_coll_group_nodes(e.g), std::uint32_t(nodes));
                    WEFT_TCHECK_MSG(weft_coll_group_hierarchical(e.g) == 1,
                                    "not in the node / leaders form: " + at);
                    auto *arrivals =
                        reinterpret_cast<std::uint64_t *>(oob.mem + oob_area::slot * 12);
                    if (c.rank == 0) {
                        *arrivals = 0;
                    }
                    c.barrier();
                    check_barrier(e, arrivals, 20);
                    const int me = c.rank;
                    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(100),
                                              std::size_t(4000), std::size_t(6000)}) {
                        const std::string w = at + " count " + std::to_string(count);
                        check_bcast_every_root(e, count, true, w);
                        check_sum_forms(e, count, w);
                        // Doubles: the same bits on every rank.
                        std::vector<double> din(count);
                        std::vector<double> dout(count);
                        for (std::size_t i = 0; i < count; ++i) {
                            din[i] = 1.0 / double(3 + me * 7 + int(i)) * (me % 2 != 0 ? 1e8 : 1e-3);
                        }
                        weft_coll_args d{};
                        d.type = WEFT_COLL_ALLREDUCE;
                        d.datatype = WEFT_COLL_DOUBLE;
                        d.op = WEFT_COLL_SUM;
                        d.count = count;
                        d.sendbuf = din.data();
                        d.recvbuf = dout.data();
                        run_ok(e, d, "double allreduce " + w);
                        auto *shared = reinterpret_cast<double *>(oob.mem + oob_area::slot * 8);
                        if (count != 0 && count * sizeof(double) <= oob_area::slot * 4) {
                            if (me == 0) {
                                std::memcpy(shared, dout.data(), count * sizeof(double));
                            }
                            c.barrier();
                            WEFT_TCHECK_MSG(
                                std::memcmp(shared, dout.data(), count * sizeof(double)) == 0,
                                "double allreduce " + w + ": other bits on rank " +
                                    std::to_string(me));
                            c.barrier();
                        }
                    }
                    check_movement(e, 100, 3);
                },
                opt));
        }
    }
}

// Calls larger than a stage slot and up to WEFT_COLL_SHM_LARGE run on the
// stage in pieces: bcast from every root, allreduce in place and not, reduce
// at every root, allgather in place and not, at 2..4 ranks; counts that
// differ between ranks are an error on every rank (they agree on the counts
// first), not a hang.
TEST(CollLarge, stage_in_pieces)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    for (int n : {2, 3, 4}) {
        weft::test::run_options opt;
        opt.timeout_s = 600;
        opt.allow_log_errors = true;  // the mismatched counts at the end
        ASSERT_TRUE(weft::test::run_ranks(
            n, transport(),
            [&](rank_ctx &c) {
                coll_env e(c, oob.mem);
                const int me = c.rank;
                auto word = [](int r, std::size_t i) {
                    return std::uint32_t(r) << 24 ^ std::uint32_t(i * 2654435761u);
                };
                for (std::size_t count : {std::size_t(20000), std::size_t(100001)}) {
                    const std::string at =
                        " count " + std::to_string(count) + " on " + std::to_string(n);
                    check_bcast_every_root(e, count, false, at);
                    check_sum_forms(e, count, at);
                    std::vector<std::uint32_t> in(count);
                    const std::size_t block = count / std::size_t(n);
                    std::vector<std::uint32_t> all(block * std::size_t(n));
                    for (bool in_place : {false, true}) {
                        for (std::size_t i = 0; i < all.size(); ++i) {
                            all[i] = 0;
                        }
                        for (std::size_t i = 0; i < block; ++i) {
                            (in_place ? all.data() + std::size_t(me) * block : in.data())[i] =
                                word(me, i);
                        }
                        weft_coll_args a{};
                        a.type = WEFT_COLL_ALLGATHER;
                        a.datatype = WEFT_COLL_UINT32;
                        a.count = block;
                        a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : in.data();
                        a.recvbuf = all.data();
                        run_ok(e, a, "allgather" + at);
                        for (int r = 0; r < n; ++r) {
                            for (std::size_t i = 0; i < block; ++i) {
                                if (all[std::size_t(r) * block + i] != word(r, i)) {
                                    WEFT_TCHECK_MSG(false, "allgather" + at + ": block " +
                                                               std::to_string(r) + " element " +
                                                               std::to_string(i));
                                    r = n;
                                    break;
                                }
                            }
                        }
                    }
                }
                // Counts that differ: every rank returns an error.
                std::vector<std::uint32_t> big(60000);
                weft_coll_args m{};
                m.type = WEFT_COLL_ALLREDUCE;
                m.datatype = WEFT_COLL_UINT32;
                m.op = WEFT_COLL_SUM;
                m.count = me == 0 ? 50000 : 60000;
                m.sendbuf = WEFT_COLL_IN_PLACE;
                m.recvbuf = big.data();
                const int rc = weft_coll(e.g, &m);
                WEFT_TCHECK_MSG(rc != 0,
                                "mismatched allreduce returned 0 on rank " + std::to_string(me));
                weft_coll_args bar{};
                bar.type = WEFT_COLL_BARRIER;
                run_ok(e, bar, "barrier after the mismatched allreduce");
            },
            opt));
    }
}

// Counts that put one member on the stage and another on the message path
// (an erroneous program): the member on the message path learns it in the
// round it runs first (shm_agree) and fails, and so does every member on the
// stage that waits for it; nobody waits for ever, and the group's next calls
// on both paths work. Two members on the message path with different counts
// fail before any data moves. Without that round each case below hangs (the
// run times out).
TEST(CollLarge, stage_against_messages)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    for (int config = 0; config < 4; ++config) {
        const int n = 2 + config % 2;
        const bool pieces = config >= 2;
        weft::test::run_options opt;
        opt.timeout_s = 300;
        opt.allow_log_errors = true;  // every case is a mismatch
        ASSERT_TRUE(weft::test::run_ranks(
            n, transport(),
            [&](rank_ctx &c) {
                // Above a 4 KiB slot: the message path (no single copy); with
                // `pieces`, bcast, reduce, allreduce (and allgather of 3) on
                // the stage a slot at a time instead.
                setenv("WEFT_COLL_SHM_SLOT", "4096", 1);
                setenv("WEFT_COLL_SHM_LARGE", pieces ? "1048576" : "0", 1);
                setenv("WEFT_COLL_SHM_DIRECT", "0", 1);
                coll_env e(c, oob.mem);
                const int me = c.rank;
                const auto un = std::size_t(n);
                constexpr std::size_t small = 64;  // words: n blocks fit a slot
                constexpr std::size_t big = 2048;
                std::vector<std::uint32_t> in(3000 * un, 1);
                std::vector<std::uint32_t> out(3000 * un, 0);
                weft_coll_args bar{};
                bar.type = WEFT_COLL_BARRIER;
                const weft_coll_type types[] = {
                    WEFT_COLL_BCAST,  WEFT_COLL_REDUCE,  WEFT_COLL_ALLREDUCE, WEFT_COLL_ALLGATHER,
                    WEFT_COLL_GATHER, WEFT_COLL_SCATTER, WEFT_COLL_ALLTOALL};
                for (weft_coll_type t : types) {
                    // The odd member on the message path: the root, then
                    // another; last, two counts on the message path.
                    for (int variant = 0; variant < 3; ++variant) {
                        const int odd = variant == 1 ? n - 1 : 0;
                        std::size_t count = me == odd ? big : small;
                        if (variant == 2) {
                            count = me == odd ? 3000 : big;
                        }
                        const std::uint64_t before =
                            weft_coll_group_calls(e.g, WEFT_COLL_PATH_MESSAGES);
                        weft_coll_args a{};
                        a.type = t;
                        a.datatype = WEFT_COLL_UINT32;
                        a.op = WEFT_COLL_SUM;
                        a.root = 0;
                        a.count = count;
                        a.sendbuf = t == WEFT_COLL_BCAST ? nullptr : in.data();
                        a.recvbuf = out.data();
                        const int rc = weft_coll(e.g, &a);
                        const std::string at = std::string(weft_coll_type_name(t)) + " variant " +
                                               std::to_string(variant) + " on rank " +
                                               std::to_string(me) + " of " + std::to_string(n);
                        const bool messages = count > small;
                        // Every member waits for every other in these.
                        const bool all_wait = t == WEFT_COLL_ALLREDUCE ||
                                              t == WEFT_COLL_ALLGATHER || t == WEFT_COLL_ALLTOALL;
                        if (messages || all_wait) {
                            WEFT_TCHECK_MSG(rc != 0, at + " returned 0");
                        }
                        // Refused before any message (or piece): nothing ran there.
                        WEFT_TCHECK_EQ(weft_coll_group_calls(e.g, WEFT_COLL_PATH_MESSAGES), before);
                        // Out of band first: no later stage call may release
                        // a member that waits (one would hang here).
                        c.barrier();
                        run_ok(e, bar, "barrier after " + at);
                    }
                }
                // The sequences are still in step: both paths work.
                const std::string at =
                    " after the mismatches on " + std::to_string(n) + (pieces ? " (pieces)" : "");
                const weft_coll_path big_path =
                    pieces ? WEFT_COLL_PATH_STAGE_PIECES : WEFT_COLL_PATH_MESSAGES;
                const std::uint64_t before = weft_coll_group_calls(e.g, big_path);
                check_sum_forms(e, big, at);
                WEFT_TCHECK(weft_coll_group_calls(e.g, big_path) > before);
                check_sum_forms(e, small, at);
                check_bcast_every_root(e, big, false, at);
            },
            opt));
    }
}

// A member that fails its part of a single-copy call makes the call fail on
// the member whose result it writes (the failed word), even when that
// member's own transfers succeed: a 2-member bcast split in halves, whose
// reader's second half is read-only, so the root's write of it fails in the
// kernel (cross-memory attach: an error, no crash). The reader's own read of
// the first half succeeds; it returns -WEFT_EIO all the same. The group works
// after.
/// Whether one process may read another's memory with process_vm_readv when
/// neither is the other's ancestor (the ranks are siblings): Yama's
/// ptrace_scope, seccomp or a container may forbid it, and the shm transport
/// then moves puts through active messages instead.
bool cma_between_siblings()
{
    static volatile std::uint64_t probe = 0x5eed;
    int hold[2];
    if (pipe(hold) != 0) {
        return false;
    }
    const pid_t target = fork();
    if (target == 0) {
        close(hold[1]);
        char c;
        (void)!read(hold[0], &c, 1);  // until the parent closes its end
        _exit(0);
    }
    close(hold[0]);
    const pid_t reader = fork();
    if (reader == 0) {
        close(hold[1]);
        std::uint64_t got = 0;
        iovec local{&got, sizeof(got)};
        iovec remote{const_cast<std::uint64_t *>(&probe), sizeof(got)};
        _exit(process_vm_readv(target, &local, 1, &remote, 1, 0) == sizeof(got) && got == 0x5eed
                  ? 0
                  : 1);
    }
    int st = 0;
    const bool ok =
        reader > 0 && waitpid(reader, &st, 0) == reader && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    close(hold[1]);
    if (target > 0) {
        waitpid(target, nullptr, 0);
    }
    const char *cma = std::getenv("WEFT_SHM_CMA");
    return ok && (cma == nullptr || (cma[0] != 'n' && cma[0] != '0'));
}

// Two members: a bcast, reduce or allreduce whose blocks reach the single-copy
// threshold stays on the stage while it fits a slot, or four slots in pieces
// (docs/collectives.md, "Single copy"); one word more goes single copy.
// Results checked.
TEST(CollLarge, two_members_keep_bcasts_and_reductions_on_the_stage_up_to_four_slots)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    ASSERT_TRUE(weft::test::run_ranks(2, transport(), [&](rank_ctx &c) {
        setenv("WEFT_COLL_SHM_DIRECT", "8192", 1);  // this child only
        setenv("WEFT_COLL_SHM_SLOT", "16384", 1);
        coll_env e(c, oob.mem);
        const int me = c.rank;
        for (const std::size_t count :
             {std::size_t(4096), std::size_t(16384), std::size_t(16385)}) {  // words
            const weft_coll_path path = count <= 4096    ? WEFT_COLL_PATH_STAGE
                                        : count <= 16384 ? WEFT_COLL_PATH_STAGE_PIECES
                                                         : WEFT_COLL_PATH_SINGLE_COPY;
            for (const weft_coll_type type :
                 {WEFT_COLL_BCAST, WEFT_COLL_REDUCE, WEFT_COLL_ALLREDUCE}) {
                const std::string w = std::string(weft_coll_type_name(type)) + " of " +
                                      std::to_string(count) + " words on rank " +
                                      std::to_string(me);
                std::vector<std::uint32_t> in(count);
                std::vector<std::uint32_t> out(count, 0);
                for (std::size_t i = 0; i < count; ++i) {
                    in[i] = std::uint32_t(i * 2654435761u) + std::uint32_t(me);
                }
                weft_coll_args a{};
                a.type = type;
                a.datatype = WEFT_COLL_UINT32;
                a.op = WEFT_COLL_SUM;
                a.root = 0;
                a.count = count;
                if (type == WEFT_COLL_BCAST) {
                    a.recvbuf = me == 0 ? in.data() : out.data();
                } else {
                    a.sendbuf = in.data();
                    a.recvbuf = out.data();
                }
                const std::uint64_t before = weft_coll_group_calls(e.g, path);
                const std::uint64_t direct = weft_coll_group_calls(e.g, WEFT_COLL_PATH_SINGLE_COPY);
                run_ok(e, a, w);
                WEFT_TCHECK_EQ(weft_coll_group_calls(e.g, path) - before, std::uint64_t(1));
                WEFT_TCHECK_EQ(weft_coll_group_calls(e.g, WEFT_COLL_PATH_SINGLE_COPY) - direct,
                               std::uint64_t(path == WEFT_COLL_PATH_SINGLE_COPY ? 1 : 0));
                if (type == WEFT_COLL_BCAST && me == 0) {
                    continue;
                }
                if (type == WEFT_COLL_REDUCE && me != 0) {
                    continue;
                }
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < count; ++i) {
                    const std::uint32_t want = type == WEFT_COLL_BCAST
                                                   ? std::uint32_t(i * 2654435761u)
                                                   : 2 * std::uint32_t(i * 2654435761u) + 1;
                    wrong += out[i] != want ? 1 : 0;
                }
                WEFT_TCHECK_MSG(wrong == 0, w + ": " + std::to_string(wrong) + " wrong words");
            }
        }
    }));
}

TEST(CollLarge, single_copy_partner_fails)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    if (!cma_between_siblings()) {
        // The root's write then goes through active messages, and the
        // reader's own handler would store into its read-only half.
        GTEST_SKIP() << "cross-memory attach between sibling processes is not permitted here "
                        "(ptrace_scope, seccomp or WEFT_SHM_CMA=n)";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.timeout_s = 120;
    opt.allow_log_errors = true;  // the failed write
    ASSERT_TRUE(weft::test::run_ranks(
        2, transport(),
        [&](rank_ctx &c) {
            setenv("WEFT_COLL_SHM_DIRECT", "65536", 1);
            setenv("WEFT_SHM_RMA_CMA_MIN", "65536", 1);  // halves of 256 KiB: the kernel writes
            coll_env e(c, oob.mem);
            const int me = c.rank;
            constexpr std::size_t half = 256 * 1024;
            constexpr std::size_t count = 2 * half / sizeof(std::uint32_t);
            void *m =
                mmap(nullptr, 2 * half, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            WEFT_TCHECK(m != MAP_FAILED);
            auto *buf = static_cast<std::uint32_t *>(m);
            auto value = [](int round, std::size_t i) {
                return std::uint32_t(round * 7919) ^ std::uint32_t(i * 2654435761u);
            };
            for (int round = 0; round < 2; ++round) {
                for (std::size_t i = 0; i < count; ++i) {
                    buf[i] = me == 0 ? value(round, i) : 0;
                }
                const bool faulty = round == 0 && me == 1;
                if (faulty) {
                    WEFT_TCHECK_EQ(mprotect(static_cast<std::byte *>(m) + half, half, PROT_READ),
                                   0);
                }
                const std::uint64_t before = weft_coll_group_calls(e.g, WEFT_COLL_PATH_SINGLE_COPY);
                weft_coll_args a{};
                a.type = WEFT_COLL_BCAST;
                a.datatype = WEFT_COLL_UINT32;
                a.root = 0;
                a.count = count;
                a.recvbuf = buf;
                const int rc = weft_coll(e.g, &a);
                WEFT_TCHECK_EQ(weft_coll_group_calls(e.g, WEFT_COLL_PATH_SINGLE_COPY), before + 1);
                if (round == 0) {
                    // The root's write failed: its error; the reader's, said
                    // by the root's failed word (its own read succeeded).
                    WEFT_TCHECK_MSG(rc != 0, "root's failed write returned 0");
                    if (me == 1) {
                        WEFT_TCHECK_EQ(rc, -WEFT_EIO);
                        bool first_half = true;
                        for (std::size_t i = 0; i < half / sizeof(std::uint32_t); ++i) {
                            first_half = first_half && buf[i] == value(round, i);
                        }
                        WEFT_TCHECK_MSG(first_half, "the reader's own half is wrong");
                        WEFT_TCHECK_EQ(mprotect(static_cast<std::byte *>(m) + half, half,
                                                PROT_READ | PROT_WRITE),
                                       0);
                    }
                } else {
                    WEFT_TCHECK_EQ(rc, 0);
                    std::size_t wrong = 0;
                    for (std::size_t i = 0; i < count; ++i) {
                        wrong += buf[i] != value(round, i) ? 1 : 0;
                    }
                    WEFT_TCHECK_EQ(wrong, std::size_t(0));
                }
                c.barrier();
            }
            munmap(m, 2 * half);
        },
        opt));
}

// Single copy (docs/collectives.md): blocks of at least WEFT_COLL_SHM_DIRECT
// bytes are read straight from their owners' buffers. Every collective of the
// path (reductions: float sums in rank order, bit for bit),
// at every root, in place where MPI allows it, on 2-4 ranks, just below
// and at the threshold, at twice it (a 2-member bcast whose root writes the
// second half: through active messages below the transport's CMA minimum)
// and far above it; the path taken is checked with
// weft_coll_group_calls, and so is that 0 turns the path off. Counts that
// differ between ranks end in an error on every rank, and in no hang.
TEST(CollLarge, single_copy)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    constexpr std::size_t threshold = 8192;  // bytes: 2048 words
    for (int n : {2, 3, 4}) {
        for (bool off : {false, true}) {
            weft::test::run_options opt;
            opt.timeout_s = 600;
            opt.allow_log_errors = true;  // the mismatched counts at the end
            ASSERT_TRUE(weft::test::run_ranks(
                n, transport(),
                [&](rank_ctx &c) {
                    // This child only. Only what the stage does not take goes
                    // single copy (2 members: bcasts and reductions that fit a
                    // slot stay there): a slot smaller than the blocks, and no
                    // pieces.
                    setenv("WEFT_COLL_SHM_DIRECT", off ? "0" : std::to_string(threshold).c_str(),
                           1);
                    setenv("WEFT_COLL_SHM_SLOT", "4096", 1);
                    setenv("WEFT_COLL_SHM_LARGE", "0", 1);
                    coll_env e(c, oob.mem);
                    const int me = c.rank;
                    const auto un = std::size_t(n);
                    auto word = [](int from, int to, std::size_t i) {
                        return std::uint32_t(from) << 24 ^ std::uint32_t(to) << 16 ^
                               std::uint32_t(i * 2654435761u);
                    };
                    auto direct_calls = [&] {
                        return weft_coll_group_calls(e.g, WEFT_COLL_PATH_SINGLE_COPY);
                    };
                    auto expect = [&](const std::vector<std::uint32_t> &got, std::size_t at,
                                      int from, int to, std::size_t len, const std::string &w) {
                        for (std::size_t i = 0; i < len; ++i) {
                            if (got[at + i] != word(from, to, i)) {
                                WEFT_TCHECK_MSG(false, w + ": element " + std::to_string(i) +
                                                           " of the block from " +
                                                           std::to_string(from));
                                return;
                            }
                        }
                    };
                    for (std::size_t count :
                         {threshold / 4 - 1, threshold / 4, threshold / 2, std::size_t(300001)}) {
                        const bool direct = !off && count * 4 >= threshold;
                        const std::string at = " count " + std::to_string(count) + " on " +
                                               std::to_string(n) + " rank " + std::to_string(me) +
                                               (off ? " (off)" : "");
                        const std::uint64_t before = direct_calls();
                        std::uint64_t calls = 0;
                        weft_coll_args a{};
                        a.datatype = WEFT_COLL_UINT32;
                        a.count = count;
                        // bcast, every root
                        for (int root = 0; root < n; ++root) {
                            std::vector<std::uint32_t> buf(count);
                            for (std::size_t i = 0; i < count; ++i) {
                                buf[i] = me == root ? word(root, 0, i) : 0;
                            }
                            a.type = WEFT_COLL_BCAST;
                            a.root = std::uint32_t(root);
                            a.sendbuf = nullptr;
                            a.recvbuf = buf.data();
                            run_ok(e, a, "bcast" + at);
                            ++calls;
                            expect(buf, 0, root, 0, count, "bcast" + at);
                        }
                        // allgather (root < 0) or gather: in place at the root (every
                        // member for allgather) or not; the result checked where it is
                        auto gathered = [&](int root, bool in_place) {
                            const bool everyone = root < 0;
                            const bool ip = in_place && (everyone || me == root);
                            const std::string w = (everyone ? "allgather" : "gather") + at;
                            std::vector<std::uint32_t> mine(count);
                            std::vector<std::uint32_t> all(count * un, 0);
                            for (std::size_t i = 0; i < count; ++i) {
                                (ip ? all.data() + std::size_t(me) * count : mine.data())[i] =
                                    word(me, 0, i);
                            }
                            a.type = everyone ? WEFT_COLL_ALLGATHER : WEFT_COLL_GATHER;
                            a.root = everyone ? 0 : std::uint32_t(root);
                            a.sendbuf = ip ? WEFT_COLL_IN_PLACE : mine.data();
                            a.recvbuf = all.data();
                            run_ok(e, a, w);
                            ++calls;
                            if (everyone || me == root) {
                                for (int r = 0; r < n; ++r) {
                                    expect(all, std::size_t(r) * count, r, 0, count, w);
                                }
                            }
                        };
                        for (bool in_place : {false, true}) {
                            gathered(-1, in_place);
                        }
                        // gather and scatter, every root, in place at the root and not
                        for (int root = 0; root < n; ++root) {
                            for (bool in_place : {false, true}) {
                                gathered(root, in_place);
                                const bool ip = in_place && me == root;
                                std::vector<std::uint32_t> blocks(count * un, 0);
                                std::vector<std::uint32_t> got(count, 0);
                                if (me == root) {
                                    for (int r = 0; r < n; ++r) {
                                        for (std::size_t i = 0; i < count; ++i) {
                                            blocks[std::size_t(r) * count + i] = word(root, r, i);
                                        }
                                    }
                                }
                                a.type = WEFT_COLL_SCATTER;
                                a.sendbuf = blocks.data();
                                a.recvbuf = ip ? WEFT_COLL_IN_PLACE : got.data();
                                run_ok(e, a, "scatter" + at);
                                ++calls;
                                if (!ip) {
                                    expect(got, 0, root, me, count, "scatter" + at);
                                }
                            }
                        }
                        // reduce (every root, in place at the root and not) and
                        // allreduce (in place stays off the path): float sums, whose
                        // bits depend on the order: rank order, as the reference
                        auto input = [&](int r, std::size_t i) {
                            return float(word(r, 0, i) % 1000) * 0.37f;
                        };
                        std::vector<float> ref(count);
                        for (std::size_t i = 0; i < count; ++i) {
                            ref[i] = input(0, i) + input(1, i);
                            for (int r = 2; r < n; ++r) {
                                ref[i] = ref[i] + input(r, i);
                            }
                        }
                        // Other paths may associate differently: close, then.
                        auto same_floats = [&](const std::vector<float> &got, bool exact,
                                               const std::string &w) {
                            if (exact) {
                                if (std::memcmp(got.data(), ref.data(), count * sizeof(float)) !=
                                    0) {
                                    WEFT_TCHECK_MSG(false, w + ": not the rank-order sum");
                                }
                                return;
                            }
                            for (std::size_t i = 0; i < count; ++i) {
                                if (std::abs(got[i] - ref[i]) > 1e-3f * (1.0f + std::abs(ref[i]))) {
                                    WEFT_TCHECK_MSG(false, w + ": element " + std::to_string(i));
                                    return;
                                }
                            }
                        };
                        for (int root = -1; root < n; ++root) {
                            for (bool in_place : {false, true}) {
                                const bool all = root < 0;
                                const bool ip = in_place && (all || me == root);
                                std::vector<float> mine(count);
                                std::vector<float> res(count, 0.0f);
                                for (std::size_t i = 0; i < count; ++i) {
                                    (ip ? res : mine)[i] = input(me, i);
                                }
                                a.type = all ? WEFT_COLL_ALLREDUCE : WEFT_COLL_REDUCE;
                                a.datatype = WEFT_COLL_FLOAT;
                                a.op = WEFT_COLL_SUM;
                                a.root = all ? 0 : std::uint32_t(root);
                                a.sendbuf = ip ? WEFT_COLL_IN_PLACE : mine.data();
                                a.recvbuf = res.data();
                                const std::string w = (all ? "allreduce" : "reduce") + at +
                                                      (in_place ? " in place" : "");
                                run_ok(e, a, w);
                                // More than 2 members: in parts of at least the
                                // threshold each (a reduce's root weighs 5, the
                                // others 3; docs/collectives.md), a reduce in place
                                // at its root too (at roots 2 and 3 its input is
                                // not an operand of the first combine).
                                const bool parts = all ? count / un * 4 >= threshold
                                                       : count * 3 / (3 * un + 2) * 4 >= threshold;
                                const bool on_path = !(all && in_place) && (n == 2 || parts);
                                calls += on_path ? 1 : 0;
                                if (all || me == root) {
                                    same_floats(res, direct && on_path, w);
                                }
                            }
                        }
                        a.datatype = WEFT_COLL_UINT32;
                        // alltoall (in place stays off the path)
                        for (bool in_place : {false, true}) {
                            std::vector<std::uint32_t> src(count * un);
                            std::vector<std::uint32_t> dst(count * un, 0);
                            auto &fill = in_place ? dst : src;
                            for (int r = 0; r < n; ++r) {
                                for (std::size_t i = 0; i < count; ++i) {
                                    fill[std::size_t(r) * count + i] = word(me, r, i);
                                }
                            }
                            a.type = WEFT_COLL_ALLTOALL;
                            a.sendbuf = in_place ? WEFT_COLL_IN_PLACE : src.data();
                            a.recvbuf = dst.data();
                            run_ok(e, a, "alltoall" + at);
                            calls += in_place ? 0 : 1;
                            for (int r = 0; r < n; ++r) {
                                expect(dst, std::size_t(r) * count, r, me, count, "alltoall" + at);
                            }
                        }
                        WEFT_TCHECK_EQ(direct_calls() - before, direct ? calls : 0);
                    }
                    if (!off) {
                        // Counts that differ, both on the path: an error everywhere.
                        std::vector<std::uint32_t> mine(5000, 7);
                        std::vector<std::uint32_t> all(5000 * un);
                        weft_coll_args m{};
                        m.type = WEFT_COLL_ALLGATHER;
                        m.datatype = WEFT_COLL_UINT32;
                        m.count = me == 0 ? 4000 : 5000;
                        m.sendbuf = mine.data();
                        m.recvbuf = all.data();
                        const int rc = weft_coll(e.g, &m);
                        WEFT_TCHECK_MSG(rc != 0, "mismatched allgather returned 0 on rank " +
                                                     std::to_string(me));
                        weft_coll_args bar{};
                        bar.type = WEFT_COLL_BARRIER;
                        run_ok(e, bar, "barrier after the mismatched allgather");
                        // 2 members whose counts put them in different forms: a
                        // split bcast against one that is not, a reduce in parts
                        // against one that is not, a reduce on the stage against
                        // one in single copy. Each must end in an error on both
                        // members (a member waiting for the other's buffer learns
                        // that it finished without one), never in a hang; but a
                        // reduce's non-root on the stage reads nothing and says
                        // nothing (the stage's rule: the members that see it).
                        struct mismatch {
                            const char *what;
                            weft_coll_type type;
                            std::size_t root_count, other_count;
                            bool other_fails;
                        };
                        const mismatch cases[] = {
                            {"bcast split / not split", WEFT_COLL_BCAST, 5000, 4000, true},
                            {"reduce in parts / not", WEFT_COLL_REDUCE, 6000, 5000, true},
                            {"reduce not / in parts", WEFT_COLL_REDUCE, 5000, 6000, true},
                            {"reduce on the stage / single copy", WEFT_COLL_REDUCE, 1000, 5000,
                             true},
                            {"reduce single copy / on the stage", WEFT_COLL_REDUCE, 5000, 1000,
                             false},
                        };
                        for (const mismatch &k : cases) {
                            if (n != 2) {
                                break;  // the forms above are 2-member ones
                            }
                            std::vector<float> in(6000, 1.0f);
                            std::vector<float> res(6000, 0.0f);
                            weft_coll_args x{};
                            x.type = k.type;
                            x.datatype = WEFT_COLL_FLOAT;
                            x.op = WEFT_COLL_SUM;
                            x.root = 0;
                            x.count = me == 0 ? k.root_count : k.other_count;
                            x.sendbuf = k.type == WEFT_COLL_BCAST ? nullptr : in.data();
                            x.recvbuf = res.data();
                            const int xrc = weft_coll(e.g, &x);
                            WEFT_TCHECK_MSG(
                                xrc != 0 || (me != 0 && !k.other_fails),
                                std::string(k.what) + " returned 0 on rank " + std::to_string(me));
                            // Out of band first: no later stage call may release a
                            // member that waits (one would hang here, and time out).
                            c.barrier();
                            run_ok(e, bar, std::string("barrier after ") + k.what);
                        }
                    }
                },
                opt));
        }
    }
}

// Bad input: refused with -WEFT_EINVAL and a logged reason, never a crash;
// counts that differ between ranks end in an error on the rank that receives
// too much (truncation), and in no hang.
TEST(CollBadInput, refused_with_a_reason)
{
    if (!weft::test::transport_unavailable(transport(), weft::test::base_caps).empty()) {
        GTEST_SKIP() << "shm unavailable";
    }
    oob_area oob;
    ASSERT_NE(oob.mem, nullptr);
    weft::test::run_options opt;
    opt.allow_log_errors = true;
    ASSERT_TRUE(weft::test::run_ranks(
        3, transport(),
        [&](rank_ctx &c) {
            coll_env e(c, oob.mem);
            std::vector<std::int32_t> buf(64);
            std::vector<std::int32_t> out(64 * 3);
            weft_coll_request_t *r = nullptr;
            auto refused = [&](weft_coll_args a, const char *why) {
                WEFT_TCHECK_MSG(weft_coll_init(e.g, &a, &r) == -WEFT_EINVAL, why);
            };
            weft_coll_args a{};
            a.type = WEFT_COLL_ALLREDUCE;
            a.datatype = WEFT_COLL_INT32;
            a.op = WEFT_COLL_SUM;
            a.count = 4;
            a.sendbuf = buf.data();
            a.recvbuf = out.data();
            weft_coll_args x = a;
            x.op = WEFT_COLL_MINLOC;
            refused(x, "MINLOC on INT32");
            x = a;
            x.datatype = weft_coll_datatype(77);
            refused(x, "not a datatype");
            x = a;
            x.type = weft_coll_type(99);
            refused(x, "not a type");
            x = a;
            x.type = WEFT_COLL_BCAST;
            x.root = 3;
            refused(x, "root outside the group");
            x = a;
            x.algorithm = WEFT_COLL_ALG_BRUCK;
            refused(x, "Bruck is not an allreduce");
            x = a;
            x.type = WEFT_COLL_ALLGATHER;
            x.algorithm = WEFT_COLL_ALG_RECURSIVE_DOUBLING;
            refused(x, "recursive doubling allgather on 3 ranks");
            x = a;
            x.count = SIZE_MAX / 2;
            refused(x, "count overflows");
            x = a;
            x.type = WEFT_COLL_ALLGATHERV;
            refused(x, "allgatherv without recvcounts");
            x = a;
            x.recvbuf = WEFT_COLL_IN_PLACE;
            refused(x, "recvbuf in place");
            x = a;
            x.type = WEFT_COLL_BCAST;
            x.sendbuf = WEFT_COLL_IN_PLACE;
            refused(x, "bcast in place");
            x = a;
            x.flags = 1u << 7;
            refused(x, "unknown flag");
            // NULL where this member moves data: refused (never a crash), by
            // weft_coll_init and by weft_coll (whose stage checks first).
            x = a;
            x.sendbuf = nullptr;
            refused(x, "allreduce from NULL");
            WEFT_TCHECK_EQ(weft_coll(e.g, &x), -WEFT_EINVAL);
            x = a;
            x.recvbuf = nullptr;
            refused(x, "allreduce into NULL");
            WEFT_TCHECK_EQ(weft_coll(e.g, &x), -WEFT_EINVAL);
            x = a;
            x.type = WEFT_COLL_BCAST;
            x.sendbuf = nullptr;
            x.recvbuf = nullptr;
            refused(x, "bcast into NULL");
            WEFT_TCHECK_EQ(weft_coll(e.g, &x), -WEFT_EINVAL);
            x.type = WEFT_COLL_ALLTOALLV;
            const std::size_t counts[3] = {0, 1, 0};
            const std::size_t displs[3] = {0, 0, 1};
            x.sendcounts = counts;
            x.sdispls = displs;
            x.recvcounts = counts;
            x.rdispls = displs;
            x.sendbuf = buf.data();
            refused(x, "alltoallv into NULL");
            // ... but not where it is not used: a gather's recvbuf off the
            // root, an exscan's on the first member, a count of 0.
            auto taken = [&](weft_coll_args y, const char *what) {
                weft_coll_request_t *q = nullptr;
                WEFT_TCHECK_MSG(weft_coll_init(e.g, &y, &q) == 0, what);
                WEFT_TCHECK_EQ(weft_coll_request_free(q), 0);
            };
            x = a;
            x.type = WEFT_COLL_GATHER;
            x.root = 2;
            x.recvbuf = c.rank == 2 ? out.data() : nullptr;
            taken(x, "gather with NULL recvbuf off the root");
            x = a;
            x.type = WEFT_COLL_EXSCAN;
            x.recvbuf = c.rank == 0 ? nullptr : out.data();
            taken(x, "exscan with NULL recvbuf on the first member");
            x = a;
            x.count = 0;
            x.sendbuf = nullptr;
            x.recvbuf = nullptr;
            taken(x, "allreduce of 0 elements with NULL buffers");
            WEFT_TCHECK_EQ(weft_coll(e.g, &x), 0);
            x = a;
            x.type = WEFT_COLL_EXSCAN;
            x.sendbuf = WEFT_COLL_IN_PLACE;
            x.recvbuf = nullptr;
            refused(x, "exscan in place into NULL (the first member's input too)");
            // One member refuses (NULL), the others' arguments are good: they
            // learn it on the stage and fail too, instead of waiting for it.
            x = a;
            x.recvbuf = c.rank == 1 ? nullptr : out.data();
            const int one = weft_coll(e.g, &x);
            WEFT_TCHECK_MSG(one == -WEFT_EINVAL,
                            "allreduce with one member's NULL recvbuf returned " +
                                std::to_string(one) + " on rank " + std::to_string(c.rank));
            // A non-persistent request runs once.
            WEFT_TCHECK_EQ(weft_coll_init(e.g, &a, &r), 0);
            WEFT_TCHECK_EQ(weft_coll_start(r), 0);
            WEFT_TCHECK_EQ(weft_coll_wait(r, 60000), 0);
            WEFT_TCHECK_EQ(weft_coll_start(r), -WEFT_EINVAL);
            WEFT_TCHECK_EQ(weft_coll_request_free(r), 0);
            // Counts that differ between ranks: rank 1 expects fewer elements
            // than the others send it.
            x = a;
            x.type = WEFT_COLL_BCAST;
            x.root = 0;
            x.count = c.rank == 1 ? 4 : 64;
            x.recvbuf = buf.data();
            const int rc = weft_coll(e.g, &x);
            if (c.rank == 1) {
                WEFT_TCHECK_EQ(rc, -WEFT_ETRUNC);
            } else {
                WEFT_TCHECK_EQ(rc, 0);
            }
            // The same over the network in the triggered form (a request the
            // caller starts): the rank that receives too much fails, its request
            // cannot run again, and freeing it, the group and the context is safe.
            x.algorithm = WEFT_COLL_ALG_BINOMIAL;
            x.count = c.rank == 1 ? 4 : 64;
            weft_coll_request_t *t = nullptr;
            WEFT_TCHECK_EQ(weft_coll_init(e.g, &x, &t), 0);
            WEFT_TCHECK_EQ(weft_coll_start(t), 0);
            WEFT_TCHECK_EQ(weft_coll_request_triggered(t), 1);
            const int trc = weft_coll_wait(t, 60000);
            if (c.rank == 1) {
                WEFT_TCHECK(trc == -WEFT_ETRUNC || trc == -WEFT_EOTHER);
                WEFT_TCHECK_EQ(weft_coll_start(t), -WEFT_EINVAL);
            } else {
                WEFT_TCHECK_EQ(trc, 0);
            }
            WEFT_TCHECK_EQ(weft_coll_request_free(t), 0);
            // The group still works afterwards.
            WEFT_TCHECK_EQ(weft_coll(e.g, &a), 0);
        },
        opt));
}

}  // namespace
