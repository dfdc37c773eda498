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
//
// One-sided: the target region is registered with weft_mr_reg (remote read,
// write, atomic) -- or, with --alloc, allocated with weft_mr_alloc, memory the
// peer maps -- its packed key (weft_mr_pack_key) and address go to the peer
// through PMIx, which unpacks it with weft_rkey_unpack. Puts up to the inject
// size use weft_inject_put (no completion to read, as a UCX put that completes
// at once); larger ones weft_put. Gets are weft_get, atomics weft_fetch_atomic
// (WEFT_SUM) and weft_compare_atomic on WEFT_UINT64; their completions come
// through the same CQ. flush is weft_ep_flush(ep, -1).

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
    [[nodiscard]] double run(const run_params &p) override
    {
        if (alloc_ == nullptr) {
            return kernels::run(*this, p);
        }
        // --alloc: the kernels see weft's region as the target region.
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

    // One-sided data path (map_memory first).
    [[gnu::always_inline]] void put(const void *buf, std::size_t len, std::size_t roff, request &r)
    {
        const std::uint64_t addr = peer_base_ + roff;
        if (len <= inject_size_) {
            for (;;) {
                const ssize_t rc = weft_inject_put(ep_, buf, len, addr, rkey_);
                if (rc == 0) [[likely]] {
                    r.done = true;
                    return;
                }
                if (rc != -WEFT_EAGAIN) [[unlikely]] {
                    check_weft(rc, "weft_inject_put");
                }
                poll();
            }
        }
        r.done = false;
        for (;;) {
            const ssize_t rc = weft_put(ep_, buf, len, send_desc_, addr, rkey_, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_put");
            }
            poll();
        }
    }

    [[gnu::always_inline]] void get(void *buf, std::size_t len, std::size_t roff, request &r)
    {
        r.done = false;
        for (;;) {
            const ssize_t rc = weft_get(ep_, buf, len, get_desc_, peer_base_ + roff, rkey_, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_get");
            }
            poll();
        }
    }

    [[gnu::always_inline]] void fetch_add(const std::uint64_t *add, std::uint64_t *old,
                                          std::size_t roff, request &r)
    {
        r.done = false;
        for (;;) {
            const ssize_t rc = weft_fetch_atomic(ep_, add, 1, old, peer_base_ + roff, rkey_,
                                                 WEFT_UINT64, WEFT_SUM, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_fetch_atomic");
            }
            poll();
        }
    }

    [[gnu::always_inline]] void compare_swap(const std::uint64_t *compare,
                                             const std::uint64_t *swap, std::uint64_t *old,
                                             std::size_t roff, request &r)
    {
        r.done = false;
        for (;;) {
            const ssize_t rc = weft_compare_atomic(ep_, swap, compare, 1, old, peer_base_ + roff,
                                                   rkey_, WEFT_UINT64, &r);
            if (rc == 0) [[likely]] {
                return;
            }
            if (rc != -WEFT_EAGAIN) [[unlikely]] {
                check_weft(rc, "weft_compare_atomic");
            }
            poll();
        }
    }

    void flush() { check_weft(weft_ep_flush(ep_, -1), "weft_ep_flush"); }

    [[gnu::always_inline]] void progress() { poll(); }

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
    // One-sided (map_memory).
    weft_mr_t *target_mr_ = nullptr;  ///< buffers::recv[0], the peer's target
    weft_mr_t *send_mr_ = nullptr;    ///< buffers::send, the source of puts
    weft_mr_t *get_mr_ = nullptr;     ///< buffers::recv[1], where gets land
    void *send_desc_ = nullptr;
    void *get_desc_ = nullptr;
    weft_rkey_t *rkey_ = nullptr;  ///< the peer's target region
    std::uint64_t peer_base_ = 0;  ///< its address in the peer
    char *alloc_ = nullptr;        ///< --alloc: the target region weft allocated
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
    hints->caps = WEFT_TAGGED | (opt_.one_sided ? WEFT_RMA | WEFT_ATOMIC : 0);
    std::snprintf(hints->transport, sizeof(hints->transport), "%s", opt_.weft_transport.c_str());
    hints->domain_attr.progress = WEFT_PROGRESS_MANUAL;
    hints->domain_attr.threading = WEFT_THREAD_DOMAIN;
    const int rc = weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info_);
    weft_info_free(hints);
    if (rc < 0) {
        fail("weft: weft_getinfo(caps=WEFT_TAGGED%s, transport=\"%s\") failed: %s (%d)",
             opt_.one_sided ? "|WEFT_RMA|WEFT_ATOMIC" : "", opt_.weft_transport.c_str(),
             weft_strerror(-rc), rc);
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

/// What map_memory sends the peer: the target region's address, length and
/// packed key.
struct weft_key_msg {
    std::uint64_t base;
    std::uint64_t len;
    std::uint64_t key_len;
    unsigned char key[WEFT_MR_KEY_MAX];
};

void weft_backend::map_memory(const buffers &buf)
{
    constexpr std::uint64_t target_access = WEFT_ACCESS_LOCAL | WEFT_ACCESS_REMOTE_READ |
                                            WEFT_ACCESS_REMOTE_WRITE | WEFT_ACCESS_REMOTE_ATOMIC;
    if (opt_.alloc) {
        void *at = nullptr;
        check_weft(weft_mr_alloc(domain_, buf.region_len, target_access, 0, &at, &target_mr_),
                   "weft_mr_alloc (target region)");
        alloc_ = static_cast<char *>(at);
        std::memset(alloc_, 0, buf.region_len);  // touched, as the driver's buffers are
    } else {
        check_weft(weft_mr_reg(domain_, buf.recv[0], buf.region_len, target_access, 0, &target_mr_),
                   "weft_mr_reg (target region)");
    }
    check_weft(weft_mr_reg(domain_, buf.send, buf.region_len, WEFT_ACCESS_LOCAL, 0, &send_mr_),
               "weft_mr_reg (put source)");
    check_weft(weft_mr_reg(domain_, buf.recv[1], buf.region_len, WEFT_ACCESS_LOCAL, 0, &get_mr_),
               "weft_mr_reg (get destination)");
    send_desc_ = weft_mr_desc(send_mr_);
    get_desc_ = weft_mr_desc(get_mr_);

    weft_key_msg mine;
    std::memset(&mine, 0, sizeof(mine));
    mine.base = reinterpret_cast<std::uintptr_t>(alloc_ != nullptr ? alloc_ : buf.recv[0]);
    mine.len = buf.region_len;
    std::size_t klen = sizeof(mine.key);
    check_weft(weft_mr_pack_key(target_mr_, mine.key, &klen), "weft_mr_pack_key");
    mine.key_len = klen;
    const std::vector<char> blob = boot_.exchange("weft_perf.weft.rkey", &mine, sizeof(mine),
                                                  static_cast<std::uint32_t>(peer_));
    weft_key_msg theirs;
    if (blob.size() != sizeof(theirs)) {
        fail("weft: the peer's key message has %zu bytes, expected %zu", blob.size(),
             sizeof(theirs));
    }
    std::memcpy(&theirs, blob.data(), sizeof(theirs));
    if (theirs.key_len > sizeof(theirs.key) || theirs.len < buf.region_len) {
        fail("weft: the peer's key message is malformed (key %llu bytes, region %llu bytes)",
             static_cast<unsigned long long>(theirs.key_len),
             static_cast<unsigned long long>(theirs.len));
    }
    check_weft(weft_rkey_unpack(ep_, peer_, theirs.key, theirs.key_len, &rkey_),
               "weft_rkey_unpack");
    peer_base_ = theirs.base;

    char line[128];
    std::snprintf(line, sizeof(line), ", rma: key %zu B, put inject <= %zu B%s", klen, inject_size_,
                  alloc_ != nullptr ? ", target region from weft_mr_alloc (--alloc)" : "");
    describe_ += line;
}

void weft_backend::finalize()
{
    // Every run ended with a sync; the fence makes sure the peer is done too
    // before the shared resources go away.
    boot_.fence();
    if (rkey_ != nullptr) {
        check_weft(weft_rkey_release(rkey_), "weft_rkey_release");
        rkey_ = nullptr;
    }
    for (weft_mr_t **mr : {&target_mr_, &send_mr_, &get_mr_}) {
        if (*mr != nullptr) {
            check_weft(weft_mr_close(*mr), "weft_mr_close");
            *mr = nullptr;
        }
    }
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
