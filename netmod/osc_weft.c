/*
 * osc_weft.c: Open MPI's `osc weft` component, MPI one-sided communication
 * over weft's RMA, atomics and counters (docs/mpi.md, "One-sided: osc weft").
 *
 * One weft endpoint per process for every window (opened at the first window,
 * with its own fabric, domain, address vector, CQ and one counter of
 * completed operations). Per window:
 *
 *   - the window memory registered with weft (create: the user's memory;
 *     allocate: weft_mr_alloc, which peers on the node map; allocate_shared:
 *     one weft_mr_alloc on the window's rank 0 that every rank maps, parts
 *     laid out back to back; dynamic: each attached region registered alone);
 *   - a small state region per rank (weft_mr_alloc): the passive-target lock
 *     word, the accumulate lock, the post-start-complete-wait counters and,
 *     for dynamic windows, the table of attached regions with their keys;
 *   - one allgather over a duplicate of the communicator of every rank's
 *     address, window base, size, displacement unit and packed keys.
 *
 * Operations: put and get (any datatypes: segment lists paired, one weft
 * operation per contiguous piece); accumulate, get_accumulate, fetch_and_op
 * and compare_and_swap as weft atomics (each element atomic, one round trip,
 * in posting order per target), and for what weft's atomics do not take
 * (MINLOC/MAXLOC, pair types, long double complex) under the target's
 * accumulate lock as get, combine, put. Request-based forms complete from the
 * CQ (each piece posted with WEFT_COMPLETION and the request as context);
 * other operations are counted by the counter only.
 *
 * Synchronization: fence is a flush plus a barrier; post adds one to
 * post[me] at each origin of the group, start waits for a new post from every
 * target, complete flushes and adds one to `complete` at each target, wait
 * waits for as many completes as the group has members; lock/unlock take the
 * target's lock word with compare-and-swap (exclusive) or fetch-and-add
 * (shared); lock_all takes a shared lock at every rank; flush waits until
 * every operation is complete at its target (weft_ep_flush, then the counter).
 * Errors of single operations (a dead peer) come back on the next
 * synchronization call; bad ranges are refused before anything is sent.
 */
#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/info/info.h"
#include "ompi/mca/mtl/base/base.h"
#include "ompi/mca/mtl/mtl.h"
#include "ompi/mca/osc/base/base.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"
#include "opal/class/opal_hash_table.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#include "ompi_weft_types.h"
#include "weft/weft.h"

/* From ompi/mca/osc/base/osc_base_obj_convert.h, which Debian's headers cannot
 * compile outside Open MPI's tree (it includes op.h, which needs Fortran
 * headers not installed); exported by libmpi. */
OMPI_DECLSPEC int ompi_osc_base_get_primitive_type_info(ompi_datatype_t *datatype,
                                                        ompi_datatype_t **prim_datatype,
                                                        uint32_t *prim_count);

/* ------------------------------------------------------------------ component */

typedef struct {
    ompi_osc_base_component_t super;
    int priority;       /* when pml weft, or pml cm over mtl weft, runs */
    int priority_other; /* otherwise (selected with --mca osc weft) */
    int verbose;
    int max_attach;
    int shared_posix;  /* 1: shared windows always in POSIX shared memory */
    int acc_intrinsic; /* 1: every window's accumulates as weft atomics */
    int initialized;   /* 0 not tried, 1 open, -1 failed */
    int threads;       /* MPI_THREAD_MULTIPLE: weft opened thread-safe */
    struct weft_info *info;
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_av_t *av;
    weft_cq_t *cq;
    weft_cntr_t *cntr;
    weft_ep_t *ep;
    size_t addr_len;
    uint64_t posted;         /* operations posted (the counter counts them complete) */
    uint64_t flushed;        /* `posted` at the last weft_ep_flush */
    uint64_t completed;      /* `posted` at the last wait for the counter */
    opal_hash_table_t av_of; /* process name -> AV index + 1 */
    opal_mutex_t av_lock;
} osc_weft_component_t;

static int osc_weft_register(void);
static int osc_weft_init(bool enable_progress_threads, bool enable_mpi_threads);
static int osc_weft_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                          struct ompi_communicator_t *comm, struct opal_info_t *info, int flavor);
static int osc_weft_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info, int flavor,
                           int *model);
static int osc_weft_finalize(void);

OMPI_MODULE_DECLSPEC osc_weft_component_t mca_osc_weft_component = {
    .super =
        {
            .osc_version =
                {
                    OMPI_OSC_BASE_VERSION_3_0_0,
                    .mca_component_name = "weft",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_register_component_params = osc_weft_register,
                },
            .osc_data = {MCA_BASE_METADATA_PARAM_NONE},
            .osc_init = osc_weft_init,
            .osc_query = osc_weft_query,
            .osc_select = osc_weft_select,
            .osc_finalize = osc_weft_finalize,
        },
    .priority = 110,
    .priority_other = 5,
    .max_attach = 64,
    .acc_intrinsic = -1,
};
#define C (&mca_osc_weft_component)

static int osc_weft_register(void)
{
    mca_base_component_t *v = &C->super.osc_version;
    mca_base_component_var_register(v, "priority",
                                    "Priority of osc weft when Open MPI runs over weft (pml weft, "
                                    "or pml cm over mtl weft; osc rdma's is 101, osc ucx's 60: "
                                    "above them)",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->priority);
    mca_base_component_var_register(v, "priority_other",
                                    "Priority of osc weft under any other PML or MTL (low: "
                                    "chosen only when named, --mca osc weft)",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->priority_other);
    mca_base_component_var_register(v, "verbose",
                                    "1: one line per window and rank when osc weft takes it",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->verbose);
    mca_base_component_var_register(v, "shared_posix",
                                    "1: make shared windows in POSIX shared memory even where weft "
                                    "maps memory between processes (tests the fallback); 2: in a "
                                    "file in $TMPDIR or /tmp (the fallback's fallback, where "
                                    "/dev/shm is not mounted)",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->shared_posix);
    mca_base_component_var_register(v, "acc_intrinsic",
                                    "How windows run accumulates: -1 chosen per window (under "
                                    "the target's accumulate lock, combined in place, when every "
                                    "rank maps every part; else as weft atomics); 1 always as weft "
                                    "atomics, element by element (as the info key "
                                    "acc_single_intrinsic=true asks for one window); 0 always "
                                    "under the accumulate lock",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->acc_intrinsic);
    mca_base_component_var_register(v, "max_attach",
                                    "Most regions attached at once to one dynamic window",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &C->max_attach);
    return OMPI_SUCCESS;
}

static int osc_weft_init(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    C->threads = enable_mpi_threads;
    return OMPI_SUCCESS;
}

static int osc_weft_progress(void);

/* The process's weft objects, at the first window. */
static int osc_weft_open(void)
{
    if (C->initialized != 0) {
        return C->initialized > 0 ? 0 : -1;
    }
    C->initialized = -1;
    struct weft_info *hints = weft_info_alloc();
    const char *step = "weft_getinfo";
    int rc = -WEFT_ENOMEM;
    if (NULL == hints) {
        goto fail;
    }
    hints->caps = WEFT_RMA | WEFT_ATOMIC;
    strncpy(hints->transport, "auto", sizeof(hints->transport) - 1);
    hints->domain_attr.progress = WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading = C->threads ? WEFT_THREAD_SAFE : WEFT_THREAD_DOMAIN;
    if (0 != (rc = weft_getinfo(WEFT_API_VERSION, hints, NULL, &C->info))) {
        goto fail;
    }
    C->addr_len = C->info->addr_len;
    step = "weft_fabric_open";
    if (0 != (rc = weft_fabric_open(C->info, NULL, &C->fabric))) {
        goto fail;
    }
    step = "weft_domain_open";
    if (0 != (rc = weft_domain_open(C->fabric, C->info, &C->domain))) {
        goto fail;
    }
    struct weft_av_attr av_attr = {0};
    struct weft_cq_attr cq_attr = {0};
    struct weft_cntr_attr cntr_attr = {0};
    cq_attr.format = WEFT_CQ_FORMAT_CONTEXT;
    step = "weft_av_open";
    if (0 != (rc = weft_av_open(C->domain, &av_attr, &C->av))) {
        goto fail;
    }
    step = "weft_cq_open";
    if (0 != (rc = weft_cq_open(C->domain, &cq_attr, &C->cq))) {
        goto fail;
    }
    step = "weft_cntr_open";
    if (0 != (rc = weft_cntr_open(C->domain, &cntr_attr, &C->cntr))) {
        goto fail;
    }
    step = "weft_ep_open";
    if (0 != (rc = weft_ep_open(C->domain, C->info, &C->ep, NULL))) {
        goto fail;
    }
    step = "weft_ep_bind";
    if (0 != (rc = weft_ep_bind_cq(C->ep, C->cq, WEFT_TRANSMIT | WEFT_SELECTIVE_COMPLETION)) ||
        0 != (rc = weft_ep_bind_cntr(C->ep, C->cntr, WEFT_WRITE | WEFT_READ)) ||
        0 != (rc = weft_ep_bind_av(C->ep, C->av))) {
        goto fail;
    }
    step = "weft_ep_enable";
    if (0 != (rc = weft_ep_enable(C->ep))) {
        goto fail;
    }
    OBJ_CONSTRUCT(&C->av_of, opal_hash_table_t);
    opal_hash_table_init(&C->av_of, 256);
    OBJ_CONSTRUCT(&C->av_lock, opal_mutex_t);
    opal_progress_register(osc_weft_progress);
    weft_info_free(hints);
    C->initialized = 1;
    return 0;
fail:
    opal_output(0, "osc weft: %s failed: %s; not used", step, weft_strerror(rc));
    weft_info_free(hints);
    return -1;
}

static int osc_weft_finalize(void)
{
    if (C->initialized > 0) {
        opal_progress_unregister(osc_weft_progress);
        (void)weft_ep_flush(C->ep, -1);
        weft_ep_close(C->ep);
        weft_cntr_close(C->cntr);
        weft_cq_close(C->cq);
        weft_av_close(C->av);
        weft_domain_close(C->domain);
        weft_fabric_close(C->fabric);
        OBJ_DESTRUCT(&C->av_of);
        OBJ_DESTRUCT(&C->av_lock);
    }
    weft_info_free(C->info);
    C->info = NULL;
    C->initialized = 0;
    return OMPI_SUCCESS;
}

/* Is Open MPI running its point-to-point traffic over the weft MTL? */
/* Point-to-point runs over weft: pml weft, or pml cm over mtl weft. */
static int osc_weft_p2p_over_weft(void)
{
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;
    return 0 == strcmp(pml, "weft") ||
           (0 == strcmp(pml, "cm") && NULL != ompi_mtl_base_selected_component &&
            0 == strcmp(ompi_mtl_base_selected_component->mtl_version.mca_component_name, "weft"));
}

/* ------------------------------------------------------------------ window state */

/* Passive-target lock word: readers in the low 32 bits, a writer as EXCL. */
#define OSC_WEFT_EXCL (1ULL << 32)

/* The state region of one rank (weft_mr_alloc, 8-byte words for atomics). */
typedef struct {
    uint64_t lock;     /* passive target lock */
    uint64_t acc_lock; /* accumulates weft's atomics do not take: 0 free, 1 held */
    uint64_t complete; /* PSCW: completes received, cumulative */
    uint64_t dyn_gen;  /* dynamic windows: odd while the table changes */
    uint64_t reserved[4];
    /* uint64_t post[size]: posts received from each rank, cumulative */
    /* osc_weft_dyn_t dyn[max_attach] (dynamic windows) */
} osc_weft_state_t;

/* One attached region of a dynamic window, in its owner's state region. */
typedef struct {
    uint64_t base;
    uint64_t len; /* 0: free entry */
    uint32_t key_len;
    uint32_t reserved;
    uint8_t key[WEFT_MR_KEY_MAX];
} osc_weft_dyn_t;

/* What every rank tells the others when a window is made. */
typedef struct {
    uint64_t base; /* window memory in the owner's address space */
    uint64_t size;
    uint64_t state_base;
    uint64_t region_base; /* allocate_shared, rank 0: its region (base: the offset in it) */
    uint32_t disp_unit;
    uint16_t key_len; /* 0: no region (size 0, dynamic, or shared: rank 0's) */
    uint16_t state_key_len;
    uint32_t addr_len;
    uint32_t reserved;
    uint8_t addr[256];
    uint8_t key[WEFT_MR_KEY_MAX];
    uint8_t state_key[WEFT_MR_KEY_MAX];
} osc_weft_blob_t;

/* A cached attached region of a dynamic window's peer. */
typedef struct {
    uint64_t base;
    uint64_t len;
    weft_rkey_t *rkey;
    char *ptr; /* mapped here (our own regions), or NULL */
} osc_weft_region_t;

typedef struct {
    weft_addr_t addr;
    uint64_t base;
    uint64_t size;
    uint64_t state_base;
    uint32_t disp_unit;
    int ready; /* keys unpacked */
    weft_rkey_t *rkey;
    weft_rkey_t *state_rkey;
    char *ptr;       /* the window memory mapped here (node peers, ourselves), or NULL */
    char *state_ptr; /* the state region mapped here, or NULL */
    int lock;        /* lock type held (MPI_LOCK_*), 0: none */
    int lock_nocheck;
    osc_weft_region_t *regions; /* dynamic: the peer's table as last read */
    int nregions;
    uint64_t dyn_gen;   /* dynamic: the table's generation when read */
    uint64_t dyn_epoch; /* dynamic: the module's epoch when the generation was checked */
} osc_weft_peer_t;

enum { SYNC_NONE = 0, SYNC_FENCE, SYNC_LOCK, SYNC_LOCK_ALL, SYNC_PSCW };

/* What a completion's context points at. */
enum { CTX_MODULE = 1, CTX_REQUEST = 2 };
typedef struct {
    int kind;
} osc_weft_ctx_t;

typedef struct {
    ompi_osc_base_module_t super;
    osc_weft_ctx_t ctx;
    ompi_win_t *win;
    ompi_communicator_t *comm; /* a duplicate of the window's */
    int flavor;
    int rank;
    int size;
    int error; /* first error of an operation, for the next synchronization */
    weft_mr_t *mr;
    weft_mr_t *state_mr;
    osc_weft_state_t *state;
    size_t state_len;
    int acc_intrinsic;    /* info acc_single_intrinsic: accumulates as weft atomics */
    uint64_t *post;       /* in state: posts received from each rank */
    osc_weft_dyn_t *dyn;  /* in state (dynamic windows) */
    weft_mr_t **attached; /* dynamic: the registration of each dyn[] entry */
    char *shared_base;    /* allocate_shared: every rank's part, mapped here */
    uint64_t *shared_off; /* allocate_shared: offset of each rank's part */
    size_t shared_len;    /* allocate_shared: the whole mapping */
    int shared_posix;     /* allocate_shared through POSIX shared memory (shared_map) */
    osc_weft_blob_t *blobs;
    osc_weft_peer_t *peers;
    int sync;
    int nlocked;
    int *held; /* lock_all: the targets whose shared lock this epoch took */
    int nheld;
    int lock_all_nocheck;
    int *start_ranks; /* PSCW access epoch: comm ranks of the start group */
    int start_n;
    uint64_t *post_seen;        /* posts consumed from each rank */
    uint64_t complete_expected; /* completes that wait() waits for */
    int exposure;               /* a post without its wait */
    uint64_t dyn_epoch;         /* dynamic: bumped by every synchronization call */
    opal_mutex_t lock;
} osc_weft_module_t;

#define MODULE(win) ((osc_weft_module_t *)(win)->w_osc_module)

/* ------------------------------------------------------------------ requests */

typedef struct {
    ompi_request_t super;
    osc_weft_ctx_t ctx;
    int outstanding; /* pieces in flight, + 1 while they are being posted */
    int error;       /* MPI error class of a failed piece */
    void *tmp;       /* freed at completion */
    void *unpack_to; /* at completion: tmp unpacked there */
    int unpack_count;
    ompi_datatype_t *unpack_dt;
} osc_weft_request_t;

static int osc_weft_request_free(ompi_request_t **request)
{
    osc_weft_request_t *r = (osc_weft_request_t *)*request;
    if (!REQUEST_COMPLETE(&r->super)) {
        /* MPI lets an active RMA request be freed: it completes unseen. */
        r->super.req_free = NULL;
        *request = MPI_REQUEST_NULL;
        return OMPI_SUCCESS;
    }
    OMPI_REQUEST_FINI(&r->super);
    OBJ_RELEASE(r);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int osc_weft_request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return OMPI_SUCCESS; /* RMA requests are not cancelled: they complete */
}

static OBJ_CLASS_INSTANCE(osc_weft_request_t, ompi_request_t, NULL, NULL);

static osc_weft_request_t *osc_weft_request_new(void)
{
    osc_weft_request_t *r = OBJ_NEW(osc_weft_request_t);
    if (NULL == r) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&r->super, false);
    r->super.req_type = OMPI_REQUEST_WIN;
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_free = osc_weft_request_free;
    r->super.req_cancel = osc_weft_request_cancel;
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    r->ctx.kind = CTX_REQUEST;
    r->outstanding = 1;
    r->error = MPI_SUCCESS;
    r->tmp = NULL;
    r->unpack_to = NULL;
    r->unpack_count = 0;
    r->unpack_dt = NULL;
    return r;
}

/* Unpack `count` elements of dt from packed bytes into buf. */
static int osc_weft_unpack(const void *packed, size_t bytes, void *buf, size_t count,
                           ompi_datatype_t *dt)
{
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    struct iovec iov = {.iov_base = (void *)packed, .iov_len = bytes};
    uint32_t n = 1;
    int rc = MPI_SUCCESS;
    if (OPAL_SUCCESS != opal_convertor_copy_and_prepare_for_recv(
                            ompi_mpi_local_convertor, &dt->super, count, buf, 0, &conv) ||
        opal_convertor_unpack(&conv, &iov, &n, &bytes) < 0) {
        rc = MPI_ERR_TYPE;
    }
    OBJ_DESTRUCT(&conv);
    return rc;
}

/* One piece of `r` ended (or the posting did: the extra count). */
static void osc_weft_request_piece_done(osc_weft_request_t *r)
{
    if (0 != __atomic_sub_fetch(&r->outstanding, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    if (NULL != r->unpack_to && MPI_SUCCESS == r->error) {
        size_t bytes = 0;
        ompi_datatype_type_size(r->unpack_dt, &bytes);
        r->error = osc_weft_unpack(r->tmp, bytes * (size_t)r->unpack_count, r->unpack_to,
                                   (size_t)r->unpack_count, r->unpack_dt);
    }
    if (NULL != r->unpack_dt) {
        OMPI_DATATYPE_RELEASE(r->unpack_dt);
        r->unpack_dt = NULL;
    }
    free(r->tmp);
    r->tmp = NULL;
    r->super.req_status.MPI_ERROR = r->error;
    if (NULL == r->super.req_free) {
        /* freed by the user while active */
        OMPI_REQUEST_FINI(&r->super);
        OBJ_RELEASE(r);
        return;
    }
    ompi_request_complete(&r->super, true);
}

/* ------------------------------------------------------------------ progress */

static int osc_weft_error_class(int err)
{
    switch (err) {
        case WEFT_EACCES:
            return MPI_ERR_RMA_RANGE;
        case WEFT_EINVAL:
            return MPI_ERR_ARG;
        default:
            return MPI_ERR_OTHER;
    }
}

static int osc_weft_progress(void)
{
    if (C->initialized <= 0) {
        return 0;
    }
    struct weft_cq_entry e[16];
    int n = 0;
    for (;;) {
        const ssize_t got = weft_cq_read(C->cq, e, 16);
        if (got > 0) {
            for (ssize_t i = 0; i < got; ++i) {
                osc_weft_ctx_t *x = e[i].op_context;
                if (NULL != x && CTX_REQUEST == x->kind) {
                    osc_weft_request_piece_done(
                        (osc_weft_request_t *)((char *)x - offsetof(osc_weft_request_t, ctx)));
                }
            }
            n += (int)got;
            continue;
        }
        if (-WEFT_EAVAIL == got) {
            struct weft_cq_err_entry err;
            if (1 == weft_cq_readerr(C->cq, &err, 0)) {
                osc_weft_ctx_t *x = err.op_context;
                const int cls = osc_weft_error_class(err.err);
                if (NULL != x && CTX_REQUEST == x->kind) {
                    osc_weft_request_t *r =
                        (osc_weft_request_t *)((char *)x - offsetof(osc_weft_request_t, ctx));
                    r->error = cls;
                    osc_weft_request_piece_done(r);
                } else if (NULL != x && CTX_MODULE == x->kind) {
                    osc_weft_module_t *m =
                        (osc_weft_module_t *)((char *)x - offsetof(osc_weft_module_t, ctx));
                    if (MPI_SUCCESS == m->error) {
                        m->error = cls;
                    }
                }
                if (C->verbose > 0) {
                    opal_output(0, "osc weft: an operation failed: %s", err.err_str);
                }
                ++n;
                continue;
            }
        }
        break;
    }
    return n;
}

/* Wait until every operation posted so far has completed locally (a get's
 * data is here, a put's is at its target on every weft transport). */
static void osc_weft_wait_posted(void)
{
    const uint64_t want = __atomic_load_n(&C->posted, __ATOMIC_ACQUIRE);
    if (want == __atomic_load_n(&C->completed, __ATOMIC_ACQUIRE)) {
        return; /* nothing went through weft since the last wait */
    }
    while (weft_cntr_read(C->cntr) + weft_cntr_readerr(C->cntr) < want) {
        opal_progress();
    }
    osc_weft_progress(); /* errors of these operations, into their modules */
    __atomic_store_n(&C->completed, want, __ATOMIC_RELEASE);
}

/* Every operation complete at its target. */
static int osc_weft_flush_ep(osc_weft_module_t *m)
{
    ++m->dyn_epoch;
    /* Loads and stores on mapped memory are done; weft is asked only when
     * operations went through it since the last flush. */
    opal_atomic_mb();
    const uint64_t posted = __atomic_load_n(&C->posted, __ATOMIC_ACQUIRE);
    int rc = 0;
    if (posted != __atomic_load_n(&C->flushed, __ATOMIC_ACQUIRE)) {
        rc = weft_ep_flush(C->ep, -1);
        osc_weft_wait_posted();
        __atomic_store_n(&C->flushed, posted, __ATOMIC_RELEASE);
    }
    if (0 != rc) {
        return MPI_ERR_OTHER;
    }
    rc = m->error;
    m->error = MPI_SUCCESS;
    return rc;
}

/* ------------------------------------------------------------------ posting */

/* Context and flags of a piece of an operation of `m` (for request `r`, or none). */
static void *osc_weft_piece(osc_weft_module_t *m, osc_weft_request_t *r, uint64_t *flags)
{
    __atomic_add_fetch(&C->posted, 1, __ATOMIC_RELEASE);
    if (NULL != r) {
        __atomic_add_fetch(&r->outstanding, 1, __ATOMIC_RELAXED);
        *flags |= WEFT_COMPLETION;
        return &r->ctx;
    }
    return &m->ctx;
}

/* A piece was refused for good: undo its count. */
static int osc_weft_piece_failed(osc_weft_request_t *r, ssize_t rc)
{
    __atomic_sub_fetch(&C->posted, 1, __ATOMIC_RELEASE);
    if (NULL != r) {
        __atomic_sub_fetch(&r->outstanding, 1, __ATOMIC_RELAXED);
    }
    opal_output(0, "osc weft: posting an operation failed: %s", weft_strerror((int)rc));
    return -WEFT_EACCES == rc ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER;
}

static int osc_weft_put_piece(osc_weft_module_t *m, osc_weft_request_t *r, const void *buf,
                              size_t len, uint64_t addr, weft_rkey_t *rkey)
{
    uint64_t flags = 0;
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct weft_msg_rma msg = {.msg_iov = &iov, .iov_count = 1, .rma_addr = addr, .rkey = rkey};
    msg.context = osc_weft_piece(m, r, &flags);
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_putmsg(C->ep, &msg, flags))) {
        opal_progress();
    }
    return 0 == rc ? MPI_SUCCESS : osc_weft_piece_failed(r, rc);
}

static int osc_weft_get_piece(osc_weft_module_t *m, osc_weft_request_t *r, void *buf, size_t len,
                              uint64_t addr, weft_rkey_t *rkey)
{
    uint64_t flags = 0;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct weft_msg_rma msg = {.msg_iov = &iov, .iov_count = 1, .rma_addr = addr, .rkey = rkey};
    msg.context = osc_weft_piece(m, r, &flags);
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_getmsg(C->ep, &msg, flags))) {
        opal_progress();
    }
    return 0 == rc ? MPI_SUCCESS : osc_weft_piece_failed(r, rc);
}

/* One weft atomic: `count` elements of `type` (result/compare may be NULL). */
static int osc_weft_atomic_piece(osc_weft_module_t *m, osc_weft_request_t *r, const void *operand,
                                 const void *compare, void *result, size_t count,
                                 enum weft_datatype type, enum weft_atomic_op op, uint64_t addr,
                                 weft_rkey_t *rkey)
{
    uint64_t flags = 0;
    struct weft_msg_atomic msg = {.operand = operand,
                                  .compare = compare,
                                  .result = result,
                                  .count = count,
                                  .datatype = type,
                                  .op = op,
                                  .rma_addr = addr,
                                  .rkey = rkey};
    msg.context = osc_weft_piece(m, r, &flags);
    if (NULL == result && NULL == r) {
        flags |= WEFT_INJECT; /* the operand may be a temporary */
    }
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_atomicmsg(C->ep, &msg, flags))) {
        opal_progress();
    }
    return 0 == rc ? MPI_SUCCESS : osc_weft_piece_failed(r, rc);
}

/* A blocking 64-bit atomic on a state word of `peer` (lock words, PSCW counters). */
static uint64_t osc_weft_state_atomic(osc_weft_module_t *m, osc_weft_peer_t *peer, size_t offset,
                                      enum weft_atomic_op op, uint64_t operand, uint64_t compare,
                                      int fetch)
{
    uint64_t result = 0;
    if (NULL != peer->state_ptr) {
        /* Mapped: the same CPU atomics the owner's progress runs for peers
         * that reach it by message (one atomicity domain, docs/rma.md). */
        uint64_t *w = (uint64_t *)(peer->state_ptr + offset);
        switch (op) {
            case WEFT_CSWAP:
                result = compare;
                __atomic_compare_exchange_n(w, &result, operand, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE);
                return result;
            case WEFT_REPLACE:
                return __atomic_exchange_n(w, operand, __ATOMIC_ACQ_REL);
            default:
                return __atomic_fetch_add(w, operand, __ATOMIC_ACQ_REL);
        }
    }
    const uint64_t addr = peer->state_base + offset;
    if (WEFT_CSWAP == op) {
        (void)osc_weft_atomic_piece(m, NULL, &operand, &compare, &result, 1, WEFT_UINT64, op, addr,
                                    peer->state_rkey);
    } else {
        (void)osc_weft_atomic_piece(m, NULL, &operand, NULL, fetch ? &result : NULL, 1, WEFT_UINT64,
                                    op, addr, peer->state_rkey);
    }
    if (fetch) {
        osc_weft_wait_posted();
    }
    return result;
}

/* ------------------------------------------------------------------ peers */

/* The AV index of comm rank `r` (inserted once per process). */
static int osc_weft_peer_addr(osc_weft_module_t *m, int r, weft_addr_t *out)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(m->comm, r);
    const uint64_t key = ((uint64_t)proc->super.proc_name.jobid << 32) | proc->super.proc_name.vpid;
    void *v = NULL;
    int rc = OMPI_SUCCESS;
    OPAL_THREAD_LOCK(&C->av_lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&C->av_of, key, &v)) {
        *out = (weft_addr_t)(uintptr_t)v - 1;
    } else {
        weft_addr_t a = WEFT_ADDR_NOTAVAIL;
        const osc_weft_blob_t *b = &m->blobs[r];
        if (1 != weft_av_insert(C->av, b->addr, 1, &a, 0) || WEFT_ADDR_NOTAVAIL == a) {
            rc = OMPI_ERROR;
        } else {
            opal_hash_table_set_value_uint64(&C->av_of, key, (void *)(uintptr_t)(a + 1));
            *out = a;
        }
    }
    OPAL_THREAD_UNLOCK(&C->av_lock);
    return rc;
}

/* Unpack the keys of `t` at its first use. */
static int osc_weft_peer_ready(osc_weft_module_t *m, int t)
{
    osc_weft_peer_t *p = &m->peers[t];
    if (__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE)) {
        return OMPI_SUCCESS;
    }
    int rc = OMPI_SUCCESS;
    if (MPI_WIN_FLAVOR_SHARED == m->flavor && !m->shared_posix && 0 != t &&
        OMPI_SUCCESS != osc_weft_peer_ready(m, 0)) {
        return OMPI_ERROR; /* every part is in rank 0's region */
    }
    OPAL_THREAD_LOCK(&m->lock);
    if (!p->ready) {
        const osc_weft_blob_t *b = &m->blobs[t];
        if (OMPI_SUCCESS != osc_weft_peer_addr(m, t, &p->addr) ||
            0 != weft_rkey_unpack(C->ep, p->addr, b->state_key, b->state_key_len, &p->state_rkey)) {
            rc = OMPI_ERROR;
        } else if (MPI_WIN_FLAVOR_SHARED == m->flavor && !m->shared_posix) {
            if (0 == t) {
                if (0 != weft_rkey_unpack(C->ep, p->addr, b->key, b->key_len, &p->rkey)) {
                    rc = OMPI_ERROR;
                }
            } else {
                p->rkey = m->peers[0].rkey;
            }
        } else if (0 != b->key_len &&
                   0 != weft_rkey_unpack(C->ep, p->addr, b->key, b->key_len, &p->rkey)) {
            rc = OMPI_ERROR;
        }
        if (OMPI_SUCCESS == rc) {
            /* Node peers' weft_mr_alloc memory (and our own) is mapped here:
             * loads, stores and CPU atomics with no call into weft. */
            p->state_ptr = weft_rkey_ptr(p->state_rkey, p->state_base, m->state_len);
            if (NULL == p->ptr && MPI_WIN_FLAVOR_DYNAMIC != m->flavor && NULL != p->rkey &&
                0 != p->size) {
                p->ptr = weft_rkey_ptr(p->rkey, p->base, p->size);
            }
            __atomic_store_n(&p->ready, 1, __ATOMIC_RELEASE);
        }
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "osc weft: cannot reach rank %d of the window's group", t);
    }
    return rc;
}

/* Re-read the attached-region table of dynamic window peer `t`. */
static int osc_weft_refresh_regions(osc_weft_module_t *m, int t)
{
    osc_weft_peer_t *p = &m->peers[t];
    const size_t n = (size_t)C->max_attach;
    osc_weft_dyn_t *table = malloc(n * sizeof(*table));
    uint64_t gen[2] = {1, 0};
    if (NULL == table) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    const uint64_t dyn_off = sizeof(osc_weft_state_t) + sizeof(uint64_t) * (size_t)m->size;
    /* A consistent copy: the generation is even and the same before and after. */
    for (int tries = 0;; ++tries) {
        (void)osc_weft_get_piece(m, NULL, &gen[0], 8,
                                 p->state_base + offsetof(osc_weft_state_t, dyn_gen),
                                 p->state_rkey);
        osc_weft_wait_posted();
        (void)osc_weft_get_piece(m, NULL, table, n * sizeof(*table), p->state_base + dyn_off,
                                 p->state_rkey);
        osc_weft_wait_posted();
        (void)osc_weft_get_piece(m, NULL, &gen[1], 8,
                                 p->state_base + offsetof(osc_weft_state_t, dyn_gen),
                                 p->state_rkey);
        osc_weft_wait_posted();
        if (0 == (gen[0] & 1) && gen[0] == gen[1]) {
            p->dyn_gen = gen[0];
            p->dyn_epoch = m->dyn_epoch;
            break;
        }
        if (tries > 1000000) {
            free(table);
            return OMPI_ERROR;
        }
    }
    for (int i = 0; i < p->nregions; ++i) {
        weft_rkey_release(p->regions[i].rkey);
    }
    free(p->regions);
    p->regions = calloc(n, sizeof(*p->regions));
    p->nregions = 0;
    if (NULL == p->regions) {
        free(table);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (size_t i = 0; i < n; ++i) {
        if (0 == table[i].len || table[i].key_len > WEFT_MR_KEY_MAX) {
            continue; /* free, or nonsense from a peer's memory */
        }
        osc_weft_region_t *g = &p->regions[p->nregions];
        if (0 == weft_rkey_unpack(C->ep, p->addr, table[i].key, table[i].key_len, &g->rkey)) {
            g->base = table[i].base;
            g->len = table[i].len;
            g->ptr = weft_rkey_ptr(g->rkey, g->base, g->len);
            ++p->nregions;
        }
    }
    free(table);
    return OMPI_SUCCESS;
}

/* The key and address for target bytes [lo, hi) of `t`, or an MPI error. */
static int osc_weft_target(osc_weft_module_t *m, int t, uint64_t lo, uint64_t hi,
                           weft_rkey_t **rkey, char **direct)
{
    osc_weft_peer_t *p = &m->peers[t];
    if (MPI_WIN_FLAVOR_DYNAMIC != m->flavor) {
        if (lo < p->base || hi > p->base + p->size || hi < lo) {
            return MPI_ERR_RMA_RANGE;
        }
        *rkey = p->rkey;
        *direct = NULL != p->ptr ? p->ptr + (lo - p->base) : NULL;
        return MPI_SUCCESS;
    }
    /* Once per epoch (and flush), the cached table is checked against the
     * owner's generation: a region detached and attached again at the same
     * address has a new key. */
    if (p->dyn_epoch != m->dyn_epoch) {
        uint64_t gen = 0;
        (void)osc_weft_get_piece(
            m, NULL, &gen, 8, p->state_base + offsetof(osc_weft_state_t, dyn_gen), p->state_rkey);
        osc_weft_wait_posted();
        if (gen != p->dyn_gen && OMPI_SUCCESS != osc_weft_refresh_regions(m, t)) {
            return MPI_ERR_OTHER;
        }
        p->dyn_epoch = m->dyn_epoch;
    }
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < p->nregions; ++i) {
            const osc_weft_region_t *g = &p->regions[i];
            if (lo >= g->base && hi <= g->base + g->len && hi >= lo) {
                *rkey = g->rkey;
                *direct = NULL != g->ptr ? g->ptr + (lo - g->base) : NULL;
                return MPI_SUCCESS;
            }
        }
        if (0 == pass && OMPI_SUCCESS != osc_weft_refresh_regions(m, t)) {
            return MPI_ERR_OTHER;
        }
    }
    return MPI_ERR_RMA_RANGE;
}

/* May `m` access `t` now? Takes lock_all's shared lock lazily. */
static int osc_weft_epoch_ok(osc_weft_module_t *m, int t)
{
    switch (m->sync) {
        case SYNC_FENCE:
        case SYNC_LOCK_ALL:
            return 1;
        case SYNC_LOCK:
            return 0 != m->peers[t].lock;
        case SYNC_PSCW:
            for (int i = 0; i < m->start_n; ++i) {
                if (m->start_ranks[i] == t) {
                    return 1;
                }
            }
            return 0;
        default:
            return 0;
    }
}

static void osc_weft_lock_take(osc_weft_module_t *m, int t, int type);

/* Common checks of an operation on `t` (and lock_all's lock of it, at the
 * epoch's first access); the window address of target_disp. */
static int osc_weft_begin(osc_weft_module_t *m, int t, ptrdiff_t disp, uint64_t *addr)
{
    if (t < 0 || t >= m->size) {
        return MPI_ERR_RANK;
    }
    if (!osc_weft_epoch_ok(m, t)) {
        return MPI_ERR_RMA_SYNC;
    }
    if (OMPI_SUCCESS != osc_weft_peer_ready(m, t)) {
        return MPI_ERR_OTHER;
    }
    osc_weft_peer_t *p = &m->peers[t];
    if (SYNC_LOCK_ALL == m->sync && 0 == p->lock) {
        p->lock_nocheck = m->lock_all_nocheck;
        if (!p->lock_nocheck) {
            osc_weft_lock_take(m, t, MPI_LOCK_SHARED);
        }
        p->lock = MPI_LOCK_SHARED;
        m->held[m->nheld++] = t;
    }
    *addr = MPI_WIN_FLAVOR_DYNAMIC == m->flavor
                ? (uint64_t)disp
                : p->base + (uint64_t)((int64_t)disp * (int64_t)p->disp_unit);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ datatypes */

/* The contiguous pieces of `count` elements of `dt` at `base` (a local
 * pointer, or a target address used as one): *iov malloc'ed, or `one` when a
 * single piece. */
static int osc_weft_pieces(ompi_datatype_t *dt, int count, uint64_t base, struct iovec *one,
                           struct iovec **iov, size_t *n)
{
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    *n = 0;
    *iov = one;
    if (0 == count || 0 == size) {
        return MPI_SUCCESS;
    }
    if (ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        ptrdiff_t true_lb = 0;
        ptrdiff_t true_extent = 0;
        ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
        one->iov_base = (void *)(uintptr_t)(base + (uint64_t)true_lb);
        one->iov_len = size * (size_t)count;
        *n = 1;
        return MPI_SUCCESS;
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    if (OPAL_SUCCESS != opal_convertor_copy_and_prepare_for_send(
                            ompi_mpi_local_convertor, &dt->super, (size_t)count,
                            (void *)(uintptr_t)base, 0, &conv)) {
        OBJ_DESTRUCT(&conv);
        return MPI_ERR_TYPE;
    }
    size_t cap = 16;
    struct iovec *v = malloc(cap * sizeof(*v));
    int done = 0;
    while (NULL != v && !done) {
        if (cap - *n < 16) {
            struct iovec *w = realloc(v, 2 * cap * sizeof(*v));
            if (NULL == w) {
                free(v);
                v = NULL;
                break;
            }
            v = w;
            cap *= 2;
        }
        uint32_t got = 16;
        size_t bytes = 0;
        done = opal_convertor_raw(&conv, v + *n, &got, &bytes);
        *n += got;
    }
    OBJ_DESTRUCT(&conv);
    if (NULL == v) {
        return MPI_ERR_NO_MEM;
    }
    *iov = v;
    return MPI_SUCCESS;
}

static void osc_weft_pieces_free(struct iovec *iov, struct iovec *one)
{
    if (iov != one) {
        free(iov);
    }
}

/* The range [lo, hi) the pieces cover. */
static void osc_weft_span(const struct iovec *iov, size_t n, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t a = (uint64_t)(uintptr_t)iov[i].iov_base;
        if (0 == iov[i].iov_len) {
            continue;
        }
        *lo = a < *lo ? a : *lo;
        *hi = a + iov[i].iov_len > *hi ? a + iov[i].iov_len : *hi;
    }
    if (*lo > *hi) {
        *lo = *hi = 0;
    }
}

/* ------------------------------------------------------------------ put and get */

/* Put (dir 0) or get (dir 1) between origin and target pieces. */
static int osc_weft_move(int dir, void *origin, int ocount, ompi_datatype_t *odt, int t,
                         ptrdiff_t disp, int tcount, ompi_datatype_t *tdt, ompi_win_t *win,
                         osc_weft_request_t *r)
{
    osc_weft_module_t *m = MODULE(win);
    uint64_t addr = 0;
    int rc = osc_weft_begin(m, t, disp, &addr);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    size_t osize = 0;
    size_t tsize = 0;
    ompi_datatype_type_size(odt, &osize);
    ompi_datatype_type_size(tdt, &tsize);
    if (osize * (size_t)ocount != tsize * (size_t)tcount) {
        return MPI_ERR_TYPE; /* the signatures differ */
    }
    /* The common case in one screen: one predefined type without gaps on
     * both sides, into memory mapped here. */
    const osc_weft_peer_t *p = &m->peers[t];
    if (odt == tdt && ocount == tcount && NULL != p->ptr && ompi_datatype_is_predefined(odt) &&
        (odt->super.flags & OPAL_DATATYPE_FLAG_NO_GAPS)) {
        const uint64_t len = (uint64_t)osize * (uint64_t)ocount;
        if (addr < p->base || addr + len > p->base + p->size || addr + len < addr) {
            return MPI_ERR_RMA_RANGE;
        }
        char *mapped = p->ptr + (addr - p->base);
        memcpy(0 == dir ? mapped : origin, 0 == dir ? origin : mapped, len);
        return MPI_SUCCESS;
    }
    if (0 == osize * (size_t)ocount) {
        return MPI_SUCCESS;
    }
    struct iovec o1;
    struct iovec t1;
    struct iovec *ov = NULL;
    struct iovec *tv = NULL;
    size_t on = 0;
    size_t tn = 0;
    if (MPI_SUCCESS !=
            (rc = osc_weft_pieces(odt, ocount, (uint64_t)(uintptr_t)origin, &o1, &ov, &on)) ||
        MPI_SUCCESS != (rc = osc_weft_pieces(tdt, tcount, addr, &t1, &tv, &tn))) {
        osc_weft_pieces_free(ov, &o1);
        return rc;
    }
    uint64_t lo = 0;
    uint64_t hi = 0;
    weft_rkey_t *rkey = NULL;
    char *direct = NULL;
    osc_weft_span(tv, tn, &lo, &hi);
    rc = osc_weft_target(m, t, lo, hi, &rkey, &direct);
    /* Pair the two lists: one copy (mapped memory) or weft operation per
     * common piece. */
    size_t i = 0;
    size_t j = 0;
    size_t io = 0;
    size_t jo = 0;
    while (MPI_SUCCESS == rc && i < on && j < tn) {
        const size_t left_o = ov[i].iov_len - io;
        const size_t left_t = tv[j].iov_len - jo;
        const size_t len = left_o < left_t ? left_o : left_t;
        char *local = (char *)ov[i].iov_base + io;
        const uint64_t remote = (uint64_t)(uintptr_t)tv[j].iov_base + jo;
        if (0 != len && NULL != direct) {
            char *mapped = direct + (remote - lo);
            memcpy(0 == dir ? mapped : local, 0 == dir ? local : mapped, len);
        } else if (0 != len) {
            rc = 0 == dir ? osc_weft_put_piece(m, r, local, len, remote, rkey)
                          : osc_weft_get_piece(m, r, local, len, remote, rkey);
        }
        io += len;
        jo += len;
        if (io == ov[i].iov_len) {
            ++i;
            io = 0;
        }
        if (jo == tv[j].iov_len) {
            ++j;
            jo = 0;
        }
    }
    osc_weft_pieces_free(ov, &o1);
    osc_weft_pieces_free(tv, &t1);
    return rc;
}

static int osc_weft_put(const void *origin, int ocount, ompi_datatype_t *odt, int t, ptrdiff_t disp,
                        int tcount, ompi_datatype_t *tdt, ompi_win_t *win)
{
    return osc_weft_move(0, (void *)origin, ocount, odt, t, disp, tcount, tdt, win, NULL);
}

static int osc_weft_get(void *origin, int ocount, ompi_datatype_t *odt, int t, ptrdiff_t disp,
                        int tcount, ompi_datatype_t *tdt, ompi_win_t *win)
{
    return osc_weft_move(1, origin, ocount, odt, t, disp, tcount, tdt, win, NULL);
}

/* Finish a request-based operation: rc of its posting; the request is returned
 * either way (completed with the error when posting failed). */
static int osc_weft_request_end(osc_weft_request_t *r, int rc, ompi_request_t **request)
{
    if (MPI_SUCCESS != rc) {
        r->error = rc;
    }
    osc_weft_request_piece_done(r); /* the posting's count */
    *request = &r->super;
    return rc;
}

static int osc_weft_rput(const void *origin, int ocount, ompi_datatype_t *odt, int t,
                         ptrdiff_t disp, int tcount, ompi_datatype_t *tdt, ompi_win_t *win,
                         ompi_request_t **request)
{
    osc_weft_request_t *r = osc_weft_request_new();
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    const int rc = osc_weft_move(0, (void *)origin, ocount, odt, t, disp, tcount, tdt, win, r);
    return osc_weft_request_end(r, rc, request);
}

static int osc_weft_rget(void *origin, int ocount, ompi_datatype_t *odt, int t, ptrdiff_t disp,
                         int tcount, ompi_datatype_t *tdt, ompi_win_t *win,
                         ompi_request_t **request)
{
    osc_weft_request_t *r = osc_weft_request_new();
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    const int rc = osc_weft_move(1, origin, ocount, odt, t, disp, tcount, tdt, win, r);
    return osc_weft_request_end(r, rc, request);
}

/* ------------------------------------------------------------------ accumulate */

/* Pack `count` elements of dt at buf into a new contiguous buffer. */
static void *osc_weft_pack(const void *buf, int count, ompi_datatype_t *dt, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (NULL == p) {
        return NULL;
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    struct iovec iov = {.iov_base = p, .iov_len = bytes};
    uint32_t n = 1;
    size_t len = bytes;
    if (OPAL_SUCCESS != opal_convertor_copy_and_prepare_for_send(
                            ompi_mpi_local_convertor, &dt->super, (size_t)count, buf, 0, &conv) ||
        opal_convertor_pack(&conv, &iov, &n, &len) < 0) {
        free(p);
        p = NULL;
    }
    OBJ_DESTRUCT(&conv);
    return p;
}

/* The target's accumulate lock: a word of its state region, 0 -> 1 with
 * compare-and-swap (CPU atomics where mapped, weft atomics otherwise). */
static void osc_weft_acc_lock(osc_weft_module_t *m, osc_weft_peer_t *p)
{
    while (0 !=
           osc_weft_state_atomic(m, p, offsetof(osc_weft_state_t, acc_lock), WEFT_CSWAP, 1, 0, 1)) {
        opal_progress();
    }
}

static void osc_weft_acc_unlock(osc_weft_module_t *m, osc_weft_peer_t *p)
{
    (void)osc_weft_state_atomic(m, p, offsetof(osc_weft_state_t, acc_lock), WEFT_REPLACE, 0, 0, 1);
}

/* cur = operand op cur, both `n` packed elements of prim. MPI_Reduce_local
 * wants them laid out as the type is (the pair types have padding): unpacked
 * around it when the packed and natural layouts differ. */
static int osc_weft_combine(const void *operand, char *cur, size_t n, ompi_datatype_t *prim,
                            struct ompi_op_t *op)
{
    size_t esize = 0;
    ptrdiff_t lb = 0;
    ptrdiff_t ext = 0;
    ompi_datatype_type_size(prim, &esize);
    ompi_datatype_get_extent(prim, &lb, &ext);
    if (0 == lb && (size_t)ext == esize) {
        return PMPI_Reduce_local((void *)operand, cur, (int)n, prim, op);
    }
    char *a = malloc(n * (size_t)ext);
    char *b = malloc(n * (size_t)ext);
    int rc = MPI_ERR_NO_MEM;
    if (NULL != a && NULL != b &&
        MPI_SUCCESS == (rc = osc_weft_unpack(operand, n * esize, a - lb, n, prim)) &&
        MPI_SUCCESS == (rc = osc_weft_unpack(cur, n * esize, b - lb, n, prim)) &&
        MPI_SUCCESS == (rc = PMPI_Reduce_local(a - lb, b - lb, (int)n, prim, op))) {
        void *packed = osc_weft_pack(b - lb, (int)n, prim, n * esize);
        if (NULL == packed) {
            rc = MPI_ERR_NO_MEM;
        } else {
            memcpy(cur, packed, n * esize);
            free(packed);
        }
    }
    free(a);
    free(b);
    return rc;
}

/* The accumulate path for what weft's atomics do not take: under the target's
 * accumulate lock, read the target bytes, keep the old values for the result,
 * combine (MPI_Reduce_local), write back. `operand` holds `n` packed elements
 * of `prim` (NULL for MPI_NO_OP); `result_packed` receives the old values. */
static int osc_weft_acc_locked(osc_weft_module_t *m, int t, const void *operand,
                               void *result_packed, size_t n, ompi_datatype_t *prim,
                               struct ompi_op_t *op, const struct iovec *tv, size_t tn,
                               weft_rkey_t *rkey, char *direct, uint64_t lo)
{
    osc_weft_peer_t *p = &m->peers[t];
    size_t esize = 0;
    ptrdiff_t lb = 0;
    ptrdiff_t ext = 0;
    ompi_datatype_type_size(prim, &esize);
    ompi_datatype_get_extent(prim, &lb, &ext);
    const size_t bytes = n * esize;
    osc_weft_acc_lock(m, p);
    int rc = MPI_SUCCESS;
    if (NULL != direct && 1 == tn && 0 == lb && (size_t)ext == esize) {
        /* Mapped and one natural run: combined in place. */
        if (NULL != result_packed) {
            memcpy(result_packed, direct, bytes);
        }
        if (MPI_REPLACE == op) {
            memcpy(direct, operand, bytes);
        } else if (MPI_NO_OP != op) {
            rc = PMPI_Reduce_local((void *)operand, direct, (int)n, prim, op);
        }
    } else {
        char *cur = malloc(bytes != 0 ? bytes : 1);
        if (NULL == cur) {
            rc = MPI_ERR_NO_MEM;
        }
        size_t off = 0;
        for (size_t j = 0; j < tn && MPI_SUCCESS == rc; ++j) {
            const uint64_t a = (uint64_t)(uintptr_t)tv[j].iov_base;
            if (NULL != direct) {
                memcpy(cur + off, direct + (a - lo), tv[j].iov_len);
            } else {
                rc = osc_weft_get_piece(m, NULL, cur + off, tv[j].iov_len, a, rkey);
            }
            off += tv[j].iov_len;
        }
        if (NULL == direct) {
            osc_weft_wait_posted();
        }
        if (MPI_SUCCESS == rc && NULL != result_packed) {
            memcpy(result_packed, cur, bytes);
        }
        if (MPI_SUCCESS == rc && MPI_NO_OP != op) {
            if (MPI_REPLACE == op) {
                memcpy(cur, operand, bytes);
            } else {
                rc = osc_weft_combine(operand, cur, n, prim, op);
            }
            off = 0;
            for (size_t j = 0; j < tn && MPI_SUCCESS == rc; ++j) {
                const uint64_t a = (uint64_t)(uintptr_t)tv[j].iov_base;
                if (NULL != direct) {
                    memcpy(direct + (a - lo), cur + off, tv[j].iov_len);
                } else {
                    rc = osc_weft_put_piece(m, NULL, cur + off, tv[j].iov_len, a, rkey);
                }
                off += tv[j].iov_len;
            }
            if (NULL == direct) {
                osc_weft_wait_posted(); /* complete at the target before the lock goes */
            }
        }
        free(cur);
    }
    osc_weft_acc_unlock(m, p);
    return rc;
}

/*
 * Accumulate (result == NULL) and get_accumulate. Elements are of the target
 * datatype's primitive type; the origin is packed when not contiguous, the
 * result fetched into a packed buffer unpacked at completion when not.
 */
static int osc_weft_acc(const void *origin, int ocount, ompi_datatype_t *odt, void *result,
                        int rcount, ompi_datatype_t *rdt, int t, ptrdiff_t disp, int tcount,
                        ompi_datatype_t *tdt, struct ompi_op_t *op, ompi_win_t *win,
                        osc_weft_request_t *r)
{
    osc_weft_module_t *m = MODULE(win);
    uint64_t addr = 0;
    int rc = osc_weft_begin(m, t, disp, &addr);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    ompi_datatype_t *prim = NULL;
    uint32_t prim_per = 0;
    if (OMPI_SUCCESS != ompi_osc_base_get_primitive_type_info(tdt, &prim, &prim_per)) {
        return MPI_ERR_TYPE;
    }
    size_t esize = 0;
    size_t tsize = 0;
    ompi_datatype_type_size(prim, &esize);
    ompi_datatype_type_size(tdt, &tsize);
    const size_t bytes = tsize * (size_t)tcount;
    const size_t n = esize ? bytes / esize : 0;
    if (0 == n) {
        return MPI_SUCCESS;
    }
    const int no_op = MPI_NO_OP == op;
    if (!no_op) {
        size_t osize = 0;
        ompi_datatype_type_size(odt, &osize);
        if (osize * (size_t)ocount != bytes) {
            return MPI_ERR_TYPE;
        }
    }
    if (NULL != result) {
        size_t rsize = 0;
        ompi_datatype_type_size(rdt, &rsize);
        if (rsize * (size_t)rcount != bytes) {
            return MPI_ERR_TYPE;
        }
    }
    struct iovec t1;
    struct iovec *tv = NULL;
    size_t tn = 0;
    if (MPI_SUCCESS != (rc = osc_weft_pieces(tdt, tcount, addr, &t1, &tv, &tn))) {
        return rc;
    }
    uint64_t lo = 0;
    uint64_t hi = 0;
    weft_rkey_t *rkey = NULL;
    char *direct = NULL;
    osc_weft_span(tv, tn, &lo, &hi);
    if (MPI_SUCCESS != (rc = osc_weft_target(m, t, lo, hi, &rkey, &direct))) {
        osc_weft_pieces_free(tv, &t1);
        return rc;
    }
    /* The operand, packed; the result's bytes (packed when not contiguous). */
    const void *operand = origin;
    void *packed_in = NULL;
    if (!no_op && !ompi_datatype_is_contiguous_memory_layout(odt, ocount)) {
        if (NULL == (packed_in = osc_weft_pack(origin, ocount, odt, bytes))) {
            osc_weft_pieces_free(tv, &t1);
            return MPI_ERR_NO_MEM;
        }
        operand = packed_in;
    } else if (!no_op) {
        ptrdiff_t lb = 0;
        ptrdiff_t ext = 0;
        ompi_datatype_get_true_extent(odt, &lb, &ext);
        operand = (const char *)origin + lb;
    }
    char *res = NULL;
    int unpack = 0;
    if (NULL != result) {
        if (ompi_datatype_is_contiguous_memory_layout(rdt, rcount)) {
            ptrdiff_t lb = 0;
            ptrdiff_t ext = 0;
            ompi_datatype_get_true_extent(rdt, &lb, &ext);
            res = (char *)result + lb;
        } else if (NULL == (res = malloc(bytes))) {
            free(packed_in);
            osc_weft_pieces_free(tv, &t1);
            return MPI_ERR_NO_MEM;
        } else {
            unpack = 1;
        }
    }
    const int type = ompi_weft_datatype(prim);
    const int wop = ompi_weft_atomic_op(op);
    const int native = m->acc_intrinsic && type >= 0 && wop >= 0 &&
                       weft_atomic_valid((enum weft_datatype)type, (enum weft_atomic_op)wop);
    /* A request of our own when temporaries must live until completion. */
    osc_weft_request_t *own = NULL;
    if (native && NULL == r && (unpack || (NULL != result && NULL != packed_in))) {
        if (NULL == (own = osc_weft_request_new())) {
            free(packed_in);
            if (unpack) {
                free(res);
            }
            osc_weft_pieces_free(tv, &t1);
            return MPI_ERR_NO_MEM;
        }
        r = own;
    }
    if (!native) {
        /* Synchronous: a request `r` has nothing in flight afterwards. */
        rc = osc_weft_acc_locked(m, t, operand, res, n, prim, op, tv, tn, rkey, direct, lo);
        if (unpack) {
            if (MPI_SUCCESS == rc) {
                rc = osc_weft_unpack(res, bytes, result, (size_t)rcount, rdt);
            }
            free(res);
        }
        free(packed_in);
        osc_weft_pieces_free(tv, &t1);
        return rc;
    }
    const size_t max = weft_atomic_max_count((enum weft_datatype)type);
    size_t done = 0;
    for (size_t j = 0; j < tn && MPI_SUCCESS == rc; ++j) {
        uint64_t a = (uint64_t)(uintptr_t)tv[j].iov_base;
        size_t left = tv[j].iov_len / esize;
        while (left > 0 && MPI_SUCCESS == rc) {
            const size_t k = left < max ? left : max;
            rc = osc_weft_atomic_piece(m, r, no_op ? NULL : (const char *)operand + done * esize,
                                       NULL, NULL != res ? res + done * esize : NULL, k,
                                       (enum weft_datatype)type, (enum weft_atomic_op)wop, a, rkey);
            a += k * esize;
            done += k;
            left -= k;
        }
    }
    osc_weft_pieces_free(tv, &t1);
    if (NULL != r && (NULL != packed_in || unpack)) {
        /* The request frees them (and unpacks the result) at completion. */
        if (NULL != packed_in && unpack) {
            /* two temporaries: wait for this one's pieces, keep the result's */
            osc_weft_wait_posted();
            free(packed_in);
            packed_in = NULL;
        }
        if (unpack) {
            r->tmp = res;
            r->unpack_to = result;
            r->unpack_count = rcount;
            r->unpack_dt = rdt;
            OMPI_DATATYPE_RETAIN(rdt);
        } else {
            r->tmp = packed_in;
        }
        packed_in = NULL;
    } else if (NULL != packed_in && NULL != result) {
        osc_weft_wait_posted();
    }
    free(packed_in); /* non-fetching pieces were injected */
    if (NULL != own) {
        if (MPI_SUCCESS != rc) {
            own->error = rc;
        }
        osc_weft_request_piece_done(own);
        ompi_request_t *q = &own->super;
        ompi_request_wait(&q, MPI_STATUS_IGNORE);
    }
    return rc;
}

static int osc_weft_accumulate(const void *origin, int ocount, ompi_datatype_t *odt, int t,
                               ptrdiff_t disp, int tcount, ompi_datatype_t *tdt,
                               struct ompi_op_t *op, ompi_win_t *win)
{
    return osc_weft_acc(origin, ocount, odt, NULL, 0, NULL, t, disp, tcount, tdt, op, win, NULL);
}

static int osc_weft_get_accumulate(const void *origin, int ocount, ompi_datatype_t *odt,
                                   void *result, int rcount, ompi_datatype_t *rdt, int t,
                                   ptrdiff_t disp, int tcount, ompi_datatype_t *tdt,
                                   struct ompi_op_t *op, ompi_win_t *win)
{
    return osc_weft_acc(origin, ocount, odt, result, rcount, rdt, t, disp, tcount, tdt, op, win,
                        NULL);
}

static int osc_weft_raccumulate(const void *origin, int ocount, ompi_datatype_t *odt, int t,
                                ptrdiff_t disp, int tcount, ompi_datatype_t *tdt,
                                struct ompi_op_t *op, ompi_win_t *win, ompi_request_t **request)
{
    osc_weft_request_t *r = osc_weft_request_new();
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    const int rc =
        osc_weft_acc(origin, ocount, odt, NULL, 0, NULL, t, disp, tcount, tdt, op, win, r);
    return osc_weft_request_end(r, rc, request);
}

static int osc_weft_rget_accumulate(const void *origin, int ocount, ompi_datatype_t *odt,
                                    void *result, int rcount, ompi_datatype_t *rdt, int t,
                                    ptrdiff_t disp, int tcount, ompi_datatype_t *tdt,
                                    struct ompi_op_t *op, ompi_win_t *win, ompi_request_t **request)
{
    osc_weft_request_t *r = osc_weft_request_new();
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    const int rc =
        osc_weft_acc(origin, ocount, odt, result, rcount, rdt, t, disp, tcount, tdt, op, win, r);
    return osc_weft_request_end(r, rc, request);
}

static int osc_weft_fetch_and_op(const void *origin, void *result, ompi_datatype_t *dt, int t,
                                 ptrdiff_t disp, struct ompi_op_t *op, ompi_win_t *win)
{
    return osc_weft_acc(origin, 1, dt, result, 1, dt, t, disp, 1, dt, op, win, NULL);
}

static int osc_weft_compare_and_swap(const void *origin, const void *compare, void *result,
                                     ompi_datatype_t *dt, int t, ptrdiff_t disp, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    uint64_t addr = 0;
    int rc = osc_weft_begin(m, t, disp, &addr);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    size_t esize = 0;
    ompi_datatype_type_size(dt, &esize);
    weft_rkey_t *rkey = NULL;
    char *direct = NULL;
    if (MPI_SUCCESS != (rc = osc_weft_target(m, t, addr, addr + esize, &rkey, &direct))) {
        return rc;
    }
    const int type = ompi_weft_datatype(dt);
    if (m->acc_intrinsic && type >= 0 && weft_atomic_valid((enum weft_datatype)type, WEFT_CSWAP)) {
        rc = osc_weft_atomic_piece(m, NULL, origin, compare, result, 1, (enum weft_datatype)type,
                                   WEFT_CSWAP, addr, rkey);
        osc_weft_wait_posted();
        return rc;
    }
    /* Under the accumulate lock, as every accumulate of the window. */
    osc_weft_peer_t *p = &m->peers[t];
    osc_weft_acc_lock(m, p);
    if (NULL != direct) {
        memcpy(result, direct, esize);
        if (0 == memcmp(result, compare, esize)) {
            memcpy(direct, origin, esize);
        }
    } else {
        rc = osc_weft_get_piece(m, NULL, result, esize, addr, rkey);
        osc_weft_wait_posted();
        if (MPI_SUCCESS == rc && 0 == memcmp(result, compare, esize)) {
            rc = osc_weft_put_piece(m, NULL, origin, esize, addr, rkey);
            osc_weft_wait_posted();
        }
    }
    osc_weft_acc_unlock(m, p);
    return rc;
}

/* ------------------------------------------------------------------ synchronization */

static int osc_weft_fence(int assert, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    ++m->dyn_epoch;
    if (SYNC_LOCK == m->sync || SYNC_LOCK_ALL == m->sync || SYNC_PSCW == m->sync) {
        return MPI_ERR_RMA_SYNC;
    }
    int rc = MPI_SUCCESS;
    if (!(assert &MPI_MODE_NOPRECEDE)) {
        rc = osc_weft_flush_ep(m);
    }
    /* Everyone's operations are complete at their targets before anyone goes on. */
    const int brc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
    m->sync = (assert &MPI_MODE_NOSUCCEED) ? SYNC_NONE : SYNC_FENCE;
    return MPI_SUCCESS != rc ? rc : brc;
}

/* The comm ranks of `group`'s members (malloc'ed). */
static int *osc_weft_group_ranks(osc_weft_module_t *m, ompi_group_t *group, int *n)
{
    *n = ompi_group_size(group);
    int *in = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    int *out = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    if (NULL == in || NULL == out) {
        free(in);
        free(out);
        return NULL;
    }
    for (int i = 0; i < *n; ++i) {
        in[i] = i;
    }
    if (OMPI_SUCCESS != ompi_group_translate_ranks(group, *n, in, m->comm->c_local_group, out)) {
        free(in);
        free(out);
        return NULL;
    }
    free(in);
    for (int i = 0; i < *n; ++i) {
        if (out[i] < 0 || out[i] >= m->size) {
            free(out);
            return NULL;
        }
    }
    return out;
}

static int osc_weft_start(ompi_group_t *group, int assert, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    ++m->dyn_epoch;
    if (SYNC_NONE != m->sync && SYNC_FENCE != m->sync) {
        return MPI_ERR_RMA_SYNC;
    }
    int n = 0;
    int *ranks = osc_weft_group_ranks(m, group, &n);
    if (NULL == ranks) {
        return MPI_ERR_GROUP;
    }
    /* Wait for each target's post (one new post per epoch, counted per origin). */
    if (!(assert &MPI_MODE_NOCHECK)) {
        for (int i = 0; i < n; ++i) {
            const int t = ranks[i];
            while (__atomic_load_n(&m->post[t], __ATOMIC_ACQUIRE) <= m->post_seen[t]) {
                opal_progress();
            }
            ++m->post_seen[t];
        }
    }
    for (int i = 0; i < n; ++i) {
        if (OMPI_SUCCESS != osc_weft_peer_ready(m, ranks[i])) {
            free(ranks);
            return MPI_ERR_OTHER;
        }
    }
    m->start_ranks = ranks;
    m->start_n = n;
    m->sync = SYNC_PSCW;
    return MPI_SUCCESS;
}

static int osc_weft_complete(ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    if (SYNC_PSCW != m->sync) {
        return MPI_ERR_RMA_SYNC;
    }
    const int rc = osc_weft_flush_ep(m);
    for (int i = 0; i < m->start_n; ++i) {
        (void)osc_weft_state_atomic(m, &m->peers[m->start_ranks[i]],
                                    offsetof(osc_weft_state_t, complete), WEFT_SUM, 1, 0, 0);
    }
    osc_weft_wait_posted();
    free(m->start_ranks);
    m->start_ranks = NULL;
    m->start_n = 0;
    m->sync = SYNC_NONE;
    return rc;
}

static int osc_weft_post(ompi_group_t *group, int assert, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    if (m->exposure) {
        return MPI_ERR_RMA_SYNC;
    }
    int n = 0;
    int *ranks = osc_weft_group_ranks(m, group, &n);
    if (NULL == ranks) {
        return MPI_ERR_GROUP;
    }
    m->complete_expected += (uint64_t)n;
    m->exposure = 1;
    /* Our own stores to the window are visible before an origin sees the post. */
    opal_atomic_mb();
    /* MPI_MODE_NOCHECK is given on a post exactly when its origins' starts
     * give it too: they do not wait, so nothing is sent (a post sent anyway
     * would satisfy a later checked start too early). */
    const size_t off = sizeof(osc_weft_state_t) + sizeof(uint64_t) * (size_t)m->rank;
    for (int i = 0; i < n && !(assert &MPI_MODE_NOCHECK); ++i) {
        if (OMPI_SUCCESS != osc_weft_peer_ready(m, ranks[i])) {
            free(ranks);
            return MPI_ERR_OTHER;
        }
        (void)osc_weft_state_atomic(m, &m->peers[ranks[i]], off, WEFT_SUM, 1, 0, 0);
    }
    osc_weft_wait_posted();
    free(ranks);
    return MPI_SUCCESS;
}

static int osc_weft_wait(ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    if (!m->exposure) {
        return MPI_ERR_RMA_SYNC;
    }
    while (__atomic_load_n(&m->state->complete, __ATOMIC_ACQUIRE) < m->complete_expected) {
        opal_progress();
    }
    m->exposure = 0;
    return MPI_SUCCESS;
}

static int osc_weft_test(ompi_win_t *win, int *flag)
{
    osc_weft_module_t *m = MODULE(win);
    if (!m->exposure) {
        return MPI_ERR_RMA_SYNC;
    }
    opal_progress();
    *flag = __atomic_load_n(&m->state->complete, __ATOMIC_ACQUIRE) >= m->complete_expected;
    if (*flag) {
        m->exposure = 0;
    }
    return MPI_SUCCESS;
}

/* Take `t`'s lock word: exclusive (compare-and-swap 0 -> EXCL) or shared
 * (fetch-and-add 1, backed out while a writer holds it). */
static void osc_weft_lock_take(osc_weft_module_t *m, int t, int type)
{
    osc_weft_peer_t *p = &m->peers[t];
    const size_t off = offsetof(osc_weft_state_t, lock);
    if (MPI_LOCK_EXCLUSIVE == type) {
        while (0 != osc_weft_state_atomic(m, p, off, WEFT_CSWAP, OSC_WEFT_EXCL, 0, 1)) {
            opal_progress();
        }
        return;
    }
    for (;;) {
        const uint64_t old = osc_weft_state_atomic(m, p, off, WEFT_SUM, 1, 0, 1);
        if (0 == (old & OSC_WEFT_EXCL)) {
            return;
        }
        (void)osc_weft_state_atomic(m, p, off, WEFT_SUM, (uint64_t)-1, 0, 1);
        opal_progress();
    }
}

static void osc_weft_lock_release(osc_weft_module_t *m, int t, int type)
{
    const uint64_t minus = MPI_LOCK_EXCLUSIVE == type ? (uint64_t)0 - OSC_WEFT_EXCL : (uint64_t)-1;
    (void)osc_weft_state_atomic(m, &m->peers[t], offsetof(osc_weft_state_t, lock), WEFT_SUM, minus,
                                0, 1);
}

static int osc_weft_lock(int type, int t, int assert, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    ++m->dyn_epoch;
    if (t < 0 || t >= m->size) {
        return MPI_ERR_RANK;
    }
    if ((SYNC_NONE != m->sync && SYNC_FENCE != m->sync && SYNC_LOCK != m->sync) ||
        0 != m->peers[t].lock) {
        return MPI_ERR_RMA_SYNC;
    }
    if (OMPI_SUCCESS != osc_weft_peer_ready(m, t)) {
        return MPI_ERR_OTHER;
    }
    m->peers[t].lock_nocheck = 0 != (assert &MPI_MODE_NOCHECK);
    if (!m->peers[t].lock_nocheck) {
        osc_weft_lock_take(m, t, type);
    }
    m->peers[t].lock = type;
    ++m->nlocked;
    m->sync = SYNC_LOCK;
    return MPI_SUCCESS;
}

static int osc_weft_unlock(int t, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    if (t < 0 || t >= m->size) {
        return MPI_ERR_RANK;
    }
    if (SYNC_LOCK != m->sync || 0 == m->peers[t].lock) {
        return MPI_ERR_RMA_SYNC;
    }
    const int rc = osc_weft_flush_ep(m);
    if (!m->peers[t].lock_nocheck) {
        osc_weft_lock_release(m, t, m->peers[t].lock);
    }
    m->peers[t].lock = 0;
    if (0 == --m->nlocked) {
        m->sync = SYNC_NONE;
    }
    return rc;
}

static int osc_weft_lock_all(int assert, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    ++m->dyn_epoch;
    if (SYNC_NONE != m->sync && SYNC_FENCE != m->sync) {
        return MPI_ERR_RMA_SYNC;
    }
    /* Each target's shared lock is taken at the epoch's first access to it
     * (osc_weft_begin), as MPI allows: an epoch that touches one target costs
     * one atomic, not one per rank. */
    m->lock_all_nocheck = 0 != (assert &MPI_MODE_NOCHECK);
    m->nheld = 0;
    m->sync = SYNC_LOCK_ALL;
    return MPI_SUCCESS;
}

static int osc_weft_unlock_all(ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    if (SYNC_LOCK_ALL != m->sync) {
        return MPI_ERR_RMA_SYNC;
    }
    const int rc = osc_weft_flush_ep(m);
    for (int i = 0; i < m->nheld; ++i) {
        const int t = m->held[i];
        if (!m->peers[t].lock_nocheck) {
            osc_weft_lock_release(m, t, MPI_LOCK_SHARED);
        }
        m->peers[t].lock = 0;
    }
    m->nheld = 0;
    m->sync = SYNC_NONE;
    return rc;
}

static int osc_weft_sync(ompi_win_t *win)
{
    (void)win;
    opal_atomic_mb(); /* public and private copies are one (unified model) */
    opal_progress();
    return MPI_SUCCESS;
}

static int osc_weft_passive(osc_weft_module_t *m, int t)
{
    if (SYNC_LOCK_ALL == m->sync) {
        return MPI_SUCCESS;
    }
    if (SYNC_LOCK != m->sync || (t >= 0 && (t >= m->size || 0 == m->peers[t].lock))) {
        return MPI_ERR_RMA_SYNC;
    }
    return MPI_SUCCESS;
}

static int osc_weft_flush(int t, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    const int rc = osc_weft_passive(m, t);
    return MPI_SUCCESS != rc ? rc : osc_weft_flush_ep(m);
}

static int osc_weft_flush_all(ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    const int rc = osc_weft_passive(m, -1);
    return MPI_SUCCESS != rc ? rc : osc_weft_flush_ep(m);
}

static int osc_weft_flush_local(int t, ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    int rc = osc_weft_passive(m, t);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    osc_weft_wait_posted();
    rc = m->error;
    m->error = MPI_SUCCESS;
    return rc;
}

static int osc_weft_flush_local_all(ompi_win_t *win)
{
    return osc_weft_flush_local(-1, win);
}

/* ------------------------------------------------------------------ dynamic and shared */

static int osc_weft_attach(ompi_win_t *win, void *base, size_t len)
{
    osc_weft_module_t *m = MODULE(win);
    if (MPI_WIN_FLAVOR_DYNAMIC != m->flavor) {
        return MPI_ERR_RMA_FLAVOR;
    }
    if (0 == len) {
        return MPI_SUCCESS;
    }
    int slot = -1;
    for (int i = 0; i < C->max_attach; ++i) {
        if (0 == m->dyn[i].len) {
            slot = i;
            break;
        }
    }
    if (slot < 0) {
        opal_output(0, "osc weft: more than %d regions attached to a window (osc_weft_max_attach)",
                    C->max_attach);
        return MPI_ERR_RMA_ATTACH;
    }
    weft_mr_t *mr = NULL;
    uint8_t key[WEFT_MR_KEY_MAX];
    size_t key_len = sizeof(key);
    if (0 != weft_mr_reg(C->domain, base, len,
                         WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE |
                             WEFT_ACCESS_REMOTE_ATOMIC,
                         0, &mr) ||
        0 != weft_mr_pack_key(mr, key, &key_len)) {
        if (NULL != mr) {
            weft_mr_close(mr);
        }
        return MPI_ERR_RMA_ATTACH;
    }
    m->attached[slot] = mr;
    /* Readers copy the table with the generation even and unchanged around it. */
    __atomic_add_fetch(&m->state->dyn_gen, 1, __ATOMIC_ACQ_REL);
    m->dyn[slot].base = (uint64_t)(uintptr_t)base;
    memcpy(m->dyn[slot].key, key, key_len);
    m->dyn[slot].key_len = (uint32_t)key_len;
    __atomic_store_n(&m->dyn[slot].len, (uint64_t)len, __ATOMIC_RELEASE);
    __atomic_add_fetch(&m->state->dyn_gen, 1, __ATOMIC_ACQ_REL);
    return MPI_SUCCESS;
}

static int osc_weft_detach(ompi_win_t *win, const void *base)
{
    osc_weft_module_t *m = MODULE(win);
    if (MPI_WIN_FLAVOR_DYNAMIC != m->flavor) {
        return MPI_ERR_RMA_FLAVOR;
    }
    for (int i = 0; i < C->max_attach; ++i) {
        if (0 != m->dyn[i].len && m->dyn[i].base == (uint64_t)(uintptr_t)base) {
            __atomic_add_fetch(&m->state->dyn_gen, 1, __ATOMIC_ACQ_REL);
            __atomic_store_n(&m->dyn[i].len, 0, __ATOMIC_RELEASE);
            __atomic_add_fetch(&m->state->dyn_gen, 1, __ATOMIC_ACQ_REL);
            weft_mr_close(m->attached[i]);
            m->attached[i] = NULL;
            return MPI_SUCCESS;
        }
    }
    return MPI_ERR_RMA_ATTACH;
}

static int osc_weft_shared_query(ompi_win_t *win, int rank, size_t *size, int *disp_unit,
                                 void *baseptr)
{
    osc_weft_module_t *m = MODULE(win);
    if (MPI_WIN_FLAVOR_SHARED != m->flavor) {
        return MPI_ERR_RMA_FLAVOR;
    }
    int r = rank;
    if (MPI_PROC_NULL == rank) {
        /* the first rank with memory */
        for (r = 0; r < m->size && 0 == m->blobs[r].size; ++r) {
        }
        if (r == m->size) {
            r = 0;
        }
    } else if (rank < 0 || rank >= m->size) {
        return MPI_ERR_RANK;
    }
    *size = m->blobs[r].size;
    *disp_unit = (int)m->blobs[r].disp_unit;
    *(void **)baseptr = m->shared_base + m->shared_off[r];
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ window life */

/*
 * Map a shared window's memory. First choice: rank 0's weft_mr_alloc region
 * (every part back to back), which every rank maps through weft, so that RMA
 * on the window is loads and stores too. When a rank cannot map it (no
 * transport of the domain maps memory, e.g. WEFT_TRANSPORTS without shm):
 * POSIX shared memory made by rank 0, each rank's part registered alone.
 */
static int osc_weft_shared_map(osc_weft_module_t *m)
{
    m->shared_off = calloc((size_t)m->size, sizeof(uint64_t));
    if (NULL == m->shared_off) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* Each part's offset from the sizes every rank sent (the parts lie back to
     * back), not from a peer's word: every pointer below stays in the mapping. */
    uint64_t total = 0;
    for (int r = 0; r < m->size; ++r) {
        if (m->blobs[r].size > UINT64_MAX / 2 - total) {
            return OMPI_ERR_BAD_PARAM; /* sizes that cannot be one mapping */
        }
        m->shared_off[r] = total;
        m->peers[r].base = m->blobs[0].region_base + total;
        total += m->blobs[r].size;
    }
    m->shared_len = total ? total : 1;
    int ok = !C->shared_posix && 0 != m->blobs[0].key_len &&
             OMPI_SUCCESS == osc_weft_peer_ready(m, 0) &&
             NULL != (m->shared_base =
                          weft_rkey_ptr(m->peers[0].rkey, m->blobs[0].region_base, m->shared_len));
    int all = 0;
    int rc = m->comm->c_coll->coll_allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, m->comm,
                                             m->comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc || all) {
        return rc;
    }
    /* The fallback: forget rank 0's region and its key. */
    if (m->peers[0].ready) {
        weft_rkey_release(m->peers[0].rkey);
        weft_rkey_release(m->peers[0].state_rkey);
        m->peers[0].ready = 0;
    }
    if (NULL != m->mr) {
        weft_mr_close(m->mr);
        m->mr = NULL;
    }
    m->shared_posix = 1;
    m->shared_base = NULL;
    /* Made by rank 0 in POSIX shared memory (/dev/shm), or where that is not
     * mounted (minimal systems, the Soft-RoCE test VM) as a file in $TMPDIR
     * or /tmp; the others open what it made. */
    char name[64];
    char path[PATH_MAX];
    uint64_t id[2] = {0, 0}; /* the name's numbers; how it was made (0 shm, 1 file, 2 none) */
    int err = 0;
    if (0 == m->rank) {
        static uint32_t serial;
        id[0] = ((uint64_t)getpid() << 32) | ++serial;
    }
    rc = m->comm->c_coll->coll_bcast(id, 1, MPI_UINT64_T, 0, m->comm,
                                     m->comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    snprintf(name, sizeof(name), "/weft-osc-%u-%u", (unsigned)(id[0] >> 32), (unsigned)id[0]);
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s%s", NULL != tmp && '\0' != tmp[0] ? tmp : "/tmp", name);
    int fd = -1;
    if (0 == m->rank) {
        for (id[1] = 2 == C->shared_posix ? 1 : 0; id[1] < 2 && fd < 0; ++id[1]) {
            fd = 0 == id[1] ? shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600)
                            : open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
            if (fd >= 0 && 0 != ftruncate(fd, (off_t)m->shared_len)) {
                err = errno;
                close(fd);
                (void)(0 == id[1] ? shm_unlink(name) : unlink(path));
                fd = -1;
            } else if (fd < 0) {
                err = errno;
            }
        }
        id[1] = fd >= 0 ? id[1] - 1 : 2;
    }
    rc = m->comm->c_coll->coll_bcast(&id[1], 1, MPI_UINT64_T, 0, m->comm,
                                     m->comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (0 != m->rank && id[1] < 2) {
        fd = 0 == id[1] ? shm_open(name, O_RDWR, 0600) : open(path, O_RDWR);
        err = fd < 0 ? errno : 0;
    }
    void *mem =
        fd >= 0 ? mmap(NULL, m->shared_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0 && MAP_FAILED == mem) {
        err = errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    ok = MAP_FAILED != mem;
    m->shared_base = ok ? mem : NULL;
    m->comm->c_coll->coll_allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, m->comm,
                                    m->comm->c_coll->coll_allreduce_module);
    if (0 == m->rank && id[1] < 2) {
        (void)(0 == id[1] ? shm_unlink(name) : unlink(path)); /* mapped everywhere, or given up */
    }
    if (!all) {
        if (!ok) {
            opal_output(0, "osc weft: shared memory for a shared window (%s, then %s) failed: %s",
                        name, path, strerror(err));
        }
        return OMPI_ERROR;
    }
    /* Each rank's part, registered alone; the keys exchanged again. */
    osc_weft_blob_t *me = &m->blobs[m->rank];
    size_t key_len = WEFT_MR_KEY_MAX;
    osc_weft_blob_t mine = *me;
    mine.key_len = 0;
    mine.base = (uint64_t)(uintptr_t)(m->shared_base + m->shared_off[m->rank]);
    if (me->size > 0) {
        if (0 != weft_mr_reg(C->domain, m->shared_base + m->shared_off[m->rank], me->size,
                             WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ |
                                 WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC,
                             0, &m->mr) ||
            0 != weft_mr_pack_key(m->mr, mine.key, &key_len)) {
            return OMPI_ERROR;
        }
        mine.key_len = (uint16_t)key_len;
    }
    rc = m->comm->c_coll->coll_allgather(&mine, (int)sizeof(mine), MPI_BYTE, m->blobs,
                                         (int)sizeof(mine), MPI_BYTE, m->comm,
                                         m->comm->c_coll->coll_allgather_module);
    for (int r = 0; OMPI_SUCCESS == rc && r < m->size; ++r) {
        if (m->blobs[r].key_len > WEFT_MR_KEY_MAX) {
            return OMPI_ERROR;
        }
        m->peers[r].base = m->blobs[r].base;
        m->peers[r].ptr = 0 != m->blobs[r].size ? m->shared_base + m->shared_off[r] : NULL;
    }
    return rc;
}

static void osc_weft_module_release(osc_weft_module_t *m)
{
    if (NULL != m->peers) {
        for (int t = 0; t < m->size; ++t) {
            osc_weft_peer_t *p = &m->peers[t];
            if (p->ready) {
                if (MPI_WIN_FLAVOR_SHARED != m->flavor || m->shared_posix || 0 == t) {
                    weft_rkey_release(p->rkey);
                }
                weft_rkey_release(p->state_rkey);
            }
            for (int i = 0; i < p->nregions; ++i) {
                weft_rkey_release(p->regions[i].rkey);
            }
            free(p->regions);
        }
    }
    if (NULL != m->attached) {
        for (int i = 0; i < C->max_attach; ++i) {
            if (NULL != m->attached[i]) {
                weft_mr_close(m->attached[i]);
            }
        }
    }
    if (NULL != m->mr) {
        weft_mr_close(m->mr);
    }
    if (m->shared_posix && NULL != m->shared_base) {
        munmap(m->shared_base, m->shared_len);
    }
    free(m->shared_off);
    if (NULL != m->state_mr) {
        weft_mr_close(m->state_mr);
    }
    if (NULL != m->comm) {
        ompi_comm_free(&m->comm);
    }
    OBJ_DESTRUCT(&m->lock);
    free(m->attached);
    free(m->peers);
    free(m->blobs);
    free(m->post_seen);
    free(m->held);
    free(m->start_ranks);
    free(m);
}

static int osc_weft_free(ompi_win_t *win)
{
    osc_weft_module_t *m = MODULE(win);
    /* Nobody's operations on our memory are in flight after this. */
    int rc = osc_weft_flush_ep(m);
    const int brc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
    osc_weft_wait_posted();
    win->w_osc_module = NULL;
    osc_weft_module_release(m);
    return MPI_SUCCESS != rc ? rc : brc;
}

static const ompi_osc_base_module_t osc_weft_module_template = {
    .osc_win_shared_query = osc_weft_shared_query,
    .osc_win_attach = osc_weft_attach,
    .osc_win_detach = osc_weft_detach,
    .osc_free = osc_weft_free,
    .osc_put = osc_weft_put,
    .osc_get = osc_weft_get,
    .osc_accumulate = osc_weft_accumulate,
    .osc_compare_and_swap = osc_weft_compare_and_swap,
    .osc_fetch_and_op = osc_weft_fetch_and_op,
    .osc_get_accumulate = osc_weft_get_accumulate,
    .osc_rput = osc_weft_rput,
    .osc_rget = osc_weft_rget,
    .osc_raccumulate = osc_weft_raccumulate,
    .osc_rget_accumulate = osc_weft_rget_accumulate,
    .osc_fence = osc_weft_fence,
    .osc_start = osc_weft_start,
    .osc_complete = osc_weft_complete,
    .osc_post = osc_weft_post,
    .osc_wait = osc_weft_wait,
    .osc_test = osc_weft_test,
    .osc_lock = osc_weft_lock,
    .osc_unlock = osc_weft_unlock,
    .osc_lock_all = osc_weft_lock_all,
    .osc_unlock_all = osc_weft_unlock_all,
    .osc_sync = osc_weft_sync,
    .osc_flush = osc_weft_flush,
    .osc_flush_all = osc_weft_flush_all,
    .osc_flush_local = osc_weft_flush_local,
    .osc_flush_local_all = osc_weft_flush_local_all,
};

static int osc_weft_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                          struct ompi_communicator_t *comm, struct opal_info_t *info, int flavor)
{
    (void)win;
    (void)base;
    (void)size;
    (void)disp_unit;
    (void)info;
    const int priority = osc_weft_p2p_over_weft() ? C->priority : C->priority_other;
    if (priority <= 0 || OMPI_COMM_IS_INTER(comm)) {
        return -1;
    }
    if (MPI_WIN_FLAVOR_SHARED == flavor && ompi_group_have_remote_peers(comm->c_local_group)) {
        return -1; /* shared windows need every rank on this node */
    }
    if (priority != C->priority) {
        /* The low priority: chosen only when named (--mca osc weft), so weft
         * is not opened (an endpoint polled by every opal_progress) for a
         * window another component takes; select opens it. */
        return priority;
    }
    return 0 == osc_weft_open() ? priority : -1;
}

static const char *osc_weft_flavor_name(int flavor)
{
    switch (flavor) {
        case MPI_WIN_FLAVOR_CREATE:
            return "create";
        case MPI_WIN_FLAVOR_ALLOCATE:
            return "allocate";
        case MPI_WIN_FLAVOR_SHARED:
            return "allocate_shared";
        case MPI_WIN_FLAVOR_DYNAMIC:
            return "dynamic";
        default:
            return "?";
    }
}

static int osc_weft_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info, int flavor,
                           int *model)
{
    if (0 != osc_weft_open()) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    osc_weft_module_t *m = calloc(1, sizeof(*m));
    if (NULL == m) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    m->dyn_epoch = 1; /* peers start at 0: their tables are checked at first use */
    m->super = osc_weft_module_template;
    m->ctx.kind = CTX_MODULE;
    m->win = win;
    m->flavor = flavor;
    m->error = MPI_SUCCESS;
    OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
    int rc = ompi_comm_dup(comm, &m->comm);
    if (OMPI_SUCCESS != rc) {
        m->comm = NULL;
        osc_weft_module_release(m);
        return rc;
    }
    m->rank = ompi_comm_rank(m->comm);
    m->size = ompi_comm_size(m->comm);
    m->acc_intrinsic = C->acc_intrinsic < 0 ? -1 : 0 != C->acc_intrinsic; /* -1: chosen below */
    if (NULL != info) {
        /* Open MPI's key (osc rdma reads it too): every accumulate is a
         * single-element intrinsic op, so weft's atomics may run them. */
        bool flag = false;
        int found = 0;
        if (OPAL_SUCCESS == opal_info_get_bool(info, "acc_single_intrinsic", &flag, &found) &&
            found) {
            m->acc_intrinsic = flag;
        }
    }
    const char *step = "memory";
    const uint64_t access = WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ | WEFT_ACCESS_REMOTE_WRITE |
                            WEFT_ACCESS_REMOTE_ATOMIC;
    m->blobs = calloc((size_t)m->size, sizeof(*m->blobs));
    m->peers = calloc((size_t)m->size, sizeof(*m->peers));
    m->post_seen = calloc((size_t)m->size, sizeof(*m->post_seen));
    m->held = calloc((size_t)m->size, sizeof(*m->held));
    osc_weft_blob_t *me = malloc(sizeof(*me));
    if (NULL == m->blobs || NULL == m->peers || NULL == m->post_seen || NULL == m->held ||
        NULL == me) {
        free(me);
        osc_weft_module_release(m);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memset(me, 0, sizeof(*me));
    /* The state region. */
    const size_t state_len =
        sizeof(osc_weft_state_t) + sizeof(uint64_t) * (size_t)m->size +
        (MPI_WIN_FLAVOR_DYNAMIC == flavor ? sizeof(osc_weft_dyn_t) * (size_t)C->max_attach : 0);
    void *state = NULL;
    size_t key_len = WEFT_MR_KEY_MAX;
    step = "weft_mr_alloc (state)";
    if (0 != (rc = weft_mr_alloc(C->domain, state_len, access, 0, &state, &m->state_mr)) ||
        0 != (rc = weft_mr_pack_key(m->state_mr, me->state_key, &key_len))) {
        goto fail;
    }
    m->state = state;
    m->state_len = state_len;
    m->post = (uint64_t *)(m->state + 1);
    if (MPI_WIN_FLAVOR_DYNAMIC == flavor) {
        m->dyn = (osc_weft_dyn_t *)(m->post + m->size);
        m->attached = calloc((size_t)C->max_attach, sizeof(*m->attached));
        if (NULL == m->attached) {
            rc = -WEFT_ENOMEM;
            goto fail;
        }
    }
    me->state_base = (uint64_t)(uintptr_t)state;
    me->state_key_len = (uint16_t)key_len;
    me->disp_unit = (uint32_t)disp_unit;
    me->size = MPI_WIN_FLAVOR_DYNAMIC == flavor ? 0 : size;
    /* The window memory. */
    key_len = WEFT_MR_KEY_MAX;
    if (MPI_WIN_FLAVOR_CREATE == flavor && size > 0) {
        step = "weft_mr_reg";
        me->base = (uint64_t)(uintptr_t)*base;
        if (0 != (rc = weft_mr_reg(C->domain, *base, size, access, 0, &m->mr)) ||
            0 != (rc = weft_mr_pack_key(m->mr, me->key, &key_len))) {
            goto fail;
        }
        me->key_len = (uint16_t)key_len;
    } else if (MPI_WIN_FLAVOR_ALLOCATE == flavor) {
        step = "weft_mr_alloc";
        void *mem = NULL;
        if (0 != (rc = weft_mr_alloc(C->domain, size ? size : 1, access, 0, &mem, &m->mr)) ||
            0 != (rc = weft_mr_pack_key(m->mr, me->key, &key_len))) {
            goto fail;
        }
        me->base = (uint64_t)(uintptr_t)mem;
        me->key_len = (uint16_t)key_len;
        *base = size ? mem : NULL;
    } else if (MPI_WIN_FLAVOR_CREATE == flavor) {
        me->base = (uint64_t)(uintptr_t)*base;
    }
    size_t addr_len = sizeof(me->addr);
    step = "weft_ep_getname";
    if (0 != (rc = weft_ep_getname(C->ep, me->addr, &addr_len))) {
        goto fail;
    }
    me->addr_len = (uint32_t)addr_len;
    if (MPI_WIN_FLAVOR_SHARED == flavor) {
        /* Rank 0 allocates every part, back to back; the others map it. */
        uint64_t *sizes = malloc(sizeof(uint64_t) * (size_t)m->size);
        uint64_t mine = size;
        step = "the shared allocation";
        if (NULL == sizes || OMPI_SUCCESS != m->comm->c_coll->coll_allgather(
                                                 &mine, 1, MPI_UINT64_T, sizes, 1, MPI_UINT64_T,
                                                 m->comm, m->comm->c_coll->coll_allgather_module)) {
            free(sizes);
            rc = -WEFT_ENOMEM;
            goto fail;
        }
        uint64_t total = 0;
        uint64_t off = 0;
        for (int r = 0; r < m->size; ++r) {
            if (r == m->rank) {
                off = total;
            }
            total += sizes[r];
        }
        free(sizes);
        if (0 == m->rank) {
            void *mem = NULL;
            step = "weft_mr_alloc (shared)";
            if (0 != (rc = weft_mr_alloc(C->domain, total ? total : 1, access, 0, &mem, &m->mr)) ||
                0 != (rc = weft_mr_pack_key(m->mr, me->key, &key_len))) {
                /* the others learn of it from the zero key length */
                me->key_len = 0;
                m->mr = NULL;
            } else {
                me->key_len = (uint16_t)key_len;
                me->region_base = (uint64_t)(uintptr_t)mem;
            }
        }
        me->size = size;
        me->base = off;
    }
    step = "the exchange of keys";
    rc = m->comm->c_coll->coll_allgather(me, (int)sizeof(*me), MPI_BYTE, m->blobs, (int)sizeof(*me),
                                         MPI_BYTE, m->comm, m->comm->c_coll->coll_allgather_module);
    free(me);
    me = NULL;
    if (OMPI_SUCCESS != rc) {
        osc_weft_module_release(m);
        return rc;
    }
    for (int r = 0; r < m->size; ++r) {
        osc_weft_peer_t *p = &m->peers[r];
        const osc_weft_blob_t *b = &m->blobs[r];
        if (b->key_len > WEFT_MR_KEY_MAX || b->state_key_len > WEFT_MR_KEY_MAX ||
            b->addr_len > sizeof(b->addr)) {
            step = "the exchange of keys (malformed)";
            rc = -WEFT_EBADMSG;
            goto fail;
        }
        p->base = b->base;
        p->size = b->size;
        p->state_base = b->state_base;
        p->disp_unit = b->disp_unit;
    }
    if (MPI_WIN_FLAVOR_SHARED == flavor) {
        step = "the shared window";
        if (OMPI_SUCCESS != (rc = osc_weft_shared_map(m))) {
            rc = -WEFT_ENOMEM;
            goto fail;
        }
        *base = m->shared_base + m->shared_off[m->rank];
    }
    if (m->acc_intrinsic < 0) {
        /* How the window's accumulates run, the same on every rank: under the
         * accumulate lock, combined in place, when every rank maps every
         * window part (weft_mr_alloc memory on one node); else as weft
         * atomics, one trip each, where the lock would cost four. */
        int ok = (MPI_WIN_FLAVOR_ALLOCATE == flavor || MPI_WIN_FLAVOR_SHARED == flavor) &&
                 !ompi_group_have_remote_peers(m->comm->c_local_group);
        for (int r = 0; ok && r < m->size; ++r) {
            ok = OMPI_SUCCESS == osc_weft_peer_ready(m, r) &&
                 (NULL != m->peers[r].ptr || 0 == m->peers[r].size);
        }
        int all = 0;
        step = "agreeing on the accumulate path";
        if (OMPI_SUCCESS !=
            m->comm->c_coll->coll_allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, m->comm,
                                            m->comm->c_coll->coll_allreduce_module)) {
            rc = -WEFT_EIO;
            goto fail;
        }
        m->acc_intrinsic = !all;
    }
    *model = MPI_WIN_UNIFIED;
    win->w_osc_module = &m->super;
    if (C->verbose > 0) {
        opal_output(0, "osc weft: window on rank %d (%s, accumulates %s)", ompi_comm_rank(comm),
                    osc_weft_flavor_name(flavor),
                    m->acc_intrinsic ? "as weft atomics" : "under the accumulate lock");
    }
    /* Nobody accesses a window before every rank has made it. */
    return m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
fail:
    opal_output(0, "osc weft: making a %s window: %s failed: %s", osc_weft_flavor_name(flavor),
                step, weft_strerror(rc));
    free(me);
    osc_weft_module_release(m);
    return OMPI_ERROR;
}
