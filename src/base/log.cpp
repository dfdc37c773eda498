// Logging: see log.hpp. Everything here is off the fast path except
// log_component::enabled(), which is inline in the header.

#include "base/log.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <strings.h>
#include <unistd.h>
#include <utility>

#include "base/config.hpp"
#include "base/lock.hpp"

namespace weft::base {

namespace {

constexpr const char *level_names[] = {"error", "warn",       "info",      "debug",
                                       "trace", "trace_data", "trace_poll"};
constexpr std::size_t level_count = std::size(level_names);
static_assert(level_count == static_cast<std::size_t>(log_level::trace_poll) + 1);

struct log_config {
    std::string level;
};
constexpr config_field log_fields[] = {
    make_field<&log_config::level>(
        "LOG_LEVEL", config_type::string, "warn",
        "log levels: LEVEL or comp:LEVEL,...,LEVEL (levels error warn info debug trace "
        "trace_data trace_poll; components: weft_info -c lists them)"),
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

/// The registered components and the setting in force (WEFT_LOG_LEVEL, or the
/// last log_set_levels), which a component registered later also gets.
struct registry {
    mutex_lock lock;
    std::vector<log_component *> comps;
    log_spec spec;
    bool names_checked = false;
};

registry &the_registry() noexcept
{
    static registry r;
    return r;
}

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

/// Names in `spec` that no registered component has, each with the nearest
/// registered name ("" if none is close). Caller holds the registry lock.
std::vector<std::pair<std::string, std::string>> unknown_names(const registry &r,
                                                               const log_spec &spec)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &[name, level] : spec.named) {
        bool known = false;
        std::size_t best = std::numeric_limits<std::size_t>::max();
        const char *nearest = nullptr;
        for (const log_component *c : r.comps) {
            if (strcasecmp(c->name(), name.c_str()) == 0) {
                known = true;
                break;
            }
            std::string lower = name;
            std::transform(lower.begin(), lower.end(), lower.begin(),
                           [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
            const std::size_t d = config_edit_distance(lower, c->name());
            if (d < best) {
                best = d;
                nearest = c->name();
            }
        }
        if (!known) {
            out.emplace_back(name, nearest != nullptr && best <= 2 ? nearest : "");
        }
    }
    return out;
}

std::string registered_names(const registry &r)
{
    std::string names;
    for (const log_component *c : r.comps) {
        names += names.empty() ? "" : " ";
        names += c->name();
    }
    return names;
}

/// The layers' components are known from the start.
void register_layers() noexcept
{
    static const bool done = [] {
        for (log_component *c : {&log_core, &log_base, &log_proto, &log_pmix}) {
            log_register(*c);
        }
        return true;
    }();
    (void)done;
}

}  // namespace

void log_component::set_level(log_level l) noexcept
{
    log_init();  // so that a later lazy log_init does not overwrite this level
    store(l);
}

log_level log_spec::level_of(const char *name) const noexcept
{
    log_level l = fallback;
    for (const auto &[n, level] : named) {
        if (strcasecmp(n.c_str(), name) == 0) {
            l = level;
        }
    }
    return l;
}

void log_register(log_component &c) noexcept
{
    registry &r = the_registry();
    scoped_guard g(r.lock);
    if (std::find(r.comps.begin(), r.comps.end(), &c) != r.comps.end()) {
        return;
    }
    r.comps.push_back(&c);
    // Before log_init the spec is the default (warn), which is also the
    // component's initial level: storing it changes nothing.
    c.store(r.spec.level_of(c.name()));
}

std::vector<const log_component *> log_components()
{
    register_layers();
    registry &r = the_registry();
    scoped_guard g(r.lock);
    return {r.comps.begin(), r.comps.end()};
}

log_component *log_find_component(const char *name) noexcept
{
    register_layers();
    registry &r = the_registry();
    scoped_guard g(r.lock);
    for (log_component *c : r.comps) {
        if (strcasecmp(c->name(), name) == 0) {
            return c;
        }
    }
    return nullptr;
}

const char *log_level_name(log_level l) noexcept
{
    const auto i = static_cast<std::size_t>(l);
    return i < level_count ? level_names[i] : "?";
}

status log_parse_spec(const char *spec, log_spec &out, std::string *error)
{
    out = log_spec{};
    if (error != nullptr) {
        error->clear();
    }
    if (spec == nullptr) {
        return status::ok;
    }
    // A bare LEVEL is the default for the components not named, wherever it
    // appears in the list, so "warn,shm:trace" and "shm:trace,warn" agree.
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
            out.fallback = l;
            continue;
        }
        const std::string comp = trim(item.substr(0, colon));
        const std::string level = trim(item.substr(colon + 1));
        if (comp.empty()) {
            append_error(error, "empty component name in '" + item + "'");
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
        out.named.emplace_back(comp, l);
    }
    return ok ? status::ok : status::invalid;
}

void log_init() noexcept
{
    register_layers();
    int expected = 0;
    if (!init_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        return;  // done, or another thread is doing it (it uses the defaults meanwhile)
    }
    const std::string text = config_current_text(log_table, log_fields[0]);
    log_spec spec;
    std::string error;
    const status s = log_parse_spec(text.c_str(), spec, &error);
    {
        registry &r = the_registry();
        scoped_guard g(r.lock);
        r.spec = spec;
        for (log_component *c : r.comps) {
            c->store(spec.level_of(c->name()));
        }
    }
    init_state.store(2, std::memory_order_release);
    // After init_state is 2: log_write does not come back here.
    if (s != status::ok) {
        WEFT_LOG(core, warn, "WEFT_LOG_LEVEL='%s': %s", text.c_str(), error.c_str());
    }
}

void log_check_names() noexcept
{
    log_init();
    std::vector<std::pair<std::string, std::string>> unknown;
    std::string names;
    {
        registry &r = the_registry();
        scoped_guard g(r.lock);
        if (r.names_checked) {
            return;
        }
        r.names_checked = true;
        unknown = unknown_names(r, r.spec);
        names = registered_names(r);
    }
    for (const auto &[name, nearest] : unknown) {
        if (!nearest.empty()) {
            WEFT_LOG(core, warn, "WEFT_LOG_LEVEL names log component '%s'; did you mean '%s'?",
                     name.c_str(), nearest.c_str());
        } else {
            WEFT_LOG(core, warn, "WEFT_LOG_LEVEL names log component '%s', which is not one of: %s",
                     name.c_str(), names.c_str());
        }
    }
}

status log_set_levels(const char *spec, std::string *error)
{
    log_init();  // so that a later lazy log_init does not overwrite these levels
    log_spec parsed;
    status s = log_parse_spec(spec, parsed, error);
    registry &r = the_registry();
    scoped_guard g(r.lock);
    for (const auto &[name, nearest] : unknown_names(r, parsed)) {
        append_error(error, "unknown log component '" + name + "'" +
                                (nearest.empty() ? " (components: " + registered_names(r) + ")"
                                                 : " (did you mean '" + nearest + "'?)"));
        s = status::invalid;
    }
    r.spec = parsed;
    for (log_component *c : r.comps) {
        c->store(parsed.level_of(c->name()));
    }
    return s;
}

void log_set_rank(std::int64_t rank) noexcept
{
    current_rank.store(rank, std::memory_order_relaxed);
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

void log_write(const log_component &c, log_level l, const char *file, int line, const char *fmt,
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
    int len = std::snprintf(buf, sizeof(buf), "[%s:%d:%s] weft %.32s %s: ", host_name(),
                            static_cast<int>(getpid()), rank, c.name(), log_level_name(l));
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
