/*
 * mtl_weft.h: the Open MPI 4.1 MTL component over weft (docs/mpi.md).
 *
 * Open MPI's pml cm calls an MTL for every point-to-point operation; this one maps
 * them onto weft's tagged messages (include/weft/weft.h). C only: Open MPI's
 * internal headers do not compile as C++.
 */
#ifndef MTL_WEFT_H
#define MTL_WEFT_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/mtl/base/base.h"
#include "ompi/mca/mtl/mtl.h"
#include "opal/threads/mutex.h"

#include <weft/weft.h>

#include "ompi_weft_p2p.h" /* the tag layout (shared with pml weft) */

BEGIN_C_DECLS

/* ------------------------------------------------------------------ operations and requests */

struct mtl_weft_op;
/** A weft operation completed: @p e is its CQ entry. */
typedef void (*mtl_weft_done_fn)(struct mtl_weft_op *op, const struct weft_cq_tagged_entry *e);
/** A weft operation failed (or was canceled): @p e is its error entry. */
typedef void (*mtl_weft_fail_fn)(struct mtl_weft_op *op, const struct weft_cq_err_entry *e);

/**
 * One outstanding weft operation. The op_context of every weft call is &op->ctx
 * (the first member), so a CQ entry leads back to its op and its callbacks.
 */
struct mtl_weft_op {
    struct weft_context ctx; /**< first: owned by weft while the operation is outstanding */
    mtl_weft_done_fn done;   /**< success callback */
    mtl_weft_fail_fn fail;   /**< error callback */
};

struct mtl_weft_request;
/** Post what is left of a request to weft; -WEFT_EAGAIN keeps it deferred. */
typedef int (*mtl_weft_post_fn)(struct mtl_weft_request *req);

/** What a request is, for cancel. */
enum mtl_weft_req_kind {
    MTL_WEFT_REQ_SEND = 1,
    MTL_WEFT_REQ_RECV, /**< a posted receive (cancelable until matched) */
    MTL_WEFT_REQ_MRECV /**< the receive of a matched-probed message (not cancelable) */
};

/**
 * The MTL's part of a pml cm request (mtl_request_size bytes follow super), or
 * a blocking send's request on the stack.
 */
typedef struct mtl_weft_request {
    mca_mtl_request_t super;
    struct mtl_weft_op op;  /**< the send or the receive */
    struct mtl_weft_op ack; /**< MPI_Ssend: the receive of the acknowledgement */
    enum mtl_weft_req_kind kind;
    volatile int pending;   /**< send: events still to come (posting, send done, ack) */
    volatile bool complete; /**< completion_callback has been called (or would have been) */
    bool blocking;          /**< a blocking send: the caller waits for pending == 0 */
    bool posted;            /**< receive: handed to weft (else still deferred) */
    int error;              /**< MPI error of the operation */
    void *bounce;           /**< packed copy of a non-contiguous buffer, or NULL */
    void *buf;              /**< what is handed to weft */
    size_t length;          /**< send: bytes; receive: capacity */
    uint64_t wtag;          /**< send: the message tag; receive: tag to match */
    uint64_t ignore;        /**< receive: ignore mask */
    uint64_t ack_tag;       /**< Ssend: tag of the expected acknowledgement */
    weft_addr_t peer;       /**< send: destination; ack: where the acknowledgement goes */
    struct opal_convertor_t *convertor;
    struct ompi_communicator_t *comm;
    struct mtl_weft_probe *claimed; /**< mrecv: the matched-probe record being received */
    mtl_weft_post_fn post;          /**< deferred: what to post next */
    struct mtl_weft_request *next;  /**< deferred queue link */
} mtl_weft_request_t;

/** A probe (on the stack) or a matched probe (allocated; lives until its mrecv completes). */
struct mtl_weft_probe {
    struct mtl_weft_op op;     /**< first; for a matched probe its ctx names the claimed message */
    volatile int state;        /**< 0 in flight, 1 found, 2 nothing */
    int error;                 /**< MPI error */
    uint64_t tag;              /**< tag of the message found */
    size_t len;                /**< its length */
    mtl_weft_request_t *mrecv; /**< the request receiving the message */
};

/* ------------------------------------------------------------------ the module */

/** The module: Open MPI's function table plus the weft objects, one per process. */
typedef struct mtl_weft_module {
    mca_mtl_base_module_t base;
    struct ompi_weft_objs w; /**< endpoint, CQ, AV and their sizes */
    bool thread_multiple;    /**< MPI_THREAD_MULTIPLE: weft is WEFT_THREAD_SAFE */
    /** Deferred queue and lazy address insertion. Recursive: a completion callback
     * run while the queue is being drained may start a new operation. */
    opal_recursive_mutex_t lock;
    mtl_weft_request_t *deferred_head; /**< operations weft refused with -WEFT_EAGAIN, in order */
    mtl_weft_request_t *deferred_tail;
    unsigned long deferred_count; /**< operations that went through the deferred queue */
} mtl_weft_module_t;

/** The component: Open MPI's component struct. */
typedef struct mtl_weft_component {
    mca_mtl_base_component_2_0_0_t super;
    int priority; /**< MCA mtl_weft_priority */
    int verbose;  /**< MCA mtl_weft_verbose: >= 1 prints the selection of every rank */
    char *config; /**< MCA mtl_weft_config: NAME=value pairs on top of the environment */
} mtl_weft_component_t;

OMPI_MODULE_DECLSPEC extern mtl_weft_component_t mca_mtl_weft_component;
extern mtl_weft_module_t mtl_weft;

/* component (mtl_weft_component.c) */
int mtl_weft_add_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
                       struct ompi_proc_t **procs);
int mtl_weft_del_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs,
                       struct ompi_proc_t **procs);
int mtl_weft_finalize(struct mca_mtl_base_module_t *mtl);
int mtl_weft_add_comm(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm);
int mtl_weft_del_comm(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm);

/* data path (mtl_weft.c) */
int mtl_weft_progress(void);
int mtl_weft_send(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int dest,
                  int tag, struct opal_convertor_t *convertor, mca_pml_base_send_mode_t mode);
int mtl_weft_isend(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int dest,
                   int tag, struct opal_convertor_t *convertor, mca_pml_base_send_mode_t mode,
                   bool blocking, mca_mtl_request_t *mtl_request);
int mtl_weft_irecv(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                   int tag, struct opal_convertor_t *convertor, mca_mtl_request_t *mtl_request);
int mtl_weft_iprobe(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                    int tag, int *flag, struct ompi_status_public_t *status);
int mtl_weft_improbe(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm, int src,
                     int tag, int *matched, struct ompi_message_t **message,
                     struct ompi_status_public_t *status);
int mtl_weft_imrecv(struct mca_mtl_base_module_t *mtl, struct opal_convertor_t *convertor,
                    struct ompi_message_t **message, mca_mtl_request_t *mtl_request);
int mtl_weft_cancel(struct mca_mtl_base_module_t *mtl, mca_mtl_request_t *mtl_request, int flag);
/** Drain the deferred queue as far as weft accepts (called by progress and finalize). */
void mtl_weft_flush_deferred(void);

/** The weft address of rank @p rank of @p comm's remote group, adding the proc lazily. */
int mtl_weft_peer_addr(struct ompi_communicator_t *comm, int rank, weft_addr_t *addr);

END_C_DECLS

#endif /* MTL_WEFT_H */
