#pragma once
// Logging: levels filtered per component, checked before arguments are evaluated.
// Each line: "[host:pid:rank] weft <component> <level>: message".
// Configuration: WEFT_LOG_LEVEL (see docs/configuration.md).

#include <cstdarg>
#include <cstdint>

namespace weft::base {

enum class log_level : int { error = 0, warn, info, debug, trace, trace_data, trace_poll };

/// Components that log; each has its own level.
enum class log_component : int { core = 0, base, proto, self, shm, tcp, verbs, pmix, count };

/// Current level of a component (fast check).
[[nodiscard]] bool log_enabled(log_component c, log_level l) noexcept;

/// Write one line (printf-style). Use WEFT_LOG instead.
[[gnu::format(printf, 5, 6), gnu::cold]] void log_write(log_component c, log_level l,
                                                        const char *file, int line, const char *fmt,
                                                        ...) noexcept;

/// Parse WEFT_LOG_LEVEL (called by config init; idempotent).
void log_init() noexcept;
/// Set the rank shown in the line prefix (after PMIx tells it).
void log_set_rank(std::int64_t rank) noexcept;
/// Set a component's level programmatically (tests).
void log_set_level(log_component c, log_level l) noexcept;

/// Counts of error and warning lines written since start (tests assert on them).
struct log_counts {
    std::uint64_t errors;
    std::uint64_t warnings;
};
[[nodiscard]] log_counts log_get_counts() noexcept;

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
