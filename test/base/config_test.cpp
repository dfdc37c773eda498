// Unit tests of the configuration tables (src/base/config.*).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "base/config.hpp"
#include "base/log.hpp"
#include "log_expect.hpp"

namespace weft::base {
namespace {

// Parses `text` as a field of type T; nullopt (and the reason in *error) on failure.
template <config_type T>
std::optional<config_value_t<T>> parse(const char *text, std::string *error = nullptr,
                                       const char *choices = nullptr)
{
    const config_field f{"X", T, nullptr, "doc", 0, choices};
    config_value_t<T> v{};
    std::string e;
    if (config_parse_value(f, text, &v, &e) != status::ok) {
        EXPECT_FALSE(e.empty()) << "no error text for '" << text << "'";
        if (error != nullptr) {
            *error = e;
        }
        return std::nullopt;
    }
    return v;
}

TEST(config_parse, size_units)
{
    EXPECT_EQ(parse<config_type::size>("0"), 0u);
    EXPECT_EQ(parse<config_type::size>("4096"), 4096u);
    EXPECT_EQ(parse<config_type::size>("12b"), 12u);
    EXPECT_EQ(parse<config_type::size>("12B"), 12u);
    EXPECT_EQ(parse<config_type::size>("64k"), 64u * 1024);
    EXPECT_EQ(parse<config_type::size>("64K"), 64u * 1024);
    EXPECT_EQ(parse<config_type::size>("64kb"), 64u * 1024);
    EXPECT_EQ(parse<config_type::size>("64KB"), 64u * 1024);
    EXPECT_EQ(parse<config_type::size>("1m"), 1u << 20);
    EXPECT_EQ(parse<config_type::size>("3Mb"), 3u << 20);
    EXPECT_EQ(parse<config_type::size>("2g"), std::size_t{2} << 30);
    EXPECT_EQ(parse<config_type::size>("1t"), std::size_t{1} << 40);
    EXPECT_EQ(parse<config_type::size>(" 8k "), 8u * 1024);
    EXPECT_EQ(parse<config_type::size>("inf"), SIZE_MAX);
    EXPECT_EQ(parse<config_type::size>("INF"), SIZE_MAX);
    EXPECT_EQ(parse<config_type::size>("Infinity"), SIZE_MAX);
    EXPECT_EQ(parse<config_type::size>("16777215t"), std::size_t{16777215} << 40);
    EXPECT_EQ(parse<config_type::size>("18446744073709551615"), SIZE_MAX);
}

TEST(config_parse, size_auto_only_where_the_default_is_auto)
{
    const config_field automatic{"X", config_type::size, "auto", "doc", 0, nullptr};
    std::size_t v = 0;
    std::string e;
    EXPECT_EQ(config_parse_value(automatic, "auto", &v, &e), status::ok);
    EXPECT_EQ(v, config_size_auto);
    EXPECT_EQ(config_parse_value(automatic, " AUTO ", &v, &e), status::ok);
    EXPECT_EQ(v, config_size_auto);
    EXPECT_EQ(config_parse_value(automatic, "64k", &v, &e), status::ok);
    EXPECT_EQ(v, 64u * 1024);
    // A number is never auto, even the sentinel's.
    EXPECT_EQ(config_parse_value(automatic, "18446744073709551614", &v, &e), status::ok);
    EXPECT_EQ(v, SIZE_MAX);
    // Elsewhere "auto" is not a size.
    EXPECT_EQ(parse<config_type::size>("auto", &e), std::nullopt);
    EXPECT_EQ(e, "'auto' is not a size (examples: 4096, 64k, 1m, inf)");
    EXPECT_EQ(config_number_text(config_type::size, config_size_auto), "auto");
    EXPECT_EQ(config_number_text(config_type::size, SIZE_MAX), "inf");
    EXPECT_EQ(config_number_text(config_type::size, 65536), "64k");
}

TEST(config_parse, size_errors)
{
    std::string e;
    EXPECT_EQ(parse<config_type::size>("12q", &e), std::nullopt);
    EXPECT_EQ(e, "'12q' is not a size (examples: 4096, 64k, 1m, inf)");
    for (const char *bad : {"", "k", "-1", "1.5k", "0x10", "12 k b", "infinite", "1kk"}) {
        EXPECT_EQ(parse<config_type::size>(bad), std::nullopt) << bad;
    }
    EXPECT_EQ(parse<config_type::size>("16777216t", &e), std::nullopt);  // 2^64
    EXPECT_EQ(e, "'16777216t' is too large for a size");
    EXPECT_EQ(parse<config_type::size>("18446744073709551616", &e), std::nullopt);
    EXPECT_EQ(e, "'18446744073709551616' is too large for a size");
}

TEST(config_parse, time_units)
{
    EXPECT_EQ(parse<config_type::time_us>("250"), 250u);
    EXPECT_EQ(parse<config_type::time_us>("250us"), 250u);
    EXPECT_EQ(parse<config_type::time_us>("5ms"), 5000u);
    EXPECT_EQ(parse<config_type::time_us>("5MS"), 5000u);
    EXPECT_EQ(parse<config_type::time_us>("2s"), 2000000u);
    EXPECT_EQ(parse<config_type::time_us>("0s"), 0u);
    EXPECT_EQ(parse<config_type::time_us>("inf"), UINT64_MAX);
    std::string e;
    EXPECT_EQ(parse<config_type::time_us>("5h", &e), std::nullopt);
    EXPECT_EQ(e, "'5h' is not a time (examples: 250 (= 250us), 100us, 5ms, 2s, inf)");
    for (const char *bad : {"", "ms", "1.5s", "-1", "5 m s", "5sec"}) {
        EXPECT_EQ(parse<config_type::time_us>(bad), std::nullopt) << bad;
    }
    EXPECT_EQ(parse<config_type::time_us>("18446744073710s"), std::nullopt);  // > 2^64 us
}

TEST(config_parse, uint)
{
    EXPECT_EQ(parse<config_type::uint>("0"), 0u);
    EXPECT_EQ(parse<config_type::uint>("42"), 42u);
    EXPECT_EQ(parse<config_type::uint>(" 42 "), 42u);
    EXPECT_EQ(parse<config_type::uint>("0x1f"), 31u);
    EXPECT_EQ(parse<config_type::uint>("0X1F"), 31u);
    EXPECT_EQ(parse<config_type::uint>("18446744073709551615"), UINT64_MAX);
    std::string e;
    EXPECT_EQ(parse<config_type::uint>("18446744073709551616", &e), std::nullopt);
    EXPECT_EQ(e, "'18446744073709551616' is too large (at most 2^64-1)");
    EXPECT_EQ(parse<config_type::uint>("4k", &e), std::nullopt);
    EXPECT_EQ(e, "'4k' is not an unsigned integer (examples: 0, 42, 0x1f)");
    for (const char *bad : {"", "-1", "+1", "0x", "1 2", "abc"}) {
        EXPECT_EQ(parse<config_type::uint>(bad), std::nullopt) << bad;
    }
}

TEST(config_parse, integer)
{
    EXPECT_EQ(parse<config_type::integer>("0"), 0);
    EXPECT_EQ(parse<config_type::integer>("-1"), -1);
    EXPECT_EQ(parse<config_type::integer>("+5"), 5);
    EXPECT_EQ(parse<config_type::integer>("-0x10"), -16);
    EXPECT_EQ(parse<config_type::integer>("9223372036854775807"), INT64_MAX);
    EXPECT_EQ(parse<config_type::integer>("-9223372036854775808"), INT64_MIN);
    std::string e;
    EXPECT_EQ(parse<config_type::integer>("9223372036854775808", &e), std::nullopt);
    EXPECT_EQ(e, "'9223372036854775808' is out of range for a 64-bit integer");
    EXPECT_EQ(parse<config_type::integer>("-9223372036854775809"), std::nullopt);
    EXPECT_EQ(parse<config_type::integer>("abc", &e), std::nullopt);
    EXPECT_EQ(e, "'abc' is not an integer (examples: -1, 0, 42)");
    for (const char *bad : {"", "-", "+", "--1", "1k", "1.0"}) {
        EXPECT_EQ(parse<config_type::integer>(bad), std::nullopt) << bad;
    }
}

TEST(config_parse, boolean)
{
    for (const char *yes : {"y", "Y", "yes", "YES", "on", "On", "true", "TRUE", "1", " yes "}) {
        EXPECT_EQ(parse<config_type::boolean>(yes), true) << yes;
    }
    for (const char *no : {"n", "N", "no", "No", "off", "OFF", "false", "False", "0"}) {
        EXPECT_EQ(parse<config_type::boolean>(no), false) << no;
    }
    std::string e;
    EXPECT_EQ(parse<config_type::boolean>("maybe", &e), std::nullopt);
    EXPECT_EQ(e, "'maybe' is not a boolean (y/n, yes/no, on/off, true/false, 1/0)");
    for (const char *bad : {"", "2", "auto", "yess", "t"}) {
        EXPECT_EQ(parse<config_type::boolean>(bad), std::nullopt) << bad;
    }
}

TEST(config_parse, ternary)
{
    EXPECT_EQ(parse<config_type::ternary>("yes"), config_ternary::yes);
    EXPECT_EQ(parse<config_type::ternary>("on"), config_ternary::yes);
    EXPECT_EQ(parse<config_type::ternary>("1"), config_ternary::yes);
    EXPECT_EQ(parse<config_type::ternary>("no"), config_ternary::no);
    EXPECT_EQ(parse<config_type::ternary>("false"), config_ternary::no);
    EXPECT_EQ(parse<config_type::ternary>("auto"), config_ternary::automatic);
    EXPECT_EQ(parse<config_type::ternary>("AUTO"), config_ternary::automatic);
    EXPECT_EQ(parse<config_type::ternary>("try"), config_ternary::automatic);
    std::string e;
    EXPECT_EQ(parse<config_type::ternary>("perhaps", &e), std::nullopt);
    EXPECT_EQ(e, "'perhaps' is not yes/no/auto (y/n, yes/no, on/off, true/false, 1/0, auto/try)");
    EXPECT_EQ(parse<config_type::ternary>(""), std::nullopt);
}

TEST(config_parse, string_kept_verbatim)
{
    EXPECT_EQ(parse<config_type::string>(" a b, c "), " a b, c ");
    EXPECT_EQ(parse<config_type::string>(""), "");
}

TEST(config_parse, choice)
{
    const char *choices = "poll|futex|busy";
    EXPECT_EQ(parse<config_type::choice>("poll", nullptr, choices), 0);
    EXPECT_EQ(parse<config_type::choice>("futex", nullptr, choices), 1);
    EXPECT_EQ(parse<config_type::choice>("BUSY", nullptr, choices), 2);
    EXPECT_EQ(parse<config_type::choice>(" busy", nullptr, choices), 2);
    std::string e;
    EXPECT_EQ(parse<config_type::choice>("pol", &e, choices), std::nullopt);
    EXPECT_EQ(e, "'pol' is not one of poll|futex|busy");
    EXPECT_EQ(parse<config_type::choice>("", nullptr, choices), std::nullopt);
    EXPECT_EQ(parse<config_type::choice>("poll|futex", nullptr, choices), std::nullopt);
    EXPECT_EQ(parse<config_type::choice>("x", nullptr, "x"), 0);
    EXPECT_EQ(parse<config_type::choice>("poll", &e, nullptr), std::nullopt);
    EXPECT_EQ(e, "the field declares no choices");
}

TEST(config_parse, failure_leaves_value_unchanged)
{
    const config_field f{"X", config_type::size, nullptr, "doc", 0, nullptr};
    std::size_t v = 1234;
    EXPECT_EQ(config_parse_value(f, "12q", &v, nullptr), status::invalid);
    EXPECT_EQ(v, 1234u);
    EXPECT_EQ(config_parse_value(f, nullptr, &v, nullptr), status::invalid);
    EXPECT_EQ(v, 1234u);
}

// --- tables --------------------------------------------------------------

struct test_config {
    std::size_t size = 1;
    std::uint64_t count = 1;
    std::int64_t delta = 1;
    bool flag = false;
    config_ternary tri = config_ternary::no;
    std::string text = "init";
    std::uint64_t timeout = 1;
    int mode = -1;
    int untouched = 77;
};

constexpr config_field test_fields[] = {
    make_field<&test_config::size>("SIZE", config_type::size, "64k", "a size"),
    make_field<&test_config::count>("COUNT", config_type::uint, "8", "a count"),
    make_field<&test_config::delta>("DELTA", config_type::integer, "-3", "a signed number"),
    make_field<&test_config::flag>("FLAG", config_type::boolean, "yes", "a flag"),
    make_field<&test_config::tri>("TRI", config_type::ternary, "auto", "a ternary"),
    make_field<&test_config::text>("TEXT", config_type::string, "hello", "a string"),
    make_field<&test_config::timeout>("TIMEOUT", config_type::time_us, "10ms", "a time"),
    make_field<&test_config::mode>("MODE", config_type::choice, "futex", "a choice",
                                   "poll|futex|busy"),
    make_field<&test_config::untouched>("UNTOUCHED", config_type::choice, nullptr, "no default",
                                        "a|b"),
};
constexpr config_table test_table = make_table("TSTCFG", "test component", test_fields);

const char *const test_variables[] = {
    "WEFT_TSTCFG_SIZE",    "WEFT_TSTCFG_COUNT", "WEFT_TSTCFG_DELTA",
    "WEFT_TSTCFG_FLAG",    "WEFT_TSTCFG_TRI",   "WEFT_TSTCFG_TEXT",
    "WEFT_TSTCFG_TIMEOUT", "WEFT_TSTCFG_MODE",  "WEFT_TSTCFG_UNTOUCHED"};

// Unsets the test's variables before and after each test.
class config_env : public testing::Test {
  protected:
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear()
    {
        for (const char *v : test_variables) {
            unsetenv(v);
        }
    }
};

TEST_F(config_env, load_defaults)
{
    test_config c;
    ASSERT_EQ(config_load(test_table, &c), status::ok);
    EXPECT_EQ(c.size, 64u * 1024);
    EXPECT_EQ(c.count, 8u);
    EXPECT_EQ(c.delta, -3);
    EXPECT_TRUE(c.flag);
    EXPECT_EQ(c.tri, config_ternary::automatic);
    EXPECT_EQ(c.text, "hello");
    EXPECT_EQ(c.timeout, 10000u);
    EXPECT_EQ(c.mode, 1);
    EXPECT_EQ(c.untouched, 77);  // no default: left as the struct initialised it
}

TEST_F(config_env, environment_overrides_defaults)
{
    setenv("WEFT_TSTCFG_SIZE", "1m", 1);
    setenv("WEFT_TSTCFG_COUNT", "0x10", 1);
    setenv("WEFT_TSTCFG_DELTA", "+7", 1);
    setenv("WEFT_TSTCFG_FLAG", "off", 1);
    setenv("WEFT_TSTCFG_TRI", "y", 1);
    setenv("WEFT_TSTCFG_TEXT", "", 1);
    setenv("WEFT_TSTCFG_TIMEOUT", "2s", 1);
    setenv("WEFT_TSTCFG_MODE", "Busy", 1);
    setenv("WEFT_TSTCFG_UNTOUCHED", "b", 1);
    test_config c;
    ASSERT_EQ(config_load(test_table, &c), status::ok);
    EXPECT_EQ(c.size, 1u << 20);
    EXPECT_EQ(c.count, 16u);
    EXPECT_EQ(c.delta, 7);
    EXPECT_FALSE(c.flag);
    EXPECT_EQ(c.tri, config_ternary::yes);
    EXPECT_EQ(c.text, "");
    EXPECT_EQ(c.timeout, 2000000u);
    EXPECT_EQ(c.mode, 2);
    EXPECT_EQ(c.untouched, 1);
}

TEST_F(config_env, bad_value_is_an_error_naming_the_variable)
{
    setenv("WEFT_TSTCFG_SIZE", "12q", 1);
    setenv("WEFT_TSTCFG_COUNT", "99", 1);
    test_config c;
    test::stderr_capture capture;
    {
        test::expect_log_errors expect(1);
        EXPECT_EQ(config_load(test_table, &c), status::invalid);
        EXPECT_EQ(expect.count(), 1u);
    }
    const std::string out = capture.text();
    EXPECT_NE(out.find(" weft base error: WEFT_TSTCFG_SIZE: '12q' is not a size "
                       "(examples: 4096, 64k, 1m, inf)\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(c.size, 64u * 1024);  // the bad value keeps the default
    EXPECT_EQ(c.count, 99u);        // the other fields still load
}

struct plain_config {
    std::uint64_t a;
    bool b;
};
// The aggregate form, with offsetof, as tables may also be written.
constexpr config_field plain_fields[] = {
    {"PLAINA", config_type::uint, "5", "a", offsetof(plain_config, a), nullptr},
    {"PLAINB", config_type::boolean, "n", "b", offsetof(plain_config, b)},
};
constexpr config_table plain_table = make_table("", "core-like table", plain_fields);

TEST(config_table, offsetof_fields_and_empty_prefix)
{
    unsetenv("WEFT_PLAINA");
    setenv("WEFT_PLAINB", "true", 1);
    plain_config c{};
    EXPECT_EQ(config_variable_name(plain_table, plain_fields[0]), "WEFT_PLAINA");
    ASSERT_EQ(config_load(plain_table, &c), status::ok);
    EXPECT_EQ(c.a, 5u);
    EXPECT_TRUE(c.b);
    unsetenv("WEFT_PLAINB");
}

constexpr config_field bad_default_fields[] = {
    make_field<&plain_config::a>("BADDEF", config_type::uint, "lots", "a bad default"),
};
constexpr config_table bad_default_table = make_table("TSTBAD", "bug", bad_default_fields);

TEST(config_table, bad_default_is_an_error)
{
    plain_config c{};
    test::stderr_capture capture;
    test::expect_log_errors expect(1);
    EXPECT_EQ(config_load(bad_default_table, &c), status::invalid);
    EXPECT_NE(capture.text().find("WEFT_TSTBAD_BADDEF: default value: 'lots' is not"),
              std::string::npos);
}

TEST(config_table, names_and_current_text)
{
    EXPECT_EQ(config_variable_name(test_table, test_fields[0]), "WEFT_TSTCFG_SIZE");
    unsetenv("WEFT_TSTCFG_SIZE");
    EXPECT_EQ(config_current_text(test_table, test_fields[0]), "64k");
    setenv("WEFT_TSTCFG_SIZE", "2m", 1);
    EXPECT_EQ(config_current_text(test_table, test_fields[0]), "2m");
    unsetenv("WEFT_TSTCFG_SIZE");
    EXPECT_EQ(config_current_text(test_table, test_fields[8]), "");  // no default
    EXPECT_STREQ(config_type_name(config_type::time_us), "time");
    EXPECT_STREQ(config_type_name(config_type::boolean), "bool");
}

TEST(config_registry, log_table_first_and_register_idempotent)
{
    const auto before = config_tables();
    ASSERT_FALSE(before.empty());
    EXPECT_EQ(before.front(), &log_config_table());
    EXPECT_EQ(config_variable_name(*before.front(), before.front()->fields[0]), "WEFT_LOG_LEVEL");

    config_register(test_table);
    config_register(test_table);
    const auto after = config_tables();
    std::size_t n = 0;
    for (const config_table *t : after) {
        n += t == &test_table ? 1 : 0;
    }
    EXPECT_EQ(n, 1u);
    EXPECT_GE(after.size(), before.size());
    config_register(plain_table);
    EXPECT_EQ(config_tables().back(), &plain_table);
}

TEST(config_unknown, edit_distance)
{
    EXPECT_EQ(config_edit_distance("", ""), 0u);
    EXPECT_EQ(config_edit_distance("", "abc"), 3u);
    EXPECT_EQ(config_edit_distance("abc", ""), 3u);
    EXPECT_EQ(config_edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(config_edit_distance("FIFO_SZIE", "FIFO_SIZE"), 2u);
    EXPECT_EQ(config_edit_distance("SIZE", "SIZE"), 0u);
    EXPECT_EQ(config_edit_distance("SIZES", "SIZE"), 1u);
}

const config_unknown *find(const std::vector<config_unknown> &v, const std::string &name)
{
    for (const config_unknown &u : v) {
        if (u.name == name) {
            return &u;
        }
    }
    return nullptr;
}

TEST(config_unknown, suggests_the_closest_name_and_warns_once)
{
    config_register(test_table);
    setenv("WEFT_TSTCFG_SZIE", "1", 1);
    setenv("WEFT_tstcfg_timeout", "1", 1);
    setenv("WEFT_COMPLETELY_DIFFERENT_THING", "1", 1);
    setenv("WEFT_TSTCFG_SIZE", "1", 1);  // declared: not reported
    setenv("WEFT_LOG_LEVELS", "warn", 1);
    // The launcher's and the tests' own variables are not the library's typos.
    setenv("WEFT_BUILD_DIR", "/tmp", 1);
    setenv("WEFT_MPIRUN", "mpirun", 1);
    setenv("WEFT_TEST_SOMETHING", "1", 1);

    const auto unknown = config_find_unknown();
    EXPECT_EQ(find(unknown, "WEFT_BUILD_DIR"), nullptr);
    EXPECT_EQ(find(unknown, "WEFT_MPIRUN"), nullptr);
    EXPECT_EQ(find(unknown, "WEFT_TEST_SOMETHING"), nullptr);
    const config_unknown *u = find(unknown, "WEFT_TSTCFG_SZIE");
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->suggestion, "WEFT_TSTCFG_SIZE");
    u = find(unknown, "WEFT_tstcfg_timeout");
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->suggestion, "WEFT_TSTCFG_TIMEOUT");
    u = find(unknown, "WEFT_LOG_LEVELS");
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->suggestion, "WEFT_LOG_LEVEL");
    u = find(unknown, "WEFT_COMPLETELY_DIFFERENT_THING");
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->suggestion, "");
    EXPECT_EQ(find(unknown, "WEFT_TSTCFG_SIZE"), nullptr);
    EXPECT_EQ(find(unknown, "WEFT_LOG_LEVEL"), nullptr);

    std::string out;
    {
        test::stderr_capture capture;
        test::expect_log_warnings expect(4);
        config_check_unknown();
        out = capture.text();
    }
    EXPECT_NE(out.find(" weft base warn: WEFT_TSTCFG_SZIE is not a weft variable; did you mean "
                       "WEFT_TSTCFG_SIZE?\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("WEFT_COMPLETELY_DIFFERENT_THING is not a weft variable (weft_info -c "
                       "lists them)\n"),
              std::string::npos)
        << out;

    // Once per variable: a second check reports nothing new (the listener
    // fails the test if it warns).
    config_check_unknown();

    for (const char *v : {"WEFT_TSTCFG_SZIE", "WEFT_tstcfg_timeout",
                          "WEFT_COMPLETELY_DIFFERENT_THING", "WEFT_TSTCFG_SIZE", "WEFT_LOG_LEVELS",
                          "WEFT_BUILD_DIR", "WEFT_MPIRUN", "WEFT_TEST_SOMETHING"}) {
        unsetenv(v);
    }
    EXPECT_EQ(find(config_find_unknown(), "WEFT_TSTCFG_SZIE"), nullptr);
}

// --- ranges and the store ---------------------------------------------------

struct ranged_config {
    std::uint64_t window = 0;
    std::size_t bytes = 0;
    std::uint64_t wait = 0;
};
constexpr config_field ranged_fields[] = {
    make_field<&ranged_config::window>("WINDOW", config_type::uint, "256", "a window",
                                       config_range{3, 65535}),
    make_field<&ranged_config::bytes>("BYTES", config_type::size, "8k", "a size",
                                      config_range{256, SIZE_MAX}),
    make_field<&ranged_config::wait>("WAIT", config_type::time_us, "1ms", "a time",
                                     config_range{1, 1000000}),
};
constexpr config_table ranged_table = make_table("TSTRNG", "ranged component", ranged_fields);

TEST(config_range, values_outside_are_refused_with_the_range)
{
    std::string e;
    EXPECT_EQ(config_check_value(ranged_fields[0], "3", &e), status::ok);
    EXPECT_EQ(config_check_value(ranged_fields[0], "65535", &e), status::ok);
    EXPECT_EQ(config_check_value(ranged_fields[0], "2", &e), status::invalid);
    EXPECT_EQ(e, "'2' is out of range (3..65535)");
    EXPECT_EQ(config_check_value(ranged_fields[0], "65536", &e), status::invalid);
    EXPECT_EQ(config_check_value(ranged_fields[1], "inf", &e), status::ok);
    EXPECT_EQ(config_check_value(ranged_fields[1], "255", &e), status::invalid);
    EXPECT_EQ(e, "'255' is out of range (256..inf)");
    EXPECT_EQ(config_check_value(ranged_fields[2], "0", &e), status::invalid);
    EXPECT_EQ(e, "'0' is out of range (1us..1000000us)");
    EXPECT_EQ(config_check_value(ranged_fields[2], "2s", &e), status::invalid);
    EXPECT_EQ(config_check_value(ranged_fields[2], "1s", &e), status::ok);
    // Without a range every parsable value is accepted.
    EXPECT_EQ(config_check_value(test_fields[1], "0", &e), status::ok);
    EXPECT_EQ(config_check_value(test_fields[1], "x", &e), status::invalid);
}

TEST(config_range, load_from_environment_refuses_out_of_range)
{
    setenv("WEFT_TSTRNG_WINDOW", "2", 1);
    ranged_config c;
    test::stderr_capture capture;
    {
        test::expect_log_errors expect(1);
        EXPECT_EQ(config_load(ranged_table, &c), status::invalid);
    }
    unsetenv("WEFT_TSTRNG_WINDOW");
    EXPECT_EQ(c.window, 256u);  // the default stays
    EXPECT_NE(capture.text().find("WEFT_TSTRNG_WINDOW: '2' is out of range (3..65535)"),
              std::string::npos)
        << capture.text();
}

TEST(config_store, find_variable_by_full_or_short_name)
{
    config_register(ranged_table);
    config_variable v;
    ASSERT_TRUE(config_find_variable("WEFT_TSTRNG_WINDOW", v));
    EXPECT_EQ(v.table, &ranged_table);
    EXPECT_EQ(v.field, &ranged_fields[0]);
    ASSERT_TRUE(config_find_variable("tstrng_bytes", v));
    EXPECT_EQ(v.field, &ranged_fields[1]);
    ASSERT_TRUE(config_find_variable("LOG_LEVEL", v));
    std::string nearest;
    EXPECT_FALSE(config_find_variable("TSTRNG_WINDWO", v, &nearest));
    EXPECT_EQ(nearest, "WEFT_TSTRNG_WINDOW");
    EXPECT_FALSE(config_find_variable("NOTHING_LIKE_ANYTHING_HERE", v, &nearest));
    EXPECT_EQ(nearest, "");
}

TEST(config_store, set_get_load_and_errors)
{
    config_register(ranged_table);
    config_store st;
    ranged_config c;
    st.load(ranged_table, &c);
    EXPECT_EQ(c.window, 256u);
    EXPECT_EQ(c.bytes, 8192u);
    std::string v;
    ASSERT_EQ(st.get("TSTRNG_WINDOW", v), status::ok);
    EXPECT_EQ(v, "256");
    EXPECT_FALSE(st.is_set(ranged_table, ranged_fields[0]));

    ASSERT_EQ(st.set("WEFT_TSTRNG_WINDOW", "512"), status::ok);
    ASSERT_EQ(st.set("tstrng_bytes", "1m"), status::ok);
    ASSERT_EQ(st.set("tstrng_bytes", "2m"), status::ok);  // the last value wins
    EXPECT_TRUE(st.is_set(ranged_table, ranged_fields[0]));
    st.load(ranged_table, &c);
    EXPECT_EQ(c.window, 512u);
    EXPECT_EQ(c.bytes, 2u << 20);
    ASSERT_EQ(st.get("WEFT_TSTRNG_BYTES", v), status::ok);
    EXPECT_EQ(v, "2m");

    std::string e;
    {
        test::expect_log_errors expect(2);
        EXPECT_EQ(st.set("TSTRNG_WINDOW", "70000", &e), status::invalid);
        EXPECT_EQ(e, "WEFT_TSTRNG_WINDOW: '70000' is out of range (3..65535)");
        EXPECT_EQ(st.set("TSTRNG_WINDWO", "5", &e), status::no_entry);
        EXPECT_EQ(e,
                  "'TSTRNG_WINDWO' is not a weft configuration variable; did you mean "
                  "WEFT_TSTRNG_WINDOW?");
    }
    st.load(ranged_table, &c);
    EXPECT_EQ(c.window, 512u);  // a refused value changes nothing
    EXPECT_EQ(st.get("NOPE", v), status::no_entry);
}

TEST(config_store, read_environment_checks_every_value)
{
    config_register(ranged_table);
    setenv("WEFT_TSTRNG_WINDOW", "9", 1);
    setenv("WEFT_TSTRNG_BYTES", "12", 1);  // out of range
    config_store st;
    {
        test::expect_log_errors expect(1);
        EXPECT_EQ(st.read_environment(), status::invalid);
    }
    unsetenv("WEFT_TSTRNG_WINDOW");
    unsetenv("WEFT_TSTRNG_BYTES");
    ranged_config c;
    st.load(ranged_table, &c);
    EXPECT_EQ(c.window, 9u);    // the valid one is kept
    EXPECT_EQ(c.bytes, 8192u);  // the refused one is not
    config_store clean;
    EXPECT_EQ(clean.read_environment(), status::ok);
    clean.load(ranged_table, &c);
    EXPECT_EQ(c.window, 256u);  // the environment was read at read_environment(), not later
}

}  // namespace
}  // namespace weft::base
