// libFuzzer target: endpoint addresses (transport/address.hpp), as peers send
// them (PMIx, weft_av_insert, shm sender slots, the verbs handshake).
// Checks: parse never reads past `avail`; what it accepts stays inside what it
// consumed, every blob lies inside the address, and it parses again the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "transport/address.hpp"

using weft::transport::address;
using weft::transport::address_blob;

namespace {

void check(bool ok)
{
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    address a;
    std::size_t used = 0;
    if (address::parse(data, size, a, &used) != weft::base::status::ok) {
        return 0;
    }
    check(used <= size && a.size() == used);
    const std::uint8_t *lo = a.data();
    const std::uint8_t *hi = a.data() + a.size();
    for (unsigned i = 0; i < a.blob_count(); ++i) {
        const address_blob b = a.blob(i);
        check(b.node >= lo && b.node + b.node_len <= hi);
        check(b.ep >= lo && b.ep + b.ep_len <= hi);
        address_blob f;
        check(a.find(b.id, f, 0));
    }
    address again;
    check(address::parse(a.data(), a.size(), again) == weft::base::status::ok && again == a);
    return 0;
}
