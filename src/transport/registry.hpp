#pragma once
// The transport registry: every transport built into this library
// (src/transport/registry.cpp, one line each). The per-peer choice among them
// is made by proto/ from their capabilities and cost models, never from their
// order here.

#include <span>
#include <string_view>

#include "transport/component.hpp"

namespace weft::transport {

/// Every transport built in.
[[nodiscard]] std::span<const component *const> components() noexcept;

/// The transport called `name` (exact, lower case), or nullptr.
[[nodiscard]] const component *find_component(std::string_view name) noexcept;

/// The transport with wire id `id`, or nullptr.
[[nodiscard]] const component *find_component(std::uint8_t wire_id) noexcept;

/// The built-in transport whose name is nearest to `name` (for "did you mean"),
/// or nullptr when none is close.
[[nodiscard]] const component *nearest_component(std::string_view name) noexcept;

/// Register every transport's log component and configuration table (once per
/// process; idempotent, thread-safe). The core calls it before it reads any
/// configuration.
void register_components() noexcept;

}  // namespace weft::transport
