/*
 * pml_weft_component.c: pml weft's component (MCA parameters, selection), the
 * weft objects of the process, addresses through the modex, procs,
 * communicators, and the module's function table (docs/mpi.md, "pml weft").
 */
#include "pml_weft.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompi/mca/pml/base/base.h"
#include "ompi/proc/proc.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int pml_weft_component_register(void);
static int pml_weft_component_open(void);
static int pml_weft_component_close(void);
static mca_pml_base_module_t *pml_weft_component_init(int *priority, bool enable_progress_threads,
                                                      bool enable_mpi_threads);
static int pml_weft_component_fini(void);

/* The only symbol the loader looks for (the .so is built -fvisibility=hidden). */
OMPI_MODULE_DECLSPEC pml_weft_component_t mca_pml_weft_component = {
    .super =
        {
            .pmlm_version =
                {
                    MCA_PML_BASE_VERSION_2_0_0,
                    .mca_component_name = "weft",
                    /* The modex key is pml.weft.<major>.<minor>: every rank must
                     * load a component of the same version. */
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = pml_weft_component_open,
                    .mca_close_component = pml_weft_component_close,
                    .mca_register_component_params = pml_weft_component_register,
                },
            .pmlm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .pmlm_init = pml_weft_component_init,
            .pmlm_finalize = pml_weft_component_fini,
        },
    .priority = 5,
    .verbose = 0,
    .config = NULL,
    .progress_iterations = 100,
};

pml_weft_module_t pml_weft = {
    .super =
        {
            .pml_add_procs = pml_weft_add_procs,
            .pml_del_procs = pml_weft_del_procs,
            .pml_enable = pml_weft_enable,
            /* Open MPI registers the selected PML's progress with opal_progress. */
            .pml_progress = pml_weft_progress,
            .pml_add_comm = pml_weft_add_comm,
            .pml_del_comm = pml_weft_del_comm,
            .pml_irecv_init = pml_weft_irecv_init,
            .pml_irecv = pml_weft_irecv,
            .pml_recv = pml_weft_recv,
            .pml_isend_init = pml_weft_isend_init,
            .pml_isend = pml_weft_isend,
            .pml_send = pml_weft_send,
            .pml_iprobe = pml_weft_iprobe,
            .pml_probe = pml_weft_probe,
            .pml_start = pml_weft_start,
            .pml_improbe = pml_weft_improbe,
            .pml_mprobe = pml_weft_mprobe,
            .pml_imrecv = pml_weft_imrecv,
            .pml_mrecv = pml_weft_mrecv,
            .pml_dump = pml_weft_dump,
            /* Called only by checkpoint/restart builds (OPAL_ENABLE_FT_CR), which
             * Open MPI 4.1 no longer has; pml ucx leaves it NULL too. */
            .pml_ft_event = NULL,
            .pml_max_contextid = OMPI_WEFT_MAX_CONTEXTID,
            .pml_max_tag = INT_MAX, /* the tag field holds any int */
            .pml_flags = 0,
        },
};

/* ------------------------------------------------------------------ component */

static int pml_weft_component_register(void)
{
    /* Open MPI 4.1 initialises only the PMLs the pml parameter names (without
     * it: ob1, yalla, ucx and cm), so this PML runs only with --mca pml weft.
     * The priority stays below ob1's 20 all the same. */
    mca_base_component_var_register(
        &mca_pml_weft_component.super.pmlm_version, "priority",
        "Priority of pml weft (it is a candidate only when the pml parameter names it)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_pml_weft_component.priority);
    mca_base_component_var_register(
        &mca_pml_weft_component.super.pmlm_version, "verbose",
        "1: print one line per rank when pml weft is selected (transport, threading, limits); "
        "2: also, at finalize, how many operations went through the deferred queue",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_pml_weft_component.verbose);
    mca_base_component_var_register(
        &mca_pml_weft_component.super.pmlm_version, "config",
        "weft configuration for this job, on top of the WEFT_* environment: NAME=value pairs "
        "separated by semicolons or commas, e.g. \"RNDV_THRESH=32k;TRANSPORTS=self,shm\" (a comma "
        "starts a new pair only before NAME=; names as weft_info -c lists them, with or without "
        "WEFT_)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_pml_weft_component.config);
    mca_base_component_var_register(
        &mca_pml_weft_component.super.pmlm_version, "progress_iterations",
        "Blocking sends and receives wait in weft's progress and call opal_progress (the other "
        "components' progress, and a yield when oversubscribed) once in this many polls; 1: "
        "every poll (as pml_ucx_progress_iterations, default 100)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_pml_weft_component.progress_iterations);
    if (mca_pml_weft_component.progress_iterations < 1) {
        opal_output(0, "pml weft: pml_weft_progress_iterations=%d is below 1; using 1",
                    mca_pml_weft_component.progress_iterations);
        mca_pml_weft_component.progress_iterations = 1;
    }
    return OMPI_SUCCESS;
}

static int pml_weft_component_open(void)
{
    return OMPI_SUCCESS;
}

static int pml_weft_component_close(void)
{
    return OMPI_SUCCESS;
}

/** Close whatever of the weft objects is open (init failure and finalize). */
static int pml_weft_close_objects(void)
{
    return ompi_weft_objs_close(&pml_weft.w);
}

static mca_pml_base_module_t *pml_weft_component_init(int *priority, bool enable_progress_threads,
                                                      bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    struct weft_info *info = NULL;
    pml_weft.thread_multiple = enable_mpi_threads;
    const char *step = NULL;
    int rc = ompi_weft_objs_open(&pml_weft.w, mca_pml_weft_component.config, "pml_weft_config",
                                 enable_mpi_threads, "pml weft", &info, &step);
    if (0 != rc) {
        goto fail;
    }

    /* Publish our address: peers read it in add_procs (or lazily at first use). */
    unsigned char *addr = malloc(pml_weft.w.addr_len);
    size_t addr_len = pml_weft.w.addr_len;
    step = "weft_ep_getname";
    if (NULL == addr) {
        rc = -WEFT_ENOMEM;
        goto fail;
    }
    if (0 != (rc = weft_ep_getname(pml_weft.w.ep, addr, &addr_len))) {
        free(addr);
        goto fail;
    }
    int orc;
    OPAL_MODEX_SEND(orc, OPAL_PMIX_GLOBAL, &mca_pml_weft_component.super.pmlm_version, addr,
                    addr_len);
    free(addr);
    if (OPAL_SUCCESS != orc) {
        opal_output(0, "pml weft: publishing the endpoint address (modex send) failed: %d", orc);
        goto fail_quiet;
    }

    OBJ_CONSTRUCT(&pml_weft.lock, opal_recursive_mutex_t);
    pml_weft.deferred_head = NULL;
    pml_weft.deferred_tail = NULL;
    pml_weft.deferred_count = 0;
    pml_weft.enabled = false;
    memcpy(pml_weft.transport, info->transport, sizeof(pml_weft.transport));
    pml_weft.transport[sizeof(pml_weft.transport) - 1] = '\0';

    weft_info_free(info);
    *priority = mca_pml_weft_component.priority;
    return &pml_weft.super;

fail:
    opal_output_verbose(1, ompi_pml_base_framework.framework_output,
                        "pml weft: not available: %s failed: %s (%d)", step, weft_strerror(rc), rc);
    if (mca_pml_weft_component.verbose >= 1) {
        opal_output(0, "pml weft: not available: %s failed: %s (%d)", step, weft_strerror(rc), rc);
    }
fail_quiet:
    (void)pml_weft_close_objects();
    weft_info_free(info);
    return NULL;
}

static int pml_weft_component_fini(void)
{
    if (NULL == pml_weft.w.ep) {
        return OMPI_SUCCESS; /* init failed */
    }
    /* Registered by Open MPI when this PML was selected; nothing may poll the
     * endpoint once it is closed. */
    opal_progress_unregister(pml_weft_progress);
    /* Operations still deferred (e.g. the acknowledgement of a synchronous send)
     * would be lost with the endpoint: push them out, for a bounded time. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (NULL != pml_weft.deferred_head) {
        pml_weft_progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) {
            opal_output(0, "pml weft: finalize: operations still waiting after 10 s are dropped");
            break;
        }
    }
    if (pml_weft.enabled && mca_pml_weft_component.verbose >= 2) {
        opal_output(0, "pml weft: rank %u: %lu operations waited in the deferred queue",
                    (unsigned)OPAL_PROC_MY_NAME.vpid, pml_weft.deferred_count);
    }
    int rc = pml_weft_close_objects();
    if (pml_weft.enabled) {
        OBJ_DESTRUCT(&pml_weft.completed_send);
        OBJ_DESTRUCT(&pml_weft.requests);
        pml_weft.enabled = false;
    }
    OBJ_DESTRUCT(&pml_weft.lock);
    if (0 != rc) {
        opal_output(0, "pml weft: closing the weft objects failed: %s", weft_strerror(rc));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ enable */

int pml_weft_enable(bool enable)
{
    if (!enable || pml_weft.enabled) {
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&pml_weft.requests, opal_free_list_t);
    int rc = opal_free_list_init(&pml_weft.requests, sizeof(pml_weft_request_t),
                                 opal_cache_line_size, OBJ_CLASS(pml_weft_request_t), 0,
                                 opal_cache_line_size, 128, -1, 128, NULL, 0, NULL, NULL, NULL);
    if (OPAL_SUCCESS != rc) {
        opal_output(0, "pml weft: creating the request free list failed: %d", rc);
        OBJ_DESTRUCT(&pml_weft.requests);
        return rc;
    }
    OBJ_CONSTRUCT(&pml_weft.completed_send, ompi_request_t);
    pml_weft_completed_send_init(&pml_weft.completed_send);
    pml_weft.enabled = true;

    /* Only the selected PML is enabled: this is the selection line. */
    if (mca_pml_weft_component.verbose >= 1) {
        opal_output(0,
                    "pml weft: selected on rank %u (pid %d): transport %s, threading %s, "
                    "inject %zu B, max message %zu B, configuration \"%s\"",
                    (unsigned)OPAL_PROC_MY_NAME.vpid, (int)getpid(), pml_weft.transport,
                    pml_weft.thread_multiple ? "safe (MPI_THREAD_MULTIPLE)" : "domain",
                    pml_weft.w.inject_size, pml_weft.w.max_msg_size,
                    NULL != mca_pml_weft_component.config ? mca_pml_weft_component.config : "");
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ procs */

int pml_weft_add_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    /* Every rank must run pml weft (rank 0's choice, through the modex). */
    int rc = mca_pml_base_pml_check_selected("weft", procs, nprocs);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* Lazy additions may race in MPI_THREAD_MULTIPLE: insert each proc once. */
    OPAL_THREAD_LOCK(&pml_weft.lock);
    for (size_t i = 0; i < nprocs; ++i) {
        ompi_proc_t *proc = procs[i];
        if (NULL != proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML]) {
            continue;
        }
        weft_addr_t wa;
        rc = ompi_weft_insert_proc(&pml_weft.w, &mca_pml_weft_component.super.pmlm_version, proc,
                                   "pml weft", "pml weft", &wa);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        /* Stored as index + 1 so that NULL keeps meaning "not added". */
        proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = (void *)(uintptr_t)(wa + 1);
        opal_output_verbose(10, ompi_pml_base_framework.framework_output,
                            "pml weft: added %s as weft address %" PRIu64 "%s",
                            OPAL_NAME_PRINT(proc->super.proc_name), (uint64_t)wa,
                            1 == nprocs ? "" : " (add_procs)");
    }
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
    return rc;
}

int pml_weft_del_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    OPAL_THREAD_LOCK(&pml_weft.lock);
    for (size_t i = 0; i < nprocs; ++i) {
        if (NULL == procs[i]) {
            continue;
        }
        void *ep = procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
        if (NULL != ep) {
            weft_addr_t wa = (weft_addr_t)(uintptr_t)ep - 1;
            (void)weft_av_remove(pml_weft.w.av, &wa, 1, 0);
            procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML] = NULL;
        }
    }
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ communicators */

int pml_weft_add_comm(struct ompi_communicator_t *comm)
{
    if (comm->c_contextid > (uint32_t)OMPI_WEFT_MAX_CONTEXTID) {
        opal_output(0, "pml weft: communicator context id %u does not fit the %d-bit tag field",
                    comm->c_contextid, OMPI_WEFT_CID_BITS);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (ompi_comm_size(comm) > OMPI_WEFT_MAX_RANKS ||
        ompi_comm_remote_size(comm) > OMPI_WEFT_MAX_RANKS) {
        opal_output(0, "pml weft: communicators of more than %d ranks are not supported",
                    OMPI_WEFT_MAX_RANKS);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    /* The address cache (pml_weft_comm_addr); without it, lookups go to Open MPI. */
    /* Ranks name the remote group of an intercommunicator (Open MPI's remote
     * size is 0 for an intracommunicator). */
    const size_t n =
        (size_t)(OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm));
    struct mca_pml_comm_t *pc = calloc(1, sizeof(*pc) + n * sizeof(pc->addr[0]));
    if (NULL == pc) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    pc->size = n;
    comm->c_pml_comm = pc;
    return OMPI_SUCCESS;
}

int pml_weft_del_comm(struct ompi_communicator_t *comm)
{
    free(comm->c_pml_comm);
    comm->c_pml_comm = NULL;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ dump */

int pml_weft_dump(struct ompi_communicator_t *comm, int verbose)
{
    unsigned long queued = 0;
    OPAL_THREAD_LOCK(&pml_weft.lock);
    for (struct pml_weft_xfer *x = pml_weft.deferred_head; NULL != x; x = x->next) {
        ++queued;
    }
    OPAL_THREAD_UNLOCK(&pml_weft.lock);
    opal_output(0,
                "pml weft: rank %d of communicator %s (context id %u, %d ranks, %d remote): "
                "transport %s, threading %s, %lu operations deferred now, %lu in all",
                ompi_comm_rank(comm), comm->c_name, comm->c_contextid, ompi_comm_size(comm),
                ompi_comm_remote_size(comm), pml_weft.transport,
                pml_weft.thread_multiple ? "safe" : "domain", queued, pml_weft.deferred_count);
    if (verbose > 0) {
        for (int r = 0; r < ompi_comm_remote_size(comm); ++r) {
            ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
            void *ep = proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_PML];
            struct weft_credits cr;
            if (NULL == ep) {
                opal_output(0, "pml weft:   rank %d: not connected yet", r);
            } else if (0 == weft_ep_credits(pml_weft.w.ep, (weft_addr_t)(uintptr_t)ep - 1, &cr)) {
                opal_output(0,
                            "pml weft:   rank %d: weft address %" PRIu64 ", send credits %" PRIu64
                            ", receive credits %" PRIu64,
                            r, (uint64_t)((uintptr_t)ep - 1), cr.send, cr.recv);
            }
        }
    }
    return OMPI_SUCCESS;
}
