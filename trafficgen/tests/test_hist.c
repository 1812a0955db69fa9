/* SPDX-License-Identifier: Apache-2.0
 * Unit test of the latency histogram (src/hist.c); run by 'make check'. Prints "ok" or the
 * first failure, and exits 0 or 1.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/hist.h"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

static void
check_buckets(void)
{
	unsigned int prev = 0;
	uint64_t v;

	for (v = 0; v < TG_HIST_SUB; v++)
		CHECK(tg_hist_bucket_mid(tg_hist_index(v)) == (double)v,
		      "small value %lu not exact", (unsigned long)v);
	/* Monotonic index, bucket middle within 0.4 % of the value, up to 2^40 cycles. */
	for (v = 1; v < (UINT64_C(1) << 40); v += v / 97 + 1) {
		unsigned int idx = tg_hist_index(v);
		double mid = tg_hist_bucket_mid(idx);

		CHECK(idx >= prev, "index not monotonic at %lu", (unsigned long)v);
		CHECK(idx < TG_HIST_BUCKETS, "index %u out of range", idx);
		CHECK(fabs(mid - (double)v) <= (double)v / 256 + 0.5,
		      "value %lu in bucket mid %.1f", (unsigned long)v, mid);
		prev = idx;
	}
	CHECK(tg_hist_index(UINT64_MAX) == TG_HIST_BUCKETS - 1, "UINT64_MAX not in last bucket");
}

static void
check_quantiles(void)
{
	uint64_t *hist = calloc(TG_HIST_BUCKETS, sizeof(*hist));
	uint64_t v, n = 0;

	CHECK(isnan(tg_hist_quantile(hist, 0, 0, 0, 0.5)), "empty histogram must give NaN");
	/* 1..100000 once each: the nearest-rank p-quantile is p * 100000. */
	for (v = 1; v <= 100000; v++) {
		hist[tg_hist_index(v)]++;
		n++;
	}
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.5) - 50000) < 50000 * 0.004,
	      "p50 %.1f", tg_hist_quantile(hist, n, 1, 100000, 0.5));
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.99) - 99000) < 99000 * 0.004,
	      "p99 %.1f", tg_hist_quantile(hist, n, 1, 100000, 0.99));
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.999) - 99900) < 99900 * 0.004,
	      "p99.9 %.1f", tg_hist_quantile(hist, n, 1, 100000, 0.999));
	CHECK(tg_hist_quantile(hist, n, 1, 100000, 1.0) <= 100000, "p100 above max");
	/* One value: every quantile is that value (clamped to min == max). */
	memset(hist, 0, TG_HIST_BUCKETS * sizeof(*hist));
	hist[tg_hist_index(123457)] = 1;
	CHECK(tg_hist_quantile(hist, 1, 123457, 123457, 0.999) == 123457, "single value");
	/* 999 fast frames and one slow one: p99.9 is fast, the maximum is slow. */
	memset(hist, 0, TG_HIST_BUCKETS * sizeof(*hist));
	hist[tg_hist_index(1000)] = 999;
	hist[tg_hist_index(5000000)] = 1;
	CHECK(fabs(tg_hist_quantile(hist, 1000, 1000, 5000000, 0.999) - 1000) < 4,
	      "p99.9 of 999+1");
	CHECK(tg_hist_quantile(hist, 1000, 1000, 5000000, 1.0) == 5000000, "p100 of 999+1");
	free(hist);
}

int
main(void)
{
	check_buckets();
	check_quantiles();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
