// The weft backend of weft_perf, over the public C API only (weft/weft.h):
// weft_getinfo with WEFT_TAGGED and a transport hint, manual progress,
// WEFT_THREAD_DOMAIN (no locks), a CQ of context-only entries (the smallest
// format), and the AV loaded through PMIx so that index == rank.
//
// Sends up to the inject size use weft_tinject: the buffer is reusable on return
// and there is no completion to read, which is what a UCX send that completes at
// once gives. Larger sends use weft_tsend and complete through the CQ. Receives
// are weft_trecv from any source (UCX's tag receive does not name a source
// either), completed by polling weft_cq_read.

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "weft/weft.h"

#include "perf/weft_perf.hpp"
#include "perf/weft_perf_kernels.hpp"

namespace weft::perf {

namespace {

void check_weft(long rc, const char *what)
{
    if (rc < 0) {
        fail("weft: %s failed: %s (%ld)", what, weft_strerror(static_cast<int>(-rc)), rc);
    }
}

class weft_backend final : public backend {
  public:
    weft_backend(bootstrap &boot, const backend_options &opt) : boot_(boot), opt_(opt) {}
    ~weft_backend() override = default;

    void init();

    [[nodiscard]] const char *name() const noexcept override { return "weft"; }
    [[nodiscard]] std::string describe() const override { return describe_; }
    [[nodiscard]] double run(const run_params &p) override { return kernels::run(*this, p); }
    void finalize() override;

    // Data path, called by the kernels.
    [[gnu::always_inline]] void post_recv(void *buf, std::size_t len, std::uint64_t tag, request &r)
    {
        r.done = false;
        r.expect = len;
        for (;;) {
            const ssize_t rc = weft_trecv(ep_, buf, len, nullptr, WEFT_ADDR_UNSPEC, tag, 0, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_trecv");
            }
            poll();
        }
    }

    [[gnu::always_inline]] void post_send(const void *buf, std::size_t len, std::uint64_t tag,
                                          request &r)
    {
        if (len <= inject_size_) {
            for (;;) {
                const ssize_t rc = weft_tinject(ep_, buf, len, peer_, tag);
                if (rc == 0) [[likely]] {
                    r.done = true;
                    return;
                }
                if (rc != -WEFT_EAGAIN) [[unlikely]] {
                    check_weft(rc, "weft_tinject");
                }
                poll();
            }
        }
        r.done = false;
        for (;;) {
            const ssize_t rc = weft_tsend(ep_, buf, len, nullptr, peer_, tag, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_tsend");
            }
            poll();
        }
    }

    [[gnu::always_inline]] void wait(request &r)
    {
        while (!r.done) {
            poll();
        }
    }

    void wait_all(request *r, std::size_t n)
    {
        for (std::size_t i = 0; i < n; ++i) {
            wait(r[i]);
        }
    }

  private:
    /// Read completions (driving progress) and mark their requests done.
    [[gnu::always_inline]] void poll()
    {
        weft_cq_entry ent[16];
        const ssize_t n = weft_cq_read(cq_, ent, 16);
        if (n > 0) [[likely]] {
            for (ssize_t i = 0; i < n; ++i) {
                static_cast<request *>(ent[i].op_context)->done = true;
            }
            return;
        }
        if (n != -WEFT_EAGAIN) [[unlikely]] {
            cq_error(n);
        }
    }

    [[noreturn, gnu::cold]] void cq_error(ssize_t rc);

    bootstrap &boot_;
    backend_options opt_;
    weft_info *info_ = nullptr;
    weft_fabric_t *fabric_ = nullptr;
    weft_domain_t *domain_ = nullptr;
    weft_cq_t *cq_ = nullptr;
    weft_av_t *av_ = nullptr;
    weft_ep_t *ep_ = nullptr;
    weft_addr_t peer_ = WEFT_ADDR_UNSPEC;
    std::size_t inject_size_ = 0;
    std::string describe_;
};

void weft_backend::cq_error(ssize_t rc)
{
    if (rc == -WEFT_EAVAIL) {
        weft_cq_err_entry e;
        std::memset(&e, 0, sizeof(e));
        const ssize_t got = weft_cq_readerr(cq_, &e, 0);
        if (got == 1) {
            fail(
                "weft: error completion: %s (%d), transport code %d, len %zu, olen %zu, "
                "tag 0x%llx: %s",
                weft_strerror(e.err), e.err, e.prov_errno, e.len, e.olen,
                static_cast<unsigned long long>(e.tag), e.err_str);
        }
        check_weft(got, "weft_cq_readerr");
        fail("weft: weft_cq_read said an error entry was available, weft_cq_readerr found none");
    }
    check_weft(rc, "weft_cq_read");
    fail("weft: weft_cq_read returned %zd", rc);
}

void weft_backend::init()
{
    weft_info *hints = weft_info_alloc();
    if (hints == nullptr) {
        fail("weft: weft_info_alloc returned NULL");
    }
    hints->caps = WEFT_TAGGED;
    std::snprintf(hints->transport, sizeof(hints->transport), "%s", opt_.weft_transport.c_str());
    hints->domain_attr.progress = WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading = WEFT_THREAD_DOMAIN;
    const int rc = weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info_);
    weft_info_free(hints);
    if (rc < 0) {
        fail("weft: weft_getinfo(caps=WEFT_TAGGED, transport=\"%s\") failed: %s (%d)",
             opt_.weft_transport.c_str(), weft_strerror(-rc), rc);
    }
    check_weft(weft_fabric_open(info_, nullptr, &fabric_), "weft_fabric_open");
    check_weft(weft_domain_open(fabric_, info_, &domain_), "weft_domain_open");

    // Room for every completion the kernels can have outstanding: a window of
    // sends plus two windows of receives (bibw) plus the ack and sync messages.
    weft_cq_attr cq_attr;
    std::memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.size = static_cast<std::size_t>(4 * opt_.window + 64);
    cq_attr.format = WEFT_CQ_FORMAT_CONTEXT;
    check_weft(weft_cq_open(domain_, &cq_attr, &cq_), "weft_cq_open");

    weft_av_attr av_attr;
    std::memset(&av_attr, 0, sizeof(av_attr));
    av_attr.count = 2;
    check_weft(weft_av_open(domain_, &av_attr, &av_), "weft_av_open");

    check_weft(weft_ep_open(domain_, info_, &ep_, nullptr), "weft_ep_open");
    check_weft(weft_ep_bind_cq(ep_, cq_, WEFT_TRANSMIT | WEFT_RECV), "weft_ep_bind_cq");
    check_weft(weft_ep_bind_av(ep_, av_), "weft_ep_bind_av");
    check_weft(weft_ep_enable(ep_), "weft_ep_enable");

    std::uint32_t rank = 0;
    std::uint32_t size = 0;
    check_weft(weft_av_load_pmix(av_, ep_, &rank, &size), "weft_av_load_pmix");
    if (rank != boot_.rank() || size != boot_.size()) {
        fail("weft: weft_av_load_pmix says rank %u of %u, PMIx said rank %u of %u", rank, size,
             boot_.rank(), boot_.size());
    }
    peer_ = 1 - rank;

    std::size_t inject = 0;
    std::size_t len = sizeof(inject);
    const int orc = weft_ep_getopt(ep_, WEFT_OPT_INJECT_SIZE, &inject, &len);
    inject_size_ = orc == 0 ? inject : info_->ep_attr.inject_size;

    // bibw has two windows of receives posted: with fewer receive slots both
    // ranks would wait for each other's sends while their own could not post.
    const std::size_t need_rx = static_cast<std::size_t>(2 * opt_.window + 2);
    if (info_->ep_attr.rx_size != 0 && info_->ep_attr.rx_size < need_rx) {
        fail(
            "weft: the endpoint takes %zu posted receives; a window of %d needs %zu "
            "(use a smaller --window)",
            info_->ep_attr.rx_size, opt_.window, need_rx);
    }

    char line[256];
    std::snprintf(line, sizeof(line),
                  "weft transport=%s domain=%s inject=%zu B tx_size=%zu rx_size=%zu",
                  info_->transport, info_->domain_name, inject_size_, info_->ep_attr.tx_size,
                  info_->ep_attr.rx_size);
    describe_ = line;

    // Both ranks' endpoints are usable before anything is timed.
    kernels::sync(*this);
}

void weft_backend::finalize()
{
    // Every run ended with a sync; the fence makes sure the peer is done too
    // before the shared resources go away.
    boot_.fence();
    if (ep_ != nullptr) {
        check_weft(weft_ep_close(ep_), "weft_ep_close");
        ep_ = nullptr;
    }
    if (av_ != nullptr) {
        check_weft(weft_av_close(av_), "weft_av_close");
        av_ = nullptr;
    }
    if (cq_ != nullptr) {
        check_weft(weft_cq_close(cq_), "weft_cq_close");
        cq_ = nullptr;
    }
    if (domain_ != nullptr) {
        check_weft(weft_domain_close(domain_), "weft_domain_close");
        domain_ = nullptr;
    }
    if (fabric_ != nullptr) {
        check_weft(weft_fabric_close(fabric_), "weft_fabric_close");
        fabric_ = nullptr;
    }
    weft_info_free(info_);
    info_ = nullptr;
}

}  // namespace

std::unique_ptr<backend> make_weft_backend(bootstrap &boot, const backend_options &opt)
{
    auto b = std::make_unique<weft_backend>(boot, opt);
    b->init();
    return b;
}

}  // namespace weft::perf
