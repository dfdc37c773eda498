// Live-handle registry (handles.hpp).
#include "core/handles.hpp"

#include <mutex>
#include <unordered_map>

#include "base/log.hpp"

namespace weft::core {

namespace {

struct registry {
    std::mutex lock;
    std::unordered_map<const void *, handle_kind> live;
};

registry &the_registry()
{
    static auto *r = new registry;  // never destroyed: handles may be closed at exit
    return *r;
}

const char *kind_name(handle_kind k)
{
    switch (k) {
        case handle_kind::config:
            return "configuration";
        case handle_kind::fabric:
            return "fabric";
        case handle_kind::domain:
            return "domain";
        case handle_kind::cq:
            return "completion queue";
        case handle_kind::cntr:
            return "counter";
        case handle_kind::av:
            return "address vector";
        case handle_kind::mr:
            return "memory region";
        case handle_kind::rkey:
            return "remote key";
        case handle_kind::ep:
            return "endpoint";
    }
    return "?";
}

}  // namespace

void handle_add(const void *p, handle_kind k)
{
    registry &r = the_registry();
    const std::lock_guard g(r.lock);
    r.live[p] = k;
}

void handle_remove(const void *p) noexcept
{
    registry &r = the_registry();
    const std::lock_guard g(r.lock);
    r.live.erase(p);
}

bool handle_check(const void *p, handle_kind k, const char *func) noexcept
{
    handle_kind found{};
    bool known = false;
    {
        registry &r = the_registry();
        const std::lock_guard g(r.lock);
        if (const auto it = r.live.find(p); it != r.live.end()) {
            known = true;
            found = it->second;
        }
    }
    if (known && found == k) [[likely]] {
        return true;
    }
    if (known) {
        WEFT_LOG(core, error, "%s: %p is a %s, not a %s", func, p, kind_name(found), kind_name(k));
    } else {
        WEFT_LOG(core, error, "%s: %p is not a live %s handle (closed already, or never opened)",
                 func, p, kind_name(k));
    }
    return false;
}

}  // namespace weft::core
