// The PMIx client of weft_perf: rank, job size, the UCX address exchange, fences,
// and failing the whole job loudly.
//
// weft_perf calls PMIx directly (not MPI): Open MPI's mpirun is a PMIx server.
// PMIx_Init/PMIx_Finalize are reference counted, so libweft's own PMIx client
// (weft_av_load_pmix) and this one coexist in the process.

#include <pmix.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perf/weft_perf.hpp"

namespace weft::perf {

namespace {

bool g_active = false;
int g_rank = -1;
pmix_proc_t g_self;

void vreport(const char *what, const char *fmt, va_list ap)
{
    char msg[1024];
    std::vsnprintf(msg, sizeof(msg), fmt, ap);
    if (g_rank >= 0) {
        std::fprintf(stderr, "weft_perf[rank %d]: %s: %s\n", g_rank, what, msg);
    } else {
        std::fprintf(stderr, "weft_perf: %s: %s\n", what, msg);
    }
    std::fflush(stderr);
}

}  // namespace

const char *bench_name(bench_kind k) noexcept
{
    switch (k) {
        case bench_kind::lat:
            return "lat";
        case bench_kind::bw:
            return "bw";
        case bench_kind::bibw:
            return "bibw";
        case bench_kind::rate:
            return "rate";
        case bench_kind::put_lat:
            return "put_lat";
        case bench_kind::get_lat:
            return "get_lat";
        case bench_kind::fadd_lat:
            return "fadd_lat";
        case bench_kind::cswap_lat:
            return "cswap_lat";
        case bench_kind::put_pp:
            return "put_pp";
        case bench_kind::put_bw:
            return "put_bw";
        case bench_kind::get_bw:
            return "get_bw";
        case bench_kind::put_rate:
            return "put_rate";
    }
    return "?";
}

void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    std::fflush(stdout);
    if (g_active) {
        // Ends every process of the job: the peer may be blocked in a wait
        // that will never complete now.
        (void)PMIx_Abort(1, "weft_perf failed", nullptr, 0);
    }
    std::exit(1);
}

void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("warning", fmt, ap);
    va_end(ap);
}

bool bootstrap_active() noexcept
{
    return g_active;
}

int bootstrap_rank() noexcept
{
    return g_rank;
}

void bootstrap::init()
{
    pmix_status_t rc = PMIx_Init(&g_self, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        if (rc == PMIX_ERR_UNREACH) {
            fail(
                "PMIx_Init failed: %s (%d): no PMIx server is reachable. weft_perf must be "
                "started by a PMIx launcher, e.g. `mpirun -np 2 weft_perf ...` (as root add "
                "--allow-run-as-root)",
                PMIx_Error_string(rc), rc);
        }
        fail("PMIx_Init failed: %s (%d)", PMIx_Error_string(rc), rc);
    }
    g_active = true;
    rank_ = g_self.rank;
    g_rank = static_cast<int>(rank_);

    // There is no PMIX_SIZE: the job size is PMIX_JOB_SIZE on the wildcard rank.
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, g_self.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *val = nullptr;
    rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Get(%s) failed: %s (%d)", PMIX_JOB_SIZE, PMIx_Error_string(rc), rc);
    }
    if (val->type != PMIX_UINT32) {
        fail("PMIx_Get(%s) returned type %s, expected uint32", PMIX_JOB_SIZE,
             PMIx_Data_type_string(val->type));
    }
    size_ = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
}

void bootstrap::finalize()
{
    if (!g_active) {
        return;
    }
    const pmix_status_t rc = PMIx_Finalize(nullptr, 0);
    g_active = false;
    if (rc != PMIX_SUCCESS) {
        warn("PMIx_Finalize failed: %s (%d)", PMIx_Error_string(rc), rc);
    }
}

std::vector<char> bootstrap::exchange(const char *key, const void *data, std::size_t len,
                                      std::uint32_t peer)
{
    pmix_value_t mine;
    PMIX_VALUE_CONSTRUCT(&mine);
    mine.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the value; the cast only satisfies the non-const field.
    mine.data.bo.bytes = static_cast<char *>(const_cast<void *>(data));
    mine.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &mine);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Put(%s) failed: %s (%d)", key, PMIx_Error_string(rc), rc);
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Commit failed: %s (%d)", PMIx_Error_string(rc), rc);
    }
    pmix_info_t collect;
    PMIX_INFO_CONSTRUCT(&collect);
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(nullptr, 0, &collect, 1);
    PMIX_INFO_DESTRUCT(&collect);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Fence(collect) failed: %s (%d)", PMIx_Error_string(rc), rc);
    }

    pmix_proc_t other;
    PMIX_LOAD_PROCID(&other, g_self.nspace, peer);
    pmix_value_t *val = nullptr;
    rc = PMIx_Get(&other, key, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Get(rank %u, %s) failed: %s (%d)", peer, key, PMIx_Error_string(rc), rc);
    }
    if (val->type != PMIX_BYTE_OBJECT) {
        fail("PMIx_Get(rank %u, %s) returned type %s, expected a byte object", peer, key,
             PMIx_Data_type_string(val->type));
    }
    std::vector<char> out(val->data.bo.bytes, val->data.bo.bytes + val->data.bo.size);
    PMIX_VALUE_RELEASE(val);
    return out;
}

void bootstrap::fence()
{
    const pmix_status_t rc = PMIx_Fence(nullptr, 0, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Fence failed: %s (%d)", PMIx_Error_string(rc), rc);
    }
}

}  // namespace weft::perf
