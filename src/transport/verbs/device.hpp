#pragma once
// A verbs port as a process-wide shared object: the device context, the
// protection domain and the memory-registration cache that every endpoint on
// the port uses (weft_mr_reg() on a verbs domain registers in the same PD).
// Endpoints keep their own completion queue, SRQ and queue pairs (verbs.cpp).

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>

#include "base/rcache.hpp"
#include "base/status.hpp"
#include "transport/verbs/verbs.hpp"

namespace weft::transport::verbs {

/// The "VERBS" configuration table (config_table() returns it).
extern const base::config_table config_table_v;

/// Registers with ibv_reg_mr in one PD (the rcache's registrar).
class pd_registrar final : public base::registrar {
  public:
    explicit pd_registrar(ibv_pd *pd) noexcept : pd_(pd) {}
    [[nodiscard]] base::status reg(void *addr, std::size_t len, base::reg_handle &out) override;
    void dereg(base::reg_handle &h) noexcept override;

  private:
    ibv_pd *pd_;
};

class device {
  public:
    /// The shared object of port `name` ("" = the first active port), opened on
    /// first use with configuration `cfg` (its GID index and registration
    /// cache settings; later users share the port as the first opened it).
    [[nodiscard]] static base::result<std::shared_ptr<device>> get(const std::string &name,
                                                                   const config &cfg);

    device(const device &) = delete;
    device &operator=(const device &) = delete;
    ~device();

    [[nodiscard]] ibv_context *ctx() const noexcept { return ctx_; }
    [[nodiscard]] ibv_pd *pd() const noexcept { return pd_; }
    [[nodiscard]] std::uint8_t port() const noexcept { return port_; }
    [[nodiscard]] const ibv_port_attr &port_attr() const noexcept { return port_attr_; }
    [[nodiscard]] const ibv_device_attr &dev_attr() const noexcept { return dev_attr_; }
    [[nodiscard]] int gid_index() const noexcept { return gid_index_; }
    [[nodiscard]] const ibv_gid &gid() const noexcept { return gid_; }
    [[nodiscard]] bool ethernet() const noexcept
    {
        return port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET;
    }
    [[nodiscard]] const std::string &name() const noexcept { return name_; }
    [[nodiscard]] base::rcache &rcache() noexcept { return *rcache_; }
    [[nodiscard]] pd_registrar &registrar() noexcept { return registrar_; }
    /// The process that opened it: a child of fork() opens its own (a verbs
    /// context is not usable across fork).
    [[nodiscard]] pid_t owner() const noexcept { return owner_; }

  private:
    device(ibv_context *ctx, ibv_pd *pd, const port_info &p) noexcept;
    [[nodiscard]] base::status init(const config &cfg);

    ibv_context *ctx_;
    ibv_pd *pd_;
    pid_t owner_;
    std::uint8_t port_;
    std::string name_;
    ibv_port_attr port_attr_{};
    ibv_device_attr dev_attr_{};
    int gid_index_ = 0;
    ibv_gid gid_{};
    pd_registrar registrar_;
    std::unique_ptr<base::rcache> rcache_;
};

/// Whether port `p` is what a WEFT_VERBS_DEVICE value names ("dev" or "dev:port";
/// "" names every port).
[[nodiscard]] bool port_matches(const port_info &p, const std::string &spec);

/// The memory domain of a port: registrations in its protection domain (what
/// weft_mr_reg makes on a verbs domain); a key is the 32-bit rkey.
[[nodiscard]] base::result<std::unique_ptr<memory_domain>> open_memory_domain(
    const std::string &name, const config &cfg);

/// The device of a memory domain opened by open_memory_domain().
[[nodiscard]] std::shared_ptr<device> device_of(memory_domain &md) noexcept;

/// Text of an ibv_wc_status for error messages.
[[nodiscard]] const char *wc_status_text(ibv_wc_status s) noexcept;

}  // namespace weft::transport::verbs
