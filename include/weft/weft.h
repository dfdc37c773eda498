/**
 * @file weft.h
 * @brief weft: an application-centric fabric interface for MPI and OpenSHMEM.
 *
 * The object model follows the OpenFabrics Interfaces design: discover what the
 * fabric offers with weft_getinfo(), open a fabric, a domain, completion queues,
 * counters, an address vector and endpoints, bind them, enable the endpoint, and
 * move data with tagged messages, one-sided RMA and atomics on registered memory,
 * and triggered operations (docs/rma.md).
 *
 * Conventions:
 * - Functions returning int or ssize_t return 0 (or a count) on success and a
 *   negative WEFT_E* code on failure; weft_strerror() gives the text.
 * - -WEFT_EAGAIN means "retry": the call that returned it has already driven
 *   progress, so retrying in a loop is correct.
 * - Handles are opaque struct pointers. Nothing here throws.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this API: major << 16 | minor. Pass it to weft_getinfo(). Usable
 *  in preprocessor conditions: #if WEFT_API_VERSION >= WEFT_VERSION(2, 0). */
#define WEFT_VERSION(major, minor) (((major) << 16) | (minor))
#define WEFT_MAJOR(version) ((version) >> 16)
#define WEFT_MINOR(version) ((version)&0xffff)
/**
 * The API version this header describes. weft_getinfo() accepts the same major
 * version with a minor version up to this one.
 * 2.0: configuration objects (weft_config_*, passed to weft_getinfo() and
 * weft_fabric_open()), variable-length endpoint addresses, packed remote keys.
 * 2.1: RMA (weft_put*, weft_get*), atomics (weft_atomic*), weft_ep_flush,
 * RMA counters and events, triggered operations (WEFT_TRIGGER).
 * 2.2: counted tagged operations (WEFT_COUNT, struct weft_count).
 */
#define WEFT_API_VERSION_MAJOR 2
#define WEFT_API_VERSION_MINOR 2
#define WEFT_API_VERSION WEFT_VERSION(WEFT_API_VERSION_MAJOR, WEFT_API_VERSION_MINOR)

/* ------------------------------------------------------------------ status codes */

/** Error codes. Functions return their negation (e.g. -WEFT_EAGAIN). */
enum weft_errno {
    WEFT_SUCCESS = 0,        /**< success */
    WEFT_ENOENT = 2,         /**< no such entry (address, key, option) */
    WEFT_EIO = 5,            /**< I/O error in a transport */
    WEFT_EAGAIN = 11,        /**< resources temporarily exhausted: retry */
    WEFT_ENOMEM = 12,        /**< out of memory */
    WEFT_EACCES = 13,        /**< protection error: bad key or access rights */
    WEFT_EBUSY = 16,         /**< object in use (e.g. closing a bound CQ) */
    WEFT_ENODEV = 19,        /**< no usable device or transport */
    WEFT_EINVAL = 22,        /**< invalid argument */
    WEFT_ENOSYS = 38,        /**< operation not supported by this object */
    WEFT_ENOMSG = 42,        /**< no matching message (WEFT_PEEK found nothing) */
    WEFT_EBADMSG = 74,       /**< malformed data received from a peer */
    WEFT_EOVERRUN = 75,      /**< a queue overflowed */
    WEFT_ETIMEDOUT = 110,    /**< timed out */
    WEFT_EHOSTUNREACH = 113, /**< peer unreachable or dead */
    WEFT_ECANCELED = 125,    /**< operation canceled */
    WEFT_EAVAIL = 259,       /**< an error completion is available: call weft_cq_readerr() */
    WEFT_ETRUNC = 265,       /**< message truncated: receive buffer too small */
    WEFT_EOTHER = 256,       /**< unspecified error */
};

/** Text for a WEFT_E* code, positive or negative. Never NULL. */
const char *weft_strerror(int errnum);

/* ------------------------------------------------------------------ handles */

typedef struct weft_fabric weft_fabric_t; /**< a fabric: the top-level object */
typedef struct weft_domain weft_domain_t; /**< a domain: resources of one transport instance */
typedef struct weft_ep weft_ep_t;         /**< an endpoint: sends and receives */
typedef struct weft_cq weft_cq_t;         /**< a completion queue */
typedef struct weft_cntr weft_cntr_t;     /**< a completion counter */
typedef struct weft_av weft_av_t;         /**< an address vector (table-indexed) */
typedef struct weft_mr weft_mr_t;         /**< a registered memory region */
typedef struct weft_rkey weft_rkey_t;     /**< a peer's memory region, unpacked for one endpoint */
typedef struct weft_config weft_config_t; /**< a set of configuration values (WEFT_* variables) */

/** An address vector index. The index of a peer is its insertion position. */
typedef uint64_t weft_addr_t;
/** "Any source" for receives; also the source reported when it is unknown. */
#define WEFT_ADDR_UNSPEC ((weft_addr_t)UINT64_MAX)
/** Source of a completion that came from a peer not in the address vector. */
#define WEFT_ADDR_NOTAVAIL ((weft_addr_t)UINT64_MAX - 1)

/* ------------------------------------------------------------------ capabilities and flags */

#define WEFT_TAGGED (1ULL << 0)         /**< cap: tagged messages */
#define WEFT_SOURCE (1ULL << 1)         /**< cap: report the source address of receives */
#define WEFT_DIRECTED_RECV (1ULL << 2)  /**< cap: receives may name a source */
#define WEFT_REMOTE_CQ_DATA (1ULL << 3) /**< cap and flag: 64-bit remote CQ data */
#define WEFT_RMA (1ULL << 4)            /**< cap and CQ flag: one-sided RMA (put, get) */
#define WEFT_ATOMIC (1ULL << 5)         /**< cap and CQ flag: atomics */
#define WEFT_TRIGGER (1ULL << 6)        /**< cap; op flag: the context is a struct weft_trigger */
#define WEFT_VARIABLE_MSG (1ULL << 7)   /**< cap and CQ flag: variable-length messages */

#define WEFT_SEND (1ULL << 16)       /**< CQ flag: a send completed; bind flag: transmit side */
#define WEFT_RECV (1ULL << 17)       /**< CQ flag: a receive completed; bind flag: receive side */
#define WEFT_TRANSMIT WEFT_SEND      /**< bind flag alias */
#define WEFT_MSG (1ULL << 18)        /**< CQ flag: a message operation */
#define WEFT_PEEK (1ULL << 19)       /**< recv flag: look for a matching unexpected message */
#define WEFT_CLAIM (1ULL << 20)      /**< recv flag: claim a peeked message */
#define WEFT_DISCARD (1ULL << 21)    /**< recv flag: discard a peeked message */
#define WEFT_INJECT (1ULL << 22)     /**< send flag: buffer reusable on return, no completion */
#define WEFT_COMPLETION (1ULL << 23) /**< send/recv flag: generate a completion (selective) */
#define WEFT_SELECTIVE_COMPLETION \
    (1ULL << 24)                /**< bind flag: completions only with WEFT_COMPLETION */
#define WEFT_READ (1ULL << 25)  /**< CQ flag: a get or fetching atomic; cntr bind: count them */
#define WEFT_WRITE (1ULL << 26) /**< CQ flag: a put or atomic; cntr bind: count them */
/** CQ flag: a peer's put (with CQ data) landed here; cntr bind: count peers' puts and
 *  atomics on regions registered with WEFT_MR_RMA_EVENT */
#define WEFT_REMOTE_WRITE (1ULL << 27)
/** cntr bind: count peers' gets on regions registered with WEFT_MR_RMA_EVENT */
#define WEFT_REMOTE_READ (1ULL << 28)
/** op flag: complete when the data is visible at the target (default for RMA: when the
 *  local buffer may be reused) */
#define WEFT_DELIVERY_COMPLETE (1ULL << 29)
/** op flag: start only after every earlier RMA and atomic of the endpoint is remotely
 *  complete; later ones wait behind it (SHMEM fence) */
#define WEFT_FENCE (1ULL << 30)
/** op flag (tagged sends and receives, also triggered): the context is a struct
 *  weft_count; the completion adds 1 to its counter instead of writing a CQ entry */
#define WEFT_COUNT (1ULL << 31)

/** Message ordering bits (weft_ep_attr::msg_order). WEFT_ORDER_SAS: send after
 *  send, messages from one source match in the order they were sent. */
#define WEFT_ORDER_SAS (1ULL << 0)

/* ------------------------------------------------------------------ attributes */

/** Who drives progress. */
enum weft_progress {
    WEFT_PROGRESS_UNSPEC = 0, /**< let weft choose (manual) */
    WEFT_PROGRESS_MANUAL,     /**< the application drives progress (CQ reads, weft_ep_progress) */
    WEFT_PROGRESS_AUTO,       /**< a weft thread drives progress in the background */
};

/** Threading level, chosen at open. */
enum weft_threading {
    WEFT_THREAD_UNSPEC = 0, /**< let weft choose (safe) */
    WEFT_THREAD_SAFE,       /**< any thread may call any function at any time */
    WEFT_THREAD_DOMAIN,     /**< the application serialises calls per domain: no locks */
};

/**
 * Credit mode of an endpoint (weft_ep_attr::credit_mode). Flow control is always
 * on: every message consumes a receive credit at its receiver, and credits come
 * back piggybacked on traffic (docs/credits.md). The mode says what a send does
 * when the peer has granted no credit.
 */
enum weft_credit_mode {
    WEFT_CREDITS_QUEUE = 0, /**< the send is queued inside weft and goes out when credits return */
    WEFT_CREDITS_EAGAIN,    /**< the send returns -WEFT_EAGAIN (after driving progress) */
};

/** Endpoint attributes. Limits are reported by weft_getinfo(). */
struct weft_ep_attr {
    size_t inject_size;  /**< largest weft_tinject() payload */
    size_t max_msg_size; /**< largest message */
    size_t tx_size;      /**< transmit queue depth (operations in flight per endpoint) */
    size_t rx_size;      /**< receive queue depth (posted receives) */
    size_t iov_limit;    /**< largest iovec count for sendv/recvv */
    uint64_t msg_order;  /**< WEFT_ORDER_* bits */
    enum weft_credit_mode credit_mode; /**< what a send without credits does */
};

/** Domain attributes. */
struct weft_domain_attr {
    enum weft_progress progress;   /**< data progress model */
    enum weft_threading threading; /**< threading level */
};

/** Discovery result (and hints). One entry per usable transport. */
struct weft_info {
    struct weft_info *next;      /**< next entry, or NULL */
    uint64_t caps;               /**< WEFT_TAGGED, WEFT_SOURCE, ... */
    char transport[16];          /**< "auto", or a transport name; "" in hints = any */
    char domain_name[64];        /**< device or node name */
    size_t addr_len;             /**< most bytes of a raw endpoint address (weft_ep_getname) */
    struct weft_ep_attr ep_attr; /**< endpoint attributes and limits */
    struct weft_domain_attr domain_attr; /**< domain attributes */
};

/** Allocate a zeroed weft_info to use as hints. Free with weft_info_free(). */
struct weft_info *weft_info_alloc(void);

/** Duplicate one weft_info entry (next is not followed; the copy's next is NULL). */
struct weft_info *weft_info_dup(const struct weft_info *info);

/**
 * Discover transports that satisfy @p hints (NULL: everything).
 * @param version WEFT_API_VERSION
 * @param hints   required caps, optional transport name, progress and threading
 * @param config  configuration values (NULL: read from the environment now)
 * @param info    out: linked list, best first; free with weft_info_free()
 * @return 0, -WEFT_ENODEV when nothing matches, -WEFT_EINVAL for an invalid
 *         configuration value (logged, naming the variable), or another negative code
 */
int weft_getinfo(uint32_t version, const struct weft_info *hints, const weft_config_t *config,
                 struct weft_info **info);

/** Free a list returned by weft_getinfo() or weft_info_alloc(). NULL is allowed. */
void weft_info_free(struct weft_info *info);

/* ------------------------------------------------------------------ configuration */

/**
 * Read the configuration: every variable's default, then the WEFT_* environment
 * variables. An invalid value (one that does not parse, or is out of its range)
 * is logged naming the variable and fails the call with -WEFT_EINVAL (*config is
 * NULL then); unknown WEFT_* variables are warned about with the nearest valid
 * name. Variables and ranges: docs/configuration.md, or weft_info -c.
 */
int weft_config_read(weft_config_t **config);

/**
 * Set variable @p name ("WEFT_SHM_FIFO_SIZE", or without the prefix,
 * "SHM_FIFO_SIZE"; any case) to @p value, after checking it.
 * @return 0, -WEFT_ENOENT for an unknown name (logged with the nearest one),
 *         -WEFT_EINVAL for an invalid value (logged with the reason)
 */
int weft_config_modify(weft_config_t *config, const char *name, const char *value);

/**
 * The value of @p name (set, or its default) as text into @p value (*len in:
 * capacity; out: bytes needed, with the terminating NUL).
 * @return 0, -WEFT_ENOENT, or -WEFT_ETRUNC (the value did not fit; *len is set)
 */
int weft_config_get(const weft_config_t *config, const char *name, char *value, size_t *len);

/** weft_config_print() flags. */
#define WEFT_CONFIG_PRINT_DOC (1ULL << 0) /**< each variable's description, type and default */
#define WEFT_CONFIG_PRINT_SET (1ULL << 1) /**< only the variables given a value */

/** Print every variable as NAME=value lines (with WEFT_CONFIG_PRINT_DOC: documented). */
int weft_config_print(const weft_config_t *config, FILE *stream, uint64_t flags);

/** Release a configuration. NULL is allowed. */
void weft_config_release(weft_config_t *config);

/* ------------------------------------------------------------------ fabric, domain */

/**
 * Open the fabric described by @p info, with the configuration @p config (NULL:
 * read from the environment now; pass the one given to weft_getinfo()). The
 * fabric keeps its own copy: later changes to @p config do not reach it. Its
 * domains and endpoints take their settings from it.
 */
int weft_fabric_open(const struct weft_info *info, const weft_config_t *config,
                     weft_fabric_t **fabric);
/** Close a fabric; -WEFT_EBUSY while domains are open. */
int weft_fabric_close(weft_fabric_t *fabric);

/** Open a domain of @p fabric for the transport in @p info. */
int weft_domain_open(weft_fabric_t *fabric, const struct weft_info *info, weft_domain_t **domain);
/** Close a domain; -WEFT_EBUSY while objects opened from it are open. */
int weft_domain_close(weft_domain_t *domain);

/* ------------------------------------------------------------------ completion queues */

/** Completion entry formats: the application picks the smallest it needs. */
enum weft_cq_format {
    WEFT_CQ_FORMAT_CONTEXT = 0, /**< struct weft_cq_entry */
    WEFT_CQ_FORMAT_MSG,         /**< struct weft_cq_msg_entry */
    WEFT_CQ_FORMAT_DATA,        /**< struct weft_cq_data_entry */
    WEFT_CQ_FORMAT_TAGGED,      /**< struct weft_cq_tagged_entry */
};

/** Completion queue attributes. */
struct weft_cq_attr {
    size_t size;                /**< entries; 0 = default (WEFT_CQ_SIZE) */
    enum weft_cq_format format; /**< entry format */
};

/** Context-only completion (8 bytes). */
struct weft_cq_entry {
    void *op_context; /**< the context given when the operation was posted */
};

/** Message completion. */
struct weft_cq_msg_entry {
    void *op_context; /**< operation context */
    uint64_t flags;   /**< WEFT_SEND/WEFT_RECV | WEFT_TAGGED | WEFT_REMOTE_CQ_DATA ... */
    size_t len;       /**< bytes received (receives) */
};

/** Message completion with buffer and remote CQ data. */
struct weft_cq_data_entry {
    void *op_context; /**< operation context */
    uint64_t flags;   /**< completion flags */
    size_t len;       /**< bytes received */
    void *buf;        /**< receive buffer (first iovec) */
    uint64_t data;    /**< remote CQ data when flags has WEFT_REMOTE_CQ_DATA */
};

/** Tagged completion. */
struct weft_cq_tagged_entry {
    void *op_context; /**< operation context */
    uint64_t flags;   /**< completion flags */
    size_t len;       /**< bytes received */
    void *buf;        /**< receive buffer (first iovec) */
    uint64_t data;    /**< remote CQ data when flags has WEFT_REMOTE_CQ_DATA */
    uint64_t tag;     /**< the message's tag */
};

/** An error completion, read with weft_cq_readerr(). */
struct weft_cq_err_entry {
    void *op_context;     /**< operation context */
    uint64_t flags;       /**< completion flags of the failed operation */
    size_t len;           /**< bytes delivered (truncation: the receive buffer length) */
    void *buf;            /**< receive buffer */
    uint64_t data;        /**< remote CQ data */
    uint64_t tag;         /**< tag of the message */
    size_t olen;          /**< truncation: bytes that did not fit (sent length - len) */
    int err;              /**< positive WEFT_E* code (WEFT_ETRUNC, WEFT_ECANCELED, ...) */
    int prov_errno;       /**< transport-specific code (errno, verbs status), or 0 */
    weft_addr_t src_addr; /**< peer involved, or WEFT_ADDR_NOTAVAIL */
    char err_str[96]; /**< readable description, e.g. "message truncated: sent 4096 bytes, buffer
                         1024" */
};

/** Open a completion queue. */
int weft_cq_open(weft_domain_t *domain, const struct weft_cq_attr *attr, weft_cq_t **cq);
/** Close a completion queue; -WEFT_EBUSY while bound to an open endpoint. */
int weft_cq_close(weft_cq_t *cq);

/**
 * Read up to @p count entries in the CQ's format into @p buf. Drives progress
 * of the endpoints bound to the CQ when progress is manual.
 * @return entries read (> 0), -WEFT_EAGAIN if none, -WEFT_EAVAIL if an error entry
 *         is at the head (read it with weft_cq_readerr()).
 */
ssize_t weft_cq_read(weft_cq_t *cq, void *buf, size_t count);

/** As weft_cq_read(), also returning each entry's source address (WEFT_SOURCE). */
ssize_t weft_cq_readfrom(weft_cq_t *cq, void *buf, size_t count, weft_addr_t *src_addr);

/**
 * Read one error entry.
 * @return 1 when an entry was read, -WEFT_EAGAIN when there is none.
 */
ssize_t weft_cq_readerr(weft_cq_t *cq, struct weft_cq_err_entry *entry, uint64_t flags);

/**
 * Wait until the CQ has an entry or @p timeout_ms elapses (-1: forever), driving
 * progress. @return 0 when an entry (or error entry) is available, -WEFT_ETIMEDOUT.
 */
int weft_cq_wait(weft_cq_t *cq, int timeout_ms);

/* ------------------------------------------------------------------ counters */

/** Counter attributes. */
struct weft_cntr_attr {
    uint64_t flags; /**< reserved, 0 */
};

/** Open a counter. */
int weft_cntr_open(weft_domain_t *domain, const struct weft_cntr_attr *attr, weft_cntr_t **cntr);
/** Close a counter. */
int weft_cntr_close(weft_cntr_t *cntr);
/** Successful completions counted (drives progress when manual). */
uint64_t weft_cntr_read(weft_cntr_t *cntr);
/** Failed completions counted. */
uint64_t weft_cntr_readerr(weft_cntr_t *cntr);
/** Add @p value to the success count. */
int weft_cntr_add(weft_cntr_t *cntr, uint64_t value);
/** Set the success count. */
int weft_cntr_set(weft_cntr_t *cntr, uint64_t value);
/**
 * Wait until the counter reaches @p threshold, driving progress.
 * @return 0, -WEFT_ETIMEDOUT, or -WEFT_EAVAIL if the error count changed.
 */
int weft_cntr_wait(weft_cntr_t *cntr, uint64_t threshold, int timeout_ms);

/* ------------------------------------------------------------------ address vectors */

/** Address vector attributes. */
struct weft_av_attr {
    size_t count; /**< expected number of addresses (a sizing hint); 0 = default */
};

/** Open an address vector. */
int weft_av_open(weft_domain_t *domain, const struct weft_av_attr *attr, weft_av_t **av);
/** Close an address vector; -WEFT_EBUSY while bound to an open endpoint. */
int weft_av_close(weft_av_t *av);

/**
 * Insert @p count raw addresses, each as returned by weft_ep_getname(), packed
 * back to back (an address carries its own length). Their indices are the next
 * @p count table positions; written to @p fi_addr when not NULL (entries that
 * are invalid get WEFT_ADDR_NOTAVAIL).
 * @return number of addresses inserted, or a negative code (-WEFT_EBADMSG when
 *         an address's length cannot be read: the rest are not looked at).
 */
int weft_av_insert(weft_av_t *av, const void *addr, size_t count, weft_addr_t *fi_addr,
                   uint64_t flags);

/**
 * Remove addresses; their indices are not reused. For every endpoint bound to
 * @p av, from the return on: sends and receives directed at a removed index
 * fail with -WEFT_ENOENT; its queued sends and the receives posted for it
 * complete with error entries (WEFT_ENOENT for receives); its unexpected
 * messages are dropped; messages it still sends are reported with source
 * WEFT_ADDR_NOTAVAIL, or with its new index if it is inserted again. Not to be
 * called while another thread closes one of those endpoints.
 * @return 0, or -WEFT_ENOENT if an index was not in the table (the others are
 *         removed).
 */
int weft_av_remove(weft_av_t *av, const weft_addr_t *fi_addr, size_t count, uint64_t flags);

/** Copy the raw address at @p fi_addr into @p addr (*addrlen in: capacity, out: size). */
int weft_av_lookup(weft_av_t *av, weft_addr_t fi_addr, void *addr, size_t *addrlen);

/** Number of entries in the table (including removed ones). */
size_t weft_av_count(weft_av_t *av);

/**
 * Exchange addresses through PMIx and fill the AV so that index == PMIx rank.
 * Does PMIx_Init (if needed), Put of @p ep's address, Commit, Fence with data
 * collection, and Get of every rank's address. The AV must be empty.
 * @param rank  out (may be NULL): this process's rank
 * @param size  out (may be NULL): number of ranks in the job
 * @return 0, -WEFT_EHOSTUNREACH when no PMIx server is reachable (not launched
 *         by a PMIx launcher such as mpirun), -WEFT_ENOSYS when built without PMIx.
 */
int weft_av_load_pmix(weft_av_t *av, weft_ep_t *ep, uint32_t *rank, uint32_t *size);

/* ------------------------------------------------------------------ memory regions */

#define WEFT_ACCESS_LOCAL (1ULL << 0)         /**< used as a local buffer */
#define WEFT_ACCESS_REMOTE_READ (1ULL << 1)   /**< target of remote reads */
#define WEFT_ACCESS_REMOTE_WRITE (1ULL << 2)  /**< target of remote writes */
#define WEFT_ACCESS_REMOTE_ATOMIC (1ULL << 3) /**< target of remote atomics */

/** weft_mr_reg() flag: peers' operations on the region are counted by the target
 *  endpoint's WEFT_REMOTE_WRITE / WEFT_REMOTE_READ counters (each costs the initiator
 *  one extra message when the transport does the operation itself). */
#define WEFT_MR_RMA_EVENT (1ULL << 0)
/**
 * weft_mr_reg() flag: the region's atomics run on the NIC (device mode) instead of
 * the target's CPU (CPU mode, the default). The two never mix on one region: in
 * device mode only atomics the NIC of the transport reaching the target offers
 * are allowed (verbs: 64-bit add, fetch-add and compare-and-swap); others fail
 * with -WEFT_ENOSYS. Pick it for regions updated only by remote peers with those
 * operations (docs/rma.md, "One atomicity domain").
 */
#define WEFT_MR_DEVICE_ATOMICS (1ULL << 1)

/**
 * Register memory with every transport of the domain. Registration is optional
 * for tagged messages and local buffers (desc may be NULL); remote access needs
 * it, and the region's packed key (weft_mr_pack_key()) given to the peers.
 * @param access WEFT_ACCESS_* bits
 * @param flags  0, WEFT_MR_RMA_EVENT, WEFT_MR_DEVICE_ATOMICS
 */
int weft_mr_reg(weft_domain_t *domain, const void *buf, size_t len, uint64_t access, uint64_t flags,
                weft_mr_t **mr);
/**
 * Allocate @p len bytes (page-aligned, zeroed) that peers on this node can map,
 * and register them as weft_mr_reg() would (same @p access and @p flags). Peers
 * on the node then reach the region with loads, stores and CPU atomics -- no
 * system call, no message, no progress needed at the owner -- and
 * weft_rkey_ptr() gives them a pointer into it (OpenSHMEM's symmetric heap and
 * shmem_ptr). Where no transport of the domain has mappable memory, ordinary
 * memory is allocated. weft_mr_close() frees it.
 * @param addr out: the memory
 */
int weft_mr_alloc(weft_domain_t *domain, size_t len, uint64_t access, uint64_t flags, void **addr,
                  weft_mr_t **mr);
/** Deregister: from now on a peer's operation with the region's key fails. A region
 *  from weft_mr_alloc() is also freed. */
int weft_mr_close(weft_mr_t *mr);
/** Local descriptor to pass as desc to data transfer calls. */
void *weft_mr_desc(weft_mr_t *mr);
/** The region's 64-bit key in its domain (part of the packed key). */
uint64_t weft_mr_key(weft_mr_t *mr);

/** Most bytes of a packed remote key. */
#define WEFT_MR_KEY_MAX 256

/**
 * Pack the region's remote key -- its range, access rights and every
 * transport's own key -- into @p buf, to give to peers (*len in: capacity;
 * out: bytes written, at most WEFT_MR_KEY_MAX). Format: docs/protocols.md.
 * @return 0, or -WEFT_ETRUNC (*len set to the size needed)
 */
int weft_mr_pack_key(weft_mr_t *mr, void *buf, size_t *len);

/**
 * Unpack a peer's packed key for use by @p ep towards the peer at @p peer:
 * the part of the transport that reaches it is used for native operations,
 * and the rest through active messages. The bytes are checked.
 * @return 0, -WEFT_EBADMSG for a malformed key, or the error reaching the peer
 */
int weft_rkey_unpack(weft_ep_t *ep, weft_addr_t peer, const void *buf, size_t len,
                     weft_rkey_t **rkey);

/** Release an unpacked key. NULL is allowed. */
int weft_rkey_release(weft_rkey_t *rkey);

/**
 * A local pointer to [@p addr, @p addr + @p len) of the peer's region, when this
 * process can reach it with loads and stores: memory a peer on this node
 * allocated with weft_mr_alloc(), or this process's own memory. NULL otherwise
 * (use RMA). Valid until the owner closes the region.
 */
void *weft_rkey_ptr(weft_rkey_t *rkey, uint64_t addr, size_t len);

/* ------------------------------------------------------------------ endpoints */

/** Open an endpoint. @p context is reported nowhere; kept for the application. */
int weft_ep_open(weft_domain_t *domain, const struct weft_info *info, weft_ep_t **ep,
                 void *context);
/** Close an endpoint. Outstanding operations are discarded. */
int weft_ep_close(weft_ep_t *ep);

/** Bind a CQ for WEFT_TRANSMIT and/or WEFT_RECV completions (| WEFT_SELECTIVE_COMPLETION). */
int weft_ep_bind_cq(weft_ep_t *ep, weft_cq_t *cq, uint64_t flags);
/**
 * Bind a counter. @p flags: what it counts, any of WEFT_SEND and WEFT_RECV (tagged
 * messages), WEFT_WRITE (this endpoint's puts and non-fetching atomics), WEFT_READ
 * (its gets and fetching atomics), WEFT_REMOTE_WRITE and WEFT_REMOTE_READ (peers'
 * operations on this endpoint's WEFT_MR_RMA_EVENT regions). One counter per kind.
 */
int weft_ep_bind_cntr(weft_ep_t *ep, weft_cntr_t *cntr, uint64_t flags);
/** Bind the address vector (required before enable). */
int weft_ep_bind_av(weft_ep_t *ep, weft_av_t *av);
/** Enable: after this the endpoint sends and receives; options are fixed. */
int weft_ep_enable(weft_ep_t *ep);

/**
 * Copy the endpoint's raw address (at most weft_info::addr_len bytes; the
 * format is docs/protocols.md's) to @p addr.
 * *addrlen in: capacity; out: size. -WEFT_ETRUNC if too small (size still set).
 */
int weft_ep_getname(weft_ep_t *ep, void *addr, size_t *addrlen);

/** Endpoint options for weft_ep_setopt() / weft_ep_getopt(). */
enum weft_ep_opt {
    WEFT_OPT_INJECT_SIZE = 1, /**< size_t, read-only: largest inject */
    WEFT_OPT_MAX_MSG_SIZE,    /**< size_t, read-only: largest message */
    /**
     * size_t: with the WEFT_VARIABLE_MSG capability, messages longer than this are
     * variable messages (notified, then claimed or discarded); set before
     * weft_ep_enable(), the same on both sides. Default: the WEFT_RNDV_THRESH
     * configuration variable (messages above it also use rendezvous).
     */
    WEFT_OPT_VAR_MSG_THRESHOLD,
    /**
     * int, 0 or 1 (default 0): 1 makes weft_tinject() and weft_tinjectdata() hand
     * their message to a transport whole or return -WEFT_EAGAIN (after driving
     * progress once); they never leave it queued for this process's later
     * progress. For a layer whose send is complete at return and whose peer may
     * wait on it while this process blocks outside weft (MPI). Set before
     * weft_ep_enable(); WEFT_OPT_INJECT_SIZE is then at most one transport message.
     * A refused inject is best sent with a completion (weft_tsend), which is never
     * refused for credits. tcp: a frame the socket takes only in part still needs
     * progress for the rest.
     */
    WEFT_OPT_INJECT_DIRECT,
    /**
     * size_t: this endpoint's tagged sends longer than this go as a rendezvous
     * (the receiver takes the data once it has matched the message); up to it,
     * eagerly (the data travels with the message, a send completes without the
     * receiver). Set before weft_ep_enable(); each side decides its own sends.
     * Default: the WEFT_RNDV_THRESH configuration variable. With
     * WEFT_VARIABLE_MSG, a WEFT_OPT_VAR_MSG_THRESHOLD that was set decides
     * instead (one threshold for both there). For a layer whose peers often run
     * later than the sender (more processes than cores, collectives).
     */
    WEFT_OPT_RNDV_THRESHOLD,
};

/** Set an option (before weft_ep_enable()). */
int weft_ep_setopt(weft_ep_t *ep, int opt, const void *val, size_t len);
/** Get an option. *len in: capacity; out: size. */
int weft_ep_getopt(weft_ep_t *ep, int opt, void *val, size_t *len);

/**
 * Drive progress of the endpoint once (manual progress).
 * @return number of events processed (>= 0), or a negative code.
 */
int weft_ep_progress(weft_ep_t *ep);

/* ------------------------------------------------------------------ credits */

/** Credit counts of an endpoint, for one peer or summed over all peers. */
struct weft_credits {
    uint64_t send;        /**< messages (credits) that may still be sent now */
    uint64_t recv;        /**< messages (credits) still granted to be received */
    uint64_t send_window; /**< credits a peer grants at connection set-up */
    uint64_t recv_window; /**< credits this endpoint grants each peer */
};

/**
 * Current credits of @p ep towards @p peer, or summed over the peers it has
 * talked to when @p peer is WEFT_ADDR_UNSPEC. An application may use them to
 * send only what will not be refused, or ignore them and rely on -WEFT_EAGAIN.
 */
int weft_ep_credits(weft_ep_t *ep, weft_addr_t peer, struct weft_credits *credits);

/** Cost in credits of sending the gather list: what weft_ep_credits() send drops by (an
 *  upper bound when the endpoint has several transports: the most any of them charges). */
ssize_t weft_ep_sendv_cost(weft_ep_t *ep, const struct iovec *iov, size_t count);

/** Cost in credits of a receive of the scatter list (what the sender's grant drops by). */
ssize_t weft_ep_recvv_cost(weft_ep_t *ep, const struct iovec *iov, size_t count);

/* ------------------------------------------------------------------ variable-length messages */

/**
 * The op_context of a WEFT_VARIABLE_MSG notification points to one of these,
 * owned by weft until the message is claimed or discarded. The application may
 * set op_context before claiming: the claim's completion reports it.
 */
struct weft_var_context {
    void *op_context;  /**< reported by the claim's (or discard's) completion */
    void *internal[3]; /**< owned by weft */
};

/* ------------------------------------------------------------------ tagged messages */

/** Opaque per-operation context storage, needed by WEFT_PEEK | WEFT_CLAIM. */
struct weft_context {
    void *internal[4]; /**< owned by weft while the operation is outstanding */
};

/** A tagged message description for weft_tsendmsg() / weft_trecvmsg(). */
struct weft_msg_tagged {
    const struct iovec *msg_iov; /**< buffers */
    void **desc;                 /**< memory descriptors per iovec, or NULL */
    size_t iov_count;            /**< entries in msg_iov */
    weft_addr_t addr;            /**< destination; source for receives (WEFT_ADDR_UNSPEC = any) */
    uint64_t tag;                /**< tag */
    uint64_t ignore;             /**< receive: tag bits that need not match */
    void *context;               /**< operation context (struct weft_context * for PEEK/CLAIM) */
    uint64_t data;               /**< remote CQ data (send with WEFT_REMOTE_CQ_DATA) */
};

/**
 * Context of an operation posted with WEFT_COUNT (weft_tsendmsg, weft_trecvmsg,
 * or as the weft_trigger::context of a triggered send): its completion adds 1
 * to @p cntr and writes no CQ entry, so a schedule can count its own operations
 * and trigger the next ones on them (docs/rma.md, "Counting completions"). A
 * failure adds 1 to the counter's error count and writes an error entry whose
 * op_context is this struct. It must stay valid, and the counter open, until
 * the operation completes. The endpoint's bound counters count it as usual.
 */
struct weft_count {
    weft_cntr_t *cntr; /**< counter of the operation's domain */
    void *context;     /**< the application's, not read by weft */
};

/** Send @p len bytes with @p tag to @p dest. Completion: WEFT_SEND | WEFT_TAGGED. */
ssize_t weft_tsend(weft_ep_t *ep, const void *buf, size_t len, void *desc, weft_addr_t dest,
                   uint64_t tag, void *context);
/** As weft_tsend() with 64-bit remote CQ data. */
ssize_t weft_tsenddata(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t data,
                       weft_addr_t dest, uint64_t tag, void *context);
/** Send a gather list. */
ssize_t weft_tsendv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count,
                    weft_addr_t dest, uint64_t tag, void *context);
/** Send with flags (WEFT_INJECT, WEFT_REMOTE_CQ_DATA, WEFT_COMPLETION, WEFT_TRIGGER, WEFT_COUNT).
 */
ssize_t weft_tsendmsg(weft_ep_t *ep, const struct weft_msg_tagged *msg, uint64_t flags);
/** Send up to WEFT_OPT_INJECT_SIZE bytes; the buffer is reusable on return; no completion. */
ssize_t weft_tinject(weft_ep_t *ep, const void *buf, size_t len, weft_addr_t dest, uint64_t tag);
/** As weft_tinject() with remote CQ data. */
ssize_t weft_tinjectdata(weft_ep_t *ep, const void *buf, size_t len, uint64_t data,
                         weft_addr_t dest, uint64_t tag);

/**
 * Post a receive for a message whose tag matches @p tag in the bits not set in
 * @p ignore, from @p src (WEFT_ADDR_UNSPEC: any source). Receives match in
 * posting order; messages from one source match in send order.
 */
ssize_t weft_trecv(weft_ep_t *ep, void *buf, size_t len, void *desc, weft_addr_t src, uint64_t tag,
                   uint64_t ignore, void *context);
/** Post a scatter receive. */
ssize_t weft_trecvv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count,
                    weft_addr_t src, uint64_t tag, uint64_t ignore, void *context);

/**
 * Receive with flags.
 * - WEFT_COUNT: msg->context is a struct weft_count (completion counted, no CQ
 *   entry); not with PEEK, CLAIM or DISCARD.
 * - WEFT_PEEK: look for a matching unexpected message. Found: a completion with
 *   its length, tag and data (no data copied). Not found: an error completion
 *   with err = WEFT_ENOMSG.
 * - WEFT_PEEK | WEFT_CLAIM: as PEEK, and the message is reserved for a later
 *   WEFT_CLAIM receive with the same struct weft_context as context.
 * - WEFT_CLAIM: receive the message reserved in msg->context.
 * - WEFT_PEEK | WEFT_DISCARD: remove a matching message without copying it; a
 *   completion reports its length.
 * - WEFT_CLAIM | WEFT_DISCARD: discard the message reserved in msg->context.
 *
 * Variable messages: after a notification (CQ flag WEFT_VARIABLE_MSG, op_context
 * a struct weft_var_context *, len and tag of the message), post WEFT_CLAIM with
 * msg->context = that weft_var_context and the buffers: the data is transferred
 * straight into them and a normal completion follows, with op_context set from the
 * var context. Or post WEFT_DISCARD with the var context: buffers are ignored, no
 * data moves, and a completion reports the message length with buf NULL. Either
 * way the sender's operation completes normally.
 */
ssize_t weft_trecvmsg(weft_ep_t *ep, const struct weft_msg_tagged *msg, uint64_t flags);

/**
 * Cancel a posted receive identified by its context. A canceled receive produces
 * an error completion with err = WEFT_ECANCELED. @return 0 if canceled,
 * -WEFT_ENOENT if no such receive is outstanding (already matched).
 */
int weft_cancel(weft_ep_t *ep, void *context);

/* ------------------------------------------------------------------ RMA */

/**
 * One-sided operations (docs/rma.md). The target is named by an unpacked remote
 * key (weft_rkey_unpack(), which binds it to one peer) and an address inside the
 * region it describes. The range and access rights are checked before anything
 * is sent, and again by the target: a bad range, a missing right, or a region
 * closed meanwhile completes the operation with an error entry (err
 * WEFT_EACCES) and target memory is left untouched.
 *
 * Completions go to the transmit CQ and counters, with flags WEFT_RMA |
 * WEFT_WRITE (put) or WEFT_RMA | WEFT_READ (get). A put completes when its
 * buffer may be reused, or, with WEFT_DELIVERY_COMPLETE, when the data is
 * visible at the target; a get when the data is in the local buffer.
 * weft_ep_flush() waits until every earlier operation is visible at its target.
 */

/** An RMA operation for weft_putmsg() / weft_getmsg(). */
struct weft_msg_rma {
    const struct iovec *msg_iov; /**< local buffers */
    void **desc;                 /**< descriptors per iovec, or NULL */
    size_t iov_count;            /**< entries in msg_iov */
    uint64_t rma_addr;           /**< target address (in the key's region) */
    weft_rkey_t *rkey;           /**< the target region, unpacked for the peer */
    void *context; /**< operation context (a struct weft_trigger * with WEFT_TRIGGER) */
    uint64_t data; /**< remote CQ data (put with WEFT_REMOTE_CQ_DATA) */
};

/** Write @p len bytes to @p addr of the peer's region @p rkey. */
ssize_t weft_put(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t addr,
                 weft_rkey_t *rkey, void *context);
/** Write a gather list. */
ssize_t weft_putv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count, uint64_t addr,
                  weft_rkey_t *rkey, void *context);
/**
 * Write, then deliver @p data to the target's receive CQ: an entry with flags
 * WEFT_RMA | WEFT_REMOTE_WRITE | WEFT_REMOTE_CQ_DATA, len and data, seen only
 * after the written bytes are visible there. Consumes no posted receive.
 */
ssize_t weft_putdata(weft_ep_t *ep, const void *buf, size_t len, void *desc, uint64_t data,
                     uint64_t addr, weft_rkey_t *rkey, void *context);
/** Write up to 4096 bytes (the RMA inject limit, whatever WEFT_OPT_INJECT_SIZE says for
 *  tagged injects); the buffer is reusable on return; no CQ entry (counters still count
 *  it, and weft_ep_flush() waits for it). Longer: -WEFT_EINVAL. */
ssize_t weft_inject_put(weft_ep_t *ep, const void *buf, size_t len, uint64_t addr,
                        weft_rkey_t *rkey);
/** As weft_inject_put(), with remote CQ data. */
ssize_t weft_inject_putdata(weft_ep_t *ep, const void *buf, size_t len, uint64_t data,
                            uint64_t addr, weft_rkey_t *rkey);
/**
 * Write with flags: WEFT_INJECT, WEFT_REMOTE_CQ_DATA, WEFT_COMPLETION,
 * WEFT_DELIVERY_COMPLETE, WEFT_FENCE, WEFT_TRIGGER.
 */
ssize_t weft_putmsg(weft_ep_t *ep, const struct weft_msg_rma *msg, uint64_t flags);

/** Read @p len bytes from @p addr of the peer's region @p rkey into @p buf. */
ssize_t weft_get(weft_ep_t *ep, void *buf, size_t len, void *desc, uint64_t addr, weft_rkey_t *rkey,
                 void *context);
/** Read into a scatter list. */
ssize_t weft_getv(weft_ep_t *ep, const struct iovec *iov, void **desc, size_t count, uint64_t addr,
                  weft_rkey_t *rkey, void *context);
/** Read with flags: WEFT_COMPLETION, WEFT_FENCE, WEFT_TRIGGER. */
ssize_t weft_getmsg(weft_ep_t *ep, const struct weft_msg_rma *msg, uint64_t flags);

/**
 * Wait until every RMA and atomic this endpoint started before the call is
 * complete at its target (SHMEM quiet), driving progress. Failed operations
 * report their errors through their own completions.
 * @return 0, or -WEFT_ETIMEDOUT after @p timeout_ms (-1: no limit)
 */
int weft_ep_flush(weft_ep_t *ep, int timeout_ms);

/* ------------------------------------------------------------------ atomics */

/** Element types of atomics (the C types of OpenSHMEM and the MPI basic types). */
enum weft_datatype {
    WEFT_INT8 = 0,
    WEFT_UINT8,
    WEFT_INT16,
    WEFT_UINT16,
    WEFT_INT32,
    WEFT_UINT32,
    WEFT_INT64,
    WEFT_UINT64,
    WEFT_FLOAT,
    WEFT_DOUBLE,
    WEFT_LONG_DOUBLE,    /**< C long double */
    WEFT_FLOAT_COMPLEX,  /**< float _Complex */
    WEFT_DOUBLE_COMPLEX, /**< double _Complex */
    WEFT_DATATYPE_COUNT
};

/** Atomic operations: the MPI accumulate ops and the OpenSHMEM atomics. */
enum weft_atomic_op {
    WEFT_SUM = 0, /**< MPI_SUM; shmem add, inc, fetch_add, fetch_inc */
    WEFT_PROD,    /**< MPI_PROD */
    WEFT_MIN,     /**< MPI_MIN (not on complex types) */
    WEFT_MAX,     /**< MPI_MAX (not on complex types) */
    WEFT_BAND,    /**< MPI_BAND; shmem and, fetch_and (integer types) */
    WEFT_BOR,     /**< MPI_BOR; shmem or, fetch_or (integer types) */
    WEFT_BXOR,    /**< MPI_BXOR; shmem xor, fetch_xor (integer types) */
    WEFT_LAND,    /**< MPI_LAND (integer types) */
    WEFT_LOR,     /**< MPI_LOR (integer types) */
    WEFT_LXOR,    /**< MPI_LXOR (integer types) */
    WEFT_REPLACE, /**< MPI_REPLACE; shmem set; with a result: shmem swap */
    WEFT_CSWAP,   /**< compare-and-swap (weft_compare_atomic) */
    WEFT_NOOP,    /**< MPI_NO_OP; with a result: shmem fetch */
    WEFT_ATOMIC_OP_COUNT
};

/** An atomic for weft_atomicmsg(). */
struct weft_msg_atomic {
    const void *operand; /**< count elements */
    const void *compare; /**< WEFT_CSWAP: count elements to compare with, else NULL */
    void *result;        /**< fetching: count elements receive the old values, else NULL */
    size_t count;        /**< elements, >= 1, at most weft_atomic_max_count() */
    enum weft_datatype datatype;
    enum weft_atomic_op op;
    uint64_t rma_addr; /**< target address of the first element, naturally aligned */
    weft_rkey_t *rkey; /**< the target region, unpacked for the peer */
    void *context;     /**< operation context (a struct weft_trigger * with WEFT_TRIGGER) */
};

/**
 * Apply @p op with @p count operands at @p buf to the elements at @p addr of the
 * peer's region, each element atomically. Completion: WEFT_ATOMIC | WEFT_WRITE.
 * Atomics to one location are atomic with respect to each other whatever
 * transports and peers issue them (docs/rma.md, "One atomicity domain").
 * @return 0, -WEFT_EAGAIN, -WEFT_EINVAL (op invalid for the type, misaligned,
 *         count out of range), -WEFT_ENOSYS (device-mode region, op the NIC lacks)
 */
ssize_t weft_atomic(weft_ep_t *ep, const void *buf, size_t count, uint64_t addr, weft_rkey_t *rkey,
                    enum weft_datatype datatype, enum weft_atomic_op op, void *context);
/** As weft_atomic(); the old values go to @p result. Completion: WEFT_ATOMIC | WEFT_READ. */
ssize_t weft_fetch_atomic(weft_ep_t *ep, const void *buf, size_t count, void *result, uint64_t addr,
                          weft_rkey_t *rkey, enum weft_datatype datatype, enum weft_atomic_op op,
                          void *context);
/** Compare-and-swap: where an element equals @p compare it becomes @p buf; the old
 *  values go to @p result either way. Completion: WEFT_ATOMIC | WEFT_READ. */
ssize_t weft_compare_atomic(weft_ep_t *ep, const void *buf, const void *compare, size_t count,
                            void *result, uint64_t addr, weft_rkey_t *rkey,
                            enum weft_datatype datatype, void *context);
/** An atomic with flags: WEFT_INJECT (non-fetching), WEFT_COMPLETION,
 *  WEFT_DELIVERY_COMPLETE, WEFT_FENCE, WEFT_TRIGGER. */
ssize_t weft_atomicmsg(weft_ep_t *ep, const struct weft_msg_atomic *msg, uint64_t flags);
/** Most elements of @p datatype in one atomic (0 for an invalid type). */
size_t weft_atomic_max_count(enum weft_datatype datatype);
/** Whether @p op is valid on @p datatype (with a result: fetching; with compare: WEFT_CSWAP). */
int weft_atomic_valid(enum weft_datatype datatype, enum weft_atomic_op op);

/* ------------------------------------------------------------------ triggered operations */

/**
 * Context of a triggered operation. Post any tagged send (weft_tsendmsg), put,
 * get or atomic (weft_putmsg, weft_getmsg, weft_atomicmsg) with the flag
 * WEFT_TRIGGER and a struct weft_trigger as its context: it is checked and
 * copied at once (buffers are read when it fires, not before), and starts when
 * @p cntr reaches @p threshold, from whatever drives progress or counts -- so a
 * whole schedule runs from progress alone once posted. Triggers of one counter
 * fire in threshold order (equal thresholds in posting order). The operation's
 * completion reports @p context. The struct itself may be reused at once.
 * Closing the endpoint cancels its pending triggered operations with error
 * completions (WEFT_ECANCELED); a counter with pending triggers of an open
 * endpoint refuses to close (-WEFT_EBUSY).
 */
struct weft_trigger {
    weft_cntr_t *cntr;  /**< the counter to watch */
    uint64_t threshold; /**< fire once its value >= threshold */
    void *context;      /**< the operation's own context, reported by its completion */
};

/** When @p trigger->cntr reaches @p trigger->threshold, add @p value to @p cntr.
 *  Cancelled (never done) if either counter closes first. */
int weft_cntr_add_triggered(weft_cntr_t *cntr, uint64_t value, const struct weft_trigger *trigger);
/** When @p trigger->cntr reaches @p trigger->threshold, set @p cntr to @p value. */
int weft_cntr_set_triggered(weft_cntr_t *cntr, uint64_t value, const struct weft_trigger *trigger);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
