// perf/tcp/tcp_floor -- the kernel's TCP ping-pong floor: what the fastest
// possible user of a TCP socket sees, with no library at all. One process
// listens, the other connects; they bounce SIZE bytes back and forth over one
// TCP_NODELAY socket and the client prints one-way latency (RTT/2).
//
//   tcp_floor server ADDR SIZE MODE REPS ITERS
//   tcp_floor client ADDR SIZE MODE REPS ITERS
//
// MODE spin:  wait for data with recv(MSG_DONTWAIT) in a loop (one system call
//             per poll, the lowest-latency way to read a socket)
// MODE epoll: epoll_wait(timeout 0) until the socket is readable, then recv
//             (how weft's tcp transport and UCX's both poll: one epoll set for
//             every socket)
//
// perf/tcp/floor.sh runs it across the network namespaces beside weft_perf
// (docs/performance.md "tcp latency floor").

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::uint16_t port = 23457;

[[noreturn]] void die(const char *what)
{
    std::fprintf(stderr, "tcp_floor: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
}

struct pinger {
    int fd = -1;
    int ep = -1;
    bool use_epoll = false;

    void read_exactly(char *buf, std::size_t n) const
    {
        std::size_t got = 0;
        while (got < n) {
            if (use_epoll) {
                epoll_event e{};
                const int k = epoll_wait(ep, &e, 1, 0);
                if (k < 0 && errno != EINTR) {
                    die("epoll_wait");
                }
                if (k <= 0) {
                    continue;
                }
            }
            const ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
            if (r > 0) {
                got += static_cast<std::size_t>(r);
            } else if (r == 0) {
                std::fprintf(stderr, "tcp_floor: the peer closed the connection\n");
                std::exit(1);
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                die("recv");
            }
        }
    }

    void write_exactly(const char *buf, std::size_t n) const
    {
        std::size_t put = 0;
        while (put < n) {
            const ssize_t w = send(fd, buf + put, n - put, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR || errno == EAGAIN) {
                    continue;
                }
                die("send");
            }
            put += static_cast<std::size_t>(w);
        }
    }
};

int connect_or_accept(bool server, const char *addr)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
        std::fprintf(stderr, "tcp_floor: %s is not an IPv4 address\n", addr);
        std::exit(2);
    }
    int fd;
    if (server) {
        const int l = socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        (void)setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(l, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
            die("bind");
        }
        if (listen(l, 1) != 0) {
            die("listen");
        }
        fd = accept(l, nullptr, nullptr);
        if (fd < 0) {
            die("accept");
        }
        close(l);
    } else {
        // The server may not be listening yet: retry for up to 10 s.
        for (int tries = 0;; ++tries) {
            fd = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
                break;
            }
            close(fd);
            if (tries == 1000) {
                die("connect");
            }
            usleep(10000);
        }
    }
    const int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 7 || (std::strcmp(argv[1], "server") != 0 && std::strcmp(argv[1], "client") != 0) ||
        (std::strcmp(argv[4], "spin") != 0 && std::strcmp(argv[4], "epoll") != 0)) {
        std::fprintf(stderr,
                     "usage: tcp_floor server|client IPV4_ADDR SIZE spin|epoll REPS ITERS\n");
        return 2;
    }
    const bool server = std::strcmp(argv[1], "server") == 0;
    const std::size_t size = std::strtoull(argv[3], nullptr, 0);
    const int reps = std::atoi(argv[5]);
    const int iters = std::atoi(argv[6]);
    if (size == 0 || size > (1u << 20) || reps < 1 || iters < 1) {
        std::fprintf(stderr, "tcp_floor: SIZE 1..1 MiB, REPS and ITERS at least 1\n");
        return 2;
    }
    pinger p;
    p.fd = connect_or_accept(server, argv[2]);
    p.use_epoll = std::strcmp(argv[4], "epoll") == 0;
    p.ep = epoll_create1(0);
    epoll_event e{};
    e.events = EPOLLIN;
    if (p.ep < 0 || epoll_ctl(p.ep, EPOLL_CTL_ADD, p.fd, &e) != 0) {
        die("epoll");
    }
    std::vector<char> buf(size, 1);
    std::vector<double> one_way;
    const int warmup = std::max(1, iters / 10);
    for (int rep = 0; rep < reps; ++rep) {
        std::chrono::steady_clock::time_point t0;
        for (int i = 0; i < warmup + iters; ++i) {
            if (i == warmup) {
                t0 = std::chrono::steady_clock::now();
            }
            if (server) {
                p.read_exactly(buf.data(), size);
                p.write_exactly(buf.data(), size);
            } else {
                p.write_exactly(buf.data(), size);
                p.read_exactly(buf.data(), size);
            }
        }
        const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
        one_way.push_back(dt.count() / iters / 2);
    }
    if (!server) {
        std::sort(one_way.begin(), one_way.end());
        const double median =
            reps % 2 != 0 ? one_way[reps / 2] : (one_way[reps / 2 - 1] + one_way[reps / 2]) / 2;
        std::printf("tcp_floor %s size %zu: min %.3f median %.3f us one-way (%d reps of %d)\n",
                    argv[4], size, one_way.front(), median, reps, iters);
    }
    close(p.fd);
    close(p.ep);
    return 0;
}
