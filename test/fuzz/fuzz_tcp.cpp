// libFuzzer target: what anything that can open a TCP connection to a weft
// endpoint, or answer one, may send it (transport/tcp, docs/tcp.md).
//
// Input byte 0, bit 0 clear: the parsers alone (transport/tcp/wire.hpp).
//   Bit 1 clear: the rest is a handshake (bit 2: a hello, as an accepted
//   connection expects, else an answer); what parse_handshake accepts must lie
//   inside the input, name us, and carry the sender's own address.
//   Bit 1 set: bytes 1-8 are a connection's limits (max body, source); the
//   rest is a byte stream fed in pieces (sizes from byte 9) to a receive
//   buffer the size the transport uses, parsed frame by frame as it does:
//   every frame accepted lies inside the bytes received and the limits.
// Bit 0 set: one tcp endpoint, opened once through the public API (reopened
// every 1000 inputs: each input is a new peer), so that the whole receive path
// runs (sockets, epoll, handshake, frames, then proto's channel and modules).
//   Bits 1-2 = 0: a client connects and sends the rest of the input as is.
//   Bits 1-2 = 1: a client connects, says a valid hello (an address with the
//   endpoint's own protocol parameters), reads the answer, then sends frames
//   built from the input: records of flags u8 | am u16 | length u16 | body
//   (flags bit 0: a 12-byte header follows, written as is instead).
//   Bits 1-2 = 2: the endpoint connects to us (a send to a made-up peer whose
//   address names our listener); we read its hello and answer with the rest
//   of the input.
//   Bit 3: the input names whoever this run's endpoint is: a handshake at its
//   start gets the endpoint's identity as its destination (and, in an answer,
//   the made-up peer's as its source), which an input cannot know.
// The client then closes and the endpoint progresses until it closed its end
// too, and drains its CQ. Anything may be refused or dropped; nothing may
// crash, hang or leak.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "core/objects.hpp"
#include "transport/address.hpp"
#include "transport/tcp/wire.hpp"
#include "weft/weft.h"

namespace tl = weft::transport;
namespace tcp = weft::transport::tcp;

namespace {

void check(bool ok)
{
    if (!ok) {
        std::abort();
    }
}

void must(int rc, const char *what)
{
    if (rc < 0) {
        std::fprintf(stderr, "fuzz_tcp: %s failed: %s\n", what, weft_strerror(rc));
        std::abort();
    }
}

// ------------------------------------------------------------------ parsers

void fuzz_handshake(const std::uint8_t *data, std::size_t size, bool want_hello)
{
    const tl::endpoint_id me{0x1111, 22, 33};
    tcp::hs_parsed p;
    std::size_t used = 0;
    if (tcp::parse_handshake(data, size, want_hello, me, p, used) != tcp::hs_result::ok) {
        return;
    }
    check(used <= size && used == sizeof(tcp::handshake) + p.m.addr_len);
    check(p.m.magic == tcp::hs_magic && p.m.version == tcp::hs_version);
    check(p.m.dst_node_id == me.node_id && p.m.dst_pid == me.pid && p.m.dst_ep_id == me.ep_id);
    if (want_hello) {
        check(p.m.type == static_cast<std::uint8_t>(tcp::hs_type::hello));
        check(p.src.size() == p.m.addr_len && p.src.node_id() == p.m.src_node_id &&
              p.src.pid() == p.m.src_pid && p.src.ep_id() == p.m.src_ep_id);
        tcp::peer_blob b;
        if (tcp::find_blob(p.src, b)) {
            check(b.count >= 1 && b.count <= tcp::max_blob_addrs);
            for (unsigned i = 0; i < b.count; ++i) {
                check(b.at[i].port != 0 &&
                      b.at[i].addr.prefix <= tcp::ip_len(b.at[i].addr.family) * 8);
            }
        }
    } else {
        check(p.m.addr_len == 0);
    }
    if (p.m.type != static_cast<std::uint8_t>(tcp::hs_type::reject)) {
        check(p.m.max_body >= tcp::min_body_limit && p.m.max_body <= tcp::max_body_limit);
    }
}

void fuzz_stream(const std::uint8_t *data, std::size_t size)
{
    if (size < 9) {
        return;
    }
    tcp::frame_limits lim{};
    std::memcpy(&lim.max_body, data, 4);
    std::memcpy(&lim.src, data + 4, 4);
    lim.max_body %= 1u << 16;  // the receive buffer below is sized by it
    std::uint32_t seed = data[8] | 1u;
    data += 9;
    size -= 9;
    // The transport's receive buffer: one whole frame at least.
    std::vector<std::uint8_t> buf(sizeof(tcp::frame_hdr) + lim.max_body + 64);
    std::size_t start = 0;
    std::size_t end = 0;
    std::size_t fed = 0;
    while (fed < size || start < end) {
        if (end == buf.size()) {
            check(start != 0);  // a frame that fits the limit always fits the buffer
            std::memmove(buf.data(), buf.data() + start, end - start);
            end -= start;
            start = 0;
        }
        seed = seed * 1103515245u + 12345u;
        const std::size_t piece = std::min(
            {size - fed, buf.size() - end, static_cast<std::size_t>(1 + (seed >> 16) % 700)});
        std::memcpy(buf.data() + end, data + fed, piece);
        end += piece;
        fed += piece;
        for (;;) {
            tcp::frame_hdr h{};
            const tcp::frame_result r = tcp::parse_frame(buf.data() + start, end - start, lim, h);
            if (r == tcp::frame_result::need_more) {
                break;
            }
            if (r != tcp::frame_result::frame) {
                return;  // the transport closes the connection here
            }
            check(h.len <= lim.max_body && h.src == lim.src && h.flags == 0);
            check(start + sizeof(h) + h.len <= end);
            start += sizeof(h) + h.len;
        }
        if (piece == 0 && fed == size) {
            return;  // a partial frame at the end of the stream
        }
    }
}

// ------------------------------------------------------------------ a real endpoint

struct world {
    weft_config_t *config = nullptr;
    weft_fabric_t *fabric = nullptr;
    weft_domain_t *domain = nullptr;
    weft_cq_t *cq = nullptr;
    weft_av_t *av = nullptr;
    weft_ep_t *ep = nullptr;
    tl::address self;        ///< the endpoint's address
    std::uint16_t port = 0;  ///< its listening port on 127.0.0.1
    int listener = -1;       ///< ours, for the endpoint to dial
    std::uint16_t listener_port = 0;
    unsigned inputs = 0;
    std::vector<std::uint8_t> rbuf = std::vector<std::uint8_t>(1 << 16);
};

int contexts[4];
std::uint32_t next_pid = 1;

void open_endpoint(world &w)
{
    must(weft_config_read(&w.config), "config");
    must(weft_config_modify(w.config, "TCP_IF", "127.0.0.1/8"), "TCP_IF");
    must(weft_config_modify(w.config, "TCP_CONNECT_TIMEOUT", "200ms"), "TCP_CONNECT_TIMEOUT");
    must(weft_config_modify(w.config, "TCP_POLL_INTERVAL", "0"), "TCP_POLL_INTERVAL");
    weft_info *hints = weft_info_alloc();
    std::snprintf(hints->transport, sizeof(hints->transport), "tcp");
    hints->caps = WEFT_TAGGED | WEFT_SOURCE | WEFT_DIRECTED_RECV;
    weft_info *info = nullptr;
    must(weft_getinfo(WEFT_API_VERSION, hints, w.config, &info), "weft_getinfo(tcp)");
    must(weft_fabric_open(info, w.config, &w.fabric), "fabric");
    must(weft_domain_open(w.fabric, info, &w.domain), "domain");
    const weft_cq_attr cq_attr{0, WEFT_CQ_FORMAT_TAGGED};
    must(weft_cq_open(w.domain, &cq_attr, &w.cq), "cq");
    must(weft_av_open(w.domain, nullptr, &w.av), "av");
    must(weft_ep_open(w.domain, info, &w.ep, nullptr), "ep");
    must(weft_ep_bind_cq(w.ep, w.cq, WEFT_TRANSMIT | WEFT_RECV), "bind cq");
    must(weft_ep_bind_av(w.ep, w.av), "bind av");
    must(weft_ep_enable(w.ep), "enable");
    weft_info_free(info);
    weft_info_free(hints);
    w.self = w.ep->addr;
    tcp::peer_blob b;
    check(tcp::find_blob(w.self, b) && b.at[0].addr.family == 4);
    w.port = b.at[0].port;
}

void close_endpoint(world &w)
{
    must(weft_ep_close(w.ep), "ep close");
    must(weft_av_close(w.av), "av close");
    must(weft_cq_close(w.cq), "cq close");
    must(weft_domain_close(w.domain), "domain close");
    must(weft_fabric_close(w.fabric), "fabric close");
    weft_config_release(w.config);
}

world *open_world()
{
    // The endpoint says why it refuses each connection: not here.
    (void)weft::base::log_set_levels("tcp:error,proto:error,core:error,error", nullptr);
    auto *w = new world;
    open_endpoint(*w);
    w->listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sin);
    check(bind(w->listener, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) == 0 &&
          listen(w->listener, 64) == 0 &&
          getsockname(w->listener, reinterpret_cast<sockaddr *>(&sin), &len) == 0);
    w->listener_port = ntohs(sin.sin_port);
    return w;
}

void drain(world &w)
{
    for (int &c : contexts) {
        (void)weft_trecv(w.ep, w.rbuf.data(), w.rbuf.size(), nullptr, WEFT_ADDR_UNSPEC, 0, ~0ULL,
                         &c);
    }
    weft_cq_tagged_entry e[16];
    weft_cq_err_entry err;
    for (int i = 0; i < 64; ++i) {
        (void)weft_ep_progress(w.ep);
        const ssize_t n = weft_cq_read(w.cq, e, 16);
        if (n == -WEFT_EAVAIL) {
            (void)weft_cq_readerr(w.cq, &err, 0);
        } else if (n == -WEFT_EAGAIN) {
            break;
        }
    }
    for (int &c : contexts) {
        while (weft_cancel(w.ep, &c) == 0) {
        }
    }
    while (weft_cq_read(w.cq, e, 16) > 0 || weft_cq_readerr(w.cq, &err, 0) > 0) {
    }
}

/// A made-up peer on this node (so that its loopback address is dialled): its
/// address carries the endpoint's own protocol parameters (so that proto/
/// takes its messages) and a tcp blob naming 127.0.0.1:`port`.
tl::address fake_peer(const world &w, std::uint32_t pid, std::uint16_t port)
{
    // The address vector keeps 22 bits of a pid.
    tl::address_builder b({w.self.node_id(), 0x300000u + pid % 0xfffffu, 1});
    tl::address_blob proto;
    check(w.self.find(tl::proto_blob_id, proto));
    check(b.add(tl::proto_blob_id, proto.node, proto.node_len, proto.ep, proto.ep_len) ==
          weft::base::status::ok);
    tcp::ip_addr lo{};
    lo.family = 4;
    lo.prefix = 8;
    lo.bytes[0] = 127;
    lo.bytes[3] = 1;
    std::uint8_t node[tcp::max_blob_node];
    const std::size_t n = tcp::encode_blob_node(&lo, 1, node);
    check(b.add(tcp::wire_id, node, n, &port, 2) == weft::base::status::ok);
    return b.get();
}

/// Read exactly `n` bytes from `fd` while the endpoint progresses; false on
/// the end of the stream, an error or about 2000 rounds.
bool read_exact(world &w, int fd, void *out, std::size_t n)
{
    auto *p = static_cast<std::uint8_t *>(out);
    for (int round = 0; round < 2000 && n > 0; ++round) {
        (void)weft_ep_progress(w.ep);
        const ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            return false;
        }
        if (r > 0) {
            p += r;
            n -= static_cast<std::size_t>(r);
        }
    }
    return n == 0;
}

void write_all(int fd, const std::uint8_t *p, std::size_t n)
{
    while (n > 0) {
        const ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r <= 0) {
            return;  // the endpoint closed it: fine
        }
        p += r;
        n -= static_cast<std::size_t>(r);
    }
}

/// Close our end and progress until the endpoint has closed its end too.
void finish(world &w, int fd)
{
    (void)shutdown(fd, SHUT_WR);
    std::uint8_t junk[4096];
    for (int round = 0; round < 4000; ++round) {
        (void)weft_ep_progress(w.ep);
        const ssize_t r = recv(fd, junk, sizeof(junk), MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            break;
        }
    }
    close(fd);
    drain(w);
}

int dial(const world &w)
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(w.port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) == 0);
    return fd;
}

tcp::handshake hello_for(const world &w, const tl::address &from)
{
    tcp::handshake m{};
    m.magic = tcp::hs_magic;
    m.version = tcp::hs_version;
    m.type = static_cast<std::uint8_t>(tcp::hs_type::hello);
    m.addr_len = static_cast<std::uint16_t>(from.size());
    m.src_conn = 7;
    m.max_body = 65536;
    m.src_node_id = from.node_id();
    m.src_pid = from.pid();
    m.src_ep_id = from.ep_id();
    m.dst_node_id = w.self.node_id();
    m.dst_pid = w.self.pid();
    m.dst_ep_id = w.self.ep_id();
    return m;
}

/// Put this run's identities into a handshake at the start of `v`.
void name_endpoints(std::vector<std::uint8_t> &v, const tl::endpoint_id *src,
                    const tl::endpoint_id &dst)
{
    if (v.size() < sizeof(tcp::handshake)) {
        return;
    }
    tcp::handshake m;
    std::memcpy(&m, v.data(), sizeof(m));
    if (src != nullptr) {
        m.src_node_id = src->node_id;
        m.src_pid = src->pid;
        m.src_ep_id = src->ep_id;
    }
    m.dst_node_id = dst.node_id;
    m.dst_pid = dst.pid;
    m.dst_ep_id = dst.ep_id;
    std::memcpy(v.data(), &m, sizeof(m));
}

void fuzz_raw_client(world &w, const std::uint8_t *data, std::size_t size, bool name)
{
    std::vector<std::uint8_t> v(data, data + size);
    if (name) {
        name_endpoints(v, nullptr, w.self.id());
    }
    const int fd = dial(w);
    write_all(fd, v.data(), v.size());
    finish(w, fd);
}

void fuzz_frames(world &w, const std::uint8_t *data, std::size_t size)
{
    const tl::address me = fake_peer(w, next_pid++, 9);
    const int fd = dial(w);
    const tcp::handshake m = hello_for(w, me);
    write_all(fd, reinterpret_cast<const std::uint8_t *>(&m), sizeof(m));
    write_all(fd, me.data(), me.size());
    tcp::handshake answer{};
    if (!read_exact(w, fd, &answer, sizeof(answer)) ||
        answer.type != static_cast<std::uint8_t>(tcp::hs_type::accept)) {
        std::abort();  // a valid hello from a new peer is always accepted
    }
    std::vector<std::uint8_t> out;
    while (size >= 5) {
        const std::uint8_t flags = data[0];
        std::uint16_t am = 0;
        std::uint16_t len = 0;
        std::memcpy(&am, data + 1, 2);
        std::memcpy(&len, data + 3, 2);
        data += 5;
        size -= 5;
        tcp::frame_hdr h{len, am, static_cast<std::uint8_t>(tcp::frame_type::am), 0, 7};
        if ((flags & 1) != 0 && size >= sizeof(h)) {
            std::memcpy(&h, data, sizeof(h));
            data += sizeof(h);
            size -= sizeof(h);
        } else {
            h.len = std::min<std::uint32_t>(len, static_cast<std::uint32_t>(size));
        }
        const std::size_t body = std::min<std::size_t>(h.len, size);
        const auto *hp = reinterpret_cast<const std::uint8_t *>(&h);
        out.insert(out.end(), hp, hp + sizeof(h));
        out.insert(out.end(), data, data + body);
        data += body;
        size -= body;
    }
    write_all(fd, out.data(), out.size());
    finish(w, fd);
}

void fuzz_answer(world &w, const std::uint8_t *data, std::size_t size, bool name)
{
    const tl::address peer = fake_peer(w, next_pid++, w.listener_port);
    std::vector<std::uint8_t> v(data, data + size);
    if (name) {
        const tl::endpoint_id src = peer.id();
        name_endpoints(v, &src, w.self.id());
    }
    weft_addr_t at = 0;
    if (weft_av_insert(w.av, peer.data(), 1, &at, 0) != 1) {
        std::abort();
    }
    std::uint64_t word = 0x5eed;
    const ssize_t rc = weft_tsend(w.ep, &word, sizeof(word), nullptr, at, 1, &contexts[0]);
    int fd = -1;
    for (int round = 0; round < 4000 && fd < 0; ++round) {
        (void)weft_ep_progress(w.ep);
        fd = accept(w.listener, nullptr, nullptr);
    }
    if (fd >= 0) {
        tcp::handshake m{};
        if (read_exact(w, fd, &m, sizeof(m)) && m.addr_len <= tl::max_address_size) {
            std::uint8_t addr[tl::max_address_size];
            if (read_exact(w, fd, addr, m.addr_len)) {
                write_all(fd, v.data(), v.size());
            }
        }
        finish(w, fd);
    }
    // The send completes (answered) or fails (refused, closed). A peer that
    // answered "crossed" is waited for until the connect timeout: not here;
    // removing the address fails the send.
    weft_cq_tagged_entry e;
    weft_cq_err_entry err;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (rc == 0 && std::chrono::steady_clock::now() < until) {
        const ssize_t n = weft_cq_read(w.cq, &e, 1);
        if (n == 1 || (n == -WEFT_EAVAIL && weft_cq_readerr(w.cq, &err, 0) == 1)) {
            break;
        }
    }
    (void)weft_av_remove(w.av, &at, 1, 0);
    drain(w);
}

}  // namespace

// Each input of the real endpoint is a new peer, whose state the endpoint
// keeps by design (a failed peer stays failed) until it is reopened: libFuzzer
// would see more allocations than frees in every such input and run a full
// leak scan after each (most of the time). Off per input; the leak check at
// exit still covers every endpoint closed by the reopening.
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static std::vector<char *> args;
    args.assign(*argv, *argv + *argc);
    static char no_per_input_leak_scan[] = "-detect_leaks=0";
    args.insert(args.begin() + 1, no_per_input_leak_scan);
    args.push_back(nullptr);
    *argc = static_cast<int>(args.size()) - 1;
    *argv = args.data();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    static world *w = open_world();
    if (size == 0) {
        return 0;
    }
    const std::uint8_t mode = data[0];
    if ((mode & 1) == 0) {
        if ((mode & 2) == 0) {
            fuzz_handshake(data + 1, size - 1, (mode & 4) != 0);
        } else {
            fuzz_stream(data + 1, size - 1);
        }
        return 0;
    }
    // Each input is a new peer: a fresh endpoint now and then bounds what
    // the endpoint keeps per peer.
    if (++w->inputs % 1000 == 0) {
        close_endpoint(*w);
        open_endpoint(*w);
    }
    switch ((mode >> 1) & 3) {
        case 0:
            fuzz_raw_client(*w, data + 1, size - 1, (mode & 8) != 0);
            break;
        case 1:
            fuzz_frames(*w, data + 1, size - 1);
            break;
        default:
            fuzz_answer(*w, data + 1, size - 1, (mode & 8) != 0);
            break;
    }
    return 0;
}
