/* SPDX-License-Identifier: Apache-2.0
 * Latency histogram in nanoseconds with HdrHistogram's bucket layout: the counts array
 * HdrHistogram_c allocates for hdr_init(1, highest, 3, ...) (lowest discernible value 1 ns,
 * 3 significant figures). Values below 2^(TG_HIST_SUB_BITS+1) (2048 ns) are counted exactly; above
 * that each power of two is split into 2^TG_HIST_SUB_BITS (1024) linear buckets, so a bucket is at
 * most 1/1024 of its values wide and its median equivalent value is within 1/2048 (0.05 %) of
 * every value in it. The receive path converts TSC cycles to ns with tg_hist_ns() first.
 * Pure C, no DPDK: trafficgen/tests/test_hist.c checks it against HdrHistogram's published values.
 */
#ifndef OVSPERF_TRAFFICGEN_HIST_H
#define OVSPERF_TRAFFICGEN_HIST_H

#include <stdint.h>

#define TG_HIST_SUB_BITS 10
#define TG_HIST_SUB (1u << TG_HIST_SUB_BITS)
#define TG_HIST_BUCKETS ((64 - TG_HIST_SUB_BITS + 1) * TG_HIST_SUB)

/* Bucket of value v [ns] (hot path): HdrHistogram_c's counts_index for a unit of 1 ns. */
static inline unsigned int
tg_hist_index(uint64_t v)
{
	unsigned int e;

	if (v < TG_HIST_SUB)
		return (unsigned int)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	return (e - TG_HIST_SUB_BITS + 1) * TG_HIST_SUB +
		(unsigned int)((v >> (e - TG_HIST_SUB_BITS)) & (TG_HIST_SUB - 1));
}

/* ns per TSC cycle as 32.32 fixed point, for tg_hist_ns(). */
static inline uint64_t
tg_hist_ns_mult(uint64_t tsc_hz)
{
	return (uint64_t)(((unsigned __int128)1000000000u << 32) / (tsc_hz ? tsc_hz : 1));
}

/* cycles TSC cycles in ns, rounded down (hot path); UINT64_MAX when it does not fit. */
static inline uint64_t
tg_hist_ns(uint64_t cycles, uint64_t mult)
{
	unsigned __int128 ns = ((unsigned __int128)cycles * mult) >> 32;

	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t tg_hist_bucket_lowest(unsigned int idx);
uint64_t tg_hist_bucket_highest(unsigned int idx);
double tg_hist_bucket_mid(unsigned int idx);
double tg_hist_quantile(const uint64_t *hist, uint64_t n, double min, double max, double p);

#endif /* OVSPERF_TRAFFICGEN_HIST_H */
