/*
 * pml_weft.c: the data path of pml weft (docs/mpi.md, "pml weft").
 *
 * Every MPI message is one weft tagged operation whose op_context is the
 * struct weft_context at the start of a struct pml_weft_op; progress reads the
 * CQ and calls the op's callback. The weft side of a send or receive is a
 * struct pml_weft_xfer: inside a request (nonblocking and persistent calls),
 * or on the caller's stack (MPI_Send, MPI_Recv, MPI_Mrecv: no request object).
 *
 * Fast paths: a contiguous send up to the inject size that is not synchronous
 * goes out with weft_tinject, with no request (MPI_Isend returns one shared,
 * always complete request); a blocking receive posts a stack transfer and
 * spins in opal_progress. MPI_Ssend posts the receive of a zero-byte
 * acknowledgement before its message, and completes when both are done; the
 * receiver sends the acknowledgement when its receive completes. Operations
 * weft refuses with -WEFT_EAGAIN wait, in posting order, in a deferred queue
 * that progress drains: a nonblocking call never spins on the peer. All of it
 * follows mtl weft (mtl_weft.c), whose tag layout it shares.
 */
#include "pml_weft.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/** CQ entries read per weft_cq_read (each read drives weft progress once). */
#define PML_WEFT_CQ_BATCH 16
/** A non-contiguous send whose packed size fits here and the inject size is
 *  packed on the stack and injected: no allocation. */
#define PML_WEFT_STACK_PACK 4096

/** pml_weft_send_*(): the message is out and nothing is left to complete. */
#define PML_WEFT_SENT 1

#define PML_WEFT_CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static int pml_weft_request_free(ompi_request_t **rptr);
static int pml_weft_request_cancel(ompi_request_t *request, int flag);

/* ------------------------------------------------------------------ helpers */

static void pml_weft_log_call(const char *call, ssize_t rc)
{
    opal_output(0, "pml weft: %s failed: %s (%zd)", call, weft_strerror((int)-rc), rc);
}

static void pml_weft_log_completion(const char *what, const struct weft_cq_err_entry *e)
{
    opal_output(0, "pml weft: %s failed: %s (%d): %s", what, weft_strerror(e->err), e->err,
                e->err_str);
}

/** Decrement; atomic only when several threads may complete events (MPI_THREAD_MULTIPLE). */
static inline int32_t pml_weft_dec(volatile int32_t *v)
{
    if (pml_weft.thread_multiple) {
        return __atomic_sub_fetch(v, 1, __ATOMIC_ACQ_REL);
    }
    return --*v;
}

static inline void pml_weft_inc(volatile int32_t *v)
{
    if (pml_weft.thread_multiple) {
        __atomic_add_fetch(v, 1, __ATOMIC_RELAXED);
    } else {
        ++*v;
    }
}

/** Are @p count elements of @p dt one block of memory (at buf + true_lb)? */
static inline bool pml_weft_contiguous(const ompi_datatype_t *dt, size_t count)
{
    const uint16_t f = dt->super.flags;
    return 0 != (f & OPAL_DATATYPE_FLAG_CONTIGUOUS) &&
           (count <= 1 || 0 != (f & OPAL_DATATYPE_FLAG_NO_GAPS));
}

static inline bool pml_weft_is_done(const struct pml_weft_xfer *x)
{
    return __atomic_load_n(&x->done, __ATOMIC_ACQUIRE);
}

int pml_weft_peer_addr(struct ompi_communicator_t *comm, int rank, weft_addr_t *addr)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    void *ep = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    if (OPAL_UNLIKELY(NULL == ep)) {
        /* Procs arrive lazily (mpi_add_procs_cutoff): read this one's address now. */
        int rc = pml_weft_add_procs(&proc, 1);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        ep = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
    }
    /* The endpoint slot holds the weft address + 1 (NULL: not added yet). */
    *addr = (weft_addr_t)(uintptr_t)ep - 1;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ requests */

void pml_weft_request_construct(pml_weft_request_t *req)
{
    req->ompi.req_type = OMPI_REQUEST_PML;
    req->ompi.req_free = pml_weft_request_free;
    req->ompi.req_cancel = pml_weft_request_cancel;
    req->ompi.req_start = pml_weft_start;
    req->comm_ref = NULL;
    req->dt_ref = NULL;
    OBJ_CONSTRUCT(&req->convertor, opal_convertor_t);
}

void pml_weft_request_destruct(pml_weft_request_t *req)
{
    OBJ_DESTRUCT(&req->convertor);
}

OBJ_CLASS_INSTANCE(pml_weft_request_t, ompi_request_t, pml_weft_request_construct,
                   pml_weft_request_destruct);

/** A request from the free list, set up for @p comm (persistent: inactive, complete). */
static inline pml_weft_request_t *pml_weft_request_get(struct ompi_communicator_t *comm,
                                                       bool persistent)
{
    pml_weft_request_t *req = (pml_weft_request_t *)opal_free_list_get(&pml_weft.requests);
    if (OPAL_UNLIKELY(NULL == req)) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&req->ompi, persistent);
    req->ompi.req_state = persistent ? OMPI_REQUEST_INACTIVE : OMPI_REQUEST_ACTIVE;
    req->ompi.req_mpi_object.comm = comm;
    req->ompi.req_status.MPI_ERROR = MPI_SUCCESS;
    req->ompi.req_status._cancelled = 0;
    req->ompi.req_status._ucount = 0;
    req->refs = persistent ? 1 : 2; /* the handle (and the operation) */
    req->detached = false;
    req->x.flags = 0;
    req->x.status = &req->ompi.req_status;
    return req;
}

/** Back to the free list, with what the request retained. */
static void pml_weft_request_release(pml_weft_request_t *req)
{
    if (NULL != req->comm_ref) {
        OBJ_RELEASE(req->comm_ref);
        req->comm_ref = NULL;
    }
    if (NULL != req->dt_ref) {
        OMPI_DATATYPE_RELEASE(req->dt_ref);
        req->dt_ref = NULL;
    }
    OMPI_REQUEST_FINI(&req->ompi);
    opal_free_list_return(&pml_weft.requests, &req->ompi.super);
}

static inline void pml_weft_request_unref(pml_weft_request_t *req)
{
    if (0 == pml_weft_dec(&req->refs)) {
        pml_weft_request_release(req);
    }
}

/** req_free: MPI_Wait/MPI_Test after completion, or MPI_Request_free at any time. */
static int pml_weft_request_free(ompi_request_t **rptr)
{
    pml_weft_request_t *req = (pml_weft_request_t *)*rptr;
    *rptr = MPI_REQUEST_NULL;
    pml_weft_request_unref(req);
    return OMPI_SUCCESS;
}

/** The transfer @p x is finished: wake its blocking caller, or complete its request. */
static void pml_weft_xfer_finish(struct pml_weft_xfer *x)
{
    if (x->flags & PML_WEFT_X_BLOCKING) {
        /* Release: the caller that sees done also sees the status. Last access:
         * the caller's stack frame may go. */
        __atomic_store_n(&x->done, true, __ATOMIC_RELEASE);
        return;
    }
    pml_weft_request_t *req = PML_WEFT_CONTAINER(x, pml_weft_request_t, x);
    if (OPAL_LIKELY(!req->detached)) {
        ompi_request_complete(&req->ompi, true);
    }
    /* After ompi_request_complete: a completion callback may free or restart the
     * request, each of which takes or drops its own reference. */
    pml_weft_request_unref(req);
}

/* The one shared request MPI_Isend returns for a send done at once. */
static int pml_weft_completed_free(ompi_request_t **rptr)
{
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int pml_weft_completed_cancel(ompi_request_t *request, int flag)
{
    (void)request;
    (void)flag;
    return OMPI_SUCCESS; /* done: nothing to cancel */
}

void pml_weft_completed_send_init(ompi_request_t *req)
{
    OMPI_REQUEST_INIT(req, false);
    req->req_type = OMPI_REQUEST_PML;
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_free = pml_weft_completed_free;
    req->req_cancel = pml_weft_completed_cancel;
    req->req_start = NULL;
    req->req_mpi_object.comm = &ompi_mpi_comm_world.comm;
    req->req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    req->req_status.MPI_TAG = MPI_ANY_TAG;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._ucount = 0;
    req->req_status._cancelled = 0;
    req->req_complete = REQUEST_COMPLETED;
}

/* ------------------------------------------------------------------ deferred transfers */

static inline bool pml_weft_have_deferred(void)
{
    /* Unlocked peek: a thread sees its own queued operations; operations of
     * other threads are concurrent with this one and have no order to keep. */
    return NULL != __atomic_load_n(&pml_weft.deferred_head, __ATOMIC_RELAXED);
}

/**
 * Post @p x now, or queue it behind operations that weft refused earlier (so
 * the posting order, which MPI's matching order depends on, is kept).
 * @return 0 (posted, completed or queued) or a negative weft code (hard error).
 */
static int pml_weft_submit(struct pml_weft_xfer *x)
{
    if (OPAL_LIKELY(!pml_weft_have_deferred())) {
        int rc = x->post(x);
        if (OPAL_LIKELY(-WEFT_EAGAIN != rc)) {
            return rc;
        }
    }
    x->next = NULL;
    OPAL_THREAD_LOCK(&pml_weft.lock);
    ++pml_weft.deferred_count;
    if (NULL == pml_weft.deferred_tail) {
        pml_weft.deferred_head = x;
    } else {
        pml_weft.deferred_tail->next = x;
    }
    pml_weft.deferred_tail = x;
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
    return 0;
}

static void pml_weft_fail_deferred(struct pml_weft_xfer *x, int rc);

void pml_weft_flush_deferred(void)
{
    OPAL_THREAD_LOCK(&pml_weft.lock);
    while (NULL != pml_weft.deferred_head) {
        /* Unlink before posting: a post that completes the transfer finishes its
         * request, which may then be reused (even for an operation that its
         * completion callback starts and queues). */
        struct pml_weft_xfer *x = pml_weft.deferred_head;
        pml_weft.deferred_head = x->next;
        if (NULL == pml_weft.deferred_head) {
            pml_weft.deferred_tail = NULL;
        }
        int rc = x->post(x);
        if (-WEFT_EAGAIN == rc) {
            /* Nothing happened (no callback ran): back at the head, in order. */
            x->next = pml_weft.deferred_head;
            pml_weft.deferred_head = x;
            if (NULL == pml_weft.deferred_tail) {
                pml_weft.deferred_tail = x;
            }
            break;
        }
        if (0 != rc) {
            pml_weft_fail_deferred(x, rc);
        }
    }
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
}

/** Take @p x out of the deferred queue; true if it was there. */
static bool pml_weft_unqueue(struct pml_weft_xfer *x)
{
    bool found = false;
    OPAL_THREAD_LOCK(&pml_weft.lock);
    struct pml_weft_xfer *prev = NULL;
    for (struct pml_weft_xfer *r = pml_weft.deferred_head; NULL != r; prev = r, r = r->next) {
        if (r == x) {
            if (NULL == prev) {
                pml_weft.deferred_head = r->next;
            } else {
                prev->next = r->next;
            }
            if (pml_weft.deferred_tail == r) {
                pml_weft.deferred_tail = prev;
            }
            found = true;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
    return found;
}

/* ------------------------------------------------------------------ progress */

int pml_weft_progress(void)
{
    struct weft_cq_tagged_entry e[PML_WEFT_CQ_BATCH];
    int count = 0;

    if (OPAL_UNLIKELY(pml_weft_have_deferred())) {
        pml_weft_flush_deferred();
    }
    for (;;) {
        ssize_t n = weft_cq_read(pml_weft.w.cq, e, PML_WEFT_CQ_BATCH);
        if (OPAL_LIKELY(n > 0)) {
            for (ssize_t i = 0; i < n; ++i) {
                struct pml_weft_op *op = (struct pml_weft_op *)e[i].op_context;
                op->done(op, &e[i]);
            }
            count += (int)n;
            if (n < PML_WEFT_CQ_BATCH) {
                break; /* drained: another read would only poll again */
            }
        } else if (-WEFT_EAGAIN == n) {
            break;
        } else if (-WEFT_EAVAIL == n) {
            struct weft_cq_err_entry err;
            if (1 == weft_cq_readerr(pml_weft.w.cq, &err, 0) && NULL != err.op_context) {
                struct pml_weft_op *op = (struct pml_weft_op *)err.op_context;
                op->fail(op, &err);
                ++count;
            }
        } else {
            pml_weft_log_call("weft_cq_read", n);
            break;
        }
    }
    return count;
}

/* ------------------------------------------------------------------ sends */

/** Space for a packed or buffered copy: the attached buffer (MPI_Bsend) or the heap. */
static void *pml_weft_bounce_alloc(bool buffered, size_t len)
{
    return buffered ? mca_pml_base_bsend_request_alloc_buf(len) : malloc(len);
}

static void pml_weft_bounce_free(bool buffered, void *p)
{
    if (buffered) {
        mca_pml_base_bsend_request_free(p);
    } else {
        free(p);
    }
}

static void pml_weft_send_finish(struct pml_weft_xfer *x)
{
    if (OPAL_UNLIKELY(NULL != x->bounce)) {
        pml_weft_bounce_free(0 != (x->flags & PML_WEFT_X_BSEND), x->bounce);
        x->bounce = NULL;
    }
    pml_weft_xfer_finish(x);
}

static inline void pml_weft_send_event(struct pml_weft_xfer *x)
{
    if (0 == pml_weft_dec(&x->pending)) {
        pml_weft_send_finish(x);
    }
}

static void pml_weft_send_done(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    pml_weft_send_event(PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op));
}

static void pml_weft_send_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_xfer *x = PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op);
    pml_weft_log_completion("send", e);
    x->status->MPI_ERROR = ompi_weft_mpi_error(e->err);
    pml_weft_send_event(x);
}

static void pml_weft_ack_done(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    pml_weft_send_event(PML_WEFT_CONTAINER(op, struct pml_weft_xfer, ack));
}

static void pml_weft_ack_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_xfer *x = PML_WEFT_CONTAINER(op, struct pml_weft_xfer, ack);
    if (WEFT_ECANCELED != e->err) { /* canceled: we withdrew it after a failed send */
        pml_weft_log_completion("synchronous send acknowledgement", e);
        x->status->MPI_ERROR = ompi_weft_mpi_error(e->err);
    }
    pml_weft_send_event(x);
}

/** Post the acknowledgement receive (MPI_Ssend), then the message. */
/** A synchronous send: its acknowledgement receive, then the message with
 * remote CQ data OMPI_WEFT_DATA_SYNC. */
static int pml_weft_post_sync_send(struct pml_weft_xfer *x)
{
    ssize_t rc;
    if (!x->posted) {
        rc = weft_trecv(pml_weft.w.ep, NULL, 0, NULL, x->peer, x->ack_tag, 0, &x->ack.ctx);
        if (0 != rc) {
            return (int)rc;
        }
        x->posted = true; /* the acknowledgement receive is posted */
    }
    if (x->length <= pml_weft.w.inject_size) {
        rc = weft_tinjectdata(pml_weft.w.ep, x->buf, x->length, OMPI_WEFT_DATA_SYNC, x->peer,
                              x->wtag);
        if (OPAL_LIKELY(0 == rc)) {
            pml_weft_send_event(x); /* the buffer is reusable: the send is done */
            return 0;
        }
        if (-WEFT_EAGAIN != rc) {
            return (int)rc;
        }
        /* Refused (see pml_weft_post_send): a send with a completion instead. */
    }
    return (int)weft_tsenddata(pml_weft.w.ep, x->buf, x->length, NULL, OMPI_WEFT_DATA_SYNC, x->peer,
                               x->wtag, &x->op.ctx);
}

static int pml_weft_post_send(struct pml_weft_xfer *x)
{
    ssize_t rc;
    if (OPAL_UNLIKELY(0 != x->ack_tag)) {
        return pml_weft_post_sync_send(x);
    }
    if (x->length <= pml_weft.w.inject_size) {
        rc = weft_tinject(pml_weft.w.ep, x->buf, x->length, x->peer, x->wtag);
        if (OPAL_LIKELY(0 == rc)) {
            pml_weft_send_event(x); /* the buffer is reusable: the send is done */
            return 0;
        }
        if (-WEFT_EAGAIN != rc) {
            return (int)rc;
        }
        /* Refused: weft could not hand it to a transport now (a connection being
         * made, no credit, sends queued ahead; WEFT_OPT_INJECT_DIRECT). Retrying the
         * inject could wait for ever for credits that only the receiver's matching
         * of later messages brings back; a send with a completion is never refused
         * for credits (weft sends a rendezvous header then), and MPI waits on its
         * completion with progress. */
    }
    return (int)weft_tsend(pml_weft.w.ep, x->buf, x->length, NULL, x->peer, x->wtag, &x->op.ctx);
}

/**
 * A send failed to post with a hard error after its acknowledgement receive was
 * posted: withdraw that receive and wait for weft to report it.
 */
static void pml_weft_withdraw_ack(struct pml_weft_xfer *x)
{
    if (0 == x->ack_tag || !x->posted) {
        return;
    }
    const uint8_t flags = x->flags;
    x->pending = 1; /* only the canceled acknowledgement is still to come */
    x->flags |= PML_WEFT_X_BLOCKING;
    x->done = false;
    if (0 == weft_cancel(pml_weft.w.ep, &x->ack.ctx)) {
        while (!pml_weft_is_done(x)) {
            pml_weft_progress();
        }
    }
    x->flags = flags;
    x->done = false;
    x->posted = false;
}

static void pml_weft_recv_finish(struct pml_weft_xfer *x);

static void pml_weft_fail_deferred(struct pml_weft_xfer *x, int rc)
{
    pml_weft_log_call("posting a deferred operation", rc);
    x->status->MPI_ERROR = MPI_ERR_INTERN;
    if (PML_WEFT_SEND == x->kind) {
        pml_weft_withdraw_ack(x);
        x->pending = 1;
        pml_weft_send_event(x);
        return;
    }
    /* A receive, or the acknowledgement of a completed receive. */
    if (NULL != x->bounce) {
        free(x->bounce);
        x->bounce = NULL;
    }
    pml_weft_recv_finish(x);
}

/**
 * The fast path: a contiguous message up to the inject size, not synchronous,
 * with nothing deferred ahead of it, goes out with weft_tinject (a buffered one
 * too: weft has copied it, so it needs no room in the attached buffer).
 * @return PML_WEFT_SENT, 0 when it does not apply (or weft said -WEFT_EAGAIN:
 *         the slow path keeps the order through the deferred queue), or an error
 */
static inline int pml_weft_send_inject(const void *buf, size_t count, ompi_datatype_t *dt,
                                       mca_pml_base_send_mode_t mode, weft_addr_t peer,
                                       uint64_t wtag)
{
    if (OPAL_UNLIKELY(MCA_PML_BASE_SEND_SYNCHRONOUS == mode || !pml_weft_contiguous(dt, count))) {
        return 0;
    }
    const size_t len = dt->super.size * count;
    if (OPAL_UNLIKELY(len > pml_weft.w.inject_size || pml_weft_have_deferred())) {
        return 0;
    }
    ssize_t rc =
        weft_tinject(pml_weft.w.ep, (const char *)buf + dt->super.true_lb, len, peer, wtag);
    if (OPAL_LIKELY(0 == rc)) {
        return PML_WEFT_SENT;
    }
    if (-WEFT_EAGAIN == rc) {
        return 0;
    }
    pml_weft_log_call("weft_tinject", rc);
    return ompi_weft_ompi_error(rc);
}

/** Pack @p count elements of @p dt at @p buf into @p dst (@p len bytes, the packed size). */
static int pml_weft_pack(opal_convertor_t *conv, void *dst, size_t len)
{
    struct iovec iov = {.iov_base = dst, .iov_len = len};
    uint32_t iov_count = 1;
    size_t max = len;
    if (opal_convertor_pack(conv, &iov, &iov_count, &max) < 0 || max != len) {
        opal_output(0, "pml weft: packing a %zu-byte message failed", len);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/**
 * Start a send on @p x (flags and status set by the caller): pack a
 * non-contiguous buffer (on the stack and injected at once when it is small
 * enough, else into a bounce buffer), copy a buffered send into the attached
 * buffer, then post or defer.
 * @return PML_WEFT_SENT (finished at once, @p x unused), 0 (@p x completes
 *         through progress), or a negative OMPI error (nothing outstanding;
 *         OMPI_ERR_BUFFER: no room in the attached buffer)
 */
static int pml_weft_send_slow(struct pml_weft_xfer *x, const void *buf, size_t count,
                              ompi_datatype_t *dt, int dst, int tag, mca_pml_base_send_mode_t mode,
                              struct ompi_communicator_t *comm, weft_addr_t peer)
{
    const bool sync = MCA_PML_BASE_SEND_SYNCHRONOUS == mode;
    const bool buffered = MCA_PML_BASE_SEND_BUFFERED == mode;
    unsigned char stack[PML_WEFT_STACK_PACK];
    const void *start;
    void *bounce = NULL; /* ours to free: packed or buffered copy */
    size_t len;
    int rc;

    if (pml_weft_contiguous(dt, count)) {
        start = (const char *)buf + dt->super.true_lb;
        len = dt->super.size * count;
    } else {
        opal_convertor_t conv;
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, buf,
                                                 0, &conv);
        opal_convertor_get_packed_size(&conv, &len);
        void *dstbuf = stack;
        if (sync || len > sizeof(stack) || len > pml_weft.w.inject_size) {
            dstbuf = bounce = pml_weft_bounce_alloc(buffered, len);
            if (NULL == bounce && len > 0) {
                OBJ_DESTRUCT(&conv);
                return buffered ? OMPI_ERR_BUFFER : OMPI_ERR_OUT_OF_RESOURCE;
            }
        }
        rc = len > 0 ? pml_weft_pack(&conv, dstbuf, len) : OMPI_SUCCESS;
        OBJ_DESTRUCT(&conv);
        if (OMPI_SUCCESS != rc) {
            if (NULL != bounce) {
                pml_weft_bounce_free(buffered, bounce);
            }
            return rc;
        }
        start = dstbuf;
    }
    if (OPAL_UNLIKELY(len > pml_weft.w.max_msg_size)) {
        opal_output(0, "pml weft: a %zu-byte message is larger than weft's limit (%zu bytes)", len,
                    pml_weft.w.max_msg_size);
        if (NULL != bounce) {
            pml_weft_bounce_free(buffered, bounce);
        }
        return OMPI_ERR_NOT_SUPPORTED;
    }

    const uint64_t wtag = ompi_weft_tag(comm->c_contextid, comm->c_my_rank, tag);
    if (!sync && len <= pml_weft.w.inject_size && !pml_weft_have_deferred()) {
        ssize_t wrc = weft_tinject(pml_weft.w.ep, start, len, peer, wtag);
        if (0 == wrc) {
            if (NULL != bounce) {
                pml_weft_bounce_free(buffered, bounce);
            }
            return PML_WEFT_SENT;
        }
        if (-WEFT_EAGAIN != wrc) {
            pml_weft_log_call("weft_tinject", wrc);
            if (NULL != bounce) {
                pml_weft_bounce_free(buffered, bounce);
            }
            return ompi_weft_ompi_error(wrc);
        }
    }
    /* Deferred or posted: the data must outlive this frame, and a buffered
     * send's the user's buffer. */
    if (len > 0 && (start == stack || (buffered && NULL == bounce))) {
        bounce = pml_weft_bounce_alloc(buffered, len);
        if (NULL == bounce) {
            return buffered ? OMPI_ERR_BUFFER : OMPI_ERR_OUT_OF_RESOURCE;
        }
        memcpy(bounce, start, len);
        start = bounce;
    }

    x->kind = PML_WEFT_SEND;
    if (buffered) {
        x->flags |= PML_WEFT_X_BSEND;
    }
    x->op.done = pml_weft_send_done;
    x->op.fail = pml_weft_send_fail;
    x->posted = false;
    x->done = false;
    x->bounce = bounce;
    x->buf = (void *)start;
    x->length = len;
    x->peer = peer;
    x->wtag = wtag;
    x->post = pml_weft_post_send;
    if (OPAL_UNLIKELY(sync)) {
        /* The receiver answers with its own rank in the source field. */
        x->ack_tag = OMPI_WEFT_ACK_BIT | ompi_weft_tag(comm->c_contextid, dst, tag);
        x->ack.done = pml_weft_ack_done;
        x->ack.fail = pml_weft_ack_fail;
        x->pending = 2;
    } else {
        x->ack_tag = 0;
        x->pending = 1;
    }
    /* Ready sends are standard sends here. */

    rc = pml_weft_submit(x);
    if (OPAL_UNLIKELY(0 != rc)) {
        pml_weft_log_call("weft_tsend", rc);
        pml_weft_withdraw_ack(x);
        if (NULL != x->bounce) {
            pml_weft_bounce_free(buffered, x->bounce);
            x->bounce = NULL;
        }
        return ompi_weft_ompi_error(rc);
    }
    return 0;
}

/**
 * A buffered send the fast path did not take: a detached request carries a
 * copy in the attached buffer (mca_pml_base_bsend_*; MPI_Buffer_detach waits
 * for it), and the caller's send is complete.
 */
static int pml_weft_bsend(const void *buf, size_t count, ompi_datatype_t *dt, int dst, int tag,
                          struct ompi_communicator_t *comm, weft_addr_t peer)
{
    pml_weft_request_t *req = pml_weft_request_get(comm, false);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->detached = true;
    req->refs = 1; /* the operation only: nobody holds a handle */
    int rc = pml_weft_send_slow(&req->x, buf, count, dt, dst, tag, MCA_PML_BASE_SEND_BUFFERED, comm,
                                peer);
    if (0 != rc) {
        pml_weft_request_release(req);
        return PML_WEFT_SENT == rc ? OMPI_SUCCESS : rc;
    }
    return OMPI_SUCCESS;
}

/**
 * One poll of a blocking call's wait loop: weft's progress, and opal_progress
 * (the other components, and a yield of the core when oversubscribed) once in
 * pml_weft_progress_iterations polls, as pml ucx waits (its empty poll is then
 * about 70 instructions shorter: no opal_progress or coll weft pass).
 */
static inline void pml_weft_wait_poll(int *left)
{
    if (OPAL_LIKELY(--*left > 0)) {
        (void)pml_weft_progress();
    } else {
        *left = mca_pml_weft_component.progress_iterations;
        opal_progress();
    }
}

int pml_weft_send(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst, int tag,
                  mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm)
{
    weft_addr_t peer;
    int rc = pml_weft_comm_addr(comm, dst, &peer);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    rc = pml_weft_send_inject(buf, count, datatype, mode, peer,
                              ompi_weft_tag(comm->c_contextid, comm->c_my_rank, tag));
    if (OPAL_LIKELY(PML_WEFT_SENT == rc)) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(rc < 0)) {
        return rc;
    }
    if (MCA_PML_BASE_SEND_BUFFERED == mode) {
        return pml_weft_bsend(buf, count, datatype, dst, tag, comm, peer);
    }
    /* No request object: the transfer lives in this frame until it is done. */
    struct pml_weft_xfer x;
    ompi_status_public_t st;
    st.MPI_ERROR = MPI_SUCCESS;
    x.flags = PML_WEFT_X_BLOCKING;
    x.status = &st;
    rc = pml_weft_send_slow(&x, buf, count, datatype, dst, tag, mode, comm, peer);
    if (PML_WEFT_SENT == rc) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        return rc;
    }
    for (int left = mca_pml_weft_component.progress_iterations; !pml_weft_is_done(&x);) {
        pml_weft_wait_poll(&left);
    }
    return st.MPI_ERROR;
}

int pml_weft_isend(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst,
                   int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                   struct ompi_request_t **request)
{
    weft_addr_t peer;
    int rc = pml_weft_comm_addr(comm, dst, &peer);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    rc = pml_weft_send_inject(buf, count, datatype, mode, peer,
                              ompi_weft_tag(comm->c_contextid, comm->c_my_rank, tag));
    if (OPAL_LIKELY(PML_WEFT_SENT == rc)) {
        *request = &pml_weft.completed_send;
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(rc < 0)) {
        return rc;
    }
    if (MCA_PML_BASE_SEND_BUFFERED == mode) {
        rc = pml_weft_bsend(buf, count, datatype, dst, tag, comm, peer);
        if (OMPI_SUCCESS == rc) {
            *request = &pml_weft.completed_send;
        }
        return rc;
    }
    pml_weft_request_t *req = pml_weft_request_get(comm, false);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = pml_weft_send_slow(&req->x, buf, count, datatype, dst, tag, mode, comm, peer);
    if (OPAL_UNLIKELY(0 != rc)) {
        pml_weft_request_release(req);
        if (PML_WEFT_SENT == rc) {
            *request = &pml_weft.completed_send;
            return OMPI_SUCCESS;
        }
        return rc;
    }
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ receives */

static void pml_weft_recv_finish(struct pml_weft_xfer *x)
{
    if (OPAL_UNLIKELY(NULL != x->convertor)) {
        opal_convertor_cleanup(x->convertor);
        x->convertor = NULL;
    }
    pml_weft_xfer_finish(x);
}

static void pml_weft_ack_sent(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    pml_weft_recv_finish(PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op));
}

static void pml_weft_ack_send_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_xfer *x = PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op);
    pml_weft_log_completion("synchronous send acknowledgement", e);
    x->status->MPI_ERROR = ompi_weft_mpi_error(e->err);
    pml_weft_recv_finish(x);
}

/** Send the acknowledgement of a synchronous message, then finish the receive. */
static int pml_weft_post_ack(struct pml_weft_xfer *x)
{
    ssize_t rc = weft_tinject(pml_weft.w.ep, NULL, 0, x->peer, x->ack_tag);
    if (OPAL_LIKELY(0 == rc)) {
        pml_weft_recv_finish(x);
        return 0;
    }
    if (-WEFT_EAGAIN != rc) {
        return (int)rc;
    }
    /* Refused (see pml_weft_post_send): a send with a completion, which finishes
     * the receive. The receive's own operation is over: its op carries the ack. */
    x->op.done = pml_weft_ack_sent;
    x->op.fail = pml_weft_ack_send_fail;
    return (int)weft_tsend(pml_weft.w.ep, NULL, 0, NULL, x->peer, x->ack_tag, &x->op.ctx);
}

/** A receive (or matched-probe receive) got @p len bytes of the message tagged
 * @p wtag; @p sync: a synchronous send, to acknowledge. */
static void pml_weft_recv_complete(struct pml_weft_xfer *x, uint64_t wtag, size_t len, int error,
                                   bool sync)
{
    ompi_status_public_t *st = x->status;
    const int src = ompi_weft_tag_source(wtag);
    st->MPI_SOURCE = src;
    st->MPI_TAG = ompi_weft_tag_mpi_tag(wtag);
    st->MPI_ERROR = error;
    st->_ucount = len;

    if (OPAL_UNLIKELY(NULL != x->bounce)) {
        if (len > 0) {
            struct iovec iov = {.iov_base = x->bounce, .iov_len = len};
            uint32_t iov_count = 1;
            size_t max = len;
            if (opal_convertor_unpack(x->convertor, &iov, &iov_count, &max) < 0) {
                opal_output(0, "pml weft: unpacking a received message failed");
                st->MPI_ERROR = MPI_ERR_INTERN;
            }
        }
        free(x->bounce);
        x->bounce = NULL;
    }

    if (OPAL_UNLIKELY(sync)) {
        /* MPI_Ssend: the sender waits until we have matched it. */
        int rc = pml_weft_peer_addr(x->comm, src, &x->peer);
        if (OMPI_SUCCESS != rc) {
            opal_output(0, "pml weft: no address for rank %d to acknowledge a synchronous send",
                        src);
            st->MPI_ERROR = MPI_ERR_INTERN;
            pml_weft_recv_finish(x);
            return;
        }
        x->ack_tag = OMPI_WEFT_ACK_BIT | ompi_weft_tag(x->comm->c_contextid, x->comm->c_my_rank,
                                                       ompi_weft_tag_mpi_tag(wtag));
        x->post = pml_weft_post_ack;
        rc = pml_weft_submit(x);
        if (0 != rc) {
            pml_weft_log_call("weft_tinject (synchronous send acknowledgement)", rc);
            st->MPI_ERROR = MPI_ERR_INTERN;
            pml_weft_recv_finish(x);
        }
        return;
    }
    pml_weft_recv_finish(x);
}

static void pml_weft_recv_done(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    struct pml_weft_xfer *x = PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op);
    pml_weft_recv_complete(x, e->tag, e->len, MPI_SUCCESS, ompi_weft_is_sync(e->flags, e->data));
}

static void pml_weft_recv_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_xfer *x = PML_WEFT_CONTAINER(op, struct pml_weft_xfer, op);
    if (WEFT_ECANCELED == e->err) {
        x->status->_cancelled = true;
        if (NULL != x->bounce) {
            free(x->bounce);
            x->bounce = NULL;
        }
        pml_weft_recv_finish(x);
        return;
    }
    if (WEFT_ETRUNC != e->err) {
        pml_weft_log_completion("receive", e);
    }
    /* Truncated: len is what was delivered; the message was matched, so a
     * synchronous sender is still acknowledged. */
    pml_weft_recv_complete(x, e->tag, e->len, ompi_weft_mpi_error(e->err),
                           ompi_weft_is_sync(e->flags, e->data));
}

/** The weft address a receive from @p src of @p comm names (ompi_weft_recv_addr). */
static inline weft_addr_t pml_weft_recv_source(struct ompi_communicator_t *comm, int src)
{
    return ompi_weft_recv_addr(comm, src, pml_weft_comm_addr);
}

static int pml_weft_post_recv(struct pml_weft_xfer *x)
{
    x->posted = true; /* before: the completion may be read by another thread at once */
    ssize_t rc =
        weft_trecv(pml_weft.w.ep, x->buf, x->length, NULL, x->peer, x->wtag, x->ignore, &x->op.ctx);
    if (OPAL_UNLIKELY(0 != rc)) {
        x->posted = false;
    }
    return (int)rc;
}

/**
 * Prepare @p x to receive @p count elements of @p dt at @p buf: the user's
 * memory when they are contiguous, else a bounce buffer that @p conv (a
 * constructed convertor, prepared here) unpacks at completion.
 */
static int pml_weft_recv_setup_packed(struct pml_weft_xfer *x, void *buf, size_t count,
                                      ompi_datatype_t *dt, opal_convertor_t *conv);

/* Inlined into every receive (the contiguous case is a few stores); the
 * packed case is out of line. */
static inline __attribute__((always_inline)) int pml_weft_recv_setup(struct pml_weft_xfer *x,
                                                                     void *buf, size_t count,
                                                                     ompi_datatype_t *dt,
                                                                     opal_convertor_t *conv)
{
    x->bounce = NULL;
    x->convertor = NULL;
    x->claimed = NULL;
    x->posted = false;
    x->done = false;
    x->ack_tag = 0;
    x->op.done = pml_weft_recv_done;
    x->op.fail = pml_weft_recv_fail;
    x->status->_cancelled = 0;
    if (OPAL_LIKELY(pml_weft_contiguous(dt, count))) {
        x->buf = (char *)buf + dt->super.true_lb;
        x->length = dt->super.size * count;
        return OMPI_SUCCESS;
    }
    return pml_weft_recv_setup_packed(x, buf, count, dt, conv);
}

static int pml_weft_recv_setup_packed(struct pml_weft_xfer *x, void *buf, size_t count,
                                      ompi_datatype_t *dt, opal_convertor_t *conv)
{
    opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count, buf, 0,
                                             conv);
    size_t packed;
    opal_convertor_get_packed_size(conv, &packed);
    if (packed > 0) {
        x->bounce = malloc(packed);
        if (NULL == x->bounce) {
            opal_convertor_cleanup(conv);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    x->convertor = conv;
    x->buf = x->bounce;
    x->length = packed;
    return OMPI_SUCCESS;
}

/** Undo pml_weft_recv_setup of a receive that was not posted. */
static void pml_weft_recv_unsetup(struct pml_weft_xfer *x)
{
    if (NULL != x->bounce) {
        free(x->bounce);
        x->bounce = NULL;
    }
    if (NULL != x->convertor) {
        opal_convertor_cleanup(x->convertor);
        x->convertor = NULL;
    }
}

/** The receive @p x was not posted at once (@p rc): defer it, or undo its set-up. */
static int pml_weft_recv_start_slow(struct pml_weft_xfer *x, int rc)
{
    if (-WEFT_EAGAIN == rc) {
        rc = pml_weft_submit(x);
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        pml_weft_log_call("weft_trecv", rc);
        pml_weft_recv_unsetup(x);
        return ompi_weft_ompi_error(rc);
    }
    return OMPI_SUCCESS;
}

/** Post (or defer) the receive for (@p src, @p tag) of @p comm set up in @p x
 * (inlined: the direct post is the common case). */
static inline __attribute__((always_inline)) int pml_weft_recv_start(
    struct pml_weft_xfer *x, int src, int tag, struct ompi_communicator_t *comm)
{
    x->kind = PML_WEFT_RECV;
    x->comm = comm;
    ompi_weft_recv_bits(comm->c_contextid, src, tag, &x->wtag, &x->ignore);
    x->peer = pml_weft_recv_source(comm, src);
    x->post = pml_weft_post_recv;
    int rc = -WEFT_EAGAIN;
    if (OPAL_LIKELY(!pml_weft_have_deferred())) {
        rc = pml_weft_post_recv(x); /* direct: the common case */
        if (OPAL_LIKELY(0 == rc)) {
            return OMPI_SUCCESS;
        }
    }
    return pml_weft_recv_start_slow(x, rc);
}

/** A receive request on @p comm for @p count of @p datatype at @p buf, set up
 * (not posted): NULL with @p *rc on failure. */
static pml_weft_request_t *pml_weft_recv_request(void *buf, size_t count,
                                                 struct ompi_datatype_t *datatype,
                                                 struct ompi_communicator_t *comm, int *rc)
{
    pml_weft_request_t *req = pml_weft_request_get(comm, false);
    if (OPAL_UNLIKELY(NULL == req)) {
        *rc = OMPI_ERR_OUT_OF_RESOURCE;
        return NULL;
    }
    *rc = pml_weft_recv_setup(&req->x, buf, count, datatype, &req->convertor);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != *rc)) {
        pml_weft_request_release(req);
        return NULL;
    }
    /* Held until the request is released: the communicator for the
     * acknowledgement of a synchronous send and for the error handler, the
     * datatype for the convertor. */
    OBJ_RETAIN(comm);
    req->comm_ref = comm;
    if (OPAL_UNLIKELY(NULL != req->x.convertor)) {
        OMPI_DATATYPE_RETAIN(datatype);
        req->dt_ref = datatype;
    }
    return req;
}

int pml_weft_irecv(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                   struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    int rc;
    pml_weft_request_t *req = pml_weft_recv_request(buf, count, datatype, comm, &rc);
    if (OPAL_UNLIKELY(NULL == req)) {
        return rc;
    }
    rc = pml_weft_recv_start(&req->x, src, tag, comm);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        pml_weft_request_release(req);
        return rc;
    }
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

/** Wait for the blocking receive @p x (pml_weft_wait_poll); its outcome to @p status. */
static int pml_weft_recv_wait(struct pml_weft_xfer *x, ompi_status_public_t *status)
{
    for (int left = mca_pml_weft_component.progress_iterations; !pml_weft_is_done(x);) {
        pml_weft_wait_poll(&left);
    }
    if (MPI_STATUS_IGNORE != status) {
        /* Not MPI_ERROR: it is returned (MPI sets a status's error only for
         * MPI_ERR_IN_STATUS). */
        status->MPI_SOURCE = x->status->MPI_SOURCE;
        status->MPI_TAG = x->status->MPI_TAG;
        status->_ucount = x->status->_ucount;
        status->_cancelled = x->status->_cancelled;
    }
    return x->status->MPI_ERROR;
}

int pml_weft_recv(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                  struct ompi_communicator_t *comm, ompi_status_public_t *status)
{
    /* No request object: the transfer lives in this frame until it is done. */
    struct pml_weft_xfer x;
    ompi_status_public_t st;
    opal_convertor_t conv;
    const bool contiguous = pml_weft_contiguous(datatype, count);
    if (OPAL_UNLIKELY(!contiguous)) {
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
    }
    x.flags = PML_WEFT_X_BLOCKING;
    x.status = &st;
    int rc = pml_weft_recv_setup(&x, buf, count, datatype, &conv);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        rc = pml_weft_recv_start(&x, src, tag, comm);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            rc = pml_weft_recv_wait(&x, status);
        }
    }
    if (OPAL_UNLIKELY(!contiguous)) {
        OBJ_DESTRUCT(&conv);
    }
    return rc;
}

/* ------------------------------------------------------------------ persistent requests */

int pml_weft_isend_init(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst,
                        int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                        struct ompi_request_t **request)
{
    pml_weft_request_t *req = pml_weft_request_get(comm, true);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->persistent_send = true;
    req->p_buf = buf;
    req->p_count = count;
    req->p_peer = dst;
    req->p_tag = tag;
    req->p_mode = mode;
    OBJ_RETAIN(comm);
    req->comm_ref = comm;
    OMPI_DATATYPE_RETAIN(datatype);
    req->dt_ref = datatype;
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int pml_weft_irecv_init(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                        struct ompi_communicator_t *comm, struct ompi_request_t **request)
{
    pml_weft_request_t *req = pml_weft_request_get(comm, true);
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->persistent_send = false;
    req->p_buf = buf;
    req->p_count = count;
    req->p_peer = src;
    req->p_tag = tag;
    req->p_mode = MCA_PML_BASE_SEND_STANDARD;
    OBJ_RETAIN(comm);
    req->comm_ref = comm;
    OMPI_DATATYPE_RETAIN(datatype);
    req->dt_ref = datatype;
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

/** A persistent request becomes active: pending, and the operation holds a reference. */
static void pml_weft_activate(pml_weft_request_t *req)
{
    req->ompi.req_state = OMPI_REQUEST_ACTIVE;
    req->ompi.req_complete = REQUEST_PENDING;
    req->ompi.req_status.MPI_ERROR = MPI_SUCCESS;
    req->ompi.req_status._cancelled = 0;
    req->ompi.req_status._ucount = 0;
    req->x.flags = 0;
    req->x.status = &req->ompi.req_status;
    pml_weft_inc(&req->refs);
}

/** MPI_Start failed: the request is inactive again, and MPI_Start returns the error. */
static int pml_weft_deactivate(pml_weft_request_t *req, int rc)
{
    req->ompi.req_state = OMPI_REQUEST_INACTIVE;
    req->ompi.req_complete = REQUEST_COMPLETED;
    pml_weft_dec(&req->refs); /* the handle's reference is still there: never 0 */
    return rc;
}

static int pml_weft_start_send(pml_weft_request_t *req)
{
    struct ompi_communicator_t *comm = req->comm_ref;
    weft_addr_t peer;
    int rc = pml_weft_comm_addr(comm, req->p_peer, &peer);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return pml_weft_deactivate(req, rc);
    }
    rc = pml_weft_send_inject(req->p_buf, req->p_count, req->dt_ref, req->p_mode, peer,
                              ompi_weft_tag(comm->c_contextid, comm->c_my_rank, req->p_tag));
    if (0 == rc) {
        if (MCA_PML_BASE_SEND_BUFFERED == req->p_mode) {
            rc = pml_weft_bsend(req->p_buf, req->p_count, req->dt_ref, req->p_peer, req->p_tag,
                                comm, peer);
            rc = OMPI_SUCCESS == rc ? PML_WEFT_SENT : rc;
        } else {
            rc = pml_weft_send_slow(&req->x, req->p_buf, req->p_count, req->dt_ref, req->p_peer,
                                    req->p_tag, req->p_mode, comm, peer);
        }
    }
    if (PML_WEFT_SENT == rc) {
        pml_weft_xfer_finish(&req->x); /* complete now */
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(rc < 0)) {
        return pml_weft_deactivate(req, rc);
    }
    return OMPI_SUCCESS;
}

static int pml_weft_start_recv(pml_weft_request_t *req)
{
    int rc = pml_weft_recv_setup(&req->x, (void *)req->p_buf, req->p_count, req->dt_ref,
                                 &req->convertor);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        rc = pml_weft_recv_start(&req->x, req->p_peer, req->p_tag, req->comm_ref);
    }
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return pml_weft_deactivate(req, rc);
    }
    return OMPI_SUCCESS;
}

int pml_weft_start(size_t count, struct ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        ompi_request_t *r = requests[i];
        /* MPI_Startall passes runs of requests with the same req_start. */
        if (NULL == r || pml_weft_start != r->req_start || !r->req_persistent) {
            continue;
        }
        pml_weft_request_t *req = (pml_weft_request_t *)r;
        pml_weft_activate(req);
        int rc = req->persistent_send ? pml_weft_start_send(req) : pml_weft_start_recv(req);
        if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ probes */

static void pml_weft_probe_done(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    struct pml_weft_probe *p = (struct pml_weft_probe *)op;
    p->tag = e->tag;
    p->len = e->len;
    p->error = MPI_SUCCESS;
    __atomic_store_n(&p->state, 1, __ATOMIC_RELEASE);
}

static void pml_weft_probe_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_probe *p = (struct pml_weft_probe *)op;
    if (WEFT_ENOMSG != e->err) {
        pml_weft_log_completion("probe", e);
        p->error = ompi_weft_mpi_error(e->err);
    } else {
        p->error = MPI_SUCCESS;
    }
    __atomic_store_n(&p->state, 2, __ATOMIC_RELEASE);
}

/**
 * Look for a matching message with WEFT_PEEK (| WEFT_CLAIM for a matched probe).
 * weft answers through the CQ at once: found, or WEFT_ENOMSG.
 */
static int pml_weft_peek(struct ompi_communicator_t *comm, int src, int tag, uint64_t flags,
                         struct pml_weft_probe *p)
{
    uint64_t wtag, ignore;
    ompi_weft_recv_bits(comm->c_contextid, src, tag, &wtag, &ignore);
    p->op.done = pml_weft_probe_done;
    p->op.fail = pml_weft_probe_fail;
    p->state = 0;
    p->error = MPI_SUCCESS;
    p->mrecv = NULL;

    if (OPAL_UNLIKELY(pml_weft_have_deferred())) {
        /* Receives posted before this probe may still wait to be posted: until
         * they are, a message found now might belong to one of them. */
        pml_weft_flush_deferred();
        if (pml_weft_have_deferred()) {
            p->state = 2;
            return OMPI_SUCCESS;
        }
    }

    const struct weft_msg_tagged msg = {
        .msg_iov = NULL,
        .desc = NULL,
        .iov_count = 0,
        .addr = pml_weft_recv_source(comm, src),
        .tag = wtag,
        .ignore = ignore,
        .context = &p->op.ctx,
        .data = 0,
    };
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_trecvmsg(pml_weft.w.ep, &msg, flags))) {
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        pml_weft_log_call("weft_trecvmsg (WEFT_PEEK)", rc);
        return ompi_weft_ompi_error(rc);
    }
    while (0 == __atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) {
        pml_weft_progress();
    }
    return p->error;
}

static void pml_weft_probe_status(const struct pml_weft_probe *p, ompi_status_public_t *status)
{
    if (MPI_STATUS_IGNORE != status) {
        status->MPI_SOURCE = ompi_weft_tag_source(p->tag);
        status->MPI_TAG = ompi_weft_tag_mpi_tag(p->tag);
        status->_ucount = p->len;
        status->_cancelled = 0;
    }
}

int pml_weft_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                    ompi_status_public_t *status)
{
    struct pml_weft_probe p;
    int rc = pml_weft_peek(comm, src, tag, WEFT_PEEK, &p);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    *matched = (1 == p.state);
    if (*matched) {
        pml_weft_probe_status(&p, status);
    } else {
        opal_progress(); /* an MPI_Iprobe loop drives the other components too */
    }
    return OMPI_SUCCESS;
}

int pml_weft_probe(int src, int tag, struct ompi_communicator_t *comm, ompi_status_public_t *status)
{
    for (;;) {
        int matched = 0;
        int rc = pml_weft_iprobe(src, tag, comm, &matched, status);
        if (OMPI_SUCCESS != rc || matched) {
            return rc;
        }
    }
}

int pml_weft_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                     struct ompi_message_t **message, ompi_status_public_t *status)
{
    /* Lives until the message is received: its weft_context names the claimed message. */
    struct pml_weft_probe *p = malloc(sizeof(*p));
    if (NULL == p) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = pml_weft_peek(comm, src, tag, WEFT_PEEK | WEFT_CLAIM, p);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc) || 1 != p->state) {
        free(p);
        *matched = 0;
        *message = MPI_MESSAGE_NULL;
        if (OMPI_SUCCESS == rc) {
            opal_progress();
        }
        return rc;
    }
    *message = ompi_message_alloc();
    if (OPAL_UNLIKELY(NULL == *message)) {
        /* The message stays claimed and unreachable; we cannot give it back. */
        opal_output(0, "pml weft: out of message objects after a matched probe");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *matched = 1;
    pml_weft_probe_status(p, status);
    (*message)->comm = comm;
    (*message)->req_ptr = p;
    (*message)->peer = ompi_weft_tag_source(p->tag);
    (*message)->count = p->len;
    return OMPI_SUCCESS;
}

int pml_weft_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                    struct ompi_message_t **message, ompi_status_public_t *status)
{
    for (;;) {
        int matched = 0;
        int rc = pml_weft_improbe(src, tag, comm, &matched, message, status);
        if (OMPI_SUCCESS != rc || matched) {
            return rc;
        }
    }
}

static void pml_weft_claim_done(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    struct pml_weft_probe *p = (struct pml_weft_probe *)op;
    struct pml_weft_xfer *x = p->mrecv;
    free(p);
    pml_weft_recv_complete(x, e->tag, e->len, MPI_SUCCESS, ompi_weft_is_sync(e->flags, e->data));
}

static void pml_weft_claim_fail(struct pml_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct pml_weft_probe *p = (struct pml_weft_probe *)op;
    struct pml_weft_xfer *x = p->mrecv;
    free(p);
    if (WEFT_ETRUNC != e->err) {
        pml_weft_log_completion("matched receive", e);
    }
    pml_weft_recv_complete(x, e->tag, e->len, ompi_weft_mpi_error(e->err),
                           ompi_weft_is_sync(e->flags, e->data));
}

/** Receive the message of @p message (claimed by a matched probe) with @p x, set up. */
static int pml_weft_claim(struct pml_weft_xfer *x, struct ompi_message_t *message)
{
    struct pml_weft_probe *p = (struct pml_weft_probe *)message->req_ptr;
    x->kind = PML_WEFT_MRECV;
    x->comm = message->comm;
    x->claimed = p;
    p->mrecv = x;
    p->op.done = pml_weft_claim_done;
    p->op.fail = pml_weft_claim_fail;

    struct iovec iov = {.iov_base = x->buf, .iov_len = x->length};
    const struct weft_msg_tagged msg = {
        .msg_iov = &iov,
        .desc = NULL,
        .iov_count = 1,
        .addr = WEFT_ADDR_UNSPEC,
        .tag = 0,
        .ignore = 0,
        .context = &p->op.ctx,
        .data = 0,
    };
    x->posted = true;
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_trecvmsg(pml_weft.w.ep, &msg, WEFT_CLAIM))) {
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        pml_weft_log_call("weft_trecvmsg (WEFT_CLAIM)", rc);
        pml_weft_recv_unsetup(x);
        return ompi_weft_ompi_error(rc);
    }
    return OMPI_SUCCESS;
}

int pml_weft_imrecv(void *buf, size_t count, struct ompi_datatype_t *datatype,
                    struct ompi_message_t **message, struct ompi_request_t **request)
{
    int rc;
    pml_weft_request_t *req = pml_weft_recv_request(buf, count, datatype, (*message)->comm, &rc);
    if (OPAL_UNLIKELY(NULL == req)) {
        return rc;
    }
    rc = pml_weft_claim(&req->x, *message);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        pml_weft_request_release(req);
        return rc;
    }
    ompi_message_return(*message);
    *message = MPI_MESSAGE_NULL;
    *request = &req->ompi;
    return OMPI_SUCCESS;
}

int pml_weft_mrecv(void *buf, size_t count, struct ompi_datatype_t *datatype,
                   struct ompi_message_t **message, ompi_status_public_t *status)
{
    struct pml_weft_xfer x;
    ompi_status_public_t st;
    opal_convertor_t conv;
    const bool contiguous = pml_weft_contiguous(datatype, count);
    if (OPAL_UNLIKELY(!contiguous)) {
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
    }
    x.flags = PML_WEFT_X_BLOCKING;
    x.status = &st;
    int rc = pml_weft_recv_setup(&x, buf, count, datatype, &conv);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
        rc = pml_weft_claim(&x, *message);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            ompi_message_return(*message);
            *message = MPI_MESSAGE_NULL;
            rc = pml_weft_recv_wait(&x, status);
        }
    }
    if (OPAL_UNLIKELY(!contiguous)) {
        OBJ_DESTRUCT(&conv);
    }
    return rc;
}

/* ------------------------------------------------------------------ cancel */

/**
 * req_cancel: receives only (MPI allows a cancel to fail; sends are not
 * canceled, a matched-probe receive has its message already). One still in the
 * deferred queue completes canceled at once; otherwise weft_cancel queues a
 * WEFT_ECANCELED completion that progress delivers, or finds it matched.
 */
static int pml_weft_request_cancel(ompi_request_t *request, int flag)
{
    (void)flag;
    pml_weft_request_t *req = (pml_weft_request_t *)request;
    struct pml_weft_xfer *x = &req->x;
    if (OMPI_REQUEST_ACTIVE != request->req_state || REQUEST_COMPLETE(request) ||
        PML_WEFT_RECV != x->kind) {
        return OMPI_SUCCESS;
    }
    if (!x->posted && pml_weft_post_recv == x->post && pml_weft_unqueue(x)) {
        x->status->_cancelled = true;
        if (NULL != x->bounce) {
            free(x->bounce);
            x->bounce = NULL;
        }
        pml_weft_recv_finish(x);
        return OMPI_SUCCESS;
    }
    /* 0: the WEFT_ECANCELED completion is queued; -WEFT_ENOENT: already matched,
     * it completes normally and is not canceled. */
    (void)weft_cancel(pml_weft.w.ep, &x->op.ctx);
    return OMPI_SUCCESS;
}
