#pragma once
// PMIx address exchange used by weft_av_load_pmix(). Kept apart from the AV so
// the object model does not depend on PMIx headers.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.hpp"

namespace weft::core {

/// Publish `len` bytes under this process's rank, fence with data collection and
/// fetch every rank's bytes (at most `max_len` each): `all[r]` gets rank r's.
/// Returns unreachable (with a clear log line) when no PMIx server is reachable,
/// not_supported when weft was built without PMIx.
[[nodiscard]] base::status pmix_exchange(const void *addr, std::size_t len, std::size_t max_len,
                                         std::vector<std::vector<std::uint8_t>> &all,
                                         std::uint32_t &rank, std::uint32_t &size);

}  // namespace weft::core
