// The UCX backend of weft_perf: the UCP tag API (ucp_tag_send_nbx /
// ucp_tag_recv_nbx) on one worker with one endpoint to the peer, progressed by
// ucp_worker_progress. Completion callbacks mark the harness's request done;
// operations that complete at once (NULL from the _nbx call) produce no request.
// Transports are UCX's choice unless UCX_TLS says otherwise (on a host without
// RDMA: shared memory, posix or sysv, plus cma for rendezvous).

#include "config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

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
    [[nodiscard]] double run(const run_params &p) override { return kernels::run(*this, p); }
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

  private:
    static constexpr std::size_t not_written = ~std::size_t{0};

    void describe_lanes();

    bootstrap &boot_;
    backend_options opt_;
    ucp_context_h ctx_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    ucp_ep_h ep_ = nullptr;
    std::string describe_;
};

void ucx_backend::init()
{
    ucp_config_t *cfg = nullptr;
    check_ucs(ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
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
        const std::string tl = line.substr(start + 1, end - start - 1);
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

void ucx_backend::finalize()
{
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
