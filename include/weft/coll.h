/**
 * @file coll.h
 * weft collectives: the collective operations of MPI and OpenSHMEM over weft
 * (libweft-coll, docs/collectives.md).
 *
 * A **context** owns one weft endpoint and CQ of its own on the caller's
 * domain, so that its traffic never reaches the caller's CQ. A **group** is an
 * ordered set of processes (an MPI communicator, an OpenSHMEM team) made once,
 * collectively, with an out-of-band allgather the caller provides (as UCC's
 * teams are). A **request** is the schedule of one collective with fixed
 * arguments: start it, test or wait, start it again (persistent), free it.
 * weft_coll() is the blocking form; it keeps recent schedules of a group and
 * reuses them when the same arguments come again.
 *
 * Ordering rule (MPI's): every member of a group starts the group's collectives
 * in the same order. Threads: a context is used by one thread at a time.
 */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct weft_coll_context weft_coll_context_t; /**< endpoint + CQ of the library */
typedef struct weft_coll_group weft_coll_group_t;     /**< an ordered set of processes */
typedef struct weft_coll_request weft_coll_request_t; /**< a collective's schedule */

/** The collective operations. Counts are in elements of the datatype. */
enum weft_coll_type {
    WEFT_COLL_BARRIER = 0,
    WEFT_COLL_BCAST,                /**< count elements of root's recvbuf to every recvbuf;
                                         a root's non-NULL sendbuf is the data instead (its
                                         recvbuf gets it too) */
    WEFT_COLL_REDUCE,               /**< count elements combined into root's recvbuf */
    WEFT_COLL_ALLREDUCE,            /**< count elements combined into every recvbuf */
    WEFT_COLL_ALLGATHER,            /**< count per member; recvbuf holds size * count */
    WEFT_COLL_ALLGATHERV,           /**< count from me; recvcounts/rdispls per member */
    WEFT_COLL_GATHER,               /**< count per member into root's recvbuf */
    WEFT_COLL_GATHERV,              /**< count from me; root's recvcounts/rdispls */
    WEFT_COLL_SCATTER,              /**< count per member from root's sendbuf */
    WEFT_COLL_SCATTERV,             /**< root's sendcounts/sdispls; count to me */
    WEFT_COLL_ALLTOALL,             /**< count to and from every member */
    WEFT_COLL_ALLTOALLV,            /**< sendcounts/sdispls and recvcounts/rdispls */
    WEFT_COLL_REDUCE_SCATTER,       /**< recvcounts[i] elements of the sum to member i */
    WEFT_COLL_REDUCE_SCATTER_BLOCK, /**< count elements of the sum to every member */
    WEFT_COLL_SCAN,                 /**< inclusive prefix over members 0..me */
    WEFT_COLL_EXSCAN,               /**< exclusive prefix over members 0..me-1 */
    WEFT_COLL_TYPE_COUNT
};

/**
 * Element types: weft's atomic datatypes (same values, enum weft_datatype) and
 * the pair types of MPI_MINLOC / MPI_MAXLOC, laid out as the C structs MPI
 * describes ({value; int index}, e.g. MPI_DOUBLE_INT is struct {double; int}).
 * Operations that move data without combining it use WEFT_COLL_BYTE.
 */
enum weft_coll_datatype {
    WEFT_COLL_INT8 = WEFT_INT8,
    WEFT_COLL_UINT8 = WEFT_UINT8,
    WEFT_COLL_BYTE = WEFT_UINT8,
    WEFT_COLL_INT16 = WEFT_INT16,
    WEFT_COLL_UINT16 = WEFT_UINT16,
    WEFT_COLL_INT32 = WEFT_INT32,
    WEFT_COLL_UINT32 = WEFT_UINT32,
    WEFT_COLL_INT64 = WEFT_INT64,
    WEFT_COLL_UINT64 = WEFT_UINT64,
    WEFT_COLL_FLOAT = WEFT_FLOAT,
    WEFT_COLL_DOUBLE = WEFT_DOUBLE,
    WEFT_COLL_LONG_DOUBLE = WEFT_LONG_DOUBLE,
    WEFT_COLL_FLOAT_COMPLEX = WEFT_FLOAT_COMPLEX,
    WEFT_COLL_DOUBLE_COMPLEX = WEFT_DOUBLE_COMPLEX,
    WEFT_COLL_FLOAT_INT = 32,  /**< MPI_FLOAT_INT: struct {float; int} */
    WEFT_COLL_DOUBLE_INT,      /**< MPI_DOUBLE_INT: struct {double; int} */
    WEFT_COLL_LONG_INT,        /**< MPI_LONG_INT: struct {long; int} */
    WEFT_COLL_2INT,            /**< MPI_2INT: struct {int; int} */
    WEFT_COLL_SHORT_INT,       /**< MPI_SHORT_INT: struct {short; int} */
    WEFT_COLL_LONG_DOUBLE_INT, /**< MPI_LONG_DOUBLE_INT: struct {long double; int} */
    WEFT_COLL_2FLOAT,          /**< MPI_2REAL: struct {float; float} */
    WEFT_COLL_2DOUBLE,         /**< MPI_2DOUBLE_PRECISION: struct {double; double} */
    WEFT_COLL_DATATYPE_END
};

/** Reduction operations: weft's (same values, enum weft_atomic_op) and MINLOC/MAXLOC. */
enum weft_coll_op {
    WEFT_COLL_SUM = WEFT_SUM,
    WEFT_COLL_PROD = WEFT_PROD,
    WEFT_COLL_MIN = WEFT_MIN,   /**< not on complex types */
    WEFT_COLL_MAX = WEFT_MAX,   /**< not on complex types */
    WEFT_COLL_BAND = WEFT_BAND, /**< integer types */
    WEFT_COLL_BOR = WEFT_BOR,   /**< integer types */
    WEFT_COLL_BXOR = WEFT_BXOR, /**< integer types */
    WEFT_COLL_LAND = WEFT_LAND, /**< integer types (C bool as UINT8) */
    WEFT_COLL_LOR = WEFT_LOR,   /**< integer types */
    WEFT_COLL_LXOR = WEFT_LXOR, /**< integer types */
    WEFT_COLL_MINLOC = 32,      /**< pair types only: smallest value, then smallest index */
    WEFT_COLL_MAXLOC,           /**< pair types only: largest value, then smallest index */
    WEFT_COLL_OP_END
};

/** Algorithms (weft_coll_args::algorithm). 0 chooses by size and group. */
enum weft_coll_algorithm {
    WEFT_COLL_ALG_AUTO = 0,
    WEFT_COLL_ALG_DISSEMINATION,      /**< barrier */
    WEFT_COLL_ALG_BINOMIAL,           /**< bcast, reduce, gather, scatter */
    WEFT_COLL_ALG_SCATTER_ALLGATHER,  /**< bcast: scatter, then ring allgather */
    WEFT_COLL_ALG_LINEAR,             /**< gather(v), scatter(v), alltoall(v): all posted at once */
    WEFT_COLL_ALG_RECURSIVE_DOUBLING, /**< allreduce, allgather (powers of two), scan, exscan */
    WEFT_COLL_ALG_RABENSEIFNER,       /**< allreduce, reduce: reduce-scatter by halving + gather */
    WEFT_COLL_ALG_RING,               /**< allreduce, allgather(v), reduce-scatter(-block) */
    WEFT_COLL_ALG_BRUCK,              /**< allgather, alltoall */
    WEFT_COLL_ALG_PAIRWISE,           /**< alltoall(v) */
    WEFT_COLL_ALG_REDUCE_SCATTERV,    /**< reduce-scatter(-block): reduce, then scatterv */
    WEFT_COLL_ALG_COUNT
};

/** sendbuf (or, for scatter at the root, recvbuf) value meaning "in place", as MPI_IN_PLACE. */
#define WEFT_COLL_IN_PLACE ((void *)1)

/** weft_coll_args::flags: keep the request after completion for weft_coll_start() again. */
#define WEFT_COLL_PERSISTENT (1ULL << 0)
/** weft_coll_args::flags: the buffers other members read or write are symmetric
 *  (OpenSHMEM's symmetric objects): each lies in a segment given to
 *  weft_coll_group_add_segment(), at the same offset on every member, and is
 *  ready for the collective on every member when any member starts it. On a
 *  node whose members map each other's segments, blocking collectives then
 *  read and write the other members' buffers directly (docs/collectives.md,
 *  "Symmetric buffers"); elsewhere the flag changes nothing. */
#define WEFT_COLL_SYMMETRIC (1ULL << 1)

/** The arguments of one collective, as MPI names them. */
struct weft_coll_args {
    enum weft_coll_type type;
    const void *sendbuf;      /**< or WEFT_COLL_IN_PLACE where MPI allows it */
    void *recvbuf;            /**< bcast: the buffer on every member */
    size_t count;             /**< elements (see enum weft_coll_type) */
    const size_t *sendcounts; /**< v forms: elements per member */
    const size_t *sdispls;    /**< v forms: element offsets per member */
    const size_t *recvcounts; /**< v forms and reduce-scatter: elements per member */
    const size_t *rdispls;    /**< v forms: element offsets per member */
    enum weft_coll_datatype datatype;
    enum weft_coll_op op; /**< reductions */
    uint32_t root;        /**< rooted operations: the root's rank in the group */
    uint32_t algorithm;   /**< enum weft_coll_algorithm; 0 = automatic */
    uint64_t flags;       /**< WEFT_COLL_PERSISTENT */
};

/** Out-of-band allgather used by weft_coll_group_create() (blocking; @p len the same
 *  on every member): @p recvbuf gets every member's @p len bytes in rank order.
 *  Returns 0, or a negative weft error code (-WEFT_EHOSTUNREACH for a member
 *  that cannot be reached; any other negative value is passed on as is). */
struct weft_coll_oob {
    int (*allgather)(const void *sendbuf, void *recvbuf, size_t len, void *arg);
    void *arg;
};

/**
 * Open a context: an endpoint (tagged, directed receives) and a CQ of its own
 * on @p domain. @p info is the entry the caller opened its own endpoint with
 * (NULL: weft_getinfo() for the domain's fabric with the capabilities needed).
 */
int weft_coll_context_open(weft_domain_t *domain, const struct weft_info *info,
                           weft_coll_context_t **ctx);
/** Close a context; -WEFT_EBUSY while it has groups. */
int weft_coll_context_close(weft_coll_context_t *ctx);
/** A function weft_coll_wait() (and so weft_coll()) calls while it waits with
 *  nothing to do, e.g. the MPI library's progress (opal_progress), so that its
 *  other traffic moves meanwhile. NULL: none. */
void weft_coll_context_set_wait_hook(weft_coll_context_t *ctx, void (*hook)(void *arg), void *arg);
/** Drive the context's collectives once. @return completions seen (>= 0) or a negative code. */
int weft_coll_progress(weft_coll_context_t *ctx);

/**
 * Make a group of @p size members in which this process is @p rank, exchanging
 * endpoint addresses with @p oob. Collective over the members.
 */
int weft_coll_group_create(weft_coll_context_t *ctx, uint32_t size, uint32_t rank,
                           const struct weft_coll_oob *oob, weft_coll_group_t **group);
/**
 * Declare [@p base, @p base + @p len) a symmetric segment of @p group: every
 * member passes its own segment (registered as @p mr, made by weft_mr_alloc()
 * so that node peers can map it) in the same call order; the group uses the
 * smallest length. Collective over the members (one or two out-of-band
 * exchanges). Where not every member maps every other's segment the call
 * still succeeds and WEFT_COLL_SYMMETRIC buffers in it take the general path.
 */
int weft_coll_group_add_segment(weft_coll_group_t *group, void *base, size_t len, weft_mr_t *mr,
                                const struct weft_coll_oob *oob);
/** Free a group (local). -WEFT_EBUSY while one of its requests is active. */
int weft_coll_group_destroy(weft_coll_group_t *group);
/** This process's rank and the size of @p group. */
uint32_t weft_coll_group_rank(const weft_coll_group_t *group);
uint32_t weft_coll_group_size(const weft_coll_group_t *group);
/** Nodes the members of @p group are on (by the node names exchanged at creation:
 *  the host name, or WEFT_COLL_NODE). */
uint32_t weft_coll_group_nodes(const weft_coll_group_t *group);
/** Whether small blocking collectives of @p group run in the node / leaders / node
 *  form (members on several nodes, several on some; docs/collectives.md). */
int weft_coll_group_hierarchical(const weft_coll_group_t *group);

/** The paths a blocking weft_coll() call can take (docs/collectives.md). */
enum weft_coll_path {
    WEFT_COLL_PATH_MESSAGES = 0, /**< the library's message schedules */
    WEFT_COLL_PATH_STAGE,        /**< the node's shared-memory stage, in one slot */
    WEFT_COLL_PATH_STAGE_PIECES, /**< the stage, a slot's worth at a time */
    WEFT_COLL_PATH_SINGLE_COPY,  /**< the stage, blocks read from their owners' buffers */
    WEFT_COLL_PATH_SYMMETRIC,    /**< the stage, on symmetric buffers */
    WEFT_COLL_PATH_NODE_LEADERS, /**< node stage, leaders' messages, node stage */
    WEFT_COLL_PATH_COUNT
};
/** weft_coll() calls on @p group that took @p path (0 for a path out of range):
 *  what a caller or test sees of the library's choices. */
uint64_t weft_coll_group_calls(const weft_coll_group_t *group, enum weft_coll_path path);

/**
 * Plan the collective @p args on @p group (validated here: a bad type, op, root
 * or count is -WEFT_EINVAL with a logged reason). Buffers are used when started.
 */
int weft_coll_init(weft_coll_group_t *group, const struct weft_coll_args *args,
                   weft_coll_request_t **req);
/** Start a planned (or completed persistent) request. */
int weft_coll_start(weft_coll_request_t *req);
/** Drive progress once. @return 1 done, 0 in progress, or the negative code it failed with. */
int weft_coll_test(weft_coll_request_t *req);
/** Wait for completion. @return 0, a negative code, or -WEFT_ETIMEDOUT (-1: no limit). */
int weft_coll_wait(weft_coll_request_t *req, int timeout_ms);
/** Free a request that is not active. */
int weft_coll_request_free(weft_coll_request_t *req);
/** Run @p args to completion (init, start, wait), reusing a kept schedule when
 *  the same arguments came before on @p group. */
int weft_coll(weft_coll_group_t *group, const struct weft_coll_args *args);

/** Bytes of one element of @p datatype (0 for an invalid type). */
size_t weft_coll_datatype_size(enum weft_coll_datatype datatype);
/** Whether @p op is defined on @p datatype. */
int weft_coll_op_valid(enum weft_coll_datatype datatype, enum weft_coll_op op);
/** Name of an algorithm ("ring", ...) or of a type ("allreduce", ...). */
const char *weft_coll_algorithm_name(enum weft_coll_algorithm algorithm);
const char *weft_coll_type_name(enum weft_coll_type type);
/** Whether @p req's last run was in the triggered form (every operation posted
 *  at start, chained on counters: docs/collectives.md, "Triggered schedules"). */
int weft_coll_request_triggered(const weft_coll_request_t *req);
/** The algorithm weft_coll_init() chose for @p req. */
enum weft_coll_algorithm weft_coll_request_algorithm(const weft_coll_request_t *req);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COLL_H */
