/*
 * ompi_weft_p2p.h: what Open MPI's two point-to-point components over weft
 * share (docs/mpi.md): mtl weft (under pml cm) and pml weft. The 64-bit weft
 * tag that carries an MPI message's communicator, source rank and tag; the
 * MPI errors of weft codes; and the NAME=value list of their *_config
 * parameters. Header only: each component is its own .so.
 */
#ifndef OMPI_WEFT_P2P_H
#define OMPI_WEFT_P2P_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "mpi.h"
#include "ompi/constants.h"
#include "ompi/proc/proc.h"
#include "opal/mca/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include <weft/weft.h>

/* ------------------------------------------------------------------ tag layout
 *
 * One MPI message is one weft tagged message. Its 64-bit weft tag:
 *
 *   63    62     61 ....... 50   49 ........ 32   31 ............ 0
 *  [ACK][ 0  ][ context id 12 ][ source rank 18 ][ MPI tag (32-bit int) ]
 *
 * - context id: the communicator's c_contextid (Open MPI keeps it below the
 *   component's max_contextid = 4095).
 * - source rank: the sender's rank in the communicator (c_my_rank); for an
 *   acknowledgement, the rank of the receiver that sends it.
 * - MPI tag: all 32 bits of the int, so Open MPI's negative internal tags (down to
 *   -INT_MAX for collectives) keep their identity; MPI_ANY_TAG ignores bits 0..30
 *   and requires bit 31 == 0, so it never matches a negative tag.
 * - ACK: a zero-byte acknowledgement of a synchronous send; receives require it to
 *   be 0, so only the sender's own acknowledgement receive matches it.
 * - Bit 62 is 0 (it carried the synchronous flag before; that is remote CQ data now).
 *
 * A synchronous send (MPI_Ssend) carries remote CQ data OMPI_WEFT_DATA_SYNC: the
 * receiver acknowledges it once matched. Being outside the tag, it leaves a
 * receive for a given source and tag with nothing to ignore, so weft files it
 * under that (source address, tag) in its hash table (O(1) matching) rather than
 * in the wildcard list every arrival scans.
 *
 * Receives for a specific source name its weft address (and carry its rank in the
 * tag as well); MPI_ANY_SOURCE receives name none. A message that arrives before
 * its sender is in our address vector (procs are added lazily) is found by a
 * directed receive posted after the insertion: weft files it under the new
 * address then (docs/matching.md "Senders inserted late").
 */
#define OMPI_WEFT_ACK_BIT (1ULL << 63)
/** Remote CQ data of a synchronous send: acknowledge it when matched. */
#define OMPI_WEFT_DATA_SYNC 1ULL
#define OMPI_WEFT_CID_BITS 12
#define OMPI_WEFT_CID_SHIFT 50
#define OMPI_WEFT_SOURCE_BITS 18
#define OMPI_WEFT_SOURCE_SHIFT 32
#define OMPI_WEFT_CID_MASK (((1ULL << OMPI_WEFT_CID_BITS) - 1) << OMPI_WEFT_CID_SHIFT)
#define OMPI_WEFT_SOURCE_MASK (((1ULL << OMPI_WEFT_SOURCE_BITS) - 1) << OMPI_WEFT_SOURCE_SHIFT)
#define OMPI_WEFT_TAG_MASK 0xffffffffULL
/** MPI_ANY_TAG: the non-negative tags (bit 31 must be 0). */
#define OMPI_WEFT_ANY_TAG_IGNORE 0x7fffffffULL
#define OMPI_WEFT_MAX_CONTEXTID ((int)((1U << OMPI_WEFT_CID_BITS) - 1))
#define OMPI_WEFT_MAX_RANKS (1 << OMPI_WEFT_SOURCE_BITS)

/** The weft tag of a message from @p src_rank on context @p cid with MPI tag @p tag. */
static inline uint64_t ompi_weft_tag(uint32_t cid, int src_rank, int tag)
{
    return ((uint64_t)cid << OMPI_WEFT_CID_SHIFT) |
           ((uint64_t)(uint32_t)src_rank << OMPI_WEFT_SOURCE_SHIFT) | (uint64_t)(uint32_t)tag;
}

/** The MPI source rank carried by a weft tag. */
static inline int ompi_weft_tag_source(uint64_t wtag)
{
    return (int)((wtag & OMPI_WEFT_SOURCE_MASK) >> OMPI_WEFT_SOURCE_SHIFT);
}

/** The MPI tag carried by a weft tag. */
static inline int ompi_weft_tag_mpi_tag(uint64_t wtag)
{
    return (int)(uint32_t)(wtag & OMPI_WEFT_TAG_MASK);
}

/** Tag and ignore mask of a receive (or probe) for (@p src, @p tag) on @p cid. */
static inline void ompi_weft_recv_bits(uint32_t cid, int src, int tag, uint64_t *wtag,
                                       uint64_t *ignore)
{
    uint64_t t = (uint64_t)cid << OMPI_WEFT_CID_SHIFT;
    uint64_t ign = 0;
    if (MPI_ANY_SOURCE == src) {
        ign |= OMPI_WEFT_SOURCE_MASK;
    } else {
        t |= (uint64_t)(uint32_t)src << OMPI_WEFT_SOURCE_SHIFT;
    }
    if (MPI_ANY_TAG == tag) {
        ign |= OMPI_WEFT_ANY_TAG_IGNORE;
    } else {
        t |= (uint64_t)(uint32_t)tag;
    }
    *wtag = t;
    *ignore = ign;
}

/**
 * The weft address a receive from @p src of @p comm names: the peer's (from
 * @p lookup, the component's rank-to-address function), so that weft matches it
 * in its hash table; WEFT_ADDR_UNSPEC for MPI_ANY_SOURCE (any negative rank), or
 * when the peer's address cannot be had: the source rank in the tag still
 * selects it.
 */
static inline weft_addr_t ompi_weft_recv_addr(struct ompi_communicator_t *comm, int src,
                                              int (*lookup)(struct ompi_communicator_t *, int,
                                                            weft_addr_t *))
{
    weft_addr_t a = WEFT_ADDR_UNSPEC;
    if (src >= 0 && OMPI_SUCCESS != lookup(comm, src, &a)) {
        a = WEFT_ADDR_UNSPEC;
    }
    return a;
}

/** Was the completed receive (@p flags, @p data of its CQ entry) a synchronous send? */
static inline bool ompi_weft_is_sync(uint64_t flags, uint64_t data)
{
    return 0 != (flags & WEFT_REMOTE_CQ_DATA) && 0 != (data & OMPI_WEFT_DATA_SYNC);
}

/* ------------------------------------------------------------------ errors */

/** OMPI error for a negative weft code returned by a call (other than -WEFT_EAGAIN). */
static inline int ompi_weft_ompi_error(ssize_t rc)
{
    switch (-rc) {
        case WEFT_ENOMEM:
            return OMPI_ERR_OUT_OF_RESOURCE;
        case WEFT_EHOSTUNREACH:
            return OMPI_ERR_UNREACH;
        case WEFT_EINVAL:
            return OMPI_ERR_BAD_PARAM;
        default:
            return OMPI_ERROR;
    }
}

/** MPI error class of a failed completion (positive WEFT_E* code). */
static inline int ompi_weft_mpi_error(int weft_err)
{
    switch (weft_err) {
        case WEFT_ETRUNC:
            return MPI_ERR_TRUNCATE;
        case WEFT_EHOSTUNREACH:
            return MPI_ERR_OTHER;
        default:
            return MPI_ERR_INTERN;
    }
}

/* ------------------------------------------------------------------ *_config parameters */

/** Is the text from @p s up to the next ',' or ';' (or the end) NAME=value? */
static inline bool ompi_weft_starts_pair(const char *s)
{
    size_t n = strcspn(s, ",;");
    const char *eq = memchr(s, '=', n);
    return NULL != eq && eq != s;
}

/**
 * Apply "NAME=value;NAME=value" (or commas) to @p config. A comma starts a new
 * pair only when NAME= follows it, so list values keep theirs:
 * "TRANSPORTS=self,shm,RNDV_THRESH=32k" sets TRANSPORTS to "self,shm".
 * @p param names the MCA parameter in the message about an item without '='
 * (weft logs the other errors). 0 or the first error.
 */
static inline int ompi_weft_apply_config(weft_config_t *config, const char *pairs,
                                         const char *param)
{
    if (NULL == pairs || '\0' == pairs[0]) {
        return 0;
    }
    char *copy = strdup(pairs);
    if (NULL == copy) {
        return -WEFT_ENOMEM;
    }
    int rc = 0;
    char *item = copy;
    while (NULL != item && 0 == rc) {
        /* The end of this pair: the next ';', or the next ',' that starts one. */
        char *end = item + strcspn(item, ",;");
        while (',' == *end && !ompi_weft_starts_pair(end + 1)) {
            end += 1 + strcspn(end + 1, ",;");
        }
        char *next = '\0' == *end ? NULL : end + 1;
        *end = '\0';
        if ('\0' != item[0]) {
            char *eq = strchr(item, '=');
            if (NULL == eq || eq == item) {
                opal_output(0, "%s item \"%s\" is not NAME=value", param, item);
                rc = -WEFT_EINVAL;
                break;
            }
            *eq = '\0';
            rc = weft_config_modify(config, item, eq + 1);
        }
        item = next;
    }
    free(copy);
    return rc;
}

/* ------------------------------------------------------------------ the weft objects */

/** One process's weft objects of a point-to-point component: a tagged
 * endpoint with its CQ and AV (mtl weft and pml weft open them alike). */
struct ompi_weft_objs {
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_cq_t *cq;
    weft_av_t *av;
    weft_ep_t *ep;
    size_t addr_len;     /**< bytes of a weft endpoint address (the modex payload) */
    size_t inject_size;  /**< sends up to this size use weft_tinject */
    size_t max_msg_size; /**< largest message weft carries */
};

/** Open `o`: the configuration from the environment, then `pairs` (the
 * value of the component's parameter `param`, "mtl_weft_config"); a tagged
 * endpoint on transport "auto" (one endpoint that reaches each peer by its
 * best transport) with manual progress (opal_progress drives it), thread-safe
 * when `thread_multiple` (any thread may call in; otherwise the MPI library
 * serialises calls and weft needs no locks). `*info` gets weft_getinfo's
 * answer, for the caller to free. 0, or a negative WEFT_E* code with `*step`
 * naming the call that failed; whatever was opened stays in `o` for
 * ompi_weft_objs_close(). `who` ("mtl weft") starts the one message printed
 * here. */
static inline int ompi_weft_objs_open(struct ompi_weft_objs *o, const char *pairs,
                                      const char *param, bool thread_multiple, const char *who,
                                      struct weft_info **info, const char **step)
{
    struct weft_info *hints = NULL;
    weft_config_t *config = NULL;
    *info = NULL;
    *step = "weft_config_read";
    int rc = weft_config_read(&config);
    if (0 != rc) {
        goto out;
    }
    char label[64];
    snprintf(label, sizeof(label), "%s: %s", who, param);
    *step = param;
    if (0 != (rc = ompi_weft_apply_config(config, pairs, label))) {
        goto out;
    }
    *step = "weft_info_alloc";
    rc = -WEFT_ENOMEM;
    if (NULL == (hints = weft_info_alloc())) {
        goto out;
    }
    hints->caps = WEFT_TAGGED;
    strncpy(hints->transport, "auto", sizeof(hints->transport) - 1);
    hints->domain_attr.progress = WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading = thread_multiple ? WEFT_THREAD_SAFE : WEFT_THREAD_DOMAIN;
    *step = "weft_getinfo";
    if (0 != (rc = weft_getinfo(WEFT_API_VERSION, hints, config, info))) {
        if (thread_multiple) {
            opal_output(0,
                        "%s: MPI_THREAD_MULTIPLE was requested and weft offers no "
                        "thread-safe tagged endpoint (%s); not selecting %s",
                        who, weft_strerror(rc), who);
        }
        goto out;
    }
    *step = "weft_fabric_open";
    if (0 != (rc = weft_fabric_open(*info, config, &o->fabric))) {
        goto out;
    }
    *step = "weft_domain_open";
    if (0 != (rc = weft_domain_open(o->fabric, *info, &o->domain))) {
        goto out;
    }
    struct weft_cq_attr cq_attr = {.size = 0, .format = WEFT_CQ_FORMAT_TAGGED};
    *step = "weft_cq_open";
    if (0 != (rc = weft_cq_open(o->domain, &cq_attr, &o->cq))) {
        goto out;
    }
    *step = "weft_av_open";
    if (0 != (rc = weft_av_open(o->domain, NULL, &o->av))) {
        goto out;
    }
    *step = "weft_ep_open";
    if (0 != (rc = weft_ep_open(o->domain, *info, &o->ep, NULL))) {
        goto out;
    }
    *step = "weft_ep_bind_cq";
    if (0 != (rc = weft_ep_bind_cq(o->ep, o->cq, WEFT_TRANSMIT | WEFT_RECV))) {
        goto out;
    }
    *step = "weft_ep_bind_av";
    if (0 != (rc = weft_ep_bind_av(o->ep, o->av))) {
        goto out;
    }
    /* A send weft_tinject took is complete for MPI, and its receiver may wait on
     * it while this process blocks in PMIx (connect, disconnect) or computes:
     * weft must not keep it queued for this process's next progress. A refused
     * inject goes as weft_tsend, whose completion MPI waits on (post_send). */
    const int direct = 1;
    *step = "weft_ep_setopt(WEFT_OPT_INJECT_DIRECT)";
    if (0 != (rc = weft_ep_setopt(o->ep, WEFT_OPT_INJECT_DIRECT, &direct, sizeof(direct)))) {
        goto out;
    }
    *step = "weft_ep_enable";
    if (0 != (rc = weft_ep_enable(o->ep))) {
        goto out;
    }
    size_t len = sizeof(o->inject_size);
    *step = "weft_ep_getopt(WEFT_OPT_INJECT_SIZE)";
    if (0 != (rc = weft_ep_getopt(o->ep, WEFT_OPT_INJECT_SIZE, &o->inject_size, &len))) {
        goto out;
    }
    len = sizeof(o->max_msg_size);
    *step = "weft_ep_getopt(WEFT_OPT_MAX_MSG_SIZE)";
    if (0 != (rc = weft_ep_getopt(o->ep, WEFT_OPT_MAX_MSG_SIZE, &o->max_msg_size, &len))) {
        goto out;
    }
    o->addr_len = (*info)->addr_len;
out:
    weft_info_free(hints);
    weft_config_release(config);
    return rc;
}

/** Close whatever of `o` is open (init failure and finalize): 0, or the code
 * of a close that failed. */
static inline int ompi_weft_objs_close(struct ompi_weft_objs *o)
{
    int rc = 0, r;
    if (NULL != o->ep && 0 != (r = weft_ep_close(o->ep))) {
        rc = r;
    }
    o->ep = NULL;
    if (NULL != o->av && 0 != (r = weft_av_close(o->av))) {
        rc = r;
    }
    o->av = NULL;
    if (NULL != o->cq && 0 != (r = weft_cq_close(o->cq))) {
        rc = r;
    }
    o->cq = NULL;
    if (NULL != o->domain && 0 != (r = weft_domain_close(o->domain))) {
        rc = r;
    }
    o->domain = NULL;
    if (NULL != o->fabric && 0 != (r = weft_fabric_close(o->fabric))) {
        rc = r;
    }
    o->fabric = NULL;
    return rc;
}

/** Insert @p proc's weft address (its modex entry under @p version) into
 * @p o's AV; @p wa gets its index. The address is a peer's: its length is
 * checked before use, and weft gets a buffer of our full address size, so a
 * length field it reads never runs past what we hold. OMPI_SUCCESS, or an
 * error with the reason printed (`who`: "mtl weft"; `what`: the component as
 * the message about a missing address names it). */
static inline int ompi_weft_insert_proc(struct ompi_weft_objs *o,
                                        const mca_base_component_t *version, ompi_proc_t *proc,
                                        const char *who, const char *what, weft_addr_t *wa)
{
    unsigned char *addr = NULL;
    size_t size = 0;
    int rc;
    OPAL_MODEX_RECV(rc, version, &proc->super.proc_name, (void **)&addr, &size);
    if (OPAL_SUCCESS != rc || NULL == addr) {
        opal_output(0,
                    "%s: no weft address from %s (modex: %d): every rank must load the same "
                    "version of %s",
                    who, OPAL_NAME_PRINT(proc->super.proc_name), rc, what);
        return OMPI_ERR_UNREACH;
    }
    if (0 == size || size > o->addr_len) {
        opal_output(0, "%s: address of %s has %zu bytes, expected 1 to %zu", who,
                    OPAL_NAME_PRINT(proc->super.proc_name), size, o->addr_len);
        free(addr);
        return OMPI_ERR_UNREACH;
    }
    unsigned char *whole = calloc(1, o->addr_len);
    if (NULL == whole) {
        free(addr);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(whole, addr, size);
    free(addr);
    *wa = WEFT_ADDR_NOTAVAIL;
    const int n = weft_av_insert(o->av, whole, 1, wa, 0);
    free(whole);
    if (1 != n || WEFT_ADDR_NOTAVAIL == *wa) {
        opal_output(0, "%s: weft_av_insert of %s failed: %s", who,
                    OPAL_NAME_PRINT(proc->super.proc_name),
                    n < 0 ? weft_strerror(n) : "address not usable");
        return OMPI_ERR_UNREACH;
    }
    return OMPI_SUCCESS;
}

#endif /* OMPI_WEFT_P2P_H */
