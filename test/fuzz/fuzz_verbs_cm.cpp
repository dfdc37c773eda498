// libFuzzer target: the verbs transport's UD handshake messages
// (transport/verbs/wire.hpp parse_cm), as anything on the fabric may send them.
// The first 21 bytes of an input say who we are (node, pid, endpoint, UD QPN,
// link layer) and which QPN the message came from; the rest is the receive
// (GRH included). Checks: an accepted message names us, its RC QPN fits 24
// bits, its address lies inside the receive, and it came from the QPN its
// address names.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/verbs/wire.hpp"

using namespace weft::transport::verbs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    constexpr std::size_t prefix = 8 + 4 + 4 + 4 + 1;
    if (size < prefix + 4) {
        return 0;
    }
    cm_self me{};
    std::memcpy(&me.node_id, data, 8);
    std::memcpy(&me.pid, data + 8, 4);
    std::memcpy(&me.ep_id, data + 12, 4);
    std::memcpy(&me.ud_qpn, data + 16, 4);
    me.ethernet = (data[20] & 1) != 0;
    std::uint32_t src_qp = 0;
    std::memcpy(&src_qp, data + prefix, 4);
    const std::uint8_t *buf = data + prefix + 4;
    const std::size_t len = size - prefix - 4;
    cm_parsed p;
    if (!parse_cm(buf, len, src_qp, me, p)) {
        return 0;
    }
    const bool ok = p.m.dst_node_id == me.node_id && p.m.dst_pid == me.pid &&
                    p.m.dst_ep_id == me.ep_id && p.m.dst_ud_qpn == me.ud_qpn && p.m.qpn != 0 &&
                    p.m.qpn <= 0xffffff && p.ud_qpn == src_qp &&
                    grh_bytes + sizeof(cm_msg) + p.src.size() <= len;
    if (!ok) {
        std::abort();
    }
    return 0;
}
