/* The public header is C: this program is compiled as C11 and links the
 * library through its C ABI only. It sends one tagged message to itself. */
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

#define CHECK(call)                                                       \
    do {                                                                  \
        long rc_ = (long)(call);                                          \
        if (rc_ < 0) {                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    weft_strerror((int)rc_));                             \
            return 1;                                                     \
        }                                                                 \
    } while (0)

int main(void)
{
    struct weft_info *hints = weft_info_alloc(), *info = NULL;
    strcpy(hints->transport, "self");
    hints->caps = WEFT_TAGGED;
    CHECK(weft_getinfo(WEFT_API_VERSION, hints, NULL, &info));
    weft_fabric_t *fabric;
    weft_domain_t *domain;
    weft_cq_t *cq;
    weft_av_t *av;
    weft_ep_t *ep;
    struct weft_cq_attr cq_attr = {.size = 16, .format = WEFT_CQ_FORMAT_TAGGED};
    CHECK(weft_fabric_open(info, NULL, &fabric));
    CHECK(weft_domain_open(fabric, info, &domain));
    CHECK(weft_cq_open(domain, &cq_attr, &cq));
    CHECK(weft_av_open(domain, NULL, &av));
    CHECK(weft_ep_open(domain, info, &ep, NULL));
    CHECK(weft_ep_bind_cq(ep, cq, WEFT_TRANSMIT | WEFT_RECV));
    CHECK(weft_ep_bind_av(ep, av));
    CHECK(weft_ep_enable(ep));
    char addr[256];
    size_t len = sizeof(addr);
    weft_addr_t self;
    CHECK(weft_ep_getname(ep, addr, &len));
    CHECK(weft_av_insert(av, addr, 1, &self, 0));
    char in[6] = {0};
    int rctx;
    CHECK(weft_trecv(ep, in, sizeof(in), NULL, WEFT_ADDR_UNSPEC, 9, 0, &rctx));
    CHECK(weft_tsend(ep, "weft!", 6, NULL, self, 9, NULL));
    struct weft_cq_tagged_entry e[2];
    ssize_t n = 0;
    while (n < 2) {
        ssize_t r = weft_cq_read(cq, e + n, 2 - (size_t)n);
        if (r == -WEFT_EAGAIN) {
            continue;
        }
        CHECK(r);
        n += r;
    }
    /* The send completes when it is sent, the receive when progress delivers it. */
    const struct weft_cq_tagged_entry *r = e[0].op_context == &rctx ? &e[0] : &e[1];
    if (strcmp(in, "weft!") != 0 || r->op_context != &rctx || r->tag != 9 || r->len != 6) {
        fprintf(stderr, "wrong message or completion\n");
        return 1;
    }
    CHECK(weft_ep_close(ep));
    CHECK(weft_av_close(av));
    CHECK(weft_cq_close(cq));
    CHECK(weft_domain_close(domain));
    CHECK(weft_fabric_close(fabric));
    weft_info_free(info);
    weft_info_free(hints);
    puts("c_api_test: ok");
    return 0;
}
