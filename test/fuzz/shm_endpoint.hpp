#pragma once
// What fuzz_proto and fuzz_shm share: one shm endpoint opened through the
// public API, with its own address inserted into its AV (index 0), kept for
// the whole fuzzing run. Any failure aborts: without it nothing is fuzzed.
#include <cstdio>
#include <cstdlib>

#include "weft/weft.h"

namespace weft::fuzz {

struct shm_endpoint {
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
    weft_addr_t me = 0;
};

inline void must(int rc, const char *what)
{
    if (rc < 0) {
        std::fprintf(stderr, "fuzz: %s failed: %s\n", what, weft_strerror(rc));
        std::abort();
    }
}

inline void open_shm_endpoint(shm_endpoint &s)
{
    weft_info *hints = weft_info_alloc();
    std::snprintf(hints->transport, sizeof(hints->transport), "shm");
    hints->caps = WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV;
    weft_info *info = nullptr;
    must(weft_getinfo(WEFT_API_VERSION, hints, nullptr, &info), "weft_getinfo(shm)");
    must(weft_fabric_open(info, nullptr, &s.fabric), "fabric");
    must(weft_domain_open(s.fabric, info, &s.domain), "domain");
    const weft_cq_attr cq_attr{0, WEFT_CQ_FORMAT_TAGGED};
    must(weft_cq_open(s.domain, &cq_attr, &s.cq), "cq");
    must(weft_av_open(s.domain, nullptr, &s.av), "av");
    must(weft_ep_open(s.domain, info, &s.ep, nullptr), "ep");
    must(weft_ep_bind_cq(s.ep, s.cq, WEFT_TRANSMIT | WEFT_RECV), "bind cq");
    must(weft_ep_bind_av(s.ep, s.av), "bind av");
    must(weft_ep_enable(s.ep), "enable");
    std::uint8_t addr[256];
    std::size_t len = sizeof(addr);
    must(weft_ep_getname(s.ep, addr, &len), "getname");
    must(weft_av_insert(s.av, addr, 1, &s.me, 0) == 1 ? 0 : -WEFT_EINVAL, "av insert");
    weft_info_free(info);
    weft_info_free(hints);
}

}  // namespace weft::fuzz
