// Configuration tables: value parsing, loading from the environment, the
// registry of tables and the unknown-variable check. See config.hpp.

#include "base/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <strings.h>
#include <unistd.h>

#include "base/lock.hpp"
#include "base/log.hpp"

extern char **environ;

namespace weft::base {

namespace {

constexpr std::string_view var_prefix = "WEFT_";

bool iequal(std::string_view a, const char *b)
{
    return a.size() == std::strlen(b) && strncasecmp(a.data(), b, a.size()) == 0;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return s;
}

enum class number_result { ok, not_a_number, overflow };

// Leading unsigned number of `s` (decimal, or hexadecimal after 0x when
// `allow_hex`); `s` is left at the first character after it.
number_result parse_unsigned(std::string_view &s, bool allow_hex, std::uint64_t *out)
{
    unsigned base = 10;
    if (allow_hex && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    std::uint64_t v = 0;
    std::size_t n = 0;
    bool overflow = false;
    for (; n < s.size(); ++n) {
        const unsigned char ch = static_cast<unsigned char>(s[n]);
        unsigned digit;
        if (std::isdigit(ch)) {
            digit = ch - '0';
        } else if (base == 16 && std::isxdigit(ch)) {
            digit = static_cast<unsigned>(std::tolower(ch) - 'a' + 10);
        } else {
            break;
        }
        if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / base) {
            overflow = true;
        }
        v = v * base + digit;
    }
    if (n == 0) {
        return number_result::not_a_number;
    }
    s.remove_prefix(n);
    if (overflow) {
        return number_result::overflow;
    }
    *out = v;
    return number_result::ok;
}

// A multiplier for a unit suffix, 0 when the suffix is not one of `units`.
struct unit {
    const char *suffix;
    std::uint64_t factor;
};

std::uint64_t find_unit(std::string_view suffix, const unit *units, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        if (iequal(suffix, units[i].suffix)) {
            return units[i].factor;
        }
    }
    return 0;
}

// Binary multiples: 1k = 1024 (the sizes configured are buffers and queues).
constexpr unit size_units[] = {
    {"", 1},           {"b", 1},           {"k", 1ull << 10}, {"kb", 1ull << 10},
    {"m", 1ull << 20}, {"mb", 1ull << 20}, {"g", 1ull << 30}, {"gb", 1ull << 30},
    {"t", 1ull << 40}, {"tb", 1ull << 40},
};

constexpr unit time_units[] = {
    {"", 1},
    {"us", 1},
    {"ms", 1000},
    {"s", 1000000},
};

std::string quoted(std::string_view text)
{
    return "'" + std::string(text) + "'";
}

status fail(std::string *error, std::string text)
{
    if (error != nullptr) {
        *error = std::move(text);
    }
    return status::invalid;
}

// A number followed by one of `units`, or inf/infinity (= `inf`).
status parse_with_units(std::string_view text, const unit *units, std::size_t nunits,
                        std::uint64_t inf, std::uint64_t *out, const char *what,
                        const char *examples, std::string *error)
{
    std::string_view s = trim(text);
    if (iequal(s, "inf") || iequal(s, "infinity")) {
        *out = inf;
        return status::ok;
    }
    std::uint64_t v;
    const number_result r = parse_unsigned(s, false, &v);
    if (r == number_result::not_a_number) {
        return fail(error, quoted(text) + " is not a " + what + " (examples: " + examples + ")");
    }
    const std::uint64_t factor = find_unit(trim(s), units, nunits);
    if (factor == 0) {
        return fail(error, quoted(text) + " is not a " + what + " (examples: " + examples + ")");
    }
    if (r == number_result::overflow || v > inf / factor) {
        return fail(error, quoted(text) + " is too large for a " + what);
    }
    *out = v * factor;
    return status::ok;
}

bool parse_bool_word(std::string_view s, bool *out)
{
    static constexpr const char *yes[] = {"y", "yes", "on", "true", "1"};
    static constexpr const char *no[] = {"n", "no", "off", "false", "0"};
    for (const char *w : yes) {
        if (iequal(s, w)) {
            *out = true;
            return true;
        }
    }
    for (const char *w : no) {
        if (iequal(s, w)) {
            *out = false;
            return true;
        }
    }
    return false;
}

struct registry {
    mutex_lock lock;
    std::vector<const config_table *> tables;
    std::vector<std::string> warned;  // unknown variables already reported

    registry() { tables.push_back(&log_config_table()); }
};

registry &the_registry()
{
    static registry r;
    return r;
}

}  // namespace

const char *config_type_name(config_type t) noexcept
{
    switch (t) {
        case config_type::size:
            return "size";
        case config_type::uint:
            return "uint";
        case config_type::integer:
            return "integer";
        case config_type::boolean:
            return "bool";
        case config_type::ternary:
            return "ternary";
        case config_type::string:
            return "string";
        case config_type::time_us:
            return "time";
        case config_type::choice:
            return "choice";
    }
    return "?";
}

std::string config_number_text(config_type t, std::uint64_t v)
{
    if (t == config_type::size) {
        if (v == config_size_auto) {
            return "auto";
        }
        if (v == std::numeric_limits<std::size_t>::max()) {
            return "inf";
        }
        static const char suffix[] = {'k', 'm', 'g', 't'};
        std::string unit;
        for (char c : suffix) {
            if (v < 1024 || v % 1024 != 0) {
                break;
            }
            v /= 1024;
            unit = c;
        }
        return std::to_string(v) + unit;
    }
    if (t == config_type::time_us) {
        if (v != 0 && v % 1000000 == 0) {
            return std::to_string(v / 1000000) + "s";
        }
        if (v != 0 && v % 1000 == 0) {
            return std::to_string(v / 1000) + "ms";
        }
        return std::to_string(v) + "us";
    }
    return std::to_string(v);
}

std::string config_type_text(const config_field &f)
{
    std::string type = f.type == config_type::ternary ? "yes|no|auto" : config_type_name(f.type);
    if (f.choices != nullptr) {
        type += " (" + std::string(f.choices) + ")";
    }
    if (f.ranged) {
        type += " " + config_number_text(f.type, f.range.lo) + ".." +
                config_number_text(f.type, f.range.hi);
    }
    return type;
}

std::string config_variable_name(const config_table &t, const config_field &f)
{
    std::string name(var_prefix);
    if (t.prefix != nullptr && t.prefix[0] != '\0') {
        name += t.prefix;
        name += '_';
    }
    name += f.name;
    return name;
}

namespace {

std::string range_text(const config_field &f)
{
    auto end = [&](std::uint64_t v) {
        if (f.type == config_type::size && v == std::numeric_limits<std::size_t>::max()) {
            return std::string("inf");
        }
        if (f.type == config_type::time_us && v == std::numeric_limits<std::uint64_t>::max()) {
            return std::string("inf");
        }
        return std::to_string(v) + (f.type == config_type::time_us ? "us" : "");
    };
    return end(f.range.lo) + ".." + end(f.range.hi);
}

/// A parsed numeric value against the field's range.
status check_range(const config_field &f, std::uint64_t v, const char *text, std::string *error)
{
    if (f.ranged && (v < f.range.lo || v > f.range.hi)) {
        return fail(error, quoted(text) + " is out of range (" + range_text(f) + ")");
    }
    return status::ok;
}

}  // namespace

status config_parse_value(const config_field &f, const char *text, void *out, std::string *error)
{
    if (text == nullptr) {
        return fail(error, "no value");
    }
    const std::string_view s = trim(text);
    switch (f.type) {
        case config_type::size: {
            if (iequal(s, "auto") && f.default_value != nullptr &&
                iequal(f.default_value, "auto")) {
                *static_cast<std::size_t *>(out) = config_size_auto;
                return status::ok;
            }
            std::uint64_t v;
            status st = parse_with_units(text, size_units, std::size(size_units),
                                         std::numeric_limits<std::size_t>::max(), &v, "size",
                                         "4096, 64k, 1m, inf", error);
            if (st == status::ok && v == config_size_auto) {
                v = std::numeric_limits<std::size_t>::max();  // a number never means auto
            }
            if (st == status::ok) {
                st = check_range(f, v, text, error);
            }
            if (st == status::ok) {
                *static_cast<std::size_t *>(out) = static_cast<std::size_t>(v);
            }
            return st;
        }
        case config_type::time_us: {
            std::uint64_t v;
            status st = parse_with_units(text, time_units, std::size(time_units),
                                         std::numeric_limits<std::uint64_t>::max(), &v, "time",
                                         "250 (= 250us), 100us, 5ms, 2s, inf", error);
            if (st == status::ok) {
                st = check_range(f, v, text, error);
            }
            if (st == status::ok) {
                *static_cast<std::uint64_t *>(out) = v;
            }
            return st;
        }
        case config_type::uint: {
            std::string_view rest = s;
            std::uint64_t v;
            const number_result r = parse_unsigned(rest, true, &v);
            if (r == number_result::not_a_number || !rest.empty()) {
                return fail(error,
                            quoted(text) + " is not an unsigned integer (examples: 0, 42, 0x1f)");
            }
            if (r == number_result::overflow) {
                return fail(error, quoted(text) + " is too large (at most 2^64-1)");
            }
            if (const status st = check_range(f, v, text, error); st != status::ok) {
                return st;
            }
            *static_cast<std::uint64_t *>(out) = v;
            return status::ok;
        }
        case config_type::integer: {
            std::string_view rest = s;
            bool negative = false;
            if (!rest.empty() && (rest.front() == '-' || rest.front() == '+')) {
                negative = rest.front() == '-';
                rest.remove_prefix(1);
            }
            std::uint64_t v;
            const number_result r = parse_unsigned(rest, true, &v);
            if (r == number_result::not_a_number || !rest.empty()) {
                return fail(error, quoted(text) + " is not an integer (examples: -1, 0, 42)");
            }
            constexpr auto max =
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
            if (r == number_result::overflow || v > max + (negative ? 1 : 0)) {
                return fail(error, quoted(text) + " is out of range for a 64-bit integer");
            }
            // -v computed in unsigned arithmetic: also right for INT64_MIN.
            *static_cast<std::int64_t *>(out) =
                negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
            return status::ok;
        }
        case config_type::boolean: {
            bool v;
            if (!parse_bool_word(s, &v)) {
                return fail(error, quoted(text) +
                                       " is not a boolean (y/n, yes/no, on/off, true/false, 1/0)");
            }
            *static_cast<bool *>(out) = v;
            return status::ok;
        }
        case config_type::ternary: {
            bool v;
            config_ternary t;
            if (iequal(s, "auto") || iequal(s, "try")) {
                t = config_ternary::automatic;
            } else if (parse_bool_word(s, &v)) {
                t = v ? config_ternary::yes : config_ternary::no;
            } else {
                return fail(error, quoted(text) +
                                       " is not yes/no/auto (y/n, yes/no, on/off, "
                                       "true/false, 1/0, auto/try)");
            }
            *static_cast<config_ternary *>(out) = t;
            return status::ok;
        }
        case config_type::string:
            static_cast<std::string *>(out)->assign(text);
            return status::ok;
        case config_type::choice: {
            if (f.choices == nullptr) {
                return fail(error, "the field declares no choices");
            }
            std::string_view rest = f.choices;
            for (int index = 0;; ++index) {
                const std::size_t bar = rest.find('|');
                if (iequal(s, std::string(rest.substr(0, bar)).c_str())) {
                    *static_cast<int *>(out) = index;
                    return status::ok;
                }
                if (bar == std::string_view::npos) {
                    break;
                }
                rest.remove_prefix(bar + 1);
            }
            return fail(error, quoted(text) + " is not one of " + f.choices);
        }
    }
    return fail(error, "unknown config_type");
}

status config_load(const config_table &t, void *out)
{
    status result = status::ok;
    std::string error;
    for (std::size_t i = 0; i < t.nfields; ++i) {
        const config_field &f = t.fields[i];
        void *member = config_member(f, out);
        const std::string name = config_variable_name(t, f);
        if (f.default_value != nullptr &&
            config_parse_value(f, f.default_value, member, &error) != status::ok) {
            // A bug in the table, not in the user's settings.
            WEFT_LOG(base, error, "%s: default value: %s", name.c_str(), error.c_str());
            result = status::invalid;
        }
        if (const char *value = std::getenv(name.c_str()); value != nullptr) {
            if (config_parse_value(f, value, member, &error) != status::ok) {
                WEFT_LOG(base, error, "%s: %s", name.c_str(), error.c_str());
                result = status::invalid;
            }
        }
    }
    return result;
}

void config_register(const config_table &t)
{
    registry &r = the_registry();
    scoped_guard g(r.lock);
    if (std::find(r.tables.begin(), r.tables.end(), &t) == r.tables.end()) {
        r.tables.push_back(&t);
    }
}

std::vector<const config_table *> config_tables()
{
    registry &r = the_registry();
    scoped_guard g(r.lock);
    return r.tables;
}

std::size_t config_edit_distance(const std::string &a, const std::string &b)
{
    // Two rows of the Levenshtein table: prev[j] = distance(a[0..i), b[0..j)).
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        prev[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

bool config_is_tool_variable(std::string_view name) noexcept
{
    // Read by weft's scripts and test programs, never by the library
    // (docs/configuration.md, "Variables of the tools").
    static constexpr std::string_view names[] = {
        "WEFT_BUILD_DIR", "WEFT_MTL_DIR", "WEFT_MPIRUN",    "WEFT_MPI_RUN_TIMEOUT",
        "WEFT_PERF",      "WEFT_RXE_VM",  "WEFT_PLOT_WHAT", "WEFT_BUILT_TRANSPORTS",
    };
    // WEFT_COLL_*: read by the collectives library (collectives/), which checks
    // its own names (docs/collectives.md, "Configuration").
    static constexpr std::string_view prefixes[] = {"WEFT_TEST_", "WEFT_PERF_", "WEFT_VERBS_VM_",
                                                    "WEFT_COLL_"};
    for (const std::string_view n : names) {
        if (name == n) {
            return true;
        }
    }
    for (const std::string_view p : prefixes) {
        if (name.starts_with(p)) {
            return true;
        }
    }
    return false;
}

std::vector<config_unknown> config_find_unknown()
{
    std::vector<std::string> known;
    for (const config_table *t : config_tables()) {
        for (std::size_t i = 0; i < t->nfields; ++i) {
            known.push_back(config_variable_name(*t, t->fields[i]));
        }
    }
    std::vector<config_unknown> unknown;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string_view entry(*e);
        if (!entry.starts_with(var_prefix)) {
            continue;
        }
        const std::string name(entry.substr(0, entry.find('=')));
        if (std::find(known.begin(), known.end(), name) != known.end() ||
            config_is_tool_variable(name)) {
            continue;
        }
        // Compare in upper case, so that a wrongly cased name finds its match.
        std::string upper = name;
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
        std::size_t best = std::numeric_limits<std::size_t>::max();
        const std::string *best_name = nullptr;
        for (const std::string &k : known) {
            const std::size_t d = config_edit_distance(upper, k);
            if (d < best) {
                best = d;
                best_name = &k;
            }
        }
        // Only suggest a name that is plausibly what was meant: at most a third
        // of the characters after WEFT_ differ (at least 2 edits, a transposition).
        const std::size_t limit = std::max<std::size_t>(2, (name.size() - var_prefix.size()) / 3);
        unknown.push_back(
            {name, best_name != nullptr && best <= limit ? *best_name : std::string()});
    }
    return unknown;
}

void config_check_unknown() noexcept
{
    std::vector<config_unknown> report;
    {
        registry &r = the_registry();
        const std::vector<config_unknown> unknown = config_find_unknown();
        scoped_guard g(r.lock);
        for (const config_unknown &u : unknown) {
            if (std::find(r.warned.begin(), r.warned.end(), u.name) == r.warned.end()) {
                r.warned.push_back(u.name);
                report.push_back(u);
            }
        }
    }
    for (const config_unknown &u : report) {
        if (!u.suggestion.empty()) {
            WEFT_LOG(base, warn, "%s is not a weft variable; did you mean %s?", u.name.c_str(),
                     u.suggestion.c_str());
        } else {
            WEFT_LOG(base, warn, "%s is not a weft variable (weft_info -c lists them)",
                     u.name.c_str());
        }
    }
}

std::string config_current_text(const config_table &t, const config_field &f)
{
    if (const char *value = std::getenv(config_variable_name(t, f).c_str()); value != nullptr) {
        return value;
    }
    return f.default_value != nullptr ? f.default_value : "";
}

status config_check_value(const config_field &f, const char *text, std::string *error)
{
    // Parse into a scratch value of the field's type: nothing is stored.
    switch (f.type) {
        case config_type::size: {
            std::size_t v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::uint:
        case config_type::time_us: {
            std::uint64_t v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::integer: {
            std::int64_t v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::boolean: {
            bool v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::ternary: {
            config_ternary v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::string: {
            std::string v;
            return config_parse_value(f, text, &v, error);
        }
        case config_type::choice: {
            int v;
            return config_parse_value(f, text, &v, error);
        }
    }
    return fail(error, "unknown config_type");
}

bool config_find_variable(std::string_view name, config_variable &out, std::string *nearest)
{
    std::string upper(trim(name));
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    if (!std::string_view(upper).starts_with(var_prefix)) {
        upper.insert(0, var_prefix);
    }
    std::size_t best = std::numeric_limits<std::size_t>::max();
    std::string best_name;
    for (const config_table *t : config_tables()) {
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const std::string full = config_variable_name(*t, t->fields[i]);
            if (full == upper) {
                out = {t, &t->fields[i]};
                return true;
            }
            const std::size_t d = config_edit_distance(upper, full);
            if (d < best) {
                best = d;
                best_name = full;
            }
        }
    }
    if (nearest != nullptr) {
        const std::size_t limit = std::max<std::size_t>(2, (upper.size() - var_prefix.size()) / 3);
        *nearest = best <= limit ? best_name : std::string();
    }
    return false;
}

status config_store::read_environment()
{
    status result = status::ok;
    for (const config_table *t : config_tables()) {
        for (std::size_t i = 0; i < t->nfields; ++i) {
            const config_field &f = t->fields[i];
            const std::string name = config_variable_name(*t, f);
            const char *text = std::getenv(name.c_str());
            if (text == nullptr) {
                continue;
            }
            std::string error;
            if (config_check_value(f, text, &error) != status::ok) {
                WEFT_LOG(base, error, "%s: %s", name.c_str(), error.c_str());
                result = status::invalid;
                continue;
            }
            auto it = std::find_if(values_.begin(), values_.end(),
                                   [&](const value &v) { return v.field == &f; });
            if (it != values_.end()) {
                it->text = text;
            } else {
                values_.push_back({&f, text});
            }
        }
    }
    config_check_unknown();
    return result;
}

status config_store::set(std::string_view name, std::string_view text, std::string *error)
{
    config_variable var;
    std::string nearest;
    std::string why;
    if (!config_find_variable(name, var, &nearest)) {
        why = "'" + std::string(name) + "' is not a weft configuration variable" +
              (nearest.empty() ? " (weft_info -c lists them)" : "; did you mean " + nearest + "?");
        WEFT_LOG(base, error, "%s", why.c_str());
        if (error != nullptr) {
            *error = why;
        }
        return status::no_entry;
    }
    const std::string value_text(text);
    if (config_check_value(*var.field, value_text.c_str(), &why) != status::ok) {
        why = config_variable_name(*var.table, *var.field) + ": " + why;
        WEFT_LOG(base, error, "%s", why.c_str());
        if (error != nullptr) {
            *error = why;
        }
        return status::invalid;
    }
    auto it = std::find_if(values_.begin(), values_.end(),
                           [&](const value &v) { return v.field == var.field; });
    if (it != values_.end()) {
        it->text = value_text;
    } else {
        values_.push_back({var.field, value_text});
    }
    return status::ok;
}

status config_store::get(std::string_view name, std::string &out) const
{
    config_variable var;
    if (!config_find_variable(name, var)) {
        return status::no_entry;
    }
    out = text(*var.table, *var.field);
    return status::ok;
}

bool config_store::is_set(const config_table &t, const config_field &f) const
{
    (void)t;
    return std::any_of(values_.begin(), values_.end(),
                       [&](const value &v) { return v.field == &f; });
}

std::string config_store::text(const config_table &t, const config_field &f) const
{
    (void)t;
    for (const value &v : values_) {
        if (v.field == &f) {
            return v.text;
        }
    }
    return f.default_value != nullptr ? f.default_value : "";
}

void config_store::load(const config_table &t, void *out) const
{
    for (std::size_t i = 0; i < t.nfields; ++i) {
        const config_field &f = t.fields[i];
        void *member = config_member(f, out);
        std::string error;
        if (f.default_value != nullptr &&
            config_parse_value(f, f.default_value, member, &error) != status::ok) {
            // A bug in the table, not in the user's settings.
            WEFT_LOG(base, error, "%s: default value: %s", config_variable_name(t, f).c_str(),
                     error.c_str());
        }
        for (const value &v : values_) {
            if (v.field == &f) {
                (void)config_parse_value(f, v.text.c_str(), member, nullptr);  // checked at set
            }
        }
    }
}

}  // namespace weft::base
