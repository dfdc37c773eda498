/*
 * pml_weft.h: pml weft, an Open MPI 4.1 PML component over weft (docs/mpi.md,
 * "pml weft").
 *
 * Where pml cm hands each point-to-point operation to an MTL (mtl weft), this
 * PML maps MPI's calls onto weft's tagged operations itself: no cm request
 * layer in between. Tag matching, rendezvous and probes stay in weft; the tag
 * layout is mtl weft's (ompi_weft_p2p.h). Requests are ompi_request_t
 * subclasses from a free list, completed from the CQ by the progress function
 * Open MPI registers for the selected PML. C only: Open MPI's internal headers
 * do not compile as C++.
 */
#ifndef PML_WEFT_H
#define PML_WEFT_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/threads/mutex.h"

#include <weft/weft.h>

#include "ompi_weft_p2p.h"

BEGIN_C_DECLS

/* ------------------------------------------------------------------ transfers */

struct pml_weft_op;
/** A weft operation completed: @p e is its CQ entry. */
typedef void (*pml_weft_done_fn)(struct pml_weft_op *op, const struct weft_cq_tagged_entry *e);
/** A weft operation failed (or was canceled): @p e is its error entry. */
typedef void (*pml_weft_fail_fn)(struct pml_weft_op *op, const struct weft_cq_err_entry *e);

/**
 * One outstanding weft operation. The op_context of every weft call is &op->ctx
 * (the first member), so a CQ entry leads back to its op and its callbacks.
 */
struct pml_weft_op {
    struct weft_context ctx; /**< first: owned by weft while the operation is outstanding */
    pml_weft_done_fn done;   /**< success callback */
    pml_weft_fail_fn fail;   /**< error callback */
};

struct pml_weft_xfer;
/** Post what is left of a transfer to weft; -WEFT_EAGAIN keeps it deferred. */
typedef int (*pml_weft_post_fn)(struct pml_weft_xfer *x);

/** What a transfer is (cancel and the deferred queue need to know). */
enum pml_weft_kind {
    PML_WEFT_SEND = 1,
    PML_WEFT_RECV, /**< a posted receive (cancelable until matched) */
    PML_WEFT_MRECV /**< the receive of a matched-probed message (not cancelable) */
};

/** pml_weft_xfer::flags */
enum {
    /** On the stack of a blocking call: completion sets done and touches nothing after. */
    PML_WEFT_X_BLOCKING = 1 << 0,
    /** bounce is space in the MPI_Buffer_attach buffer (MPI_Bsend), not malloc'd. */
    PML_WEFT_X_BSEND = 1 << 1,
};

/**
 * The weft side of one send or receive: what the deferred queue holds and the
 * CQ callbacks act on. Inside a pml_weft_request_t, or on the stack of a
 * blocking MPI_Send / MPI_Recv / MPI_Mrecv (no request object at all).
 */
struct pml_weft_xfer {
    struct pml_weft_op op;    /**< the send or the receive */
    struct pml_weft_op ack;   /**< MPI_Ssend: the receive of the acknowledgement */
    uint8_t kind;             /**< enum pml_weft_kind */
    uint8_t flags;            /**< PML_WEFT_X_* */
    bool posted;              /**< receive: handed to weft; Ssend: acknowledgement receive posted */
    volatile bool done;       /**< blocking: finished, the caller may return */
    volatile int32_t pending; /**< send: events still to come (posting, send done, ack) */
    void *bounce;             /**< packed copy of a non-contiguous buffer (or the Bsend copy) */
    void *buf;                /**< what is handed to weft */
    size_t length;            /**< send: bytes; receive: capacity */
    uint64_t wtag;            /**< send: the message tag; receive: tag to match */
    uint64_t ignore;          /**< receive: ignore mask */
    uint64_t ack_tag;         /**< Ssend: tag of the expected acknowledgement; receive: of ours */
    weft_addr_t peer;         /**< send: destination; receive: where an acknowledgement goes */
    struct ompi_communicator_t *comm; /**< receive: for the peer of an acknowledgement */
    ompi_status_public_t *status;     /**< where the outcome goes (MPI_ERROR; receive: all) */
    opal_convertor_t *convertor;      /**< receive: unpacks bounce (non-contiguous), or NULL */
    struct pml_weft_probe *claimed;   /**< mrecv: the matched-probe record being received */
    pml_weft_post_fn post;            /**< deferred: what to post next */
    struct pml_weft_xfer *next;       /**< deferred queue link */
};

/* ------------------------------------------------------------------ requests */

/**
 * An MPI request of pml weft (MPI_Isend, MPI_Irecv, MPI_Imrecv, persistent
 * requests, and the internal request of a buffered send). From the module's
 * free list; each item is constructed once.
 *
 * Lifetime: refs counts the user's handle and the operation in flight. A
 * nonblocking request starts with 2; MPI_Wait/MPI_Test/MPI_Request_free drop
 * the handle's, completion the operation's, and whichever is last returns the
 * request to the free list, so MPI_Request_free of an active request and a
 * completion on another thread need no lock. A persistent request holds 1 for
 * its handle; each MPI_Start adds the operation's.
 */
typedef struct pml_weft_request {
    ompi_request_t ompi;    /**< first: what Open MPI sees */
    struct pml_weft_xfer x; /**< the transfer */
    volatile int32_t refs;  /**< the handle and the operation in flight (above) */
    bool persistent_send;   /**< persistent: a send (else a receive) */
    bool detached;          /**< buffered send: nobody waits; released at completion */
    struct ompi_communicator_t *comm_ref; /**< retained communicator, released with the request */
    ompi_datatype_t *dt_ref;              /**< retained datatype, released with the request */
    /** Persistent requests: the arguments of MPI_Send_init / MPI_Recv_init. */
    const void *p_buf;
    size_t p_count;
    int p_peer; /**< destination or source rank */
    int p_tag;
    mca_pml_base_send_mode_t p_mode;
    opal_convertor_t convertor; /**< receives of non-contiguous datatypes */
} pml_weft_request_t;

OBJ_CLASS_DECLARATION(pml_weft_request_t);

/** A probe (on the stack) or a matched probe (allocated; lives until its mrecv completes). */
struct pml_weft_probe {
    struct pml_weft_op op; /**< first; for a matched probe its ctx names the claimed message */
    volatile int state;    /**< 0 in flight, 1 found, 2 nothing */
    int error;             /**< MPI error */
    uint64_t tag;          /**< tag of the message found */
    size_t len;            /**< its length */
    struct pml_weft_xfer *mrecv; /**< the transfer receiving the message */
};

/* ------------------------------------------------------------------ the module */

/** The module: Open MPI's function table plus the weft objects, one per process. */
typedef struct pml_weft_module {
    mca_pml_base_module_t super;
    struct ompi_weft_objs w; /**< endpoint, CQ, AV and their sizes */
    char transport[16];      /**< what weft_getinfo chose ("auto") */
    bool thread_multiple;    /**< MPI_THREAD_MULTIPLE: weft is WEFT_THREAD_SAFE, counts atomic */
    bool enabled;            /**< pml_enable(true) ran: the free list exists */
    /** Deferred queue and lazy address insertion. Recursive: a completion callback
     * run while the queue is being drained may start a new operation. */
    opal_recursive_mutex_t lock;
    struct pml_weft_xfer *deferred_head; /**< transfers weft refused with -WEFT_EAGAIN, in order */
    struct pml_weft_xfer *deferred_tail;
    unsigned long deferred_count; /**< transfers that went through the deferred queue */
    opal_free_list_t requests;    /**< pml_weft_request_t */
    /** What MPI_Isend returns for a send that finished at once (weft_tinject): one
     * shared request, always complete, whose free only clears the handle. */
    ompi_request_t completed_send;
} pml_weft_module_t;

/** The component: Open MPI's component struct and the MCA parameters. */
typedef struct pml_weft_component {
    mca_pml_base_component_2_0_0_t super;
    int priority; /**< MCA pml_weft_priority */
    int verbose;  /**< MCA pml_weft_verbose: >= 1 prints the selection of every rank */
    char *config; /**< MCA pml_weft_config: NAME=value pairs on top of the environment */
    /** MCA pml_weft_progress_iterations: blocking calls wait in weft's progress and
     * call opal_progress once in this many polls (1: every poll) */
    int progress_iterations;
} pml_weft_component_t;

OMPI_MODULE_DECLSPEC extern pml_weft_component_t mca_pml_weft_component;
extern pml_weft_module_t pml_weft;

/* component (pml_weft_component.c) */
int pml_weft_add_procs(struct ompi_proc_t **procs, size_t nprocs);
int pml_weft_del_procs(struct ompi_proc_t **procs, size_t nprocs);
int pml_weft_enable(bool enable);
int pml_weft_add_comm(struct ompi_communicator_t *comm);
int pml_weft_del_comm(struct ompi_communicator_t *comm);
int pml_weft_dump(struct ompi_communicator_t *comm, int verbose);
/** The weft address of rank @p rank of @p comm's remote group, adding the proc lazily. */
int pml_weft_peer_addr(struct ompi_communicator_t *comm, int rank, weft_addr_t *addr);

/**
 * Per communicator (comm->c_pml_comm, made by add_comm): the weft address of
 * each rank of the remote group (the group for an intracommunicator) + 1, 0 until
 * first used. Saves Open MPI's group lookup on every send and directed receive.
 */
struct mca_pml_comm_t {
    size_t size;
    uint64_t addr[]; /**< relaxed atomics: threads may fill a slot at once, same value */
};

/** pml_weft_peer_addr through the communicator's cache. */
static inline int pml_weft_comm_addr(struct ompi_communicator_t *comm, int rank, weft_addr_t *addr)
{
    struct mca_pml_comm_t *pc = comm->c_pml_comm;
    if (OPAL_LIKELY(NULL != pc && (size_t)rank < pc->size)) {
        const uint64_t v = __atomic_load_n(&pc->addr[rank], __ATOMIC_RELAXED);
        if (OPAL_LIKELY(0 != v)) {
            *addr = (weft_addr_t)(v - 1);
            return OMPI_SUCCESS;
        }
        const int rc = pml_weft_peer_addr(comm, rank, addr);
        if (OMPI_SUCCESS == rc) {
            __atomic_store_n(&pc->addr[rank], (uint64_t)*addr + 1, __ATOMIC_RELAXED);
        }
        return rc;
    }
    return pml_weft_peer_addr(comm, rank, addr);
}

/* data path (pml_weft.c) */
int pml_weft_progress(void);
/** Drain the deferred queue as far as weft accepts (progress, finalize). */
void pml_weft_flush_deferred(void);
void pml_weft_request_construct(pml_weft_request_t *req);
void pml_weft_request_destruct(pml_weft_request_t *req);
void pml_weft_completed_send_init(ompi_request_t *req);

int pml_weft_irecv_init(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                        struct ompi_communicator_t *comm, struct ompi_request_t **request);
int pml_weft_irecv(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                   struct ompi_communicator_t *comm, struct ompi_request_t **request);
int pml_weft_recv(void *buf, size_t count, struct ompi_datatype_t *datatype, int src, int tag,
                  struct ompi_communicator_t *comm, ompi_status_public_t *status);
int pml_weft_isend_init(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst,
                        int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                        struct ompi_request_t **request);
int pml_weft_isend(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst,
                   int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm,
                   struct ompi_request_t **request);
int pml_weft_send(const void *buf, size_t count, struct ompi_datatype_t *datatype, int dst, int tag,
                  mca_pml_base_send_mode_t mode, struct ompi_communicator_t *comm);
int pml_weft_iprobe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                    ompi_status_public_t *status);
int pml_weft_probe(int src, int tag, struct ompi_communicator_t *comm,
                   ompi_status_public_t *status);
int pml_weft_start(size_t count, struct ompi_request_t **requests);
int pml_weft_improbe(int src, int tag, struct ompi_communicator_t *comm, int *matched,
                     struct ompi_message_t **message, ompi_status_public_t *status);
int pml_weft_mprobe(int src, int tag, struct ompi_communicator_t *comm,
                    struct ompi_message_t **message, ompi_status_public_t *status);
int pml_weft_imrecv(void *buf, size_t count, struct ompi_datatype_t *datatype,
                    struct ompi_message_t **message, struct ompi_request_t **request);
int pml_weft_mrecv(void *buf, size_t count, struct ompi_datatype_t *datatype,
                   struct ompi_message_t **message, ompi_status_public_t *status);

END_C_DECLS

#endif /* PML_WEFT_H */
