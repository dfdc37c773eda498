/*
 * mtl_weft.c: the data path of the weft MTL (docs/mpi.md).
 *
 * Every operation is one weft tagged operation whose op_context is the
 * struct weft_context at the start of a struct mtl_weft_op; progress reads the
 * CQ and calls the op's callback. Sends up to the inject size complete at once
 * (weft_tinject); larger ones complete through the CQ. MPI_Ssend posts the
 * receive of a zero-byte acknowledgement before its send and completes when
 * both are done; the receiver sends the acknowledgement when its receive
 * completes. Operations weft refuses with -WEFT_EAGAIN wait, in posting order,
 * in a deferred queue that progress drains: a nonblocking call never spins on
 * the peer.
 */
#include "mtl_weft.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/mtl/base/mtl_base_datatype.h"
#include "ompi/message/message.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/** CQ entries read per weft_cq_read (each read drives weft progress once). */
#define MTL_WEFT_CQ_BATCH 16

#define MTL_WEFT_CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ------------------------------------------------------------------ helpers */

static void mtl_weft_log_call(const char *call, ssize_t rc)
{
    opal_output(0, "mtl weft: %s failed: %s (%zd)", call, weft_strerror((int)-rc), rc);
}

static void mtl_weft_log_completion(const char *what, const struct weft_cq_err_entry *e)
{
    opal_output(0, "mtl weft: %s failed: %s (%d): %s", what, weft_strerror(e->err), e->err,
                e->err_str);
}

/** One less event to wait for; atomic only when several threads may complete events. */
static inline int mtl_weft_pending_dec(mtl_weft_request_t *req)
{
    if (mtl_weft.thread_multiple) {
        return __atomic_sub_fetch(&req->pending, 1, __ATOMIC_ACQ_REL);
    }
    return --req->pending;
}

static inline void mtl_weft_mark_complete(mtl_weft_request_t *req)
{
    /* Release: a blocking caller that sees complete also sees error and status. */
    __atomic_store_n(&req->complete, true, __ATOMIC_RELEASE);
}

static inline bool mtl_weft_is_complete(const mtl_weft_request_t *req)
{
    return __atomic_load_n(&req->complete, __ATOMIC_ACQUIRE);
}

int mtl_weft_peer_addr(struct ompi_communicator_t *comm, int rank, weft_addr_t *addr)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    void *ep = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL];
    if (OPAL_UNLIKELY(NULL == ep)) {
        /* Procs arrive lazily (mpi_add_procs_cutoff): read this one's address now. */
        int rc = mtl_weft_add_procs(&mtl_weft.base, 1, &proc);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        ep = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL];
    }
    /* The endpoint slot holds the weft address + 1 (NULL: not added yet). */
    *addr = (weft_addr_t)(uintptr_t)ep - 1;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ deferred operations */

static inline bool mtl_weft_have_deferred(void)
{
    /* Unlocked peek: a thread sees its own queued operations; operations of
     * other threads are concurrent with this one and have no order to keep. */
    return NULL != __atomic_load_n(&mtl_weft.deferred_head, __ATOMIC_RELAXED);
}

/**
 * Post @p req now, or queue it behind operations that weft refused earlier (so
 * the posting order, which MPI's matching order depends on, is kept).
 * @return 0 (posted, completed or queued) or a negative weft code (hard error).
 */
static int mtl_weft_start(mtl_weft_request_t *req)
{
    if (OPAL_LIKELY(!mtl_weft_have_deferred())) {
        int rc = req->post(req);
        if (OPAL_LIKELY(-WEFT_EAGAIN != rc)) {
            return rc;
        }
    }
    req->next = NULL;
    OPAL_THREAD_LOCK(&mtl_weft.lock);
    ++mtl_weft.deferred_count;
    if (NULL == mtl_weft.deferred_tail) {
        mtl_weft.deferred_head = req;
    } else {
        mtl_weft.deferred_tail->next = req;
    }
    mtl_weft.deferred_tail = req;
    OPAL_THREAD_UNLOCK(&mtl_weft.lock);
    return 0;
}

static void mtl_weft_fail_deferred(mtl_weft_request_t *req, int rc);

void mtl_weft_flush_deferred(void)
{
    OPAL_THREAD_LOCK(&mtl_weft.lock);
    while (NULL != mtl_weft.deferred_head) {
        /* Unlink before posting: a post that completes the request runs its
         * completion callback, after which pml cm may reuse the request (even
         * for an operation that this callback starts and queues). */
        mtl_weft_request_t *req = mtl_weft.deferred_head;
        mtl_weft.deferred_head = req->next;
        if (NULL == mtl_weft.deferred_head) {
            mtl_weft.deferred_tail = NULL;
        }
        int rc = req->post(req);
        if (-WEFT_EAGAIN == rc) {
            /* Nothing happened (no callback ran): back at the head, in order. */
            req->next = mtl_weft.deferred_head;
            mtl_weft.deferred_head = req;
            if (NULL == mtl_weft.deferred_tail) {
                mtl_weft.deferred_tail = req;
            }
            break;
        }
        if (0 != rc) {
            mtl_weft_fail_deferred(req, rc);
        }
    }
    OPAL_THREAD_UNLOCK(&mtl_weft.lock);
}

/* ------------------------------------------------------------------ progress */

int mtl_weft_progress(void)
{
    struct weft_cq_tagged_entry e[MTL_WEFT_CQ_BATCH];
    int count = 0;

    if (OPAL_UNLIKELY(mtl_weft_have_deferred())) {
        mtl_weft_flush_deferred();
    }
    for (;;) {
        ssize_t n = weft_cq_read(mtl_weft.w.cq, e, MTL_WEFT_CQ_BATCH);
        if (OPAL_LIKELY(n > 0)) {
            for (ssize_t i = 0; i < n; ++i) {
                struct mtl_weft_op *op = (struct mtl_weft_op *)e[i].op_context;
                op->done(op, &e[i]);
            }
            count += (int)n;
            if (n < MTL_WEFT_CQ_BATCH) {
                break; /* drained: another read would only poll again */
            }
        } else if (-WEFT_EAGAIN == n) {
            break;
        } else if (-WEFT_EAVAIL == n) {
            struct weft_cq_err_entry err;
            if (1 == weft_cq_readerr(mtl_weft.w.cq, &err, 0) && NULL != err.op_context) {
                struct mtl_weft_op *op = (struct mtl_weft_op *)err.op_context;
                op->fail(op, &err);
                ++count;
            }
        } else {
            mtl_weft_log_call("weft_cq_read", n);
            break;
        }
    }
    return count;
}

/* ------------------------------------------------------------------ sends */

static void mtl_weft_send_finish(mtl_weft_request_t *req)
{
    if (OPAL_UNLIKELY(NULL != req->bounce)) {
        free(req->bounce);
        req->bounce = NULL;
    }
    if (req->blocking) {
        mtl_weft_mark_complete(req); /* last access: the caller's stack frame may go */
        return;
    }
    req->super.ompi_req->req_status.MPI_ERROR = req->error;
    mtl_weft_mark_complete(req);
    req->super.completion_callback(&req->super);
}

static inline void mtl_weft_send_event(mtl_weft_request_t *req)
{
    if (0 == mtl_weft_pending_dec(req)) {
        mtl_weft_send_finish(req);
    }
}

static void mtl_weft_send_done(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    mtl_weft_send_event(MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op));
}

static void mtl_weft_send_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    mtl_weft_request_t *req = MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op);
    mtl_weft_log_completion("send", e);
    req->error = ompi_weft_mpi_error(e->err);
    mtl_weft_send_event(req);
}

static void mtl_weft_ack_done(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    mtl_weft_send_event(MTL_WEFT_CONTAINER(op, mtl_weft_request_t, ack));
}

static void mtl_weft_ack_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    mtl_weft_request_t *req = MTL_WEFT_CONTAINER(op, mtl_weft_request_t, ack);
    if (WEFT_ECANCELED != e->err) { /* canceled: we withdrew it after a failed send */
        mtl_weft_log_completion("synchronous send acknowledgement", e);
        req->error = ompi_weft_mpi_error(e->err);
    }
    mtl_weft_send_event(req);
}

/** Post the acknowledgement receive (MPI_Ssend), then the message. */
/** A synchronous send: its acknowledgement receive, then the message with
 * remote CQ data OMPI_WEFT_DATA_SYNC. */
static int mtl_weft_post_sync_send(mtl_weft_request_t *req)
{
    ssize_t rc;
    if (!req->posted) {
        rc = weft_trecv(mtl_weft.w.ep, NULL, 0, NULL, req->peer, req->ack_tag, 0, &req->ack.ctx);
        if (0 != rc) {
            return (int)rc;
        }
        req->posted = true; /* the acknowledgement receive is posted */
    }
    if (req->length <= mtl_weft.w.inject_size) {
        rc = weft_tinjectdata(mtl_weft.w.ep, req->buf, req->length, OMPI_WEFT_DATA_SYNC, req->peer,
                              req->wtag);
        if (OPAL_LIKELY(0 == rc)) {
            mtl_weft_send_event(req); /* the buffer is reusable: the send is done */
            return 0;
        }
        if (-WEFT_EAGAIN != rc) {
            return (int)rc;
        }
        /* Refused (see mtl_weft_post_send): a send with a completion instead. */
    }
    return (int)weft_tsenddata(mtl_weft.w.ep, req->buf, req->length, NULL, OMPI_WEFT_DATA_SYNC,
                               req->peer, req->wtag, &req->op.ctx);
}

static int mtl_weft_post_send(mtl_weft_request_t *req)
{
    ssize_t rc;
    if (OPAL_UNLIKELY(0 != req->ack_tag)) {
        return mtl_weft_post_sync_send(req);
    }
    if (req->length <= mtl_weft.w.inject_size) {
        rc = weft_tinject(mtl_weft.w.ep, req->buf, req->length, req->peer, req->wtag);
        if (OPAL_LIKELY(0 == rc)) {
            mtl_weft_send_event(req); /* the buffer is reusable: the send is done */
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
    return (int)weft_tsend(mtl_weft.w.ep, req->buf, req->length, NULL, req->peer, req->wtag,
                           &req->op.ctx);
}

/**
 * A send failed to post with a hard error after its acknowledgement receive was
 * posted: withdraw that receive and wait for weft to report it.
 */
static void mtl_weft_withdraw_ack(mtl_weft_request_t *req)
{
    if (0 == req->ack_tag || !req->posted) {
        return;
    }
    const bool blocking = req->blocking;
    req->pending = 1; /* only the canceled acknowledgement is still to come */
    req->blocking = true;
    req->complete = false;
    if (0 == weft_cancel(mtl_weft.w.ep, &req->ack.ctx)) {
        while (!mtl_weft_is_complete(req)) {
            mtl_weft_progress();
        }
    }
    req->blocking = blocking;
    req->complete = false;
}

static void mtl_weft_fail_deferred(mtl_weft_request_t *req, int rc)
{
    mtl_weft_log_call("posting a deferred operation", rc);
    if (MTL_WEFT_REQ_SEND == req->kind) {
        mtl_weft_withdraw_ack(req);
        req->error = MPI_ERR_INTERN;
        req->pending = 1;
        mtl_weft_send_event(req);
        return;
    }
    /* A receive, or the acknowledgement of a completed receive. */
    ompi_status_public_t *st = &req->super.ompi_req->req_status;
    st->MPI_ERROR = MPI_ERR_INTERN;
    if (NULL != req->bounce) {
        free(req->bounce);
        req->bounce = NULL;
    }
    mtl_weft_mark_complete(req);
    req->super.completion_callback(&req->super);
}

/** mtl_weft_send_start(): the message is out and nothing is left to complete. */
#define MTL_WEFT_SENT 1

/**
 * Start a send. Fast path: a message that is not synchronous, fits weft_tinject
 * and has no deferred operation ahead of it goes out at once, without touching
 * the request (returns MTL_WEFT_SENT). Otherwise the request carries it.
 */
static int mtl_weft_send_start(mtl_weft_request_t *req, struct ompi_communicator_t *comm, int dest,
                               int tag, struct opal_convertor_t *convertor,
                               mca_pml_base_send_mode_t mode)
{
    void *start;
    size_t length;
    bool free_after;
    weft_addr_t peer;

    int rc = mtl_weft_peer_addr(comm, dest, &peer);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    rc = ompi_mtl_datatype_pack(convertor, &start, &length, &free_after);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(length > mtl_weft.w.max_msg_size)) {
        opal_output(0, "mtl weft: a %zu-byte message is larger than weft's limit (%zu bytes)",
                    length, mtl_weft.w.max_msg_size);
        if (free_after) {
            free(start);
        }
        return OMPI_ERR_NOT_SUPPORTED;
    }
    const uint64_t wtag = ompi_weft_tag(comm->c_contextid, comm->c_my_rank, tag);
    if (OPAL_LIKELY(MCA_PML_BASE_SEND_SYNCHRONOUS != mode && length <= mtl_weft.w.inject_size &&
                    !mtl_weft_have_deferred())) {
        ssize_t wrc = weft_tinject(mtl_weft.w.ep, start, length, peer, wtag);
        if (OPAL_LIKELY(0 == wrc)) {
            if (OPAL_UNLIKELY(free_after)) {
                free(start);
            }
            return MTL_WEFT_SENT;
        }
        if (-WEFT_EAGAIN != wrc) {
            mtl_weft_log_call("weft_tinject", wrc);
            if (free_after) {
                free(start);
            }
            return ompi_weft_ompi_error(wrc);
        }
        /* -WEFT_EAGAIN: the request carries it through the deferred queue. */
    }

    req->kind = MTL_WEFT_REQ_SEND;
    req->op.done = mtl_weft_send_done;
    req->op.fail = mtl_weft_send_fail;
    req->error = OMPI_SUCCESS;
    req->complete = false;
    req->posted = false;
    req->bounce = free_after ? start : NULL;
    req->buf = start;
    req->length = length;
    req->peer = peer;
    req->wtag = wtag;
    req->post = mtl_weft_post_send;
    if (OPAL_UNLIKELY(MCA_PML_BASE_SEND_SYNCHRONOUS == mode)) {
        /* The receiver answers with its own rank in the source field. */
        req->ack_tag = OMPI_WEFT_ACK_BIT | ompi_weft_tag(comm->c_contextid, dest, tag);
        req->ack.done = mtl_weft_ack_done;
        req->ack.fail = mtl_weft_ack_fail;
        req->pending = 2;
    } else {
        req->ack_tag = 0;
        req->pending = 1;
    }
    /* Buffered and ready sends are standard sends here: pml cm has already
     * copied a buffered send into the attached buffer. */

    rc = mtl_weft_start(req);
    if (OPAL_UNLIKELY(0 != rc)) {
        mtl_weft_log_call("weft_tsend", rc);
        mtl_weft_withdraw_ack(req);
        if (NULL != req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
        return ompi_weft_ompi_error(rc);
    }
    return OMPI_SUCCESS;
}

int mtl_weft_send(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int dest,
                  int tag, struct opal_convertor_t *convertor, mca_pml_base_send_mode_t mode)
{
    (void)mtl;
    mtl_weft_request_t req;
    req.blocking = true;
    req.super.ompi_req = NULL;
    req.super.completion_callback = NULL;
    int rc = mtl_weft_send_start(&req, comm, dest, tag, convertor, mode);
    if (OPAL_LIKELY(MTL_WEFT_SENT == rc)) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    /* opal_progress, not ours alone: it yields the core when oversubscribed. */
    while (!mtl_weft_is_complete(&req)) {
        opal_progress();
    }
    return req.error;
}

int mtl_weft_isend(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int dest,
                   int tag, struct opal_convertor_t *convertor, mca_pml_base_send_mode_t mode,
                   bool blocking, mca_mtl_request_t *mtl_request)
{
    (void)mtl;
    (void)blocking;
    mtl_weft_request_t *req = (mtl_weft_request_t *)mtl_request;
    req->blocking = false;
    int rc = mtl_weft_send_start(req, comm, dest, tag, convertor, mode);
    if (OPAL_LIKELY(MTL_WEFT_SENT == rc)) {
        req->kind = MTL_WEFT_REQ_SEND;
        req->complete = true;
        req->super.ompi_req->req_status.MPI_ERROR = OMPI_SUCCESS;
        req->super.completion_callback(&req->super);
        return OMPI_SUCCESS;
    }
    return rc;
}

/* ------------------------------------------------------------------ receives */

static void mtl_weft_recv_finish(mtl_weft_request_t *req)
{
    mtl_weft_mark_complete(req);
    req->super.completion_callback(&req->super);
}

static void mtl_weft_ack_sent(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    (void)e;
    mtl_weft_recv_finish(MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op));
}

static void mtl_weft_ack_send_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    mtl_weft_request_t *req = MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op);
    mtl_weft_log_completion("synchronous send acknowledgement", e);
    req->super.ompi_req->req_status.MPI_ERROR = ompi_weft_mpi_error(e->err);
    mtl_weft_recv_finish(req);
}

/** Send the acknowledgement of a synchronous message, then complete the receive. */
static int mtl_weft_post_ack(mtl_weft_request_t *req)
{
    ssize_t rc = weft_tinject(mtl_weft.w.ep, NULL, 0, req->peer, req->ack_tag);
    if (OPAL_LIKELY(0 == rc)) {
        mtl_weft_recv_finish(req);
        return 0;
    }
    if (-WEFT_EAGAIN != rc) {
        return (int)rc;
    }
    /* Refused (see mtl_weft_post_send): a send with a completion, which finishes
     * the receive. The receive's own operation is over: its op carries the ack. */
    req->op.done = mtl_weft_ack_sent;
    req->op.fail = mtl_weft_ack_send_fail;
    return (int)weft_tsend(mtl_weft.w.ep, NULL, 0, NULL, req->peer, req->ack_tag, &req->op.ctx);
}

/** A receive (or matched-probe receive) got @p len bytes of the message tagged
 * @p wtag; @p sync: a synchronous send, to acknowledge. */
static void mtl_weft_recv_complete(mtl_weft_request_t *req, uint64_t wtag, size_t len, int error,
                                   bool sync)
{
    ompi_status_public_t *st = &req->super.ompi_req->req_status;
    const int src = ompi_weft_tag_source(wtag);
    st->MPI_SOURCE = src;
    st->MPI_TAG = ompi_weft_tag_mpi_tag(wtag);
    st->MPI_ERROR = error;
    st->_ucount = len;

    if (OPAL_UNLIKELY(NULL != req->bounce)) {
        if (len > 0) {
            int rc = ompi_mtl_datatype_unpack(req->convertor, req->bounce, len); /* frees it */
            if (OMPI_SUCCESS != rc) {
                opal_output(0, "mtl weft: unpacking a received message failed: %d", rc);
                st->MPI_ERROR = MPI_ERR_INTERN;
            }
        } else {
            free(req->bounce);
        }
        req->bounce = NULL;
    }

    if (OPAL_UNLIKELY(sync)) {
        /* MPI_Ssend: the sender waits until we have matched it. */
        int rc = mtl_weft_peer_addr(req->comm, src, &req->peer);
        if (OMPI_SUCCESS != rc) {
            opal_output(0, "mtl weft: no address for rank %d to acknowledge a synchronous send",
                        src);
            st->MPI_ERROR = MPI_ERR_INTERN;
            mtl_weft_recv_finish(req);
            return;
        }
        req->ack_tag =
            OMPI_WEFT_ACK_BIT | ompi_weft_tag(req->comm->c_contextid, req->comm->c_my_rank,
                                              ompi_weft_tag_mpi_tag(wtag));
        req->post = mtl_weft_post_ack;
        rc = mtl_weft_start(req);
        if (0 != rc) {
            mtl_weft_log_call("weft_tinject (synchronous send acknowledgement)", rc);
            st->MPI_ERROR = MPI_ERR_INTERN;
            mtl_weft_recv_finish(req);
        }
        return;
    }
    mtl_weft_recv_finish(req);
}

static void mtl_weft_recv_done(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    mtl_weft_request_t *req = MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op);
    mtl_weft_recv_complete(req, e->tag, e->len, MPI_SUCCESS, ompi_weft_is_sync(e->flags, e->data));
}

static void mtl_weft_recv_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    mtl_weft_request_t *req = MTL_WEFT_CONTAINER(op, mtl_weft_request_t, op);
    if (WEFT_ECANCELED == e->err) {
        req->super.ompi_req->req_status._cancelled = true;
        if (NULL != req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
        mtl_weft_recv_finish(req);
        return;
    }
    if (WEFT_ETRUNC != e->err) {
        mtl_weft_log_completion("receive", e);
    }
    /* Truncated: len is what was delivered; the message was matched, so a
     * synchronous sender is still acknowledged. */
    mtl_weft_recv_complete(req, e->tag, e->len, ompi_weft_mpi_error(e->err),
                           ompi_weft_is_sync(e->flags, e->data));
}

/** The weft address a receive from @p src of @p comm names (ompi_weft_recv_addr). */
static inline weft_addr_t mtl_weft_recv_source(struct ompi_communicator_t *comm, int src)
{
    return ompi_weft_recv_addr(comm, src, mtl_weft_peer_addr);
}

static int mtl_weft_post_recv(mtl_weft_request_t *req)
{
    req->posted = true; /* before: the completion may be read by another thread at once */
    ssize_t rc = weft_trecv(mtl_weft.w.ep, req->buf, req->length, NULL, req->peer, req->wtag,
                            req->ignore, &req->op.ctx);
    if (OPAL_UNLIKELY(0 != rc)) {
        req->posted = false;
    }
    return (int)rc;
}

/** Prepare @p req to receive into @p convertor's buffer (a bounce buffer if not contiguous). */
static int mtl_weft_recv_setup(mtl_weft_request_t *req, struct opal_convertor_t *convertor)
{
    void *start;
    size_t length;
    bool free_after;
    int rc = ompi_mtl_datatype_recv_buf(convertor, &start, &length, &free_after);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(free_after && NULL == start)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->bounce = free_after ? start : NULL;
    req->buf = start;
    req->length = length;
    req->convertor = convertor;
    req->complete = false;
    req->posted = false;
    req->blocking = false;
    req->ack_tag = 0;
    req->op.done = mtl_weft_recv_done;
    req->op.fail = mtl_weft_recv_fail;
    return OMPI_SUCCESS;
}

int mtl_weft_irecv(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                   int tag, struct opal_convertor_t *convertor, mca_mtl_request_t *mtl_request)
{
    (void)mtl;
    mtl_weft_request_t *req = (mtl_weft_request_t *)mtl_request;
    int rc = mtl_weft_recv_setup(req, convertor);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    req->kind = MTL_WEFT_REQ_RECV;
    req->comm = comm;
    ompi_weft_recv_bits(comm->c_contextid, src, tag, &req->wtag, &req->ignore);
    req->peer = mtl_weft_recv_source(comm, src);
    req->post = mtl_weft_post_recv;
    rc = -WEFT_EAGAIN;
    if (OPAL_LIKELY(!mtl_weft_have_deferred())) {
        rc = mtl_weft_post_recv(req); /* direct: the common case */
        if (OPAL_LIKELY(0 == rc)) {
            return OMPI_SUCCESS;
        }
    }
    if (-WEFT_EAGAIN == rc) {
        rc = mtl_weft_start(req);
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        mtl_weft_log_call("weft_trecv", rc);
        if (NULL != req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
        return ompi_weft_ompi_error(rc);
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ probes */

static void mtl_weft_probe_done(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    struct mtl_weft_probe *p = (struct mtl_weft_probe *)op;
    p->tag = e->tag;
    p->len = e->len;
    p->error = MPI_SUCCESS;
    __atomic_store_n(&p->state, 1, __ATOMIC_RELEASE);
}

static void mtl_weft_probe_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct mtl_weft_probe *p = (struct mtl_weft_probe *)op;
    if (WEFT_ENOMSG != e->err) {
        mtl_weft_log_completion("probe", e);
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
static int mtl_weft_peek(struct ompi_communicator_t *comm, int src, int tag, uint64_t flags,
                         struct mtl_weft_probe *p)
{
    uint64_t wtag, ignore;
    ompi_weft_recv_bits(comm->c_contextid, src, tag, &wtag, &ignore);
    p->op.done = mtl_weft_probe_done;
    p->op.fail = mtl_weft_probe_fail;
    p->state = 0;
    p->error = MPI_SUCCESS;
    p->mrecv = NULL;

    if (OPAL_UNLIKELY(mtl_weft_have_deferred())) {
        /* Receives posted before this probe may still wait to be posted: until
         * they are, a message found now might belong to one of them. */
        mtl_weft_flush_deferred();
        if (mtl_weft_have_deferred()) {
            p->state = 2;
            return OMPI_SUCCESS;
        }
    }

    const struct weft_msg_tagged msg = {
        .msg_iov = NULL,
        .desc = NULL,
        .iov_count = 0,
        .addr = mtl_weft_recv_source(comm, src),
        .tag = wtag,
        .ignore = ignore,
        .context = &p->op.ctx,
        .data = 0,
    };
    ssize_t rc;
    while (-WEFT_EAGAIN == (rc = weft_trecvmsg(mtl_weft.w.ep, &msg, flags))) {
    }
    if (OPAL_UNLIKELY(0 != rc)) {
        mtl_weft_log_call("weft_trecvmsg (WEFT_PEEK)", rc);
        return ompi_weft_ompi_error(rc);
    }
    while (0 == __atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) {
        mtl_weft_progress();
    }
    return p->error;
}

static void mtl_weft_probe_status(const struct mtl_weft_probe *p,
                                  struct ompi_status_public_t *status)
{
    if (MPI_STATUS_IGNORE != status) {
        status->MPI_SOURCE = ompi_weft_tag_source(p->tag);
        status->MPI_TAG = ompi_weft_tag_mpi_tag(p->tag);
        status->MPI_ERROR = MPI_SUCCESS;
        status->_ucount = p->len;
        status->_cancelled = 0;
    }
}

int mtl_weft_iprobe(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                    int tag, int *flag, struct ompi_status_public_t *status)
{
    (void)mtl;
    struct mtl_weft_probe p;
    int rc = mtl_weft_peek(comm, src, tag, WEFT_PEEK, &p);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    *flag = (1 == p.state);
    if (*flag) {
        mtl_weft_probe_status(&p, status);
    }
    return OMPI_SUCCESS;
}

int mtl_weft_improbe(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                     int tag, int *matched, struct ompi_message_t **message,
                     struct ompi_status_public_t *status)
{
    (void)mtl;
    /* Lives until the message is received: its weft_context names the claimed message. */
    struct mtl_weft_probe *p = malloc(sizeof(*p));
    if (NULL == p) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = mtl_weft_peek(comm, src, tag, WEFT_PEEK | WEFT_CLAIM, p);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc) || 1 != p->state) {
        free(p);
        *matched = 0;
        *message = MPI_MESSAGE_NULL;
        return rc;
    }
    *message = ompi_message_alloc();
    if (OPAL_UNLIKELY(NULL == *message)) {
        /* The message stays claimed and unreachable; we cannot give it back. */
        opal_output(0, "mtl weft: out of message objects after a matched probe");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *matched = 1;
    mtl_weft_probe_status(p, status);
    (*message)->comm = comm;
    (*message)->req_ptr = p;
    (*message)->peer = ompi_weft_tag_source(p->tag);
    (*message)->count = p->len;
    return OMPI_SUCCESS;
}

static void mtl_weft_claim_done(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e)
{
    struct mtl_weft_probe *p = (struct mtl_weft_probe *)op;
    mtl_weft_request_t *req = p->mrecv;
    free(p);
    mtl_weft_recv_complete(req, e->tag, e->len, MPI_SUCCESS, ompi_weft_is_sync(e->flags, e->data));
}

static void mtl_weft_claim_fail(struct mtl_weft_op *op, const struct weft_cq_err_entry *e)
{
    struct mtl_weft_probe *p = (struct mtl_weft_probe *)op;
    mtl_weft_request_t *req = p->mrecv;
    free(p);
    if (WEFT_ETRUNC != e->err) {
        mtl_weft_log_completion("matched receive", e);
    }
    mtl_weft_recv_complete(req, e->tag, e->len, ompi_weft_mpi_error(e->err),
                           ompi_weft_is_sync(e->flags, e->data));
}

int mtl_weft_imrecv(struct mca_mtl_base_module_t *mtl, struct opal_convertor_t *convertor,
                    struct ompi_message_t **message, mca_mtl_request_t *mtl_request)
{
    (void)mtl;
    mtl_weft_request_t *req = (mtl_weft_request_t *)mtl_request;
    struct mtl_weft_probe *p = (struct mtl_weft_probe *)(*message)->req_ptr;
    int rc = mtl_weft_recv_setup(req, convertor);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    req->kind = MTL_WEFT_REQ_MRECV;
    req->comm = (*message)->comm;
    req->claimed = p;
    p->mrecv = req;
    p->op.done = mtl_weft_claim_done;
    p->op.fail = mtl_weft_claim_fail;

    struct iovec iov = {.iov_base = req->buf, .iov_len = req->length};
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
    req->posted = true;
    ssize_t wrc;
    while (-WEFT_EAGAIN == (wrc = weft_trecvmsg(mtl_weft.w.ep, &msg, WEFT_CLAIM))) {
    }
    if (OPAL_UNLIKELY(0 != wrc)) {
        mtl_weft_log_call("weft_trecvmsg (WEFT_CLAIM)", wrc);
        if (NULL != req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
        return ompi_weft_ompi_error(wrc);
    }
    ompi_message_return(*message);
    *message = MPI_MESSAGE_NULL;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ cancel */

/** Remove @p req from the deferred queue; true if it was there. */
static bool mtl_weft_unqueue(mtl_weft_request_t *req)
{
    bool found = false;
    OPAL_THREAD_LOCK(&mtl_weft.lock);
    mtl_weft_request_t *prev = NULL;
    for (mtl_weft_request_t *r = mtl_weft.deferred_head; NULL != r; prev = r, r = r->next) {
        if (r == req) {
            if (NULL == prev) {
                mtl_weft.deferred_head = r->next;
            } else {
                prev->next = r->next;
            }
            if (mtl_weft.deferred_tail == r) {
                mtl_weft.deferred_tail = prev;
            }
            found = true;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&mtl_weft.lock);
    return found;
}

int mtl_weft_cancel(struct mca_mtl_base_module_t *mtl, mca_mtl_request_t *mtl_request, int flag)
{
    (void)mtl;
    (void)flag;
    mtl_weft_request_t *req = (mtl_weft_request_t *)mtl_request;

    /* Sends are not canceled (MPI allows a cancel to fail); a matched-probe
     * receive has its message already. */
    if (MTL_WEFT_REQ_RECV != req->kind || mtl_weft_is_complete(req)) {
        return OMPI_SUCCESS;
    }
    if (!req->posted && mtl_weft_post_recv == req->post && mtl_weft_unqueue(req)) {
        req->super.ompi_req->req_status._cancelled = true;
        if (NULL != req->bounce) {
            free(req->bounce);
            req->bounce = NULL;
        }
        mtl_weft_recv_finish(req);
        return OMPI_SUCCESS;
    }
    if (0 == weft_cancel(mtl_weft.w.ep, &req->op.ctx)) {
        /* weft has queued the WEFT_ECANCELED completion: deliver it. */
        while (!mtl_weft_is_complete(req)) {
            mtl_weft_progress();
        }
    }
    /* -WEFT_ENOENT: already matched; it completes normally and is not canceled. */
    return OMPI_SUCCESS;
}
