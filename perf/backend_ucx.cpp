// The UCX backend of weft_perf: the UCP tag API (ucp_tag_send_nbx /
// ucp_tag_recv_nbx) on one worker with one endpoint to the peer, progressed by
// ucp_worker_progress. Completion callbacks mark the harness's request done;
// operations that complete at once (NULL from the _nbx call) produce no request.
// Transports are UCX's choice unless UCX_TLS says otherwise (on a host without
// RDMA: shared memory, posix or sysv, plus cma for rendezvous).
//
// One-sided: the context adds UCP_FEATURE_RMA | UCP_FEATURE_AMO64 (only when a
// one-sided benchmark runs). The target region is mapped with ucp_mem_map
// (the driver's memory, not allocated by UCX; with --alloc, memory ucp_mem_map
// allocates, which posix/sysv map at the peer), its key packed with
// ucp_rkey_pack and sent with its address through PMIx, as the worker address
// is; the peer unpacks it with ucp_ep_rkey_unpack. The put source and get
// destination are mapped too and passed as memh. Operations: ucp_put_nbx,
// ucp_get_nbx, ucp_atomic_op_nbx (UCP_ATOMIC_OP_ADD with a reply buffer,
// UCP_ATOMIC_OP_CSWAP) on 64-bit values, and ucp_ep_flush_nbx.

#include "config.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "perf/weft_perf.hpp"

#ifdef WEFT_HAVE_UCX

#include <ucp/api/ucp.h>

#include "perf/weft_perf_kernels.hpp"

namespace weft::perf {

namespace {

void check_ucs(ucs_status_t st, const char *what)
{
    if (st != UCS_OK) {
        fail("ucx: %s failed: %s (%d)", what, ucs_status_string(st), static_cast<int>(st));
    }
}

void send_done(void * /*req*/, ucs_status_t st, void *user)
{
    if (st != UCS_OK) [[unlikely]] {
        fail("ucx: send completed with %s (%d)", ucs_status_string(st), static_cast<int>(st));
    }
    static_cast<request *>(user)->done = true;
}

void rma_done(void * /*req*/, ucs_status_t st, void *user)
{
    if (st != UCS_OK) [[unlikely]] {
        fail("ucx: one-sided operation completed with %s (%d)", ucs_status_string(st),
             static_cast<int>(st));
    }
    static_cast<request *>(user)->done = true;
}

void recv_done(void * /*req*/, ucs_status_t st, const ucp_tag_recv_info_t *info, void *user)
{
    auto *r = static_cast<request *>(user);
    if (st != UCS_OK) [[unlikely]] {
        fail("ucx: receive completed with %s (%d)", ucs_status_string(st), static_cast<int>(st));
    }
    if (info->length != r->expect) [[unlikely]] {
        fail("ucx: received %zu bytes, expected %zu", info->length, r->expect);
    }
    r->done = true;
}

class ucx_backend final : public backend {
  public:
    ucx_backend(bootstrap &boot, const backend_options &opt) : boot_(boot), opt_(opt) {}
    ~ucx_backend() override = default;

    void init();

    [[nodiscard]] const char *name() const noexcept override { return "ucx"; }
    [[nodiscard]] std::string describe() const override { return describe_; }
    [[nodiscard]] double run(const run_params &p) override
    {
        if (alloc_ == nullptr) {
            return kernels::run(*this, p);
        }
        // --alloc: the kernels see UCX's region as the target region.
        buffers b = *p.buf;
        b.recv[0] = alloc_;
        run_params q = p;
        q.buf = &b;
        return kernels::run(*this, q);
    }
    void map_memory(const buffers &buf) override;
    void finalize() override;

    // Data path, called by the kernels.
    [[gnu::always_inline]] void post_recv(void *buf, std::size_t len, std::uint64_t tag, request &r)
    {
        // UCX 1.13.1 does not fill recv_info on immediate completion (although
        // ucp.h says it does): a sentinel tells whether it was written.
        ucp_tag_recv_info_t info;
        info.length = not_written;
        ucp_request_param_t prm;
        prm.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
        prm.cb.recv = recv_done;
        prm.user_data = &r;
        prm.recv_info.tag_info = &info;
        r.done = false;
        r.expect = len;
        r.handle = nullptr;
        ucs_status_ptr_t sp = ucp_tag_recv_nbx(worker_, buf, len, tag, ~ucp_tag_t{0}, &prm);
        if (sp == nullptr) {
            // Matched an unexpected message and completed at once: no callback.
            if (info.length != not_written && info.length != len) [[unlikely]] {
                fail("ucx: received %zu bytes, expected %zu", info.length, len);
            }
            r.done = true;
        } else if (UCS_PTR_IS_ERR(sp)) [[unlikely]] {
            check_ucs(UCS_PTR_STATUS(sp), "ucp_tag_recv_nbx");
        } else {
            r.handle = sp;
        }
    }

    [[gnu::always_inline]] void post_send(const void *buf, std::size_t len, std::uint64_t tag,
                                          request &r)
    {
        ucp_request_param_t prm;
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        prm.cb.send = send_done;
        prm.user_data = &r;
        r.done = false;
        r.handle = nullptr;
        ucs_status_ptr_t sp = ucp_tag_send_nbx(ep_, buf, len, tag, &prm);
        if (sp == nullptr) {
            r.done = true;  // completed at once (short or buffered copy)
        } else if (UCS_PTR_IS_ERR(sp)) [[unlikely]] {
            check_ucs(UCS_PTR_STATUS(sp), "ucp_tag_send_nbx");
        } else {
            r.handle = sp;
        }
    }

    [[gnu::always_inline]] void wait(request &r)
    {
        while (!r.done) {
            (void)ucp_worker_progress(worker_);
        }
        if (r.handle != nullptr) {
            ucp_request_free(r.handle);
            r.handle = nullptr;
        }
    }

    void wait_all(request *r, std::size_t n)
    {
        for (std::size_t i = 0; i < n; ++i) {
            wait(r[i]);
        }
    }

    // One-sided data path (map_memory first).
    [[gnu::always_inline]] void put(const void *buf, std::size_t len, std::size_t roff, request &r)
    {
        ucp_request_param_t prm;
        prm.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
        prm.cb.send = rma_done;
        prm.user_data = &r;
        prm.memh = send_memh_;
        r.done = false;
        r.handle = nullptr;
        start(ucp_put_nbx(ep_, buf, len, peer_base_ + roff, rkey_, &prm), r, "ucp_put_nbx");
    }

    [[gnu::always_inline]] void get(void *buf, std::size_t len, std::size_t roff, request &r)
    {
        ucp_request_param_t prm;
        prm.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
        prm.cb.send = rma_done;
        prm.user_data = &r;
        prm.memh = get_memh_;
        r.done = false;
        r.handle = nullptr;
        start(ucp_get_nbx(ep_, buf, len, peer_base_ + roff, rkey_, &prm), r, "ucp_get_nbx");
    }

    [[gnu::always_inline]] void fetch_add(const std::uint64_t *add, std::uint64_t *old,
                                          std::size_t roff, request &r)
    {
        ucp_request_param_t prm;
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                           UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        prm.cb.send = rma_done;
        prm.user_data = &r;
        prm.datatype = ucp_dt_make_contig(8);
        prm.reply_buffer = old;
        r.done = false;
        r.handle = nullptr;
        start(ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_ADD, add, 1, peer_base_ + roff, rkey_, &prm), r,
              "ucp_atomic_op_nbx(ADD)");
    }

    [[gnu::always_inline]] void compare_swap(const std::uint64_t *compare,
                                             const std::uint64_t *swap, std::uint64_t *old,
                                             std::size_t roff, request &r)
    {
        // UCP_ATOMIC_OP_CSWAP: the reply buffer holds the new value going in
        // and the old one coming out.
        *old = *swap;
        ucp_request_param_t prm;
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                           UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        prm.cb.send = rma_done;
        prm.user_data = &r;
        prm.datatype = ucp_dt_make_contig(8);
        prm.reply_buffer = old;
        r.done = false;
        r.handle = nullptr;
        start(
            ucp_atomic_op_nbx(ep_, UCP_ATOMIC_OP_CSWAP, compare, 1, peer_base_ + roff, rkey_, &prm),
            r, "ucp_atomic_op_nbx(CSWAP)");
    }

    void flush()
    {
        ucp_request_param_t prm;
        prm.op_attr_mask = 0;
        ucs_status_ptr_t sp = ucp_ep_flush_nbx(ep_, &prm);
        if (sp == nullptr) {
            return;
        }
        if (UCS_PTR_IS_ERR(sp)) [[unlikely]] {
            check_ucs(UCS_PTR_STATUS(sp), "ucp_ep_flush_nbx");
        }
        ucs_status_t st;
        do {
            (void)ucp_worker_progress(worker_);
            st = ucp_request_check_status(sp);
        } while (st == UCS_INPROGRESS);
        ucp_request_free(sp);
        check_ucs(st, "ucp_ep_flush_nbx (completion)");
    }

    [[gnu::always_inline]] void progress() { (void)ucp_worker_progress(worker_); }

  private:
    static constexpr std::size_t not_written = ~std::size_t{0};

    /// The return of a one-sided _nbx call: done at once (no callback then),
    /// failed, or a request whose callback marks r done.
    [[gnu::always_inline]] static void start(ucs_status_ptr_t sp, request &r, const char *what)
    {
        if (sp == nullptr) {
            r.done = true;
        } else if (UCS_PTR_IS_ERR(sp)) [[unlikely]] {
            check_ucs(UCS_PTR_STATUS(sp), what);
        } else {
            r.handle = sp;
        }
    }

    void describe_lanes();

    bootstrap &boot_;
    backend_options opt_;
    ucp_context_h ctx_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    ucp_ep_h ep_ = nullptr;
    std::string describe_;
    // One-sided (map_memory).
    ucp_mem_h target_memh_ = nullptr;  ///< buffers::recv[0], the peer's target
    ucp_mem_h send_memh_ = nullptr;    ///< buffers::send, the source of puts
    ucp_mem_h get_memh_ = nullptr;     ///< buffers::recv[1], where gets land
    ucp_rkey_h rkey_ = nullptr;        ///< the peer's target region
    std::uint64_t peer_base_ = 0;      ///< its address in the peer
    char *alloc_ = nullptr;            ///< --alloc: the target region UCX allocated
};

void ucx_backend::init()
{
    ucp_config_t *cfg = nullptr;
    check_ucs(ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    if (opt_.one_sided) {
        params.features |= UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    }
    params.estimated_num_eps = 1;
    const ucs_status_t st = ucp_init(&params, cfg, &ctx_);
    ucp_config_release(cfg);
    check_ucs(st, "ucp_init");

    ucp_worker_params_t wp;
    std::memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check_ucs(ucp_worker_create(ctx_, &wp, &worker_), "ucp_worker_create");

    ucp_address_t *addr = nullptr;
    std::size_t addr_len = 0;
    check_ucs(ucp_worker_get_address(worker_, &addr, &addr_len), "ucp_worker_get_address");
    const std::uint32_t peer = 1 - boot_.rank();
    std::vector<char> peer_addr = boot_.exchange("weft_perf.ucx.addr", addr, addr_len, peer);
    ucp_worker_release_address(worker_, addr);

    ucp_ep_params_t ep;
    std::memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t *>(peer_addr.data());
    check_ucs(ucp_ep_create(worker_, &ep, &ep_), "ucp_ep_create");

    // Wire up both directions before anything is timed.
    kernels::sync(*this);
    describe_lanes();
}

// UCX's choice of transports for this endpoint, from ucp_ep_print_info: the
// lines that name a lane ("lane[0]:  1:posix/memory.0 md[1] ... am ..."). The
// whole dump is printed with --verbose.
void ucx_backend::describe_lanes()
{
    char *text = nullptr;
    std::size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == nullptr) {
        describe_ = std::string("UCX ") + ucp_get_version_string();
        return;
    }
    ucp_ep_print_info(ep_, f);
    std::fclose(f);
    std::string lanes;
    const std::string all(text, len);
    std::free(text);
    std::size_t pos = 0;
    while (pos < all.size()) {
        std::size_t eol = all.find('\n', pos);
        if (eol == std::string::npos) {
            eol = all.size();
        }
        const std::string line = all.substr(pos, eol - pos);
        pos = eol + 1;
        const std::size_t l = line.find("lane[");
        if (l == std::string::npos) {
            continue;
        }
        // The transport/device token follows "N:" after the lane index.
        const std::size_t colon = line.find(':', line.find(']', l));
        std::size_t start = line.find_first_not_of(' ', colon + 1);
        start = line.find(':', start);
        if (colon == std::string::npos || start == std::string::npos) {
            continue;
        }
        const std::size_t end = line.find(' ', start + 1);
        std::string tl = line.substr(start + 1, end - start - 1);
        if (opt_.one_sided) {
            // What the lane is for: the words after "-> md[N]/tl/dev", without
            // their "#N" ("sysv/memory.0[amo am am_bw]").
            const std::size_t arrow = line.find("->");
            const std::size_t dev = arrow == std::string::npos ? arrow : line.find(' ', arrow + 3);
            std::string uses;
            std::size_t w = dev == std::string::npos ? dev : line.find_first_not_of(' ', dev);
            while (w != std::string::npos) {
                std::size_t we = line.find(' ', w);
                std::string word = line.substr(w, we == std::string::npos ? we : we - w);
                word = word.substr(0, word.find('#'));
                uses += (uses.empty() ? "" : " ") + word;
                w = we == std::string::npos ? we : line.find_first_not_of(' ', we);
            }
            tl += "[" + uses + "]";
        }
        if (lanes.find(tl) == std::string::npos) {
            lanes += (lanes.empty() ? "" : ",") + tl;
        }
    }
    const char *env_tls = std::getenv("UCX_TLS");
    describe_ = std::string("UCX ") + ucp_get_version_string() +
                ", UCX_TLS=" + (env_tls != nullptr ? env_tls : "(unset: UCX's choice)") +
                ", lanes: " + (lanes.empty() ? "?" : lanes);
    if (opt_.verbose && boot_.rank() == 0) {
        std::fwrite(all.data(), 1, all.size(), stdout);
    }
}

/// The header of what map_memory sends the peer; the packed key follows.
struct ucx_key_hdr {
    std::uint64_t base;
    std::uint64_t len;
};

void ucx_backend::map_memory(const buffers &buf)
{
    const auto map = [&](char *at, const char *what) {
        ucp_mem_map_params_t mp;
        std::memset(&mp, 0, sizeof(mp));
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address = at;
        mp.length = buf.region_len;
        ucp_mem_h memh = nullptr;
        check_ucs(ucp_mem_map(ctx_, &mp, &memh), what);
        return memh;
    };
    if (opt_.alloc) {
        ucp_mem_map_params_t mp;
        std::memset(&mp, 0, sizeof(mp));
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.length = buf.region_len;
        mp.flags = UCP_MEM_MAP_ALLOCATE;
        check_ucs(ucp_mem_map(ctx_, &mp, &target_memh_),
                  "ucp_mem_map (allocate the target region)");
        ucp_mem_attr_t attr;
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
        check_ucs(ucp_mem_query(target_memh_, &attr), "ucp_mem_query");
        if (attr.length < buf.region_len) {
            fail("ucx: ucp_mem_map allocated %zu bytes, asked for %zu", attr.length,
                 buf.region_len);
        }
        alloc_ = static_cast<char *>(attr.address);
        std::memset(alloc_, 0, buf.region_len);  // touched, as the driver's buffers are
    } else {
        target_memh_ = map(buf.recv[0], "ucp_mem_map (target region)");
    }
    send_memh_ = map(buf.send, "ucp_mem_map (put source)");
    get_memh_ = map(buf.recv[1], "ucp_mem_map (get destination)");

    void *packed = nullptr;
    std::size_t packed_len = 0;
    check_ucs(ucp_rkey_pack(ctx_, target_memh_, &packed, &packed_len), "ucp_rkey_pack");
    std::vector<char> mine(sizeof(ucx_key_hdr) + packed_len);
    const ucx_key_hdr h{reinterpret_cast<std::uintptr_t>(alloc_ != nullptr ? alloc_ : buf.recv[0]),
                        buf.region_len};
    std::memcpy(mine.data(), &h, sizeof(h));
    std::memcpy(mine.data() + sizeof(h), packed, packed_len);
    ucp_rkey_buffer_release(packed);
    const std::uint32_t peer = 1 - boot_.rank();
    const std::vector<char> theirs =
        boot_.exchange("weft_perf.ucx.rkey", mine.data(), mine.size(), peer);
    ucx_key_hdr th;
    if (theirs.size() <= sizeof(th)) {
        fail("ucx: the peer's key message has %zu bytes", theirs.size());
    }
    std::memcpy(&th, theirs.data(), sizeof(th));
    if (th.len < buf.region_len) {
        fail("ucx: the peer's target region has %llu bytes, expected %zu",
             static_cast<unsigned long long>(th.len), buf.region_len);
    }
    check_ucs(ucp_ep_rkey_unpack(ep_, theirs.data() + sizeof(th), &rkey_), "ucp_ep_rkey_unpack");
    peer_base_ = th.base;
    // The lanes of the endpoint now that it has RMA and AMO lanes too.
    describe_lanes();
    if (alloc_ != nullptr) {
        describe_ += ", target region allocated by UCX (--alloc)";
    }
}

void ucx_backend::finalize()
{
    if (rkey_ != nullptr) {
        ucp_rkey_destroy(rkey_);
        rkey_ = nullptr;
    }
    if (ep_ != nullptr) {
        // Flush mode: UCX 1.13 refuses UCP_EP_CLOSE_FLAG_FORCE on an endpoint
        // without peer error handling. Every run ended with a sync, so nothing is
        // in flight and the flush is local on shared memory.
        ucp_request_param_t prm;
        prm.op_attr_mask = 0;
        ucs_status_ptr_t sp = ucp_ep_close_nbx(ep_, &prm);
        if (UCS_PTR_IS_ERR(sp)) {
            check_ucs(UCS_PTR_STATUS(sp), "ucp_ep_close_nbx");
        } else if (sp != nullptr) {
            ucs_status_t st;
            do {
                (void)ucp_worker_progress(worker_);
                st = ucp_request_check_status(sp);
            } while (st == UCS_INPROGRESS);
            ucp_request_free(sp);
            check_ucs(st, "closing the endpoint");
        }
        ep_ = nullptr;
    }
    // Keep the worker (and its shared memory) until the peer closed its endpoint too.
    boot_.fence();
    for (ucp_mem_h *m : {&target_memh_, &send_memh_, &get_memh_}) {
        if (*m != nullptr) {
            check_ucs(ucp_mem_unmap(ctx_, *m), "ucp_mem_unmap");
            *m = nullptr;
        }
    }
    if (worker_ != nullptr) {
        ucp_worker_destroy(worker_);
        worker_ = nullptr;
    }
    if (ctx_ != nullptr) {
        ucp_cleanup(ctx_);
        ctx_ = nullptr;
    }
}

}  // namespace

std::unique_ptr<backend> make_ucx_backend(bootstrap &boot, const backend_options &opt)
{
    auto b = std::make_unique<ucx_backend>(boot, opt);
    b->init();
    return b;
}

}  // namespace weft::perf

#else

namespace weft::perf {

std::unique_ptr<backend> make_ucx_backend(bootstrap & /*boot*/, const backend_options & /*opt*/)
{
    return nullptr;
}

}  // namespace weft::perf

#endif
