#pragma once
// The self transport: an endpoint sending to its own address. Delivery is
// synchronous: a send runs the receive handler before it returns, so self
// messages cost one copy into a bounce buffer plus the copy into the receive.

#include <memory>

#include "base/status.hpp"
#include "transport/iface.hpp"

namespace weft::transport::self {

/// Open the self transport of one endpoint.
[[nodiscard]] std::unique_ptr<iface> open(const open_params &p);

}  // namespace weft::transport::self
