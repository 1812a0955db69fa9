/* SPDX-License-Identifier: Apache-2.0
 * Log-linear latency histogram (as HdrHistogram): values below 2^TG_HIST_SUB_BITS are counted
 * exactly, above that each power of two is split into 2^TG_HIST_SUB_BITS linear buckets, so a
 * bucket's middle is within 2^-(TG_HIST_SUB_BITS+1) (0.4 %) of any value in it.
 * Pure C, no DPDK: trafficgen/tests/test_hist.c checks it.
 */
#ifndef OVSPERF_TRAFFICGEN_HIST_H
#define OVSPERF_TRAFFICGEN_HIST_H

#include <stdint.h>

#define TG_HIST_SUB_BITS 7
#define TG_HIST_SUB (1u << TG_HIST_SUB_BITS)
#define TG_HIST_BUCKETS ((64 - TG_HIST_SUB_BITS + 1) * TG_HIST_SUB)

/* Bucket of value v (hot path). */
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

double tg_hist_bucket_mid(unsigned int idx);
double tg_hist_quantile(const uint64_t *hist, uint64_t n, uint64_t min, uint64_t max, double p);

#endif /* OVSPERF_TRAFFICGEN_HIST_H */
