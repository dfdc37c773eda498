// Unit tests of logging (src/base/log.*) and of the log check of the gtest main.

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.hpp"
#include "log_expect.hpp"

namespace weft::base {
namespace {

// Components of this test program, standing in for transports' components:
// registered at static initialisation, before any test runs.
constinit log_component log_tsta{"tsta"};
constinit log_component log_tstb{"tstb"};
const bool registered = [] {
    log_register(log_tsta);
    log_register(log_tstb);
    return true;
}();

TEST(log_parse, single_level)
{
    log_spec v;
    std::string e;
    EXPECT_EQ(log_parse_spec("debug", v, &e), status::ok);
    EXPECT_EQ(v.fallback, log_level::debug);
    EXPECT_TRUE(v.named.empty());
    EXPECT_EQ(e, "");
    EXPECT_EQ(log_parse_spec("TRACE_POLL", v, &e), status::ok);
    EXPECT_EQ(v.fallback, log_level::trace_poll);
    EXPECT_EQ(log_parse_spec("warning", v, &e), status::ok);
    EXPECT_EQ(v.fallback, log_level::warn);
    EXPECT_EQ(log_parse_spec("", v, &e), status::ok);
    EXPECT_EQ(v.fallback, log_level::warn);
    EXPECT_EQ(log_parse_spec(nullptr, v, &e), status::ok);
    EXPECT_EQ(v.fallback, log_level::warn);
    const char *names[] = {"error", "warn", "info", "debug", "trace", "trace_data", "trace_poll"};
    for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(log_parse_spec(names[i], v, &e), status::ok);
        EXPECT_EQ(v.fallback, static_cast<log_level>(i)) << names[i];
        EXPECT_STREQ(log_level_name(static_cast<log_level>(i)), names[i]);
    }
}

TEST(log_parse, per_component)
{
    log_spec v;
    std::string e;
    EXPECT_EQ(log_parse_spec("shm:trace,warn", v, &e), status::ok);
    EXPECT_EQ(v.level_of("shm"), log_level::trace);
    EXPECT_EQ(v.level_of("core"), log_level::warn);

    // The bare level is the default wherever it stands.
    EXPECT_EQ(log_parse_spec("info, shm:trace", v, &e), status::ok);
    EXPECT_EQ(v.level_of("shm"), log_level::trace);
    EXPECT_EQ(v.level_of("proto"), log_level::info);

    EXPECT_EQ(log_parse_spec(" SHM : Debug , tcp:error,,pmix:trace_data ", v, &e), status::ok);
    EXPECT_EQ(v.level_of("shm"), log_level::debug);
    EXPECT_EQ(v.level_of("tcp"), log_level::error);
    EXPECT_EQ(v.level_of("PMIX"), log_level::trace_data);
    EXPECT_EQ(v.level_of("core"), log_level::warn);

    // The last setting of a component wins.
    EXPECT_EQ(log_parse_spec("shm:debug,shm:info", v, &e), status::ok);
    EXPECT_EQ(v.level_of("shm"), log_level::info);
}

TEST(log_parse, errors_keep_the_valid_parts)
{
    log_spec v;
    std::string e;
    EXPECT_EQ(log_parse_spec("bogus", v, &e), status::invalid);
    EXPECT_EQ(v.fallback, log_level::warn);
    EXPECT_NE(e.find("unknown log level 'bogus'"), std::string::npos) << e;

    EXPECT_EQ(log_parse_spec("shm:loud,debug", v, &e), status::invalid);
    EXPECT_EQ(v.fallback, log_level::debug);
    EXPECT_NE(e.find("unknown log level 'loud' for component 'shm'"), std::string::npos) << e;

    EXPECT_EQ(log_parse_spec("x:y,z", v, &e), status::invalid);
    EXPECT_NE(e.find("'y'"), std::string::npos) << e;
    EXPECT_NE(e.find("'z'"), std::string::npos) << e;
    EXPECT_EQ(log_parse_spec(":debug", v, &e), status::invalid);
    EXPECT_EQ(log_parse_spec("bogus", v, nullptr), status::invalid);
}

TEST(log_names, layers_and_registered_components)
{
    std::vector<std::string> names;
    for (const log_component *c : log_components()) {
        names.emplace_back(c->name());
    }
    for (const char *want : {"core", "base", "proto", "pmix", "tsta", "tstb"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    }
    EXPECT_EQ(log_find_component("TSTA"), &log_tsta);
    EXPECT_EQ(log_find_component("core"), &log_core);
    EXPECT_EQ(log_find_component("nic"), nullptr);
    log_register(log_tsta);  // idempotent
    EXPECT_EQ(std::count(names.begin(), names.end(), "tsta"), 1);
}

// Restores every component's level when it goes out of scope.
class level_restore {
  public:
    level_restore()
    {
        for (const log_component *c : log_components()) {
            saved_.emplace_back(const_cast<log_component *>(c), c->level());
        }
    }
    ~level_restore()
    {
        for (auto &[c, l] : saved_) {
            c->set_level(l);
        }
    }

  private:
    std::vector<std::pair<log_component *, log_level>> saved_;
};

TEST(log_levels, default_is_warn)
{
    // The test main ran log_init(); the tests run without WEFT_LOG_LEVEL.
    if (std::getenv("WEFT_LOG_LEVEL") != nullptr) {
        GTEST_SKIP() << "WEFT_LOG_LEVEL is set, so the levels are not the defaults";
    }
    for (const log_component *c : log_components()) {
        EXPECT_EQ(c->level(), log_level::warn) << c->name();
    }
    EXPECT_TRUE(log_tsta.enabled(log_level::error));
    EXPECT_TRUE(log_tsta.enabled(log_level::warn));
    EXPECT_FALSE(log_tsta.enabled(log_level::info));
}

TEST(log_levels, set_level_and_set_levels)
{
    level_restore restore;
    log_tsta.set_level(log_level::debug);
    EXPECT_TRUE(log_tsta.enabled(log_level::debug));
    EXPECT_FALSE(log_tsta.enabled(log_level::trace));
    EXPECT_FALSE(log_tstb.enabled(log_level::debug));

    std::string e;
    EXPECT_EQ(log_set_levels("tstb:trace,error", &e), status::ok) << e;
    EXPECT_TRUE(log_tstb.enabled(log_level::trace));
    EXPECT_FALSE(log_tstb.enabled(log_level::trace_data));
    EXPECT_TRUE(log_core.enabled(log_level::error));
    EXPECT_FALSE(log_core.enabled(log_level::warn));
    EXPECT_EQ(log_tsta.level(), log_level::error);

    // A name nobody registered is an error naming the nearest one; the rest applies.
    EXPECT_EQ(log_set_levels("tsts:debug,info", &e), status::invalid);
    EXPECT_NE(e.find("unknown log component 'tsts' (did you mean 'tsta'?)"), std::string::npos)
        << e;
    EXPECT_EQ(log_tsta.level(), log_level::info);
    EXPECT_EQ(log_set_levels("zzzzzzz:debug", &e), status::invalid);
    EXPECT_NE(e.find("(components: "), std::string::npos) << e;
    EXPECT_NE(e.find(" core"), std::string::npos) << e;
    EXPECT_NE(e.find("tstb"), std::string::npos) << e;
}

TEST(log_levels, late_registration_gets_the_setting)
{
    level_restore restore;
    std::string e;
    ASSERT_EQ(log_set_levels("tstlate:debug,error", &e), status::invalid);  // not registered yet
    static constinit log_component log_tstlate{"tstlate"};
    EXPECT_EQ(log_tstlate.level(), log_level::warn);
    log_register(log_tstlate);
    EXPECT_EQ(log_tstlate.level(), log_level::debug);
}

// Whether `line` is "[host:pid:rank] weft <rest>" for this process (no
// newline), with `rank` as given ("-" when unset).
bool has_prefix(const std::string &line, const std::string &rank, const std::string &rest)
{
    const std::string tail = ":" + std::to_string(getpid()) + ":" + rank + "] weft " + rest;
    if (line.size() < tail.size() + 2 || line[0] != '[') {
        return false;
    }
    const std::size_t host_end = line.find(':');
    return host_end > 1 && host_end != std::string::npos &&
           line.find_first_of(" []", 1) > host_end &&
           line.compare(host_end, tail.size(), tail) == 0 && line.size() == host_end + tail.size();
}

std::vector<std::string> lines_of(const std::string &text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

int calls = 0;
int count_call()
{
    return ++calls;
}

TEST(log_macro, arguments_not_evaluated_when_disabled)
{
    level_restore restore;
    calls = 0;
    WEFT_LOG(tsta, info, "value %d", count_call());
    WEFT_LOG(tsta, debug, "value %d", count_call());
    EXPECT_EQ(calls, 0);

    log_tsta.set_level(log_level::info);
    test::stderr_capture capture;
    WEFT_LOG(tsta, info, "value %d", count_call());
    EXPECT_EQ(calls, 1);
    EXPECT_NE(capture.text().find("weft tsta info: value 1\n"), std::string::npos);
}

TEST(log_macro, trace_compiles_out_of_release_builds)
{
    level_restore restore;
    log_tstb.set_level(log_level::trace_poll);
    calls = 0;
    test::stderr_capture capture;
    WEFT_LOG(tstb, trace, "value %d", count_call());
    WEFT_LOG(tstb, trace_poll, "value %d", count_call());
    const std::string out = capture.text();
    EXPECT_EQ(calls, WEFT_LOG_TRACE_ENABLED ? 2 : 0);
    EXPECT_EQ(out.find("weft tstb trace") != std::string::npos, WEFT_LOG_TRACE_ENABLED == 1);
}

TEST(log_line, prefix_and_rank)
{
    test::stderr_capture capture;
    {
        test::expect_log_warnings expect(2);
        WEFT_LOG(tsta, warn, "hello %d", 42);
        log_set_rank(7);
        WEFT_LOG(tsta, warn, "ranked");
        log_set_rank(-1);
    }
    const std::string out = capture.text();
    ASSERT_EQ(out.back(), '\n');
    const std::vector<std::string> lines = lines_of(out);
    ASSERT_EQ(lines.size(), 2u) << out;
    EXPECT_TRUE(has_prefix(lines[0], "-", "tsta warn: hello 42")) << lines[0];
    EXPECT_TRUE(has_prefix(lines[1], "7", "tsta warn: ranked")) << lines[1];
    EXPECT_FALSE(has_prefix(lines[1], "-", "tsta warn: ranked"));  // the check can fail
}

TEST(log_line, file_and_line_at_debug_and_below)
{
    level_restore restore;
    log_proto.set_level(log_level::debug);
    test::stderr_capture capture;
    WEFT_LOG(proto, info, "no location");
    // clang-format off
    WEFT_LOG(proto, debug, "with location"); const int line = __LINE__;
    // clang-format on
    const std::string out = capture.text();
    EXPECT_NE(out.find("weft proto info: no location\n"), std::string::npos) << out;
    EXPECT_NE(
        out.find("weft proto debug: with location (log_test.cpp:" + std::to_string(line) + ")\n"),
        std::string::npos)
        << out;
}

TEST(log_line, one_newline_truncation_and_errno)
{
    test::stderr_capture capture;
    test::expect_log_errors expect(2);
    errno = EAGAIN;
    WEFT_LOG(core, error, "ends with newline\n");
    EXPECT_EQ(errno, EAGAIN);
    const std::string long_text(5000, 'x');
    WEFT_LOG(core, error, "%s", long_text.c_str());
    const std::string out = capture.text();
    EXPECT_NE(out.find("weft core error: ends with newline\n["), std::string::npos) << out;
    const std::size_t second = out.find('\n') + 1;
    const std::string line = out.substr(second);
    EXPECT_LE(line.size(), 2048u);
    EXPECT_GT(line.size(), 1900u);
    EXPECT_EQ(line.substr(line.size() - 5), "x...\n");
}

TEST(log_counts, errors_and_warnings_counted)
{
    level_restore restore;
    log_base.set_level(log_level::info);
    const log_counts before = log_get_counts();
    test::stderr_capture capture;
    test::expect_log_errors errors(1);
    test::expect_log_warnings warnings(2);
    WEFT_LOG(base, error, "e");
    WEFT_LOG(base, warn, "w1");
    WEFT_LOG(base, warn, "w2");
    WEFT_LOG(base, info, "i");
    const log_counts after = log_get_counts();
    EXPECT_EQ(after.errors - before.errors, 1u);
    EXPECT_EQ(after.warnings - before.warnings, 2u);
}

TEST(log_threads, lines_do_not_interleave)
{
    level_restore restore;
    log_tstb.set_level(log_level::info);
    constexpr int lines = 200;
    test::stderr_capture capture;
    auto writer = [](char c) {
        const std::string payload(300, c);
        for (int i = 0; i < lines; ++i) {
            WEFT_LOG(tstb, info, "%d %s", i, payload.c_str());
        }
    };
    std::thread a(writer, 'a');
    std::thread b(writer, 'b');
    a.join();
    b.join();
    const std::vector<std::string> out = lines_of(capture.text());
    EXPECT_EQ(out.size(), 2u * lines);
    int seen[2][lines] = {};
    for (const std::string &line : out) {
        const std::size_t colon = line.find("tstb info: ");
        ASSERT_NE(colon, std::string::npos) << line;
        const std::string rest = line.substr(0, colon + 11);
        ASSERT_TRUE(has_prefix(rest, "-", "tstb info: ")) << line;
        const std::string msg = line.substr(colon + 11);
        const std::size_t space = msg.find(' ');
        ASSERT_NE(space, std::string::npos) << line;
        const int i = std::atoi(msg.substr(0, space).c_str());
        const std::string payload = msg.substr(space + 1);
        ASSERT_TRUE(payload == std::string(300, 'a') || payload == std::string(300, 'b')) << line;
        ASSERT_TRUE(i >= 0 && i < lines) << line;
        ++seen[payload[0] - 'a'][i];
    }
    for (int t = 0; t < 2; ++t) {
        for (int i = 0; i < lines; ++i) {
            EXPECT_EQ(seen[t][i], 1) << t << " " << i;
        }
    }
}

// --- child processes: WEFT_LOG_LEVEL at start-up, and the listener ----------

struct child_result {
    int exit_code;  // -1: did not exit normally
    std::string output;
};

// Runs this test program with a gtest filter and an extra environment variable.
child_result run_self(const std::string &filter, const char *env_name, const char *env_value)
{
    char exe[PATH_MAX];
    // readlink, not /proc/self/exe itself: under valgrind only the former is
    // the test program.
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        ADD_FAILURE() << "readlink /proc/self/exe: " << std::strerror(errno);
        return {-1, ""};
    }
    exe[n] = '\0';
    std::FILE *out = std::tmpfile();
    if (out == nullptr) {
        ADD_FAILURE() << "tmpfile: " << std::strerror(errno);
        return {-1, ""};
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(out), STDERR_FILENO);
        if (env_name != nullptr) {
            setenv(env_name, env_value, 1);
        }
        const std::string filter_arg = "--gtest_filter=" + filter;
        char *argv[] = {exe, const_cast<char *>(filter_arg.c_str()),
                        const_cast<char *>("--gtest_also_run_disabled_tests"), nullptr};
        execv(exe, argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    std::string text;
    std::rewind(out);
    char buf[4096];
    for (std::size_t r; (r = std::fread(buf, 1, sizeof(buf), out)) > 0;) {
        text.append(buf, r);
    }
    std::fclose(out);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, text};
}

// Run in a child with WEFT_LOG_LEVEL=tsta:debug,error.
TEST(log_child, DISABLED_levels_from_environment)
{
    EXPECT_EQ(log_tsta.level(), log_level::debug);
    EXPECT_EQ(log_core.level(), log_level::error);
    EXPECT_EQ(log_tstb.level(), log_level::error);
}

// Run in a child with WEFT_LOG_LEVEL=tsta:debug,bogus: the bad part is warned
// about at start-up (before any test, so not failing one).
TEST(log_child, DISABLED_bad_environment_warns)
{
    EXPECT_EQ(log_tsta.level(), log_level::debug);
    EXPECT_EQ(log_core.level(), log_level::warn);
    EXPECT_EQ(log_get_counts().warnings, 1u);
}

// Run in a child with WEFT_LOG_LEVEL=tstx:debug: the name check warns once,
// naming the nearest registered component.
TEST(log_child, DISABLED_unknown_component_warns)
{
    test::expect_log_warnings expect(1);
    log_check_names();
    log_check_names();
}

TEST(log_init, reads_weft_log_level)
{
    child_result r = run_self("log_child.DISABLED_levels_from_environment", "WEFT_LOG_LEVEL",
                              "tsta:debug,error");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;

    r = run_self("log_child.DISABLED_bad_environment_warns", "WEFT_LOG_LEVEL", "tsta:debug,bogus");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("weft core warn: WEFT_LOG_LEVEL='tsta:debug,bogus': unknown log "
                            "level 'bogus'"),
              std::string::npos)
        << r.output;

    r = run_self("log_child.DISABLED_unknown_component_warns", "WEFT_LOG_LEVEL", "tstx:debug");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("weft core warn: WEFT_LOG_LEVEL names log component 'tstx'; did "
                            "you mean 'tsta'?"),
              std::string::npos)
        << r.output;
}

// Run in children: each must fail because of the listener or the guard.
TEST(log_listener_child, DISABLED_unexpected_warning)
{
    WEFT_LOG(core, warn, "a warning nobody expects");
}
TEST(log_listener_child, DISABLED_unexpected_error)
{
    WEFT_LOG(core, error, "an error nobody expects");
}
TEST(log_listener_child, DISABLED_missing_expected_warning)
{
    test::expect_log_warnings expect(1);
}
TEST(log_listener_child, DISABLED_warning_outside_nested_guards)
{
    {
        test::expect_log_warnings outer(1);
        test::expect_log_warnings inner(1);
        WEFT_LOG(core, warn, "expected");
    }
    WEFT_LOG(core, warn, "not expected");
}
TEST(log_listener_child, DISABLED_expected_warning_passes)
{
    test::expect_log_warnings outer(1);
    {
        test::expect_log_warnings inner(1);
        WEFT_LOG(core, warn, "expected");
    }
    WEFT_LOG(core, warn, "expected too");
}

TEST(log_listener, fails_tests_that_log_unexpectedly)
{
    // WEFT_LOG_LEVEL=warn: the children must log their warnings whatever the
    // environment of this test says.
    const child_result pass =
        run_self("log_listener_child.DISABLED_expected_warning_passes", "WEFT_LOG_LEVEL", "warn");
    EXPECT_EQ(pass.exit_code, 0) << pass.output;

    for (const char *name : {"DISABLED_unexpected_warning", "DISABLED_unexpected_error",
                             "DISABLED_warning_outside_nested_guards"}) {
        const child_result r =
            run_self(std::string("log_listener_child.") + name, "WEFT_LOG_LEVEL", "warn");
        EXPECT_EQ(r.exit_code, 1) << name << "\n" << r.output;
        EXPECT_NE(r.output.find("unexpected"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find(std::string("[  FAILED  ] log_listener_child.") + name),
                  std::string::npos)
            << r.output;
    }
    const child_result r =
        run_self("log_listener_child.DISABLED_missing_expected_warning", "WEFT_LOG_LEVEL", "warn");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("expected at least 1 log warning(s) in this scope, got 0"),
              std::string::npos)
        << r.output;
}

}  // namespace
}  // namespace weft::base
