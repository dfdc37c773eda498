#pragma once
// Live handles: every object the C API creates is registered until it is
// closed, and control-path calls check their handle arguments against the
// registry, so that a double close, a call on a closed handle or a handle of
// the wrong type is -WEFT_EINVAL with a log line instead of a use after free.
// The registry is consulted, never the object's memory (which may be freed).
// Data-path calls (send, receive, CQ and counter reads) do not check: a handle
// is invalid after its close (docs/architecture.md, "Objects").

#include <cstdint>
#include <type_traits>

struct weft_config;
struct weft_fabric;
struct weft_domain;
struct weft_cq;
struct weft_cntr;
struct weft_av;
struct weft_mr;
struct weft_rkey;
struct weft_ep;

namespace weft::core {

enum class handle_kind : std::uint8_t { config = 1, fabric, domain, cq, cntr, av, mr, rkey, ep };

/// Register a new handle (control path).
void handle_add(const void *p, handle_kind k);
/// Forget a handle about to be freed.
void handle_remove(const void *p) noexcept;
/// Is `p` a live handle of kind `k`? Logs (once per call) why not.
[[nodiscard]] bool handle_check(const void *p, handle_kind k, const char *func) noexcept;

template <class T>
struct handle_kind_of;
template <>
struct handle_kind_of<weft_config> {
    static constexpr handle_kind value = handle_kind::config;
};
template <>
struct handle_kind_of<weft_fabric> {
    static constexpr handle_kind value = handle_kind::fabric;
};
template <>
struct handle_kind_of<weft_domain> {
    static constexpr handle_kind value = handle_kind::domain;
};
template <>
struct handle_kind_of<weft_cq> {
    static constexpr handle_kind value = handle_kind::cq;
};
template <>
struct handle_kind_of<weft_cntr> {
    static constexpr handle_kind value = handle_kind::cntr;
};
template <>
struct handle_kind_of<weft_av> {
    static constexpr handle_kind value = handle_kind::av;
};
template <>
struct handle_kind_of<weft_mr> {
    static constexpr handle_kind value = handle_kind::mr;
};
template <>
struct handle_kind_of<weft_rkey> {
    static constexpr handle_kind value = handle_kind::rkey;
};
template <>
struct handle_kind_of<weft_ep> {
    static constexpr handle_kind value = handle_kind::ep;
};

template <class T>
void handle_add(const T *p)
{
    handle_add(p, handle_kind_of<T>::value);
}

}  // namespace weft::core

/// In a C API function: is `p` (a handle argument) live and of its type? A
/// NULL handle is not (quietly: NULL is a plain invalid argument).
#define WEFT_LIVE(p)                                                                              \
    ((p) != nullptr &&                                                                            \
     ::weft::core::handle_check((p),                                                              \
                                ::weft::core::handle_kind_of<                                     \
                                    std::remove_cv_t<std::remove_pointer_t<decltype(p)>>>::value, \
                                __func__))
