/* unit_config - RQ_* parsing: suffixes, ranges, malformed values. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"
#include "net/shm.h"

int main(void)
{
    uint64_t v;
    CHECK(rqi_config_parse_u64("123", &v) == 0 && v == 123);
    CHECK(rqi_config_parse_u64("4k", &v) == 0 && v == 4096);
    CHECK(rqi_config_parse_u64("2M", &v) == 0 && v == 2u << 20);
    CHECK(rqi_config_parse_u64("1g", &v) == 0 && v == 1u << 30);
    CHECK(rqi_config_parse_u64("0x10", &v) == 0 && v == 16);
    CHECK(rqi_config_parse_u64("", &v) != 0);
    CHECK(rqi_config_parse_u64("-1", &v) != 0);
    CHECK(rqi_config_parse_u64(" 64", &v) != 0); /* blanks: refused at either end */
    CHECK(rqi_config_parse_u64("64 ", &v) != 0);
    CHECK(rqi_config_parse_u64("\t64", &v) != 0);
    CHECK(rqi_config_parse_u64(" -1", &v) != 0);
    CHECK(rqi_config_parse_u64("+5", &v) != 0);
    CHECK(rqi_config_parse_u64("12q", &v) != 0);
    CHECK(rqi_config_parse_u64("4kk", &v) != 0);
    CHECK(rqi_config_parse_u64("99999999999999999999", &v) != 0);
    CHECK(rqi_config_parse_u64("17179869184G", &v) != 0); /* overflows */

    struct rqi_config cfg;
    char err[256];
    for (int i = 0; i < RQI_CFG_COUNT; i++)
        unsetenv(rqi_cfg_vars[i].name);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0);
    for (int i = 0; i < RQI_CFG_COUNT; i++)
        CHECK(cfg.v[i] == rqi_cfg_vars[i].def);

    setenv("RQ_RING_BYTES", "5000", 1); /* not a power of two */
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "RQ_RING_BYTES"));
    setenv("RQ_RING_BYTES", "1024", 1); /* below the minimum */
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "outside"));
    setenv("RQ_RING_BYTES", "banana", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "not a number"));
    setenv("RQ_RING_BYTES", "64k", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 && cfg.v[RQI_CFG_RING_BYTES] == 65536);
    unsetenv("RQ_RING_BYTES");
    /* A choice accepts its names and their indexes, nothing else. */
    setenv("RQ_GAS_STRATEGY", "proc", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_GAS_STRATEGY] == RQI_GAS_PROC);
    setenv("RQ_GAS_STRATEGY", "np", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 && cfg.v[RQI_CFG_GAS_STRATEGY] == RQI_GAS_NP);
    setenv("RQ_GAS_STRATEGY", "0", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_GAS_STRATEGY] == RQI_GAS_DIRECT);
    setenv("RQ_GAS_STRATEGY", "inject", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "one of its names"));
    setenv("RQ_GAS_STRATEGY", "3", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "outside"));
    char buf[16];
    rqi_config_format(&rqi_cfg_vars[RQI_CFG_GAS_STRATEGY], RQI_GAS_NP, buf, sizeof buf);
    CHECK(strcmp(buf, "np") == 0);
    unsetenv("RQ_GAS_STRATEGY");
    /* RQ_YIELD_IDLE: auto by default, its three names, nothing else. */
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_YIELD_IDLE] == RQI_YIELD_AUTO);
    setenv("RQ_YIELD_IDLE", "always", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_YIELD_IDLE] == RQI_YIELD_ALWAYS);
    setenv("RQ_YIELD_IDLE", "never", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_YIELD_IDLE] == RQI_YIELD_NEVER);
    setenv("RQ_YIELD_IDLE", "sometimes", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "RQ_YIELD_IDLE"));
    unsetenv("RQ_YIELD_IDLE");
    /* RQ_PDQ_BIND: spread by default, or none, nothing else. */
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_PDQ_BIND] == RQI_PDQ_BIND_SPREAD);
    setenv("RQ_PDQ_BIND", "none", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 &&
          cfg.v[RQI_CFG_PDQ_BIND] == RQI_PDQ_BIND_NONE);
    setenv("RQ_PDQ_BIND", "compact", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "RQ_PDQ_BIND"));
    unsetenv("RQ_PDQ_BIND");
    /* RQ_LANES: 0 (the default) gives one lane per rank on the node up to
     * 16; a number is taken as it is; never more lanes than local ranks. */
    CHECK(rqi_cfg_vars[RQI_CFG_LANES].def == 0);
    CHECK(rqi_shm_lanes(0, 1) == 1 && rqi_shm_lanes(0, 2) == 2 && rqi_shm_lanes(0, 16) == 16);
    CHECK(rqi_shm_lanes(0, 17) == 16 && rqi_shm_lanes(0, 128) == 16);
    CHECK(rqi_shm_lanes(4, 16) == 4 && rqi_shm_lanes(4, 3) == 3 && rqi_shm_lanes(1, 128) == 1);
    /* Global-address rings: about two lanes' worth for all 2 * nlanes. */
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 1) == 256 << 10);
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 2) == 256 << 10);
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 3) == 128 << 10);
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 4) == 128 << 10);
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 8) == 64 << 10);
    CHECK(rqi_shm_gas_ring_bytes(256 << 10, 16) == 64 << 10);
    CHECK(rqi_shm_gas_ring_bytes(4096, 16) == 4096);
    CHECK(rqi_shm_gas_ring_bytes(8192, 16) == 4096);
    setenv("RQ_LANES", "17", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) != 0 && strstr(err, "outside"));
    setenv("RQ_LANES", "0", 1);
    CHECK(rqi_config_load(&cfg, err, sizeof err) == 0 && cfg.v[RQI_CFG_LANES] == 0);
    unsetenv("RQ_LANES");
    printf("unit_config: ok\n");
    return 0;
}
