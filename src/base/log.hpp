#pragma once
// Logging: levels filtered per component, checked before arguments are evaluated.
// Each line: "[host:pid:rank] weft <component> <level>: message", followed by
// " (file:line)" at debug level and below. One write(2) per line to stderr, so
// lines of different processes and threads do not interleave.
// Configuration: WEFT_LOG_LEVEL (see docs/configuration.md), e.g.
//   WEFT_LOG_LEVEL=debug            every component at debug
//   WEFT_LOG_LEVEL=shm:trace,warn   shm at trace, every other component at warn
// Default: warn for every component.

#include <array>
#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace weft::base {

enum class log_level : int { error = 0, warn, info, debug, trace, trace_data, trace_poll };

/// Components that log; each has its own level.
enum class log_component : int { core = 0, base, proto, self, shm, tcp, verbs, pmix, count };

inline constexpr std::size_t log_component_count = static_cast<std::size_t>(log_component::count);

/// One level per component, indexed by log_component.
using log_levels = std::array<log_level, log_component_count>;

namespace detail {
/// The current level of each component. Statically initialised to warn (no
/// "initialised yet?" branch on the fast path); log_init() stores the levels
/// from WEFT_LOG_LEVEL. Relaxed atomics: a level change need not be seen at once.
extern std::array<std::atomic<std::uint8_t>, log_component_count> log_current;
}  // namespace detail

/// Current level of a component (fast check: one load and one compare).
[[nodiscard, gnu::always_inline]] inline bool log_enabled(log_component c, log_level l) noexcept
{
    return static_cast<std::uint8_t>(l) <=
           detail::log_current[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
}

/// Write one line (printf-style). Use WEFT_LOG instead.
[[gnu::format(printf, 5, 6), gnu::cold]] void log_write(log_component c, log_level l,
                                                        const char *file, int line, const char *fmt,
                                                        ...) noexcept;

/// Parse WEFT_LOG_LEVEL (called by config init; idempotent: only the first call
/// reads the environment; log_write calls it too, so logging before any init
/// still honours WEFT_LOG_LEVEL). An invalid setting is reported as a warning
/// and its valid parts are applied.
void log_init() noexcept;
/// Set the rank shown in the line prefix (after PMIx tells it).
void log_set_rank(std::int64_t rank) noexcept;
/// Set a component's level programmatically (tests). Wins over WEFT_LOG_LEVEL.
void log_set_level(log_component c, log_level l) noexcept;
/// A component's current level.
[[nodiscard]] log_level log_get_level(log_component c) noexcept;

/// Parse a WEFT_LOG_LEVEL value ("LEVEL" or "comp:LEVEL,comp2:LEVEL,LEVEL",
/// case-insensitive, in any order; a bare LEVEL applies to the components not
/// named) into `out`, which starts at warn for every component. On a bad item,
/// returns status::invalid with the reason in `error` and still applies the
/// valid items.
[[nodiscard]] status log_parse_levels(const char *spec, log_levels &out, std::string *error);

/// Parse `spec` as log_parse_levels does and make it the current levels.
[[nodiscard]] status log_set_levels(const char *spec, std::string *error);

/// "error", "warn", ..., "trace_poll".
[[nodiscard]] const char *log_level_name(log_level l) noexcept;
/// "core", "base", "proto", "self", "shm", "tcp", "verbs", "pmix".
[[nodiscard]] const char *log_component_name(log_component c) noexcept;

/// Counts of error and warning lines written since start (tests assert on them).
struct log_counts {
    std::uint64_t errors;
    std::uint64_t warnings;
};
[[nodiscard]] log_counts log_get_counts() noexcept;

struct config_table;
/// The configuration table of logging (prefix "", variable WEFT_LOG_LEVEL);
/// registered automatically with the config registry.
[[nodiscard]] const config_table &log_config_table() noexcept;

}  // namespace weft::base

#ifdef WEFT_DEBUG
#define WEFT_LOG_TRACE_ENABLED 1
#else
#define WEFT_LOG_TRACE_ENABLED 0
#endif

/// WEFT_LOG(component, level, fmt, ...): e.g. WEFT_LOG(shm, warn, "x %d", 1).
/// The level is checked before the arguments are evaluated; trace levels compile
/// out of release builds.
#define WEFT_LOG(comp, lvl, ...)                                                      \
    do {                                                                              \
        if ((WEFT_LOG_TRACE_ENABLED ||                                                \
             ::weft::base::log_level::lvl < ::weft::base::log_level::trace) &&        \
            ::weft::base::log_enabled(::weft::base::log_component::comp,              \
                                      ::weft::base::log_level::lvl)) [[unlikely]] {   \
            ::weft::base::log_write(::weft::base::log_component::comp,                \
                                    ::weft::base::log_level::lvl, __FILE__, __LINE__, \
                                    __VA_ARGS__);                                     \
        }                                                                             \
    } while (0)
