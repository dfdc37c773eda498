// Logging: see log.hpp. Everything here is off the fast path except
// log_enabled(), which is inline in the header and reads log_current.

#include "base/log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <strings.h>
#include <unistd.h>
#include <utility>

#include "base/config.hpp"

namespace weft::base {

namespace detail {
namespace {

template <std::size_t... I>
constexpr std::array<std::atomic<std::uint8_t>, sizeof...(I)> initial_levels(
    std::index_sequence<I...>) noexcept
{
    return {{((void)I, std::atomic<std::uint8_t>{static_cast<std::uint8_t>(log_level::warn)})...}};
}

}  // namespace

// constinit: the levels are valid before any constructor runs, so a component
// may log from a static initialiser, and log_enabled() needs no init check.
constinit std::array<std::atomic<std::uint8_t>, log_component_count> log_current =
    initial_levels(std::make_index_sequence<log_component_count>{});

}  // namespace detail

namespace {

constexpr const char *level_names[] = {"error", "warn",       "info",      "debug",
                                       "trace", "trace_data", "trace_poll"};
constexpr std::size_t level_count = std::size(level_names);
static_assert(level_count == static_cast<std::size_t>(log_level::trace_poll) + 1);

constexpr const char *component_names[] = {"core", "base", "proto", "self",
                                           "shm",  "tcp",  "verbs", "pmix"};
static_assert(std::size(component_names) == log_component_count);

struct log_config {
    std::string level;
};
constexpr config_field log_fields[] = {
    make_field<&log_config::level>(
        "LOG_LEVEL", config_type::string, "warn",
        "log levels: LEVEL or comp:LEVEL,...,LEVEL (levels error warn info debug trace "
        "trace_data trace_poll; components core base proto self shm tcp verbs pmix)"),
};
constexpr config_table log_table = make_table("", "logging", log_fields);

// 0: WEFT_LOG_LEVEL not read yet, 1: being read, 2: done.
std::atomic<int> init_state{0};
std::atomic<std::int64_t> current_rank{-1};
std::atomic<std::uint64_t> error_count{0};
std::atomic<std::uint64_t> warning_count{0};

// A line longer than this is cut (and marked "..."). Lines up to PIPE_BUF
// (4096) are written atomically to a pipe, so keep the buffer within that.
constexpr std::size_t max_line = 2048;

std::string trim(std::string s)
{
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) {
        return {};
    }
    const auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

bool find_level(const std::string &name, log_level *out)
{
    for (std::size_t i = 0; i < level_count; ++i) {
        if (strcasecmp(name.c_str(), level_names[i]) == 0) {
            *out = static_cast<log_level>(i);
            return true;
        }
    }
    if (strcasecmp(name.c_str(), "warning") == 0) {
        *out = log_level::warn;
        return true;
    }
    return false;
}

bool find_component(const std::string &name, std::size_t *out)
{
    for (std::size_t i = 0; i < log_component_count; ++i) {
        if (strcasecmp(name.c_str(), component_names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

void append_error(std::string *error, const std::string &what)
{
    if (error == nullptr) {
        return;
    }
    if (!error->empty()) {
        *error += "; ";
    }
    *error += what;
}

// The host name up to the first dot, computed once.
const char *host_name() noexcept
{
    static const std::array<char, 64> name = [] {
        std::array<char, 64> n{};
        if (gethostname(n.data(), n.size() - 1) != 0) {
            std::strcpy(n.data(), "?");
        }
        n.back() = '\0';
        if (char *dot = std::strchr(n.data(), '.'); dot != nullptr) {
            *dot = '\0';
        }
        return n;
    }();
    return name.data();
}

const char *base_name(const char *path) noexcept
{
    const char *slash = std::strrchr(path, '/');
    return slash != nullptr ? slash + 1 : path;
}

void write_all(const char *p, std::size_t n) noexcept
{
    while (n > 0) {
        const ssize_t w = ::write(STDERR_FILENO, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;  // nowhere left to report it
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

void store_levels(const log_levels &levels) noexcept
{
    for (std::size_t i = 0; i < log_component_count; ++i) {
        detail::log_current[i].store(static_cast<std::uint8_t>(levels[i]),
                                     std::memory_order_relaxed);
    }
}

}  // namespace

const char *log_level_name(log_level l) noexcept
{
    const auto i = static_cast<std::size_t>(l);
    return i < level_count ? level_names[i] : "?";
}

const char *log_component_name(log_component c) noexcept
{
    const auto i = static_cast<std::size_t>(c);
    return i < log_component_count ? component_names[i] : "?";
}

status log_parse_levels(const char *spec, log_levels &out, std::string *error)
{
    out.fill(log_level::warn);
    if (error != nullptr) {
        error->clear();
    }
    if (spec == nullptr) {
        return status::ok;
    }
    // A bare LEVEL is the default for the components not named, wherever it
    // appears in the list, so "warn,shm:trace" and "shm:trace,warn" agree.
    log_level fallback = log_level::warn;
    std::array<bool, log_component_count> named{};
    log_levels named_level{};
    bool ok = true;

    const std::string s(spec);
    std::size_t pos = 0;
    while (pos <= s.size()) {
        std::size_t comma = s.find(',', pos);
        if (comma == std::string::npos) {
            comma = s.size();
        }
        const std::string item = trim(s.substr(pos, comma - pos));
        pos = comma + 1;
        if (item.empty()) {
            continue;
        }
        const auto colon = item.find(':');
        log_level l;
        if (colon == std::string::npos) {
            if (!find_level(item, &l)) {
                append_error(error, "unknown log level '" + item +
                                        "' (levels: error warn info debug trace trace_data "
                                        "trace_poll)");
                ok = false;
                continue;
            }
            fallback = l;
            continue;
        }
        const std::string comp = trim(item.substr(0, colon));
        const std::string level = trim(item.substr(colon + 1));
        std::size_t c;
        if (!find_component(comp, &c)) {
            append_error(error, "unknown log component '" + comp +
                                    "' (components: core base proto self shm tcp verbs pmix)");
            ok = false;
            continue;
        }
        if (!find_level(level, &l)) {
            append_error(error, "unknown log level '" + level + "' for component '" + comp +
                                    "' (levels: error warn info debug trace trace_data "
                                    "trace_poll)");
            ok = false;
            continue;
        }
        named[c] = true;
        named_level[c] = l;
    }
    for (std::size_t i = 0; i < log_component_count; ++i) {
        out[i] = named[i] ? named_level[i] : fallback;
    }
    return ok ? status::ok : status::invalid;
}

void log_init() noexcept
{
    int expected = 0;
    if (!init_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        return;  // done, or another thread is doing it (it uses the defaults meanwhile)
    }
    const std::string spec = config_current_text(log_table, log_fields[0]);
    log_levels levels;
    std::string error;
    const status s = log_parse_levels(spec.c_str(), levels, &error);
    store_levels(levels);
    init_state.store(2, std::memory_order_release);
    // After init_state is 2: log_write does not come back here.
    if (s != status::ok) {
        WEFT_LOG(core, warn, "WEFT_LOG_LEVEL='%s': %s", spec.c_str(), error.c_str());
    }
}

status log_set_levels(const char *spec, std::string *error)
{
    log_init();  // so that a later lazy log_init does not overwrite these levels
    log_levels levels;
    const status s = log_parse_levels(spec, levels, error);
    store_levels(levels);
    return s;
}

void log_set_rank(std::int64_t rank) noexcept
{
    current_rank.store(rank, std::memory_order_relaxed);
}

void log_set_level(log_component c, log_level l) noexcept
{
    log_init();  // so that a later lazy log_init does not overwrite this level
    detail::log_current[static_cast<std::size_t>(c)].store(static_cast<std::uint8_t>(l),
                                                           std::memory_order_relaxed);
}

log_level log_get_level(log_component c) noexcept
{
    return static_cast<log_level>(
        detail::log_current[static_cast<std::size_t>(c)].load(std::memory_order_relaxed));
}

log_counts log_get_counts() noexcept
{
    return {error_count.load(std::memory_order_relaxed),
            warning_count.load(std::memory_order_relaxed)};
}

const config_table &log_config_table() noexcept
{
    return log_table;
}

void log_write(log_component c, log_level l, const char *file, int line, const char *fmt,
               ...) noexcept
{
    const int saved_errno = errno;  // callers often log and then look at errno
    if (init_state.load(std::memory_order_acquire) != 2) [[unlikely]] {
        log_init();
    }
    if (l == log_level::error) {
        error_count.fetch_add(1, std::memory_order_relaxed);
    } else if (l == log_level::warn) {
        warning_count.fetch_add(1, std::memory_order_relaxed);
    }

    char suffix[256];
    int suffix_len = 0;
    if (l >= log_level::debug && file != nullptr) {
        suffix_len = std::snprintf(suffix, sizeof(suffix), " (%s:%d)", base_name(file), line);
        suffix_len = std::min(suffix_len, static_cast<int>(sizeof(suffix)) - 1);
    }

    char buf[max_line];
    char rank[24] = "-";
    if (const std::int64_t r = current_rank.load(std::memory_order_relaxed); r >= 0) {
        std::snprintf(rank, sizeof(rank), "%lld", static_cast<long long>(r));
    }
    // The pid is read every time: forked children log with their own.
    int len =
        std::snprintf(buf, sizeof(buf), "[%s:%d:%s] weft %s %s: ", host_name(),
                      static_cast<int>(getpid()), rank, log_component_name(c), log_level_name(l));
    // Room left for the message: keep space for the suffix and the newline.
    const std::size_t reserve = static_cast<std::size_t>(suffix_len) + 1;
    const std::size_t room = sizeof(buf) - static_cast<std::size_t>(len) - reserve;

    std::va_list ap;
    va_start(ap, fmt);
    const int want = std::vsnprintf(buf + len, room, fmt, ap);
    va_end(ap);
    if (want < 0) {
        const int n = std::snprintf(buf + len, room, "(bad log format '%s')", fmt);
        len += std::clamp(n, 0, static_cast<int>(room) - 1);
    } else if (static_cast<std::size_t>(want) >= room) {
        len += static_cast<int>(room) - 1;
        std::memcpy(buf + len - 3, "...", 3);
    } else {
        len += want;
    }
    while (len > 0 && buf[len - 1] == '\n') {
        --len;
    }
    std::memcpy(buf + len, suffix, static_cast<std::size_t>(suffix_len));
    len += suffix_len;
    buf[len++] = '\n';
    write_all(buf, static_cast<std::size_t>(len));
    errno = saved_errno;
}

}  // namespace weft::base
