/*
 * coll_weft.c: Open MPI's `coll weft` component, the collectives of
 * libweft-coll (docs/collectives.md, "Open MPI component").
 *
 * One weft fabric, domain and collectives context per process (opened at the
 * first communicator); one weft group per intracommunicator, made when the
 * module is enabled with the communicator's previous allgather as the
 * out-of-band exchange. Calls weft cannot take (derived or non-contiguous
 * datatypes, user-defined ops, types outside MPI's basic C set) go to the
 * module that had the function before (tuned, basic, libnbc), saved at enable.
 * Intercommunicators and MPI_THREAD_MULTIPLE are declined (no module).
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/class/opal_list.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#include "ompi_weft_types.h"
#include "weft/coll.h"
#include "weft/weft.h"

/* ------------------------------------------------------------------ component */

typedef struct {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int initialized; /* 0 not tried, 1 open, -1 failed */
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_coll_context_t *ctx;
    opal_list_t active;  /* nonblocking requests not complete */
    unsigned idle_calls; /* opal_progress calls while `active` is empty */
} coll_weft_component_t;

/* With no nonblocking collective under way, coll weft's progress callback
 * drives its endpoint on one opal_progress call in this many (a power of two):
 * enough to move what a finished collective still owes a peer, and almost
 * free for the point-to-point loops that call opal_progress all the time. */
#define COLL_WEFT_IDLE_PROGRESS 16

static int coll_weft_register(void);
static int coll_weft_close(void);
static int coll_weft_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *coll_weft_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

OMPI_MODULE_DECLSPEC coll_weft_component_t mca_coll_weft_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "weft",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_close_component = coll_weft_close,
                    .mca_register_component_params = coll_weft_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = coll_weft_init_query,
            .collm_comm_query = coll_weft_comm_query,
        },
    .priority = 50,
};

static int coll_weft_register(void)
{
    mca_base_component_var_register(&mca_coll_weft_component.super.collm_version, "priority",
                                    "Priority of coll weft (tuned's is 30: above it, weft's "
                                    "collectives are used; 0 or less: never)",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_weft_component.priority);
    mca_base_component_var_register(&mca_coll_weft_component.super.collm_version, "verbose",
                                    "1: say which communicators use coll weft, and each call "
                                    "passed to the previous module and why",
                                    MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                    MCA_BASE_VAR_SCOPE_READONLY, &mca_coll_weft_component.verbose);
    return OMPI_SUCCESS;
}

static int coll_weft_progress(void);

static void coll_weft_wait_hook(void *arg)
{
    (void)arg;
    opal_progress();
}

/* The process's weft objects, at the first communicator. */
static int coll_weft_open_weft(void)
{
    coll_weft_component_t *c = &mca_coll_weft_component;
    if (c->initialized != 0) {
        return c->initialized > 0 ? 0 : -1;
    }
    c->initialized = -1;
    struct weft_info *hints = weft_info_alloc();
    struct weft_info *info = NULL;
    const char *step = "weft_getinfo";
    int rc = -WEFT_ENOMEM;
    if (NULL == hints) {
        goto fail;
    }
    hints->caps = WEFT_TAGGED | WEFT_DIRECTED_RECV;
    strncpy(hints->transport, "auto", sizeof(hints->transport) - 1);
    hints->domain_attr.progress = WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading = WEFT_THREAD_DOMAIN;
    if (0 != (rc = weft_getinfo(WEFT_API_VERSION, hints, NULL, &info))) {
        goto fail;
    }
    step = "weft_fabric_open";
    if (0 != (rc = weft_fabric_open(info, NULL, &c->fabric))) {
        goto fail;
    }
    step = "weft_domain_open";
    if (0 != (rc = weft_domain_open(c->fabric, info, &c->domain))) {
        goto fail;
    }
    step = "weft_coll_context_open";
    if (0 != (rc = weft_coll_context_open(c->domain, info, &c->ctx))) {
        goto fail;
    }
    weft_coll_context_set_wait_hook(c->ctx, coll_weft_wait_hook, NULL);
    OBJ_CONSTRUCT(&c->active, opal_list_t);
    opal_progress_register(coll_weft_progress);
    weft_info_free(info);
    weft_info_free(hints);
    c->initialized = 1;
    return 0;
fail:
    opal_output(0, "coll weft: %s failed: %s; not used", step, weft_strerror(rc));
    weft_info_free(info);
    weft_info_free(hints);
    return -1;
}

static int coll_weft_close(void)
{
    coll_weft_component_t *c = &mca_coll_weft_component;
    if (c->initialized > 0) {
        opal_progress_unregister(coll_weft_progress);
        OBJ_DESTRUCT(&c->active);
        weft_coll_context_close(c->ctx);
        weft_domain_close(c->domain);
        weft_fabric_close(c->fabric);
    }
    c->initialized = 0;
    return OMPI_SUCCESS;
}

static int coll_weft_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    /* A collectives context is used by one thread at a time. */
    return enable_mpi_threads ? OMPI_ERR_NOT_SUPPORTED : OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ module */

/* The previous module's function for each collective this module provides. */
/* clang-format off */
#define COLL_WEFT_FOREACH(X) \
    X(allgather) X(allgatherv) X(allreduce) X(alltoall) \
    X(alltoallv) X(barrier) X(bcast) X(exscan) \
    X(gather) X(gatherv) X(reduce) X(reduce_scatter) \
    X(reduce_scatter_block) X(scan) X(scatter) X(scatterv) \
    X(iallgather) X(iallgatherv) X(iallreduce) X(ialltoall) \
    X(ialltoallv) X(ibarrier) X(ibcast) X(iexscan) \
    X(igather) X(igatherv) X(ireduce) X(ireduce_scatter) \
    X(ireduce_scatter_block) X(iscan) X(iscatter) X(iscatterv)
/* clang-format on */

typedef struct {
    mca_coll_base_module_t super;
    weft_coll_group_t *group;
    int size;
    size_t *arrays; /* 4 * size: counts and displacements in elements */
#define X(name)                                     \
    mca_coll_base_module_##name##_fn_t prev_##name; \
    mca_coll_base_module_t *prev_##name##_module;
    COLL_WEFT_FOREACH(X)
#undef X
} coll_weft_module_t;

static void coll_weft_module_construct(coll_weft_module_t *m)
{
    m->group = NULL;
    m->arrays = NULL;
#define X(name)            \
    m->prev_##name = NULL; \
    m->prev_##name##_module = NULL;
    COLL_WEFT_FOREACH(X)
#undef X
}

static void coll_weft_module_destruct(coll_weft_module_t *m)
{
    if (NULL != m->group) {
        weft_coll_group_destroy(m->group);
    }
    free(m->arrays);
#define X(name)                               \
    if (NULL != m->prev_##name##_module) {    \
        OBJ_RELEASE(m->prev_##name##_module); \
    }
    COLL_WEFT_FOREACH(X)
#undef X
}

static OBJ_CLASS_INSTANCE(coll_weft_module_t, mca_coll_base_module_t, coll_weft_module_construct,
                          coll_weft_module_destruct);

/* A nonblocking collective. */
/* Bytes packed from, or to be unpacked into, a non-contiguous datatype's
 * buffer: one region (n == 0: user, count), or n regions of a v form (region
 * i: counts[i] elements at user[i], bytes offs[i] .. + lens[i] of packed). */
typedef struct {
    void *user;          /* the caller's buffer */
    size_t count;        /* elements of dt there */
    ompi_datatype_t *dt; /* NULL: nothing */
    void *packed;        /* malloc'ed */
    size_t bytes;
    int n;        /* regions of a v form, or 0 */
    char **users; /* the four arrays are one allocation */
    size_t *counts;
    size_t *offs;
    size_t *lens;
} coll_weft_packed_t;

typedef struct {
    ompi_request_t super;
    opal_list_item_t item; /* in the component's active list */
    weft_coll_request_t *req;
    coll_weft_packed_t send; /* freed at completion */
    coll_weft_packed_t recv; /* unpacked at completion */
} coll_weft_request_t;

static OBJ_CLASS_INSTANCE(coll_weft_request_t, ompi_request_t, NULL, NULL);

/* Pack `count` elements of dt at buf (send side: the data; receive side: just
 * the size) into a new buffer. 0, or an MPI error code. */
static int coll_weft_pack(coll_weft_packed_t *p, const void *buf, size_t count, ompi_datatype_t *dt,
                          int copy_in)
{
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, buf, 0,
                                             &conv);
    size_t bytes = 0;
    opal_convertor_get_packed_size(&conv, &bytes);
    p->packed = malloc(bytes > 0 ? bytes : 1);
    if (NULL == p->packed) {
        OBJ_DESTRUCT(&conv);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (copy_in && bytes > 0) {
        struct iovec iov = {p->packed, bytes};
        uint32_t n = 1;
        size_t max = bytes;
        opal_convertor_pack(&conv, &iov, &n, &max);
    }
    OBJ_DESTRUCT(&conv);
    p->user = (void *)buf;
    p->count = count;
    p->dt = dt;
    p->bytes = bytes;
    return OMPI_SUCCESS;
}

/* Copy `len` packed bytes at src into (dt, count) at user (or the reverse). */
static void coll_weft_convert(ompi_datatype_t *dt, size_t count, void *user, void *packed,
                              size_t len, int to_user)
{
    if (len == 0) {
        return;
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    struct iovec iov = {packed, len};
    uint32_t n = 1;
    size_t max = len;
    if (to_user) {
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count, user,
                                                 0, &conv);
        opal_convertor_unpack(&conv, &iov, &n, &max);
    } else {
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, user,
                                                 0, &conv);
        opal_convertor_pack(&conv, &iov, &n, &max);
    }
    OBJ_DESTRUCT(&conv);
}

/* The regions of a v form (counts and displacements in elements of dt) packed
 * into one buffer, region after region (copy_in: with their contents). */
static int coll_weft_vpack(coll_weft_packed_t *p, const void *base, const int *counts,
                           const int *displs, int n, ompi_datatype_t *dt, int copy_in)
{
    memset(p, 0, sizeof(*p));
    ptrdiff_t lb = 0;
    ptrdiff_t extent = 0;
    size_t size = 0;
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_type_size(dt, &size);
    void *block = malloc((size_t)n * (3 * sizeof(size_t) + sizeof(char *)));
    if (NULL == block) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    p->counts = block;
    p->offs = p->counts + n;
    p->lens = p->offs + n;
    p->users = (char **)(p->lens + n);
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
        p->users[i] = (char *)base + (ptrdiff_t)displs[i] * extent;
        p->counts[i] = (size_t)counts[i];
        p->lens[i] = size * (size_t)counts[i];
        p->offs[i] = total;
        total += p->lens[i];
    }
    p->packed = malloc(total > 0 ? total : 1);
    if (NULL == p->packed) {
        free(block);
        memset(p, 0, sizeof(*p));
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    p->bytes = total;
    p->dt = dt;
    p->n = n;
    for (int i = 0; copy_in && i < n; ++i) {
        coll_weft_convert(dt, p->counts[i], p->users[i], (char *)p->packed + p->offs[i], p->lens[i],
                          0);
    }
    return OMPI_SUCCESS;
}

/* Unpack (when `unpack`) and free. */
static void coll_weft_unpack(coll_weft_packed_t *p, int unpack)
{
    if (NULL == p->dt) {
        return;
    }
    if (p->n > 0) {
        for (int i = 0; unpack && i < p->n; ++i) {
            coll_weft_convert(p->dt, p->counts[i], p->users[i], (char *)p->packed + p->offs[i],
                              p->lens[i], 1);
        }
        free(p->counts);
        free(p->packed);
        memset(p, 0, sizeof(*p));
        return;
    }
    if (unpack && p->bytes > 0) {
        opal_convertor_t conv;
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &p->dt->super, p->count,
                                                 p->user, 0, &conv);
        struct iovec iov = {p->packed, p->bytes};
        uint32_t n = 1;
        size_t max = p->bytes;
        opal_convertor_unpack(&conv, &iov, &n, &max);
        OBJ_DESTRUCT(&conv);
    }
    free(p->packed);
    p->packed = NULL;
    p->dt = NULL;
}

static int coll_weft_progress(void)
{
    coll_weft_component_t *c = &mca_coll_weft_component;
    if (opal_list_is_empty(&c->active)) {
        /* Now and then: a finished collective may still owe a peer the rest of
         * a large message (its rendezvous), which only this endpoint's progress
         * moves; blocking collectives drive the endpoint themselves. */
        if (0 != (++c->idle_calls & (COLL_WEFT_IDLE_PROGRESS - 1))) {
            return 0;
        }
        return weft_coll_progress(c->ctx);
    }
    int n = weft_coll_progress(c->ctx);
    opal_list_item_t *it = opal_list_get_first(&c->active);
    while (it != opal_list_get_end(&c->active)) {
        opal_list_item_t *next = opal_list_get_next(it);
        coll_weft_request_t *r =
            (coll_weft_request_t *)((char *)it - offsetof(coll_weft_request_t, item));
        const int rc = weft_coll_test(r->req);
        if (rc != 0) {
            opal_list_remove_item(&c->active, it);
            coll_weft_unpack(&r->send, 0);
            coll_weft_unpack(&r->recv, rc == 1);
            r->super.req_status.MPI_ERROR = rc == 1              ? MPI_SUCCESS
                                            : rc == -WEFT_ETRUNC ? MPI_ERR_TRUNCATE
                                                                 : MPI_ERR_INTERN;
            ompi_request_complete(&r->super, true);
            ++n;
        }
        it = next;
    }
    return n;
}

static int coll_weft_request_free(ompi_request_t **request)
{
    coll_weft_request_t *r = (coll_weft_request_t *)*request;
    if (!REQUEST_COMPLETE(&r->super)) {
        return MPI_ERR_REQUEST; /* MPI: an active nonblocking collective is not freed */
    }
    weft_coll_request_free(r->req);
    OMPI_REQUEST_FINI(&r->super);
    OBJ_RELEASE(r);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int coll_weft_request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled */
}

/* Run (request == NULL) or start (*request set) the collective; `send` and
 * `recv` (may be NULL) are packed buffers, freed (and unpacked) when done. */
static int coll_weft_go_packed(coll_weft_module_t *m, const struct weft_coll_args *a,
                               ompi_request_t **request, coll_weft_packed_t *send,
                               coll_weft_packed_t *recv)
{
    int rc;
    if (NULL == request) {
        rc = weft_coll(m->group, a);
        if (NULL != send) {
            coll_weft_unpack(send, 0);
        }
        if (NULL != recv) {
            coll_weft_unpack(recv, rc == 0);
        }
    } else {
        coll_weft_request_t *r = OBJ_NEW(coll_weft_request_t);
        if (NULL == r) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        rc = weft_coll_init(m->group, a, &r->req);
        if (0 == rc && 0 != (rc = weft_coll_start(r->req))) {
            weft_coll_request_free(r->req);
        }
        if (0 != rc) {
            if (NULL != send) {
                coll_weft_unpack(send, 0);
            }
            if (NULL != recv) {
                coll_weft_unpack(recv, 0);
            }
            OBJ_RELEASE(r);
        } else {
            r->send = NULL != send ? *send : (coll_weft_packed_t){0};
            r->recv = NULL != recv ? *recv : (coll_weft_packed_t){0};
            OMPI_REQUEST_INIT(&r->super, false);
            r->super.req_type = OMPI_REQUEST_COLL;
            r->super.req_state = OMPI_REQUEST_ACTIVE;
            r->super.req_free = coll_weft_request_free;
            r->super.req_cancel = coll_weft_request_cancel;
            r->super.req_status.MPI_ERROR = MPI_SUCCESS;
            opal_list_append(&mca_coll_weft_component.active, &r->item);
            *request = &r->super;
        }
    }
    if (0 == rc) {
        return OMPI_SUCCESS;
    }
    return rc == -WEFT_ETRUNC   ? MPI_ERR_TRUNCATE
           : rc == -WEFT_EINVAL ? MPI_ERR_ARG
                                : MPI_ERR_INTERN;
}

static int coll_weft_go(coll_weft_module_t *m, const struct weft_coll_args *a,
                        ompi_request_t **request)
{
    return coll_weft_go_packed(m, a, request, NULL, NULL);
}

/* ------------------------------------------------------------------ types and ops */

/* The weft type of an MPI basic C type (ompi_weft_types.h) or pair type, or -1. */
static int coll_weft_datatype(ompi_datatype_t *dt)
{
    const int basic = ompi_weft_datatype(dt);
    if (basic >= 0) {
        return basic; /* WEFT_COLL_INT8 .. are weft's own numbers */
    }
    static const struct {
        MPI_Datatype mpi;
        int weft;
    } pairs[] = {
        {MPI_FLOAT_INT, WEFT_COLL_FLOAT_INT}, {MPI_DOUBLE_INT, WEFT_COLL_DOUBLE_INT},
        {MPI_LONG_INT, WEFT_COLL_LONG_INT},   {MPI_2INT, WEFT_COLL_2INT},
        {MPI_SHORT_INT, WEFT_COLL_SHORT_INT}, {MPI_LONG_DOUBLE_INT, WEFT_COLL_LONG_DOUBLE_INT},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); ++i) {
        if (dt == pairs[i].mpi) {
            /* The pair types' extents include their padding, as the library's
             * structs do; sizes differ between ABIs: trust the table only
             * where they agree. */
            ptrdiff_t lb = 0;
            ptrdiff_t extent = 0;
            ompi_datatype_get_extent(dt, &lb, &extent);
            const size_t want = weft_coll_datatype_size((enum weft_coll_datatype)pairs[i].weft);
            return lb == 0 && (size_t)extent == want ? pairs[i].weft : -1;
        }
    }
    return -1;
}

/* The weft op of an MPI reduction op (the accumulate-only MPI_REPLACE and
 * MPI_NO_OP are not reductions), or -1. */
static int coll_weft_op(struct ompi_op_t *op)
{
    if (MPI_MINLOC == op || MPI_MAXLOC == op) {
        return MPI_MINLOC == op ? WEFT_COLL_MINLOC : WEFT_COLL_MAXLOC;
    }
    if (MPI_REPLACE == op || MPI_NO_OP == op) {
        return -1;
    }
    return ompi_weft_atomic_op(op); /* WEFT_COLL_SUM .. are weft's own numbers */
}

/* A reduction's type and op, or nonzero when weft cannot take them. */
static int coll_weft_reduction(ompi_datatype_t *dt, struct ompi_op_t *op, struct weft_coll_args *a)
{
    /* The last pair looked up (programs repeat them): no table walk. */
    static ompi_datatype_t *last_dt = NULL;
    static struct ompi_op_t *last_op = NULL;
    static int last_t = -1;
    static int last_o = -1;
    if (dt == last_dt && op == last_op) {
        a->datatype = (enum weft_coll_datatype)last_t;
        a->op = (enum weft_coll_op)last_o;
        return 0;
    }
    const int t = coll_weft_datatype(dt);
    const int o = coll_weft_op(op);
    if (t < 0 || o < 0 || !weft_coll_op_valid((enum weft_coll_datatype)t, (enum weft_coll_op)o)) {
        return -1;
    }
    a->datatype = (enum weft_coll_datatype)t;
    a->op = (enum weft_coll_op)o;
    last_dt = dt;
    last_op = op;
    last_t = t;
    last_o = o;
    return 0;
}

/* Why a reduction is passed on (verbose output). */
static const char *coll_weft_why(ompi_datatype_t *dt, struct ompi_op_t *op)
{
    if (coll_weft_op(op) < 0) {
        return "not one of MPI's predefined reduction ops (user-defined, MPI_REPLACE, MPI_NO_OP)";
    }
    if (coll_weft_datatype(dt) < 0) {
        return "datatype outside the basic C types weft combines";
    }
    return "op not defined on the datatype";
}

/*
 * Data moved as bytes: a datatype whose `count` elements are contiguous, and
 * (for v forms, where displacements are in extents) whose extent is its size.
 * Returns the element size in bytes, sets *shift to the offset of the first
 * byte, or returns 0 when weft cannot take the type.
 */
static size_t coll_weft_bytes(ompi_datatype_t *dt, size_t count, int need_dense, ptrdiff_t *shift)
{
    size_t size = 0;
    ptrdiff_t lb = 0;
    ptrdiff_t extent = 0;
    ptrdiff_t true_lb = 0;
    ptrdiff_t true_extent = 0;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    if (size == 0 ||
        !ompi_datatype_is_contiguous_memory_layout(dt, count > 1 ? (int32_t)count : 2) ||
        (need_dense && (ptrdiff_t)size != extent)) {
        return 0;
    }
    *shift = true_lb;
    return size;
}

/* The first byte of a buffer: buf plus the datatype's true lower bound. A
 * NULL buf with a lower bound is MPI_BOTTOM with absolute addresses. */
static void *shifted(const void *buf, ptrdiff_t shift)
{
    if (buf == MPI_IN_PLACE) {
        return (void *)buf;
    }
    return (void *)((uintptr_t)buf + (uintptr_t)shift);
}

static void coll_weft_note(const char *what, const char *why)
{
    if (mca_coll_weft_component.verbose > 0) {
        opal_output(0, "coll weft: %s passed to the previous module: %s", what, why);
    }
}

static void coll_weft_args_init(struct weft_coll_args *a, enum weft_coll_type type)
{
    memset(a, 0, sizeof(*a));
    a->type = type;
    a->datatype = WEFT_COLL_BYTE;
}

/* ------------------------------------------------------------------ the collectives */

/* Each collective has one body for its blocking and nonblocking forms; `req`
 * is NULL for the blocking one. FALLBACK calls the previous module. */
#define FALLBACK(name, why, ...)                                                                \
    do {                                                                                        \
        coll_weft_note(#name, why);                                                             \
        return req == NULL ? m->prev_##name(__VA_ARGS__, comm, m->prev_##name##_module)         \
                           : m->prev_i##name(__VA_ARGS__, comm, req, m->prev_i##name##_module); \
    } while (0)

static int do_barrier(struct ompi_communicator_t *comm, coll_weft_module_t *m, ompi_request_t **req)
{
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_BARRIER);
    return coll_weft_go(m, &a, req);
}

/* One side (send or receive) of a data-movement collective: where weft reads
 * or writes `count` elements of dt at buf, packing into a temporary when dt is
 * not dense (copy_in: its current contents too). Every rank takes weft's path
 * whatever its datatype, so ranks never disagree about the path. */
static int coll_weft_side(const void *buf, size_t count, ompi_datatype_t *dt, int copy_in,
                          coll_weft_packed_t *p, void **ptr, size_t *bytes)
{
    memset(p, 0, sizeof(*p));
    ptrdiff_t shift = 0;
    const size_t es = coll_weft_bytes(dt, count, 1, &shift);
    if (es != 0) {
        *ptr = shifted(buf, shift);
        *bytes = es * count;
        return OMPI_SUCCESS;
    }
    const int rc = coll_weft_pack(p, buf, count, dt, copy_in);
    *ptr = p->packed;
    *bytes = p->bytes;
    return rc;
}

static int do_bcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                    struct ompi_communicator_t *comm, coll_weft_module_t *m, ompi_request_t **req)
{
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t p;
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_BCAST);
    int rc = coll_weft_side(buf, (size_t)count, dt, me == root, &p, &a.recvbuf, &a.count);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    a.root = (uint32_t)root;
    return coll_weft_go_packed(m, &a, req, me == root ? &p : NULL, me == root ? NULL : &p);
}

static int do_reduction(enum weft_coll_type type, const void *sbuf, void *rbuf, int count,
                        struct ompi_datatype_t *dt, struct ompi_op_t *op, int root,
                        coll_weft_module_t *m, ompi_request_t **req, int *fallback)
{
    struct weft_coll_args a;
    coll_weft_args_init(&a, type);
    /* A type of the table is a predefined one: its elements are dense from the
     * buffer's start (lb 0, extent == the library's element size). */
    if (coll_weft_reduction(dt, op, &a) != 0) {
        *fallback = 1;
        return 0;
    }
    a.sendbuf = sbuf;
    a.recvbuf = rbuf;
    a.count = (size_t)count;
    a.root = (uint32_t)root;
    return coll_weft_go(m, &a, req);
}

static int do_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                        coll_weft_module_t *m, ompi_request_t **req)
{
    int fallback = 0;
    const int rc =
        do_reduction(WEFT_COLL_ALLREDUCE, sbuf, rbuf, count, dt, op, 0, m, req, &fallback);
    if (fallback) {
        FALLBACK(allreduce, coll_weft_why(dt, op), sbuf, rbuf, count, dt, op);
    }
    return rc;
}

static int do_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                     struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                     coll_weft_module_t *m, ompi_request_t **req)
{
    int fallback = 0;
    const int rc =
        do_reduction(WEFT_COLL_REDUCE, sbuf, rbuf, count, dt, op, root, m, req, &fallback);
    if (fallback) {
        FALLBACK(reduce, coll_weft_why(dt, op), sbuf, rbuf, count, dt, op, root);
    }
    return rc;
}

static int do_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                   struct ompi_op_t *op, struct ompi_communicator_t *comm, coll_weft_module_t *m,
                   ompi_request_t **req)
{
    int fallback = 0;
    const int rc = do_reduction(WEFT_COLL_SCAN, sbuf, rbuf, count, dt, op, 0, m, req, &fallback);
    if (fallback) {
        FALLBACK(scan, coll_weft_why(dt, op), sbuf, rbuf, count, dt, op);
    }
    return rc;
}

static int do_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dt,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm, coll_weft_module_t *m,
                     ompi_request_t **req)
{
    int fallback = 0;
    const int rc = do_reduction(WEFT_COLL_EXSCAN, sbuf, rbuf, count, dt, op, 0, m, req, &fallback);
    if (fallback) {
        FALLBACK(exscan, coll_weft_why(dt, op), sbuf, rbuf, count, dt, op);
    }
    return rc;
}

static int do_reduce_scatter_block(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, coll_weft_module_t *m,
                                   ompi_request_t **req)
{
    int fallback = 0;
    const int rc = do_reduction(WEFT_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, count, dt, op, 0, m,
                                req, &fallback);
    if (fallback) {
        FALLBACK(reduce_scatter_block, coll_weft_why(dt, op), sbuf, rbuf, count, dt, op);
    }
    return rc;
}

static int do_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                             struct ompi_datatype_t *dt, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, coll_weft_module_t *m,
                             ompi_request_t **req)
{
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_REDUCE_SCATTER);
    ptrdiff_t shift = 0;
    if (coll_weft_reduction(dt, op, &a) != 0) {
        FALLBACK(reduce_scatter, coll_weft_why(dt, op), sbuf, rbuf, rcounts, dt, op);
    }
    for (int i = 0; i < m->size; ++i) {
        m->arrays[i] = (size_t)rcounts[i];
    }
    a.sendbuf = shifted(sbuf, shift);
    a.recvbuf = shifted(rbuf, shift);
    a.recvcounts = m->arrays;
    a.count = m->arrays[ompi_comm_rank(comm)];
    return coll_weft_go(m, &a, req);
}

/* The byte size of one block of (count, dt) for data movement, or 0. */
#define BLOCK(count, dt, dense, shift) coll_weft_bytes((dt), (size_t)(count), (dense), (shift))

static int do_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                        coll_weft_module_t *m, ompi_request_t **req)
{
    coll_weft_packed_t ps = {0}, pr;
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_ALLGATHER);
    size_t total = 0, mine = 0;
    void *send = MPI_IN_PLACE;
    int rc = coll_weft_side(rbuf, (size_t)rcount * (size_t)m->size, rdt, sbuf == MPI_IN_PLACE, &pr,
                            &a.recvbuf, &total);
    if (rc == OMPI_SUCCESS && sbuf != MPI_IN_PLACE) {
        rc = coll_weft_side(sbuf, (size_t)scount, sdt, 1, &ps, &send, &mine);
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&pr, 0);
        return rc;
    }
    a.sendbuf = send;
    a.count = total / (size_t)m->size;
    if (sbuf != MPI_IN_PLACE && mine != a.count) {
        coll_weft_unpack(&ps, 0);
        coll_weft_unpack(&pr, 0);
        return MPI_ERR_TRUNCATE; /* type signatures do not match */
    }
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}

/* The receive side of a v form: byte counts and displacements for the library
 * in counts_out/displs_out, and where it receives; non-dense datatypes packed. */
static int coll_weft_vside(const void *buf, const int *counts, const int *displs,
                           ompi_datatype_t *dt, int n, int copy_in, coll_weft_packed_t *p,
                           size_t *counts_out, size_t *displs_out, void **ptr)
{
    memset(p, 0, sizeof(*p));
    ptrdiff_t shift = 0;
    const size_t es = coll_weft_bytes(dt, 2, 1, &shift);
    if (es != 0) {
        for (int i = 0; i < n; ++i) {
            counts_out[i] = (size_t)counts[i] * es;
            displs_out[i] = (size_t)displs[i] * es;
        }
        *ptr = shifted(buf, shift);
        return OMPI_SUCCESS;
    }
    const int rc = coll_weft_vpack(p, buf, counts, displs, n, dt, copy_in);
    if (rc == OMPI_SUCCESS) {
        for (int i = 0; i < n; ++i) {
            counts_out[i] = p->lens[i];
            displs_out[i] = p->offs[i];
        }
        *ptr = p->packed;
    }
    return rc;
}

static int do_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                         const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, coll_weft_module_t *m,
                         ompi_request_t **req)
{
    const int n = m->size;
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t ps = {0}, pr;
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_ALLGATHERV);
    int rc = coll_weft_vside(rbuf, rcounts, displs, rdt, n, sbuf == MPI_IN_PLACE, &pr, m->arrays,
                             m->arrays + n, &a.recvbuf);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    a.recvcounts = m->arrays;
    a.rdispls = m->arrays + n;
    a.count = m->arrays[me];
    a.sendbuf = MPI_IN_PLACE;
    if (sbuf != MPI_IN_PLACE) {
        size_t mine = 0;
        void *send = NULL;
        rc = coll_weft_side(sbuf, (size_t)scount, sdt, 1, &ps, &send, &mine);
        if (rc == OMPI_SUCCESS && mine != a.count) {
            coll_weft_unpack(&ps, 0);
            rc = MPI_ERR_TRUNCATE; /* type signatures do not match */
        }
        if (rc != OMPI_SUCCESS) {
            coll_weft_unpack(&pr, 0);
            return rc;
        }
        a.sendbuf = send;
    }
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}
static int do_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                     int rcount, struct ompi_datatype_t *rdt, int root,
                     struct ompi_communicator_t *comm, coll_weft_module_t *m, ompi_request_t **req)
{
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t ps = {0}, pr = {0};
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_GATHER);
    a.root = (uint32_t)root;
    size_t total = 0, mine = 0;
    void *send = MPI_IN_PLACE;
    int rc = OMPI_SUCCESS;
    if (me == root) {
        rc = coll_weft_side(rbuf, (size_t)rcount * (size_t)m->size, rdt, sbuf == MPI_IN_PLACE, &pr,
                            &a.recvbuf, &total);
        a.count = total / (size_t)m->size;
    }
    if (rc == OMPI_SUCCESS && sbuf != MPI_IN_PLACE) {
        rc = coll_weft_side(sbuf, (size_t)scount, sdt, 1, &ps, &send, &mine);
        if (me != root) {
            a.count = mine;
        }
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&pr, 0);
        return rc;
    }
    a.sendbuf = send;
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}

static int do_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                      const int *rcounts, const int *displs, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, coll_weft_module_t *m, ompi_request_t **req)
{
    const int n = m->size;
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t ps = {0}, pr = {0};
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_GATHERV);
    a.root = (uint32_t)root;
    a.sendbuf = MPI_IN_PLACE;
    int rc = OMPI_SUCCESS;
    if (me == root) {
        rc = coll_weft_vside(rbuf, rcounts, displs, rdt, n, sbuf == MPI_IN_PLACE, &pr, m->arrays,
                             m->arrays + n, &a.recvbuf);
        a.recvcounts = m->arrays;
        a.rdispls = m->arrays + n;
        a.count = m->arrays[me];
    }
    if (rc == OMPI_SUCCESS && sbuf != MPI_IN_PLACE) {
        void *send = NULL;
        rc = coll_weft_side(sbuf, (size_t)scount, sdt, 1, &ps, &send, &a.count);
        a.sendbuf = send;
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&pr, 0);
        return rc;
    }
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}
static int do_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, coll_weft_module_t *m, ompi_request_t **req)
{
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t ps = {0}, pr = {0};
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_SCATTER);
    a.root = (uint32_t)root;
    size_t total = 0, mine = 0;
    void *send = NULL, *recv = MPI_IN_PLACE;
    int rc = OMPI_SUCCESS;
    if (me == root) {
        rc = coll_weft_side(sbuf, (size_t)scount * (size_t)m->size, sdt, 1, &ps, &send, &total);
        a.count = total / (size_t)m->size;
    }
    if (rc == OMPI_SUCCESS && rbuf != MPI_IN_PLACE) {
        rc = coll_weft_side(rbuf, (size_t)rcount, rdt, 0, &pr, &recv, &mine);
        if (me != root) {
            a.count = mine;
        }
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&ps, 0);
        return rc;
    }
    a.sendbuf = send;
    a.recvbuf = recv;
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}

static int do_scatterv(const void *sbuf, const int *scounts, const int *displs,
                       struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                       coll_weft_module_t *m, ompi_request_t **req)
{
    const int n = m->size;
    const int me = ompi_comm_rank(comm);
    coll_weft_packed_t ps = {0}, pr = {0};
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_SCATTERV);
    a.root = (uint32_t)root;
    a.recvbuf = MPI_IN_PLACE;
    int rc = OMPI_SUCCESS;
    if (me == root) {
        void *send = NULL;
        rc =
            coll_weft_vside(sbuf, scounts, displs, sdt, n, 1, &ps, m->arrays, m->arrays + n, &send);
        a.sendbuf = send;
        a.sendcounts = m->arrays;
        a.sdispls = m->arrays + n;
        a.count = m->arrays[me];
    }
    if (rc == OMPI_SUCCESS && rbuf != MPI_IN_PLACE) {
        void *recv = NULL;
        rc = coll_weft_side(rbuf, (size_t)rcount, rdt, 0, &pr, &recv, &a.count);
        a.recvbuf = recv;
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&ps, 0);
        return rc;
    }
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}
static int do_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                       coll_weft_module_t *m, ompi_request_t **req)
{
    coll_weft_packed_t ps = {0}, pr;
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_ALLTOALL);
    size_t total = 0, stotal = 0;
    void *send = MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    int rc = coll_weft_side(rbuf, (size_t)rcount * n, rdt, sbuf == MPI_IN_PLACE, &pr, &a.recvbuf,
                            &total);
    if (rc == OMPI_SUCCESS && sbuf != MPI_IN_PLACE) {
        rc = coll_weft_side(sbuf, (size_t)scount * n, sdt, 1, &ps, &send, &stotal);
    }
    if (rc != OMPI_SUCCESS) {
        coll_weft_unpack(&pr, 0);
        return rc;
    }
    if (sbuf != MPI_IN_PLACE && stotal != total) {
        coll_weft_unpack(&ps, 0);
        coll_weft_unpack(&pr, 0);
        return MPI_ERR_TRUNCATE;
    }
    a.sendbuf = send;
    a.count = total / n;
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}

static int do_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                        struct ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                        const int *rdispls, struct ompi_datatype_t *rdt,
                        struct ompi_communicator_t *comm, coll_weft_module_t *m,
                        ompi_request_t **req)
{
    const int n = m->size;
    coll_weft_packed_t ps = {0}, pr;
    struct weft_coll_args a;
    coll_weft_args_init(&a, WEFT_COLL_ALLTOALLV);
    int rc = coll_weft_vside(rbuf, rcounts, rdispls, rdt, n, sbuf == MPI_IN_PLACE, &pr, m->arrays,
                             m->arrays + n, &a.recvbuf);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    a.recvcounts = m->arrays;
    a.rdispls = m->arrays + n;
    a.sendbuf = MPI_IN_PLACE;
    if (sbuf != MPI_IN_PLACE) {
        void *send = NULL;
        rc = coll_weft_vside(sbuf, scounts, sdispls, sdt, n, 1, &ps, m->arrays + 2 * n,
                             m->arrays + 3 * n, &send);
        if (rc != OMPI_SUCCESS) {
            coll_weft_unpack(&pr, 0);
            return rc;
        }
        a.sendbuf = send;
        a.sendcounts = m->arrays + 2 * n;
        a.sdispls = m->arrays + 3 * n;
    }
    return coll_weft_go_packed(m, &a, req, &ps, &pr);
}

/* The entry points Open MPI calls: blocking and nonblocking over one body. */
#define M ((coll_weft_module_t *)module)

static int w_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    const int rc = do_barrier(comm, M, NULL);
    /* Point-to-point messages sent before the barrier travel on the MTL's
     * endpoint, not this one: one progress pass after it has them matched, as
     * they would be behind a barrier on the same channel (programs count on it,
     * e.g. a send, a barrier, then an MPI_Iprobe that must find the message). */
    opal_progress();
    return rc;
}
static int w_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **req,
                      mca_coll_base_module_t *module)
{
    return do_barrier(comm, M, req);
}
static int w_bcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_bcast(buf, count, dt, root, comm, M, NULL);
}
static int w_ibcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                    struct ompi_communicator_t *comm, ompi_request_t **req,
                    mca_coll_base_module_t *module)
{
    return do_bcast(buf, count, dt, root, comm, M, req);
}
static int w_allreduce(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    return do_allreduce(s, r, count, dt, op, comm, M, NULL);
}
static int w_iallreduce(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                        ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_allreduce(s, r, count, dt, op, comm, M, req);
}
static int w_reduce(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                    struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    return do_reduce(s, r, count, dt, op, root, comm, M, NULL);
}
static int w_ireduce(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                     struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                     ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_reduce(s, r, count, dt, op, root, comm, M, req);
}
static int w_scan(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                  struct ompi_op_t *op, struct ompi_communicator_t *comm,
                  mca_coll_base_module_t *module)
{
    return do_scan(s, r, count, dt, op, comm, M, NULL);
}
static int w_iscan(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                   struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **req,
                   mca_coll_base_module_t *module)
{
    return do_scan(s, r, count, dt, op, comm, M, req);
}
static int w_exscan(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    return do_exscan(s, r, count, dt, op, comm, M, NULL);
}
static int w_iexscan(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **req,
                     mca_coll_base_module_t *module)
{
    return do_exscan(s, r, count, dt, op, comm, M, req);
}
static int w_reduce_scatter_block(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module)
{
    return do_reduce_scatter_block(s, r, count, dt, op, comm, M, NULL);
}
static int w_ireduce_scatter_block(const void *s, void *r, int count, struct ompi_datatype_t *dt,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                   ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_reduce_scatter_block(s, r, count, dt, op, comm, M, req);
}
static int w_reduce_scatter(const void *s, void *r, const int *counts, struct ompi_datatype_t *dt,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    return do_reduce_scatter(s, r, counts, dt, op, comm, M, NULL);
}
static int w_ireduce_scatter(const void *s, void *r, const int *counts, struct ompi_datatype_t *dt,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_reduce_scatter(s, r, counts, dt, op, comm, M, req);
}
static int w_allgather(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                       struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    return do_allgather(s, sc, sdt, r, rc, rdt, comm, M, NULL);
}
static int w_iallgather(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                        struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                        ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_allgather(s, sc, sdt, r, rc, rdt, comm, M, req);
}
static int w_allgatherv(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, const int *rcs,
                        const int *ds, struct ompi_datatype_t *rdt,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_allgatherv(s, sc, sdt, r, rcs, ds, rdt, comm, M, NULL);
}
static int w_iallgatherv(const void *s, int sc, struct ompi_datatype_t *sdt, void *r,
                         const int *rcs, const int *ds, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module)
{
    return do_allgatherv(s, sc, sdt, r, rcs, ds, rdt, comm, M, req);
}
static int w_gather(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                    struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    return do_gather(s, sc, sdt, r, rc, rdt, root, comm, M, NULL);
}
static int w_igather(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                     struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                     ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_gather(s, sc, sdt, r, rc, rdt, root, comm, M, req);
}
static int w_gatherv(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, const int *rcs,
                     const int *ds, struct ompi_datatype_t *rdt, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_gatherv(s, sc, sdt, r, rcs, ds, rdt, root, comm, M, NULL);
}
static int w_igatherv(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, const int *rcs,
                      const int *ds, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, ompi_request_t **req,
                      mca_coll_base_module_t *module)
{
    return do_gatherv(s, sc, sdt, r, rcs, ds, rdt, root, comm, M, req);
}
static int w_scatter(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                     struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                     mca_coll_base_module_t *module)
{
    return do_scatter(s, sc, sdt, r, rc, rdt, root, comm, M, NULL);
}
static int w_iscatter(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                      struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                      ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_scatter(s, sc, sdt, r, rc, rdt, root, comm, M, req);
}
static int w_scatterv(const void *s, const int *scs, const int *ds, struct ompi_datatype_t *sdt,
                      void *r, int rc, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_scatterv(s, scs, ds, sdt, r, rc, rdt, root, comm, M, NULL);
}
static int w_iscatterv(const void *s, const int *scs, const int *ds, struct ompi_datatype_t *sdt,
                       void *r, int rc, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module)
{
    return do_scatterv(s, scs, ds, sdt, r, rc, rdt, root, comm, M, req);
}
static int w_alltoall(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                      struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    return do_alltoall(s, sc, sdt, r, rc, rdt, comm, M, NULL);
}
static int w_ialltoall(const void *s, int sc, struct ompi_datatype_t *sdt, void *r, int rc,
                       struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                       ompi_request_t **req, mca_coll_base_module_t *module)
{
    return do_alltoall(s, sc, sdt, r, rc, rdt, comm, M, req);
}
static int w_alltoallv(const void *s, const int *scs, const int *sds, struct ompi_datatype_t *sdt,
                       void *r, const int *rcs, const int *rds, struct ompi_datatype_t *rdt,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return do_alltoallv(s, scs, sds, sdt, r, rcs, rds, rdt, comm, M, NULL);
}
static int w_ialltoallv(const void *s, const int *scs, const int *sds, struct ompi_datatype_t *sdt,
                        void *r, const int *rcs, const int *rds, struct ompi_datatype_t *rdt,
                        struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    return do_alltoallv(s, scs, sds, sdt, r, rcs, rds, rdt, comm, M, req);
}
#undef M

/* ------------------------------------------------------------------ selection */

typedef struct {
    struct ompi_communicator_t *comm;
    coll_weft_module_t *m;
} oob_arg_t;

/* The out-of-band allgather returns weft's codes (0 or -WEFT_E...), not Open
 * MPI's: OMPI_ERR_UNREACH is -12, which weft would read as -WEFT_ENOMEM. */
static int coll_weft_oob(const void *send, void *recv, size_t len, void *arg)
{
    oob_arg_t *o = arg;
    const int rc = o->m->prev_allgather((void *)send, (int)len, MPI_BYTE, recv, (int)len, MPI_BYTE,
                                        o->comm, o->m->prev_allgather_module);
    if (OMPI_SUCCESS == rc) {
        return 0;
    }
    opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                        "coll weft: the out-of-band allgather on %s failed: Open MPI error %d",
                        o->comm->c_name, rc);
    return OMPI_ERR_UNREACH == rc           ? -WEFT_EHOSTUNREACH
           : OMPI_ERR_OUT_OF_RESOURCE == rc ? -WEFT_ENOMEM
                                            : -WEFT_EOTHER;
}

static int coll_weft_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    coll_weft_module_t *m = (coll_weft_module_t *)module;
    /* Keep what the communicator had: the fallbacks (and the out-of-band allgather). */
#define X(name)                                                                       \
    m->prev_##name = comm->c_coll->coll_##name;                                       \
    m->prev_##name##_module = comm->c_coll->coll_##name##_module;                     \
    if (NULL == m->prev_##name || NULL == m->prev_##name##_module) {                  \
        opal_output(0, "coll weft: no previous " #name " to fall back on; not used"); \
        return OMPI_ERROR;                                                            \
    }                                                                                 \
    OBJ_RETAIN(m->prev_##name##_module);
    COLL_WEFT_FOREACH(X)
#undef X
    m->size = ompi_comm_size(comm);
    m->arrays = malloc(4 * sizeof(size_t) * (size_t)m->size);
    if (NULL == m->arrays) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    oob_arg_t arg = {comm, m};
    const struct weft_coll_oob oob = {coll_weft_oob, &arg};
    const int rc = weft_coll_group_create(mca_coll_weft_component.ctx, (uint32_t)m->size,
                                          (uint32_t)ompi_comm_rank(comm), &oob, &m->group);
    if (0 != rc) {
        opal_output(0, "coll weft: making the group of %s failed: %s", comm->c_name,
                    weft_strerror(rc));
        return OMPI_ERROR;
    }
    if (mca_coll_weft_component.verbose > 0) {
        opal_output(0, "coll weft: %s (%d ranks) uses weft's collectives", comm->c_name, m->size);
    }
    return OMPI_SUCCESS;
}

static mca_coll_base_module_t *coll_weft_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    *priority = mca_coll_weft_component.priority;
    if (*priority <= 0 || OMPI_COMM_IS_INTER(comm) || coll_weft_open_weft() != 0) {
        return NULL; /* intercommunicators: left to other components */
    }
    coll_weft_module_t *m = OBJ_NEW(coll_weft_module_t);
    if (NULL == m) {
        return NULL;
    }
    mca_coll_base_module_t *b = &m->super;
    b->coll_module_enable = coll_weft_enable;
    b->coll_barrier = w_barrier;
    b->coll_bcast = w_bcast;
    b->coll_allreduce = w_allreduce;
    b->coll_reduce = w_reduce;
    b->coll_scan = w_scan;
    b->coll_exscan = w_exscan;
    b->coll_reduce_scatter = w_reduce_scatter;
    b->coll_reduce_scatter_block = w_reduce_scatter_block;
    b->coll_allgather = w_allgather;
    b->coll_allgatherv = w_allgatherv;
    b->coll_gather = w_gather;
    b->coll_gatherv = w_gatherv;
    b->coll_scatter = w_scatter;
    b->coll_scatterv = w_scatterv;
    b->coll_alltoall = w_alltoall;
    b->coll_alltoallv = w_alltoallv;
    b->coll_ibarrier = w_ibarrier;
    b->coll_ibcast = w_ibcast;
    b->coll_iallreduce = w_iallreduce;
    b->coll_ireduce = w_ireduce;
    b->coll_iscan = w_iscan;
    b->coll_iexscan = w_iexscan;
    b->coll_ireduce_scatter = w_ireduce_scatter;
    b->coll_ireduce_scatter_block = w_ireduce_scatter_block;
    b->coll_iallgather = w_iallgather;
    b->coll_iallgatherv = w_iallgatherv;
    b->coll_igather = w_igather;
    b->coll_igatherv = w_igatherv;
    b->coll_iscatter = w_iscatter;
    b->coll_iscatterv = w_iscatterv;
    b->coll_ialltoall = w_ialltoall;
    b->coll_ialltoallv = w_ialltoallv;
    return b;
}
