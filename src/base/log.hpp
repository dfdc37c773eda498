#pragma once
// Logging: levels filtered per component, checked before arguments are evaluated.
// Each line: "[host:pid:rank] weft <component> <level>: message", followed by
// " (file:line)" at debug level and below. One write(2) per line to stderr, so
// lines of different processes and threads do not interleave.
// Configuration: WEFT_LOG_LEVEL (see docs/configuration.md), e.g.
//   WEFT_LOG_LEVEL=debug            every component at debug
//   WEFT_LOG_LEVEL=shm:trace,warn   shm at trace, every other component at warn
// Default: warn for every component.
//
// A component is an object that carries its own level, declared once where it
// lives, so base/ knows no transport:
//
//   namespace weft::transport::shm {
//   inline constinit base::log_component log_shm{"shm"};   // shm.hpp
//   }
//   WEFT_LOG(shm, warn, "fifo full");   // finds log_shm by ordinary name lookup
//
// The layers' own components (core, base, proto, pmix) are declared here in
// namespace weft. Every component must be registered (log_register) for
// WEFT_LOG_LEVEL to reach it: the layers' components register themselves, the
// transport registry registers each transport's.

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace weft::base {

enum class log_level : int { error = 0, warn, info, debug, trace, trace_data, trace_poll };

/// A source of log lines with its own level. Constant-initialised (constinit),
/// so it may log from a static initialiser and its level check needs no "is it
/// initialised?" branch: one relaxed load and a compare.
class log_component {
  public:
    constexpr explicit log_component(const char *name) noexcept : name_(name) {}
    log_component(const log_component &) = delete;
    log_component &operator=(const log_component &) = delete;

    /// The name used in log lines and in WEFT_LOG_LEVEL.
    [[nodiscard]] const char *name() const noexcept { return name_; }

    /// Would a line at level `l` be written? Relaxed: a level change need not
    /// be seen at once, and nothing else is read on the strength of it.
    [[nodiscard, gnu::always_inline]] bool enabled(log_level l) const noexcept
    {
        return static_cast<std::uint8_t>(l) <= level_.load(std::memory_order_relaxed);
    }

    /// The current level.
    [[nodiscard]] log_level level() const noexcept
    {
        return static_cast<log_level>(level_.load(std::memory_order_relaxed));
    }

    /// Set the level programmatically (tests). Wins over WEFT_LOG_LEVEL.
    void set_level(log_level l) noexcept;

  private:
    friend void log_register(log_component &c) noexcept;
    friend status log_set_levels(const char *spec, std::string *error);
    friend void log_init() noexcept;

    void store(log_level l) noexcept
    {
        level_.store(static_cast<std::uint8_t>(l), std::memory_order_relaxed);
    }

    const char *name_;
    std::atomic<std::uint8_t> level_{static_cast<std::uint8_t>(log_level::warn)};
};

/// Make a component known to WEFT_LOG_LEVEL and give it the level the setting
/// names for it (or the setting's default level). Idempotent; any time.
void log_register(log_component &c) noexcept;

/// The registered components, in registration order.
[[nodiscard]] std::vector<const log_component *> log_components();

/// The registered component called `name` (case-insensitive), or nullptr.
[[nodiscard]] log_component *log_find_component(const char *name) noexcept;

/// Write one line (printf-style). Use WEFT_LOG instead.
[[gnu::format(printf, 5, 6), gnu::cold]] void log_write(const log_component &c, log_level l,
                                                        const char *file, int line, const char *fmt,
                                                        ...) noexcept;

/// Read WEFT_LOG_LEVEL and apply it to the registered components (idempotent:
/// only the first call reads the environment; log_write calls it too, so
/// logging before any init still honours WEFT_LOG_LEVEL; components registered
/// later get their level from the same setting). An invalid level is warned
/// about and the valid parts are applied. Component names are checked by
/// log_check_names(), once every component is registered.
void log_init() noexcept;

/// Warn (once) about components named in WEFT_LOG_LEVEL that nobody registered,
/// with the nearest registered name. Called by the core once the transport
/// registry has registered every transport's component.
void log_check_names() noexcept;

/// Set the rank shown in the line prefix (after PMIx tells it).
void log_set_rank(std::int64_t rank) noexcept;

/// A parsed WEFT_LOG_LEVEL value: the default level, then per-component levels.
struct log_spec {
    log_level fallback = log_level::warn;
    std::vector<std::pair<std::string, log_level>> named;  ///< in order; later wins

    /// The level this spec gives a component called `name`.
    [[nodiscard]] log_level level_of(const char *name) const noexcept;
};

/// Parse a WEFT_LOG_LEVEL value ("LEVEL" or "comp:LEVEL,comp2:LEVEL,LEVEL",
/// case-insensitive, in any order; a bare LEVEL applies to the components not
/// named). Component names are not checked here. On a bad item, returns
/// status::invalid with the reason in `error` and keeps the valid items.
[[nodiscard]] status log_parse_spec(const char *spec, log_spec &out, std::string *error);

/// Parse `spec` and make it the current levels of every component (registered
/// now or later). A component name nobody registered is an error (the reason
/// names the nearest registered one); the valid parts are applied.
[[nodiscard]] status log_set_levels(const char *spec, std::string *error);

/// "error", "warn", ..., "trace_poll".
[[nodiscard]] const char *log_level_name(log_level l) noexcept;

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

/// Lines of a repeated event that are worth writing: the first `first`, then
/// one in `every` (a broken peer must not flood the log). Thread-safe.
class log_rate {
  public:
    constexpr log_rate(std::uint64_t first, std::uint64_t every) noexcept
        : first_(first), every_(every)
    {
    }
    /// Count one event; true when this one should be logged. `n` receives the
    /// count so far (for "N so far" in the line). Relaxed: a counter only.
    [[nodiscard]] bool admit(std::uint64_t *n = nullptr) noexcept
    {
        const std::uint64_t c = count_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (n != nullptr) {
            *n = c;
        }
        return c <= first_ || (every_ != 0 && c % every_ == 0);
    }

  private:
    std::uint64_t first_;
    std::uint64_t every_;
    std::atomic<std::uint64_t> count_{0};
};

}  // namespace weft::base

namespace weft {
/// The layers' components; transports declare their own (see the file comment).
inline constinit base::log_component log_core{"core"};
inline constinit base::log_component log_base{"base"};
inline constinit base::log_component log_proto{"proto"};
inline constinit base::log_component log_pmix{"pmix"};
}  // namespace weft

#ifdef WEFT_DEBUG
#define WEFT_LOG_TRACE_ENABLED 1
#else
#define WEFT_LOG_TRACE_ENABLED 0
#endif

/// WEFT_LOG(component, level, fmt, ...): e.g. WEFT_LOG(shm, warn, "x %d", 1)
/// logs through the component object `log_shm` found by name lookup from the
/// call site. The level is checked before the arguments are evaluated; trace
/// levels compile out of release builds.
#define WEFT_LOG(comp, lvl, ...)                                                          \
    do {                                                                                  \
        if ((WEFT_LOG_TRACE_ENABLED ||                                                    \
             ::weft::base::log_level::lvl < ::weft::base::log_level::trace) &&            \
            (log_##comp).enabled(::weft::base::log_level::lvl)) [[unlikely]] {            \
            ::weft::base::log_write((log_##comp), ::weft::base::log_level::lvl, __FILE__, \
                                    __LINE__, __VA_ARGS__);                               \
        }                                                                                 \
    } while (0)

/// As WEFT_LOG, at most `first` lines and then one in `every` for this call
/// site (per process); the line gets " (N so far)".
#define WEFT_LOG_RATE(comp, lvl, first, every, fmt, ...)                                      \
    do {                                                                                      \
        if ((WEFT_LOG_TRACE_ENABLED ||                                                        \
             ::weft::base::log_level::lvl < ::weft::base::log_level::trace) &&                \
            (log_##comp).enabled(::weft::base::log_level::lvl)) [[unlikely]] {                \
            static constinit ::weft::base::log_rate weft_log_rate_{(first), (every)};         \
            std::uint64_t weft_log_n_ = 0;                                                    \
            if (weft_log_rate_.admit(&weft_log_n_)) {                                         \
                ::weft::base::log_write((log_##comp), ::weft::base::log_level::lvl, __FILE__, \
                                        __LINE__, fmt " (%llu so far)", ##__VA_ARGS__,        \
                                        static_cast<unsigned long long>(weft_log_n_));        \
            }                                                                                 \
        }                                                                                     \
    } while (0)
