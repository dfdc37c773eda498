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

struct stack_params {
    channel_params channel;
    tag_params tag;
};

class stack {
  public:
    stack(const stack_params &p, const address_book &av, const region_table &regions)
        : ch(p.channel, av), tag(ch, p.tag), rma(ch, regions), amo(ch, regions)
    {
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
