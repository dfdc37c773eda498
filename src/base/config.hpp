#pragma once
// Configuration tables. Each component declares one table: name, type, default,
// one-line doc, and where the parsed value goes in its typed struct. The table
// drives parsing (units: 8k, 1m, inf, auto, y/n), `weft_info -c`, the unknown
// variable warning, and docs/configuration.md. Environment names are
// WEFT_<COMPONENT>_<NAME>. Parsed once at init; never read on the fast path.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace weft::base {

enum class config_type {
    size,     ///< std::size_t with units: 64, 8k, 1m, 2g, inf (= SIZE_MAX)
    uint,     ///< unsigned (std::uint64_t), plain integer
    integer,  ///< signed (std::int64_t)
    boolean,  ///< bool: y/n, yes/no, on/off, true/false, 1/0
    ternary,  ///< config_ternary: yes/no/auto
    string,   ///< std::string
    time_us,  ///< std::uint64_t microseconds, with units: 10us, 5ms, 2s (bare number = us)
    choice,   ///< int index into `choices` (e.g. "manual|auto")
};

enum class config_ternary : int { no = 0, yes = 1, automatic = 2 };

/// One variable: WEFT_<table prefix>_<name>.
struct config_field {
    const char *name;  ///< upper case, e.g. "FIFO_SIZE"
    config_type type;
    const char *default_value;  ///< as the user would write it
    const char *doc;            ///< one line
    std::size_t offset;         ///< offsetof(the component's struct, member)
    const char *choices;        ///< config_type::choice: "a|b|c"; else nullptr
};

/// A component's table. `prefix` is e.g. "SHM" (variables WEFT_SHM_*), or "" for
/// the core table (variables WEFT_<NAME>).
struct config_table {
    const char *prefix;
    const char *component_doc;
    const config_field *fields;
    std::size_t nfields;
};

/// Parse one value as the field's type into `out` (points at the member).
[[nodiscard]] status config_parse_value(const config_field &f, const char *text, void *out,
                                        std::string *error);

/// Fill `out` (the component's struct) with defaults, then with WEFT_* environment
/// values. A value that does not parse is an error (logged, naming the variable).
[[nodiscard]] status config_load(const config_table &t, void *out);

/// Register a table (for weft_info -c and the unknown-variable check). Idempotent.
void config_register(const config_table &t);

/// All registered tables, in registration order.
[[nodiscard]] std::vector<const config_table *> config_tables();

/// Warn (once per process) about WEFT_* variables that no registered table
/// declares, naming the closest valid one.
void config_check_unknown() noexcept;

/// The current value of a field in the environment, or its default, as text.
[[nodiscard]] std::string config_current_text(const config_table &t, const config_field &f);

}  // namespace weft::base
