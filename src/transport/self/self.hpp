#pragma once
// The self transport: an endpoint sending to its own address. A send copies
// the message into a bounded queue and returns; progress() delivers it, so the
// layer above is never re-entered from inside a send. Puts, gets and atomics
// on the endpoint's own registered memory are done in place (memcpy and CPU
// atomics), after the key is checked against the memory domain's region table.

#include "base/log.hpp"
#include "transport/component.hpp"

namespace weft::transport::self {

/// Log lines of the self transport.
inline constinit base::log_component log_self{"self"};

/// The registry's entry.
extern const component transport;

}  // namespace weft::transport::self
