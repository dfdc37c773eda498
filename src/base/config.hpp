#pragma once
// Configuration tables. Each component declares one table: name, type, default,
// one-line doc, and where the parsed value goes in its typed struct. The table
// drives parsing (units: 8k, 1m, inf, auto, y/n), `weft_info -c`, the unknown
// variable warning, and docs/configuration.md. Environment names are
// WEFT_<COMPONENT>_<NAME>. Parsed once at init; never read on the fast path.
//
// Declaring a table (the member's C++ type is checked against the config_type
// at compile time; the table is a constant, so it can be registered from
// anywhere without static-initialisation-order trouble):
//
//   struct shm_config {
//       std::size_t fifo_size;
//       std::uint64_t poll_timeout_us;
//       base::config_ternary cma;
//       int mode;  // index into the choices
//   };
//   inline constexpr base::config_field shm_config_fields[] = {
//       base::make_field<&shm_config::fifo_size>("FIFO_SIZE", base::config_type::size, "64k",
//                                                "bytes of each receive FIFO"),
//       base::make_field<&shm_config::poll_timeout_us>("POLL_TIMEOUT", base::config_type::time_us,
//                                                      "10ms", "how long a blocked poll sleeps"),
//       base::make_field<&shm_config::cma>("CMA", base::config_type::ternary, "auto",
//                                          "use cross-memory attach for large messages"),
//       base::make_field<&shm_config::mode>("MODE", base::config_type::choice, "poll",
//                                           "how receivers wait", "poll|futex"),
//   };
//   inline constexpr base::config_table shm_config_table =
//       base::make_table("SHM", "shared-memory transport", shm_config_fields);
//
//   shm_config cfg;
//   base::config_register(shm_config_table);          // weft_info -c, unknown-name check
//   if (base::config_load(shm_config_table, &cfg) != base::status::ok) { ... }
//
// Plain aggregate initialisation with offsetof() still works:
//   {"FIFO_SIZE", config_type::size, "64k", "doc", offsetof(shm_config, fifo_size), nullptr}

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.hpp"

namespace weft::base {

enum class config_type {
    size,     ///< std::size_t with units: 64, 8k, 1m, 2g, inf (= SIZE_MAX); auto (=
              ///< config_size_auto) where the field's default is "auto
    uint,     ///< unsigned (std::uint64_t), plain integer
    integer,  ///< signed (std::int64_t)
    boolean,  ///< bool: y/n, yes/no, on/off, true/false, 1/0
    ternary,  ///< config_ternary: yes/no/auto
    string,   ///< std::string
    time_us,  ///< std::uint64_t microseconds, with units: 10us, 5ms, 2s (bare number = us)
    choice,   ///< int index into `choices` (e.g. "manual|auto")
};

enum class config_ternary : int { no = 0, yes = 1, automatic = 2 };

/// The value of a size field set to "auto" (accepted only by fields whose
/// default is "auto"): the component computes it.
inline constexpr std::size_t config_size_auto = static_cast<std::size_t>(-2);

/// Accepted values of a numeric field (size, uint, time_us), both ends included.
struct config_range {
    std::uint64_t lo;
    std::uint64_t hi;
};

/// One variable: WEFT_<table prefix>_<name>.
struct config_field {
    const char *name;  ///< upper case, e.g. "FIFO_SIZE"
    config_type type;
    const char *default_value;  ///< as the user would write it; nullptr: leave the member as is
    const char *doc;            ///< one line
    std::size_t offset;         ///< offsetof(the component's struct, member); unused if `member`
    const char *choices = nullptr;  ///< config_type::choice: "a|b|c"; else nullptr
    /// Set by make_field(): returns the address of the member in the struct
    /// (then `offset` is not used). nullptr: the member is at `offset`.
    void *(*member)(void *object) = nullptr;
    /// Numeric fields: values outside [range.lo, range.hi] are refused, naming
    /// the range. Unused when `ranged` is false.
    config_range range{0, 0};
    bool ranged = false;
};

/// A component's table. `prefix` is e.g. "SHM" (variables WEFT_SHM_*), or "" for
/// the core table (variables WEFT_<NAME>).
struct config_table {
    const char *prefix;
    const char *component_doc;
    const config_field *fields;
    std::size_t nfields;
};

/// The C++ type of a member of each config_type.
template <config_type T>
struct config_value;
template <>
struct config_value<config_type::size> {
    using type = std::size_t;
};
template <>
struct config_value<config_type::uint> {
    using type = std::uint64_t;
};
template <>
struct config_value<config_type::integer> {
    using type = std::int64_t;
};
template <>
struct config_value<config_type::boolean> {
    using type = bool;
};
template <>
struct config_value<config_type::ternary> {
    using type = config_ternary;
};
template <>
struct config_value<config_type::string> {
    using type = std::string;
};
template <>
struct config_value<config_type::time_us> {
    using type = std::uint64_t;
};
template <>
struct config_value<config_type::choice> {
    using type = int;
};
template <config_type T>
using config_value_t = typename config_value<T>::type;

namespace detail {

template <auto Member>
struct config_member_traits;
template <class S, class M, M S::*Member>
struct config_member_traits<Member> {
    using object_type = S;
    using member_type = M;
    static void *address(void *object) { return &(static_cast<S *>(object)->*Member); }
};

template <class M>
constexpr bool config_type_fits(config_type t) noexcept
{
    switch (t) {
        case config_type::size:
            return std::is_same_v<M, config_value_t<config_type::size>>;
        case config_type::uint:
            return std::is_same_v<M, config_value_t<config_type::uint>>;
        case config_type::integer:
            return std::is_same_v<M, config_value_t<config_type::integer>>;
        case config_type::boolean:
            return std::is_same_v<M, config_value_t<config_type::boolean>>;
        case config_type::ternary:
            return std::is_same_v<M, config_value_t<config_type::ternary>>;
        case config_type::string:
            return std::is_same_v<M, config_value_t<config_type::string>>;
        case config_type::time_us:
            return std::is_same_v<M, config_value_t<config_type::time_us>>;
        case config_type::choice:
            return std::is_same_v<M, config_value_t<config_type::choice>>;
    }
    return false;
}

// Not constexpr: calling one from make_field (consteval) is a compile error
// whose message names the problem.
inline void config_member_type_does_not_match_config_type() noexcept {}
inline void config_choice_field_needs_choices() noexcept {}
inline void config_range_needs_an_unsigned_type() noexcept {}
inline void config_range_is_empty() noexcept {}

}  // namespace detail

/// A field whose value goes to the data member `Member` (a pointer to member,
/// e.g. &shm_config::fifo_size). Evaluated at compile time: a member whose type
/// is not config_value_t<type>, or a choice field without choices, does not compile.
template <auto Member>
consteval config_field make_field(const char *name, config_type type, const char *default_value,
                                  const char *doc, const char *choices = nullptr) noexcept
{
    using traits = detail::config_member_traits<Member>;
    if (!detail::config_type_fits<typename traits::member_type>(type)) {
        detail::config_member_type_does_not_match_config_type();
    }
    if ((type == config_type::choice) != (choices != nullptr)) {
        detail::config_choice_field_needs_choices();
    }
    return config_field{name, type, default_value, doc, 0, choices, &traits::address};
}

/// A numeric field (size, uint or time_us) whose value must lie in `range`:
/// a value outside it fails the load and the message names the range.
template <auto Member>
consteval config_field make_field(const char *name, config_type type, const char *default_value,
                                  const char *doc, config_range range) noexcept
{
    if (type != config_type::size && type != config_type::uint && type != config_type::time_us) {
        detail::config_range_needs_an_unsigned_type();
    }
    if (range.lo > range.hi) {
        detail::config_range_is_empty();
    }
    // Built here rather than by the other make_field: clang 14 refuses a
    // consteval call whose arguments are this function's parameters.
    using traits = detail::config_member_traits<Member>;
    if (!detail::config_type_fits<typename traits::member_type>(type)) {
        detail::config_member_type_does_not_match_config_type();
    }
    config_field f{name, type, default_value, doc, 0, nullptr, &traits::address};
    f.range = range;
    f.ranged = true;
    return f;
}

/// A table over a fixed array of fields.
template <std::size_t N>
constexpr config_table make_table(const char *prefix, const char *component_doc,
                                  const config_field (&fields)[N]) noexcept
{
    return config_table{prefix, component_doc, fields, N};
}

/// Where field `f`'s value lives inside `object` (the component's struct).
[[nodiscard]] inline void *config_member(const config_field &f, void *object) noexcept
{
    return f.member != nullptr ? f.member(object) : static_cast<char *>(object) + f.offset;
}

/// Parse one value as the field's type into `out` (points at the member). On
/// error, `out` is unchanged and `error` (if not null) receives the reason,
/// without the variable name, e.g. "'12q' is not a size (examples: 4096, 64k, 1m, inf)".
[[nodiscard]] status config_parse_value(const config_field &f, const char *text, void *out,
                                        std::string *error);

/// Fill `out` (the component's struct) with defaults, then with WEFT_* environment
/// values. A value that does not parse is an error (logged, naming the variable);
/// that member keeps its default, the other fields are still loaded.
[[nodiscard]] status config_load(const config_table &t, void *out);

/// Whether `text` is a valid value of field `f` (it parses, and lies in the
/// field's range); the reason in `error` otherwise (without the variable name).
[[nodiscard]] status config_check_value(const config_field &f, const char *text,
                                        std::string *error);

/// Register a table (for weft_info -c and the unknown-variable check). Idempotent.
/// The table must outlive the process (a namespace-scope constant): the registry
/// keeps its address.
void config_register(const config_table &t);

/// All registered tables, in registration order. The logging table
/// (log_config_table(), WEFT_LOG_LEVEL) is always first.
[[nodiscard]] std::vector<const config_table *> config_tables();

/// An environment variable named WEFT_* that no registered table declares.
struct config_unknown {
    std::string name;        ///< e.g. "WEFT_SHM_FIFO_SZIE"
    std::string suggestion;  ///< closest declared name, or "" when none is close
};
/// The unknown WEFT_* variables of the environment now (no logging).
[[nodiscard]] std::vector<config_unknown> config_find_unknown();
/// A WEFT_* name that weft's scripts and test programs read (WEFT_BUILD_DIR,
/// WEFT_MPIRUN, WEFT_TEST_*, ...): never reported as unknown.
[[nodiscard]] bool config_is_tool_variable(std::string_view name) noexcept;

/// Warn (once per process) about WEFT_* variables that no registered table
/// declares, naming the closest valid one.
void config_check_unknown() noexcept;

/// The current value of a field in the environment, or its default, as text.
[[nodiscard]] std::string config_current_text(const config_table &t, const config_field &f);

/// The environment variable of a field: "WEFT_" + prefix + "_" + name, or
/// "WEFT_" + name when the prefix is "".
[[nodiscard]] std::string config_variable_name(const config_table &t, const config_field &f);

/// One variable's place: its table and field.
struct config_variable {
    const config_table *table = nullptr;
    const config_field *field = nullptr;
};

/// The registered variable called `name`: the full name ("WEFT_SHM_FIFO_SIZE")
/// or without the "WEFT_" prefix ("SHM_FIFO_SIZE"), upper or lower case. When
/// there is none, `nearest` (if not null) gets the closest declared full name,
/// or "" when none is close.
[[nodiscard]] bool config_find_variable(std::string_view name, config_variable &out,
                                        std::string *nearest = nullptr);

/// The configuration values of one fabric (weft_config in weft.h): for every
/// registered variable, the text the user gave (from the environment or set()),
/// or nothing, meaning its default. Values are checked when they enter the
/// store, so load() of a component's table never fails for a bad value.
/// Not thread-safe: the owner serialises changes; reads of a store nobody
/// changes are safe from any thread.
class config_store {
  public:
    /// Every registered variable set in the environment (WEFT_*). A value that
    /// does not parse or is out of range is logged as an error naming the
    /// variable, and the call returns status::invalid (the valid values are
    /// kept). Unknown WEFT_* variables are warned about (once per process).
    [[nodiscard]] status read_environment();

    /// Set `name` (as in config_find_variable) to `value`, after checking it.
    /// no_entry: no such variable (logged with the nearest name); invalid: a
    /// bad value (logged with the reason). `error` (if not null) gets the text.
    [[nodiscard]] status set(std::string_view name, std::string_view value,
                             std::string *error = nullptr);

    /// The value of `name`: the one set, else its default. no_entry: no such variable.
    [[nodiscard]] status get(std::string_view name, std::string &value) const;

    /// Whether `var` was given a value (environment or set()), not its default.
    [[nodiscard]] bool is_set(const config_table &t, const config_field &f) const;

    /// Fill `out` (table `t`'s struct) with the defaults, then the values set.
    void load(const config_table &t, void *out) const;

    /// The value of field `f` of table `t` as text (set, or the default).
    [[nodiscard]] std::string text(const config_table &t, const config_field &f) const;

  private:
    struct value {
        const config_field *field;
        std::string text;
    };
    std::vector<value> values_;  ///< explicit values, at most one per field
};

/// "size", "uint", "integer", "bool", "ternary", "string", "time", "choice".
[[nodiscard]] const char *config_type_name(config_type t) noexcept;
/// A number of type `t` as it would be written: sizes with k/m/g/t when
/// exact (64k), times with us/ms/s.
[[nodiscard]] std::string config_number_text(config_type t, std::uint64_t v);
/// A field's type as documented: "uint 3..65535", "choice (a|b)", "yes|no|auto".
[[nodiscard]] std::string config_type_text(const config_field &f);

/// Levenshtein distance between two strings (for "did you mean").
[[nodiscard]] std::size_t config_edit_distance(const std::string &a, const std::string &b);

}  // namespace weft::base
