#pragma once
// The protocol stack of one endpoint: the channel and the modules that
// register with it. Adding a protocol is adding a module here (and its ids to
// wire.hpp); the channel is unchanged.

#include "proto/amo.hpp"
#include "proto/channel.hpp"
#include "proto/region.hpp"
#include "proto/rma.hpp"
#include "proto/tag.hpp"

namespace weft::proto {

/// The ids the transports' upcall hands to their module with a direct call
/// (the hottest: an eager tagged message); the others go through the
/// channel's table. Handlers named here are public statics of their module.
struct stack_hot_ids {
    [[gnu::always_inline]] static bool dispatch(unsigned am, const am_entry &e, rx_context &rx,
                                                const std::uint8_t *data, std::size_t len)
    {
        if (am == unsigned(am_id::eager)) [[likely]] {
            tag_module::on_eager(e.module, rx, data, len);
            return true;
        }
        return false;
    }
};

struct stack_params {
    channel_params channel;
    tag_params tag;
};

class stack {
  public:
    stack(const stack_params &p, const address_book &av, const region_table &regions)
        : ch(p.channel, av), tag(ch, p.tag), rma(ch, regions), amo(ch, regions, rma)
    {
        ch.set_upcall(&channel::upcall<stack_hot_ids>);
    }
    stack(const stack &) = delete;
    stack &operator=(const stack &) = delete;
    /// Queued requests are the modules': the channel drops them while the
    /// modules still exist (members are destroyed after this body, in reverse).
    ~stack() { ch.shutdown(); }

    channel ch;
    tag_module tag;
    rma_module rma;
    amo_module amo;
};

}  // namespace weft::proto
