// PMIx address exchange behind weft_av_load_pmix().
//
// Lifetime of the PMIx client: weft calls PMIx_Init once per process (the first
// exchange) and keeps that reference until exit. It does not finalize after each
// exchange because a later exchange (another endpoint, another AV) needs the same
// client, and because PMIx_Init/PMIx_Finalize are reference counted against any
// other user in the process (Open MPI's runtime): dropping our reference early
// could tear the client down under them or be a no-op depending on who came
// first. It must still finalize before the process exits: an Open MPI 4 mpirun
// reports a process that connected to its PMIx server and exited without
// PMIx_Finalize as "exiting improperly" and fails the job, even on exit code 0.
// So the reference is released by an atexit() handler, which runs on a normal
// exit (return from main, exit()) and not on _exit() or a crash, where the server
// notices the dropped connection anyway.
//
// A failed PMIx_Init (no server: PMIX_ERR_UNREACH) leaves PMIx_Initialized()
// returning true; we PMIx_Finalize at once so that the next attempt starts clean.

#include "config.h"

#include "core/pmix.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/log.hpp"

#ifdef WEFT_HAVE_PMIX
#include <pmix.h>
#endif

namespace weft::core {

using base::status;

#ifdef WEFT_HAVE_PMIX

namespace {

/// The process's PMIx client, initialised by the first exchange.
struct pmix_client {
    std::mutex lock;  ///< serialises exchanges (setup path only)
    bool initialised = false;
    pmix_proc_t self{};
    std::uint32_t exchanges = 0;  ///< exchanges done; names the key of the next one
};

pmix_client &client()
{
    // Never destroyed: the atexit handler may run after static destructors of
    // objects constructed later than this one.
    static pmix_client *c = new pmix_client;
    return *c;
}

void finalize_at_exit()
{
    pmix_client &c = client();
    if (c.initialised) {
        c.initialised = false;
        (void)PMIx_Finalize(nullptr, 0);
    }
}

/// Owns one pmix_value_t returned by PMIx_Get.
struct value_ptr {
    pmix_value_t *v = nullptr;
    value_ptr() = default;
    value_ptr(const value_ptr &) = delete;
    value_ptr &operator=(const value_ptr &) = delete;
    ~value_ptr()
    {
        if (v != nullptr) {
            PMIX_VALUE_RELEASE(v);
        }
    }
};

[[nodiscard]] status init_locked(pmix_client &c)
{
    if (c.initialised) {
        return status::ok;
    }
    // PMIx_Init is reference counted: when a host (MPI) has initialised PMIx
    // already, this only takes our own reference and tells us our identity.
    const bool host_initialised = PMIx_Initialized() != 0;
    const pmix_status_t rc = PMIx_Init(&c.self, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        // Undo our partial initialisation so that PMIx_Initialized() is false
        // again (never the host's: that reference is not ours to drop).
        if (!host_initialised) {
            (void)PMIx_Finalize(nullptr, 0);
        }
        if (rc == PMIX_ERR_UNREACH) {
            WEFT_LOG(pmix, error,
                     "no PMIx server reachable (PMIx_Init: %s): run under a PMIx launcher "
                     "such as mpirun or srun --mpi=pmix",
                     PMIx_Error_string(rc));
            return status::unreachable;
        }
        WEFT_LOG(pmix, error, "PMIx_Init failed: %s (%d)", PMIx_Error_string(rc), rc);
        return status::io_error;
    }
    c.initialised = true;
    base::log_set_rank(c.self.rank);
    static bool registered = false;
    if (!registered) {
        registered = true;
        if (std::atexit(finalize_at_exit) != 0) {
            WEFT_LOG(pmix, warn, "atexit failed: PMIx_Finalize will not run at exit");
        }
    }
    WEFT_LOG(pmix, debug, "PMIx client %s:%u initialised%s", c.self.nspace, c.self.rank,
             host_initialised ? " (PMIx was already initialised in this process)" : "");
    return status::ok;
}

[[nodiscard]] status job_size(const pmix_client &c, std::uint32_t &size)
{
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, c.self.nspace, PMIX_RANK_WILDCARD);
    value_ptr val;
    const pmix_status_t rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &val.v);
    if (rc != PMIX_SUCCESS || val.v == nullptr) {
        WEFT_LOG(pmix, error, "PMIx_Get(%s) failed: %s", PMIX_JOB_SIZE, PMIx_Error_string(rc));
        return status::io_error;
    }
    if (val.v->type != PMIX_UINT32) {
        WEFT_LOG(pmix, error, "PMIx_Get(%s) returned type %s, expected uint32", PMIX_JOB_SIZE,
                 PMIx_Data_type_string(val.v->type));
        return status::bad_message;
    }
    size = val.v->data.uint32;
    if (size == 0 || c.self.rank >= size) {
        WEFT_LOG(pmix, error, "inconsistent PMIx job: rank %u, job size %u", c.self.rank, size);
        return status::bad_message;
    }
    return status::ok;
}

}  // namespace

status pmix_exchange(const void *addr, std::size_t len, std::size_t max_len,
                     std::vector<std::vector<std::uint8_t>> &all, std::uint32_t &rank,
                     std::uint32_t &size)
{
    if (addr == nullptr || len == 0) {
        return status::invalid;
    }
    pmix_client &c = client();
    std::lock_guard<std::mutex> guard(c.lock);
    status s = init_locked(c);
    if (s != status::ok) {
        return s;
    }

    // Each exchange uses its own key: PMIx does not promise that a Get after a
    // second fence returns a re-put value rather than the copy the client cached
    // from the first one, so a second endpoint could be given the first one's
    // address. Every rank performs the exchanges in the same order (each is a
    // collective), so the n-th exchange has the same key everywhere.
    const std::string key =
        c.exchanges == 0 ? std::string("weft.addr") : "weft.addr." + std::to_string(c.exchanges);
    ++c.exchanges;

    pmix_value_t mine;
    PMIX_VALUE_CONSTRUCT(&mine);
    mine.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the value; the cast only satisfies the non-const field type.
    mine.data.bo.bytes = static_cast<char *>(const_cast<void *>(addr));
    mine.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &mine);
    if (rc != PMIX_SUCCESS) {
        WEFT_LOG(pmix, error, "PMIx_Put(%s) failed: %s", key.c_str(), PMIx_Error_string(rc));
        return status::io_error;
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        WEFT_LOG(pmix, error, "PMIx_Commit failed: %s", PMIx_Error_string(rc));
        return status::io_error;
    }

    pmix_info_t collect;
    PMIX_INFO_CONSTRUCT(&collect);
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(nullptr, 0, &collect, 1);
    PMIX_INFO_DESTRUCT(&collect);
    if (rc != PMIX_SUCCESS) {
        WEFT_LOG(pmix, error, "PMIx_Fence failed: %s", PMIx_Error_string(rc));
        return status::io_error;
    }

    std::uint32_t n = 0;
    s = job_size(c, n);
    if (s != status::ok) {
        return s;
    }

    all.assign(n, {});
    for (std::uint32_t r = 0; r < n; ++r) {
        pmix_proc_t peer;
        PMIX_LOAD_PROCID(&peer, c.self.nspace, r);
        value_ptr val;
        rc = PMIx_Get(&peer, key.c_str(), nullptr, 0, &val.v);
        if (rc != PMIX_SUCCESS || val.v == nullptr) {
            WEFT_LOG(pmix, error, "PMIx_Get(rank %u, %s) failed: %s", r, key.c_str(),
                     PMIx_Error_string(rc));
            return status::io_error;
        }
        if (val.v->type != PMIX_BYTE_OBJECT) {
            WEFT_LOG(pmix, error, "PMIx_Get(rank %u, %s) returned type %s, expected byte object", r,
                     key.c_str(), PMIx_Data_type_string(val.v->type));
            return status::bad_message;
        }
        if (val.v->data.bo.size == 0 || val.v->data.bo.size > max_len ||
            val.v->data.bo.bytes == nullptr) {
            WEFT_LOG(pmix, error, "PMIx_Get(rank %u, %s) returned %zu bytes, expected 1 to %zu", r,
                     key.c_str(), val.v->data.bo.size, max_len);
            return status::bad_message;
        }
        const auto *b = reinterpret_cast<const std::uint8_t *>(val.v->data.bo.bytes);
        all[r].assign(b, b + val.v->data.bo.size);
    }
    rank = c.self.rank;
    size = n;
    WEFT_LOG(pmix, debug, "exchanged the addresses of %u ranks (ours %zu bytes, key %s)", n, len,
             key.c_str());
    return status::ok;
}

#else  // !WEFT_HAVE_PMIX

status pmix_exchange(const void *, std::size_t, std::size_t,
                     std::vector<std::vector<std::uint8_t>> &all, std::uint32_t &rank,
                     std::uint32_t &size)
{
    all.clear();
    rank = 0;
    size = 0;
    WEFT_LOG(pmix, error, "weft was built without PMIx: weft_av_load_pmix is not available");
    return status::not_supported;
}

#endif  // WEFT_HAVE_PMIX

}  // namespace weft::core
