// libFuzzer target: proto's active-message handlers (the channel's dispatcher
// and every module: tag, rndv, rma, amo), as a hostile peer on the same node
// would drive them. One shm endpoint is opened once; its shm transport also
// connects to the endpoint itself, and each input is sent on that connection
// as one active message: input byte 0 picks what the receiver does first (post
// a receive, peek, nothing), bytes 1-2 are the am word (id and flags), the
// rest the header and payload. Then the endpoint progresses, receives drain
// what became unexpected, and the CQ is emptied. Anything may be refused; the
// process must not crash, hang or leak (ASan, UBSan).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <sys/uio.h>
#include <vector>

#include "core/objects.hpp"
#include "test/fuzz/shm_endpoint.hpp"
#include "transport/iface.hpp"
#include "weft/weft.h"

namespace {

int contexts[5];  ///< of the receives an input posts

struct world : weft::fuzz::shm_endpoint {
    weft::transport::iface *tl = nullptr;
    weft::transport::conn_id conn = 0;
    std::vector<std::uint8_t> rbuf = std::vector<std::uint8_t>(1 << 16);
};

world *open_world()
{
    auto *w = new world;
    weft::fuzz::open_shm_endpoint(*w);
    w->tl = w->ep->tls.at(0).get();
    if (w->tl->connect(w->ep->addr, w->conn) != weft::base::status::ok) {
        std::abort();
    }
    return w;
}

void drain(world &w)
{
    weft_cq_tagged_entry e[16];
    weft_cq_err_entry err;
    for (int i = 0; i < 64; ++i) {
        const ssize_t n = weft_cq_read(w.cq, e, 16);
        if (n == -WEFT_EAVAIL) {
            (void)weft_cq_readerr(w.cq, &err, 0);
        } else if (n <= 0) {
            (void)weft_ep_progress(w.ep);
            if (weft_cq_read(w.cq, e, 16) == -WEFT_EAGAIN) {
                return;
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    static world *w = open_world();
    if (size < 3) {
        return 0;
    }
    const std::uint8_t mode = data[0];
    const auto am = static_cast<weft::transport::am_word>(data[1] | (data[2] << 8));
    const std::uint8_t *payload = data + 3;
    std::size_t len = size - 3;
    if ((mode & 3) == 1) {
        // A receive waiting: the message may match it.
        (void)weft_trecv(w->ep, w->rbuf.data(), w->rbuf.size(), nullptr, WEFT_ADDR_UNSPEC, 0, ~0ULL,
                         &contexts[0]);
    }
    len = std::min(len, w->tl->attr().max_bcopy);
    const struct iovec iov {
        const_cast<std::uint8_t *>(payload), len
    };
    if (weft::transport::send_bcopy(w->tl, w->conn, am, nullptr, 0, &iov, 1, 0, len) !=
        weft::base::status::ok) {
        drain(*w);
        return 0;
    }
    for (int i = 0; i < 4; ++i) {
        (void)weft_ep_progress(w->ep);
    }
    if ((mode & 3) == 2) {
        weft_msg_tagged peek{nullptr, nullptr, 0, WEFT_ADDR_UNSPEC, 0, ~0ULL, nullptr, 0};
        (void)weft_trecvmsg(w->ep, &peek, WEFT_PEEK);
    }
    // Whatever is unexpected now is received, and receives left waiting are
    // cancelled (so state does not pile up from one input to the next).
    for (int i = 1; i < 5; ++i) {
        (void)weft_trecv(w->ep, w->rbuf.data(), w->rbuf.size(), nullptr, WEFT_ADDR_UNSPEC, 0, ~0ULL,
                         &contexts[i]);
    }
    drain(*w);
    for (int &c : contexts) {
        while (weft_cancel(w->ep, &c) == 0) {
        }
    }
    drain(*w);
    return 0;
}
