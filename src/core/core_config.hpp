#pragma once
// The core's configuration table (variables WEFT_<NAME>, no component prefix).
// Values are read per fabric, from its weft_config (the environment by
// default): see docs/configuration.md.

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config.hpp"

namespace weft::core {

struct core_config {
    std::string transports;           ///< comma list, or "all"
    std::size_t cq_size;              ///< default CQ entries
    std::size_t tx_size;              ///< queued sends per endpoint before -WEFT_EAGAIN
    std::size_t rx_size;              ///< reported receive queue depth
    std::size_t inject_size;          ///< largest weft_tinject
    std::size_t max_msg_size;         ///< largest message
    std::uint64_t match_hash_bits;    ///< log2 of tag-matching hash buckets
    std::uint64_t progress_sleep_us;  ///< auto progress: idle sleep
    std::size_t rndv_thresh;          ///< messages above this use rendezvous
    std::size_t rndv_get_min;         ///< rendezvous read with get from this size (or auto)
    std::size_t unexpected_rndv_max;  ///< unexpected rendezvous headers kept per sender
    std::uint64_t credit_initial;     ///< credits granted at first contact
    std::uint64_t credit_window;      ///< receive window per peer
    std::uint64_t credit_threshold;   ///< explicit update threshold (0 = automatic)
};

inline constexpr base::config_field core_config_fields[] = {
    base::make_field<&core_config::transports>(
        "TRANSPORTS", base::config_type::string, "all",
        "transports an endpoint may use: all, or a comma list of names (weft_info lists them)"),
    base::make_field<&core_config::cq_size>("CQ_SIZE", base::config_type::size, "4k",
                                            "default completion queue entries",
                                            base::config_range{1, 1ull << 24}),
    base::make_field<&core_config::tx_size>(
        "TX_SIZE", base::config_type::size, "4k",
        "sends queued inside an endpoint before a send returns -WEFT_EAGAIN",
        base::config_range{1, 1ull << 24}),
    base::make_field<&core_config::rx_size>("RX_SIZE", base::config_type::size, "64k",
                                            "receive queue depth reported by weft_getinfo",
                                            base::config_range{1, 1ull << 32}),
    base::make_field<&core_config::inject_size>("INJECT_SIZE", base::config_type::size, "4k",
                                                "largest weft_tinject payload",
                                                base::config_range{0, 1ull << 20}),
    base::make_field<&core_config::max_msg_size>(
        "MAX_MSG_SIZE", base::config_type::size,
        "4g", "largest message (also bounds what a peer may announce)",
        base::config_range{1, 1ull << 40}),
    base::make_field<&core_config::match_hash_bits>(
        "MATCH_HASH_BITS", base::config_type::uint,
        "10", "log2 of the number of tag-matching hash buckets per endpoint",
        base::config_range{0, 24}),
    base::make_field<&core_config::progress_sleep_us>(
        "PROGRESS_SLEEP", base::config_type::time_us,
        "50us", "auto progress: how long the progress thread sleeps when idle",
        base::config_range{0, 1000000}),
    base::make_field<&core_config::rndv_thresh>(
        "RNDV_THRESH", base::config_type::size,
        "16k",
        "messages longer than this use rendezvous (data read from the sender's buffer); "
        "also the default variable-message threshold"),
    base::make_field<&core_config::rndv_get_min>(
        "RNDV_GET_MIN", base::config_type::size,
        "auto",
        "rendezvous receives read the data in place (the transport's get: shm cross-memory "
        "attach, verbs RDMA read) from this size and have the sender push it in pieces below "
        "(but read from an idle sender); auto: per transport from its cost models and the "
        "sender's activity"),
    base::make_field<&core_config::unexpected_rndv_max>(
        "UNEXPECTED_RNDV_MAX", base::config_type::size, "16k",
        "unexpected rendezvous headers kept per sender (about 330 bytes each); one more is "
        "refused and that send fails at the sender. At least the senders' TX_SIZE",
        base::config_range{1, 1ull << 24}),
    base::make_field<&core_config::credit_initial>(
        "CREDIT_INITIAL", base::config_type::uint,
        "64",
        "credits each side assumes at first contact (the same in every process: a peer with "
        "another value is refused)",
        base::config_range{3, 65535}),
    base::make_field<&core_config::credit_window>(
        "CREDIT_WINDOW", base::config_type::uint,
        "256", "receive window granted to each peer (at least CREDIT_INITIAL)",
        base::config_range{3, 65535}),
    base::make_field<&core_config::credit_threshold>(
        "CREDIT_THRESHOLD", base::config_type::uint,
        "0",
        "returnable credits that trigger an explicit update when no traffic carries them "
        "(0: automatic, half the window up to 255; else 2..window-1)",
        base::config_range{0, 255}),
};

inline constexpr base::config_table core_config_table =
    base::make_table("", "core: object model and tagged messages", core_config_fields);

/// Register every configuration table and log component (the layers', every
/// transport's): once per process, before any configuration is read.
void init_once() noexcept;

}  // namespace weft::core
