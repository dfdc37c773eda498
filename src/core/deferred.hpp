#pragma once
// Operations that do not start when they are posted (docs/rma.md):
//
//   triggered  posted with WEFT_TRIGGER: armed on a counter (proto::counter's
//              trigger list), started when it reaches the threshold;
//   fenced     an RMA or atomic with WEFT_FENCE while earlier ones are still
//              outstanding, and every RMA or atomic posted behind it: parked
//              in order until the endpoint has nothing outstanding.
//
// A trigger fires from whatever thread makes its counter due (a completion in
// some endpoint's progress, weft_cntr_add in the application, a progress
// thread). Firing only pushes the operation on its endpoint's `fired` stack
// (lock-free); the endpoint's progress starts it, under the endpoint's lock, in
// firing order. So an operation never runs inside another endpoint's progress
// or inside a counter's firing, and a chain (op completes -> counter -> next op
// fires) advances in a loop in one progress call, in constant stack.
//
// Counter operations (weft_cntr_add_triggered, weft_cntr_set_triggered) touch
// no endpoint: they run inside the firing itself.
//
// Posting is control path (it allocates: one deferred_op per operation); the
// immediate path pays one check of three pointers per progress call.

#include <array>
#include <cstddef>
#include <cstdint>
#include <sys/uio.h>
#include <vector>

#include "proto/amo.hpp"
#include "proto/counter.hpp"
#include "proto/rma.hpp"
#include "proto/tag.hpp"

struct weft_ep;
struct weft_cntr;

namespace weft::core {

enum class deferred_kind : std::uint8_t { tsend, put, get, atomic, cntr_add, cntr_set };

/// One operation that starts later. Everything the operation needs is copied
/// in at post time (the caller's structures may go), except the data buffers,
/// which are read when it starts -- the inject data, which is copied.
struct deferred_op : proto::trigger {
    deferred_kind kind{};
    std::uint64_t flags = 0;  ///< the operation's WEFT_* flags, without WEFT_TRIGGER
    weft_ep *ep = nullptr;
    weft_cntr *watch = nullptr;   ///< the counter it is armed on (triggered), or nullptr
    weft_cntr *target = nullptr;  ///< counter operations: the counter changed
    std::uint64_t value = 0;      ///< counter operations: the value
    deferred_op *link = nullptr;  ///< fired stack, ready or parked list
    deferred_op *prev = nullptr;  ///< the endpoint's armed list
    deferred_op *next_armed = nullptr;
    void *context = nullptr;  ///< reported by its completion

    std::array<iovec, proto::max_iov> iov{};
    std::size_t iovcnt = 0;
    std::size_t len = 0;
    std::vector<std::uint8_t> copy;  ///< WEFT_INJECT data

    // tagged send
    std::uint64_t dest = 0;
    std::uint64_t tag = 0;
    std::uint64_t data = 0;  ///< remote CQ data (tagged send, put)

    // put, get, atomic
    std::uint64_t raddr = 0;
    proto::remote_key key{};
    proto::amo_request amo{};
    alignas(8) std::uint8_t operands[2 * 256]{};  ///< inject atomics: operand and compare copies
};

/// The RMA or atomic operation the immediate path and the deferred path start
/// (under the endpoint's lock).
struct rma_desc {
    deferred_kind kind;  ///< put, get or atomic
    const iovec *iov;
    std::size_t iovcnt;
    std::size_t len;
    std::uint64_t raddr;
    const proto::remote_key *key;
    const proto::amo_request *amo;
    void *context;
    std::uint64_t flags;
    std::uint64_t data;
};

/// Start (or park behind a fence) an RMA or atomic; under the endpoint's lock.
[[nodiscard]] int rma_locked(weft_ep *ep, const rma_desc &d);
/// Arm a triggered operation (its fields set); takes the endpoint's lock.
[[nodiscard]] int post_triggered(weft_ep *ep, deferred_op *op);
/// Start what fired and what a fence released; under the endpoint's lock.
/// Returns the operations started.
[[gnu::cold]] unsigned run_deferred(weft_ep *ep);
/// Closing: cancel every deferred operation of the endpoint with error
/// completions (WEFT_ECANCELED); under the endpoint's lock, before the stack goes.
void cancel_deferred(weft_ep *ep);
/// RMA and atomics started and not yet complete, plus parked ones.
[[nodiscard]] std::size_t rma_outstanding(const weft_ep *ep);
/// Copy an RMA or atomic into `op` (for starting later).
void fill_rma_public(deferred_op *op, const rma_desc &d);
/// The fire callback of counter operations.
void fire_cntr_public(proto::trigger *t);
/// A counter closes: its armed counter operations are cancelled (never done).
void cancel_cntr_ops(weft_cntr *c);
/// A WEFT_COUNT operation's context: a struct weft_count naming a live counter
/// of the endpoint's domain (logs why not, naming `func`).
[[nodiscard]] bool count_context_ok(const weft_ep *ep, const void *context, const char *func);

/// weft_tsendmsg with WEFT_TRIGGER: `a.context` is the struct weft_trigger.
[[nodiscard]] int post_tsend_triggered(weft_ep *ep, const proto::send_args &a);

}  // namespace weft::core
