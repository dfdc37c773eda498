/*
 * mtl_weft_component.c: the weft MTL's component (MCA parameters, selection),
 * the weft objects of the process, addresses through the modex, and
 * communicator checks (docs/mpi.md).
 */
#include "mtl_weft.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompi/proc/proc.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int mtl_weft_component_register(void);
static int mtl_weft_component_open(void);
static int mtl_weft_component_close(void);
static int mtl_weft_component_query(mca_base_module_t **module, int *priority);
static mca_mtl_base_module_t *mtl_weft_component_init(bool enable_progress_threads,
                                                      bool enable_mpi_threads);

/* The only symbol the loader looks for (the .so is built -fvisibility=hidden). */
OMPI_MODULE_DECLSPEC mtl_weft_component_t mca_mtl_weft_component = {
    .super =
        {
            .mtl_version =
                {
                    MCA_MTL_BASE_VERSION_2_0_0,
                    .mca_component_name = "weft",
                    /* The modex key is mtl.weft.<major>.<minor>: every rank must
                     * load a component of the same version. */
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = mtl_weft_component_open,
                    .mca_close_component = mtl_weft_component_close,
                    .mca_query_component = mtl_weft_component_query,
                    .mca_register_component_params = mtl_weft_component_register,
                },
            .mtl_data = {MCA_BASE_METADATA_PARAM_NONE},
            .mtl_init = mtl_weft_component_init,
        },
    .priority = 10,
    .verbose = 0,
    .config = NULL,
};

mtl_weft_module_t mtl_weft = {
    .base =
        {
            .mtl_max_contextid = OMPI_WEFT_MAX_CONTEXTID,
            .mtl_max_tag = INT_MAX, /* the tag field holds any int */
            .mtl_request_size = sizeof(mtl_weft_request_t) - sizeof(mca_mtl_request_t),
            .mtl_flags = 0,
            .mtl_add_procs = mtl_weft_add_procs,
            .mtl_del_procs = mtl_weft_del_procs,
            .mtl_finalize = mtl_weft_finalize,
            .mtl_send = mtl_weft_send,
            .mtl_isend = mtl_weft_isend,
            .mtl_irecv = mtl_weft_irecv,
            .mtl_iprobe = mtl_weft_iprobe,
            .mtl_imrecv = mtl_weft_imrecv,
            .mtl_improbe = mtl_weft_improbe,
            .mtl_cancel = mtl_weft_cancel,
            .mtl_add_comm = mtl_weft_add_comm,
            .mtl_del_comm = mtl_weft_del_comm,
        },
};

/* ------------------------------------------------------------------ component */

static int mtl_weft_component_register(void)
{
    /* Below pml ob1's 20: pml cm with this MTL is chosen only when asked for
     * (--mca pml cm --mca mtl weft), unless the user raises this. */
    mca_base_component_var_register(
        &mca_mtl_weft_component.super.mtl_version, "priority",
        "Priority of the weft MTL (above 20, pml cm with this MTL wins without --mca pml cm)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_mtl_weft_component.priority);
    mca_base_component_var_register(
        &mca_mtl_weft_component.super.mtl_version, "verbose",
        "1: print one line per rank when the weft MTL is selected (transport, threading, limits); "
        "2: also, at finalize, how many operations went through the deferred queue",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_mtl_weft_component.verbose);
    mca_base_component_var_register(
        &mca_mtl_weft_component.super.mtl_version, "config",
        "weft configuration for this job, on top of the WEFT_* environment: NAME=value pairs "
        "separated by semicolons or commas, e.g. \"RNDV_THRESH=32k;TRANSPORTS=self,shm\" (a comma "
        "starts a new pair only before NAME=; names as weft_info -c lists them, with or without "
        "WEFT_)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_mtl_weft_component.config);
    return OMPI_SUCCESS;
}

static int mtl_weft_component_open(void)
{
    return OMPI_SUCCESS;
}

static int mtl_weft_component_close(void)
{
    return OMPI_SUCCESS;
}

static int mtl_weft_component_query(mca_base_module_t **module, int *priority)
{
    *priority = mca_mtl_weft_component.priority;
    *module = (mca_base_module_t *)&mtl_weft.base;
    return OMPI_SUCCESS;
}

/** Close whatever of the weft objects is open (init failure and finalize). */
static int mtl_weft_close_objects(void)
{
    return ompi_weft_objs_close(&mtl_weft.w);
}

static mca_mtl_base_module_t *mtl_weft_component_init(bool enable_progress_threads,
                                                      bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    struct weft_info *info = NULL;
    mtl_weft.thread_multiple = enable_mpi_threads;
    const char *step = NULL;
    int rc = ompi_weft_objs_open(&mtl_weft.w, mca_mtl_weft_component.config, "mtl_weft_config",
                                 enable_mpi_threads, "mtl weft", &info, &step);
    if (0 != rc) {
        goto fail;
    }

    /* Publish our address: peers read it in add_procs (or lazily at first use). */
    unsigned char *addr = malloc(mtl_weft.w.addr_len);
    size_t addr_len = mtl_weft.w.addr_len;
    step = "weft_ep_getname";
    if (NULL == addr) {
        rc = -WEFT_ENOMEM;
        goto fail;
    }
    if (0 != (rc = weft_ep_getname(mtl_weft.w.ep, addr, &addr_len))) {
        free(addr);
        goto fail;
    }
    int orc;
    OPAL_MODEX_SEND(orc, OPAL_PMIX_GLOBAL, &mca_mtl_weft_component.super.mtl_version, addr,
                    addr_len);
    free(addr);
    if (OPAL_SUCCESS != orc) {
        opal_output(0, "mtl weft: publishing the endpoint address (modex send) failed: %d", orc);
        goto fail_quiet;
    }

    OBJ_CONSTRUCT(&mtl_weft.lock, opal_recursive_mutex_t);
    mtl_weft.deferred_head = NULL;
    mtl_weft.deferred_tail = NULL;
    orc = opal_progress_register(mtl_weft_progress);
    if (OPAL_SUCCESS != orc) {
        opal_output(0, "mtl weft: opal_progress_register failed: %d", orc);
        OBJ_DESTRUCT(&mtl_weft.lock);
        goto fail_quiet;
    }

    if (mca_mtl_weft_component.verbose >= 1) {
        opal_output(0,
                    "mtl weft: selected on rank %u (pid %d): transport %s, threading %s, "
                    "inject %zu B, max message %zu B, configuration \"%s\"",
                    (unsigned)OPAL_PROC_MY_NAME.vpid, (int)getpid(), info->transport,
                    enable_mpi_threads ? "safe (MPI_THREAD_MULTIPLE)" : "domain",
                    mtl_weft.w.inject_size, mtl_weft.w.max_msg_size,
                    NULL != mca_mtl_weft_component.config ? mca_mtl_weft_component.config : "");
    }
    weft_info_free(info);
    return &mtl_weft.base;

fail:
    opal_output_verbose(1, ompi_mtl_base_framework.framework_output,
                        "mtl weft: not available: %s failed: %s (%d)", step, weft_strerror(rc), rc);
    if (mca_mtl_weft_component.verbose >= 1) {
        opal_output(0, "mtl weft: not available: %s failed: %s (%d)", step, weft_strerror(rc), rc);
    }
fail_quiet:
    (void)mtl_weft_close_objects();
    weft_info_free(info);
    return NULL;
}

/* ------------------------------------------------------------------ procs */

int mtl_weft_add_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs, struct ompi_proc_t **procs)
{
    (void)mtl;
    int rc = OMPI_SUCCESS;
    /* Lazy additions may race in MPI_THREAD_MULTIPLE: insert each proc once. */
    OPAL_THREAD_LOCK(&mtl_weft.lock);
    for (size_t i = 0; i < nprocs; ++i) {
        ompi_proc_t *proc = procs[i];
        if (NULL != proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL]) {
            continue;
        }
        weft_addr_t wa;
        rc = ompi_weft_insert_proc(&mtl_weft.w, &mca_mtl_weft_component.super.mtl_version, proc,
                                   "mtl weft", "the weft MTL", &wa);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        /* Stored as index + 1 so that NULL keeps meaning "not added". */
        proc->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL] = (void *)(uintptr_t)(wa + 1);
        opal_output_verbose(10, ompi_mtl_base_framework.framework_output,
                            "mtl weft: added %s as weft address %" PRIu64 "%s",
                            OPAL_NAME_PRINT(proc->super.proc_name), (uint64_t)wa,
                            1 == nprocs ? "" : " (add_procs)");
    }
    OPAL_THREAD_UNLOCK(&mtl_weft.lock);
    return rc;
}

int mtl_weft_del_procs(struct mca_mtl_base_module_t *mtl, size_t nprocs, struct ompi_proc_t **procs)
{
    (void)mtl;
    OPAL_THREAD_LOCK(&mtl_weft.lock);
    for (size_t i = 0; i < nprocs; ++i) {
        if (NULL == procs[i]) {
            continue;
        }
        void *ep = procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL];
        if (NULL != ep) {
            weft_addr_t wa = (weft_addr_t)(uintptr_t)ep - 1;
            (void)weft_av_remove(mtl_weft.w.av, &wa, 1, 0);
            procs[i]->proc_endpoints[OMPI_PROC_ENDPOINT_TAG_MTL] = NULL;
        }
    }
    OPAL_THREAD_UNLOCK(&mtl_weft.lock);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ communicators */

int mtl_weft_add_comm(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm)
{
    (void)mtl;
    if (comm->c_contextid > (uint32_t)OMPI_WEFT_MAX_CONTEXTID) {
        opal_output(0, "mtl weft: communicator context id %u does not fit the %d-bit tag field",
                    comm->c_contextid, OMPI_WEFT_CID_BITS);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (ompi_comm_size(comm) > OMPI_WEFT_MAX_RANKS ||
        ompi_comm_remote_size(comm) > OMPI_WEFT_MAX_RANKS) {
        opal_output(0, "mtl weft: communicators of more than %d ranks are not supported",
                    OMPI_WEFT_MAX_RANKS);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    return OMPI_SUCCESS;
}

int mtl_weft_del_comm(struct mca_mtl_base_module_t *mtl, struct ompi_communicator_t *comm)
{
    (void)mtl;
    (void)comm;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ finalize */

int mtl_weft_finalize(struct mca_mtl_base_module_t *mtl)
{
    (void)mtl;
    opal_progress_unregister(mtl_weft_progress);

    /* Operations still deferred (e.g. the acknowledgement of a synchronous send)
     * would be lost with the endpoint: push them out, for a bounded time. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (NULL != mtl_weft.deferred_head) {
        mtl_weft_progress();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) {
            opal_output(0, "mtl weft: finalize: operations still waiting after 10 s are dropped");
            break;
        }
    }
    if (mca_mtl_weft_component.verbose >= 2) {
        opal_output(0, "mtl weft: rank %u: %lu operations waited in the deferred queue",
                    (unsigned)OPAL_PROC_MY_NAME.vpid, mtl_weft.deferred_count);
    }
    int rc = mtl_weft_close_objects();
    OBJ_DESTRUCT(&mtl_weft.lock);
    if (0 != rc) {
        opal_output(0, "mtl weft: closing the weft objects failed: %s", weft_strerror(rc));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}
