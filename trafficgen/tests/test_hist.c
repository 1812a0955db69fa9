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

/* HdrHistogram's own published values for a histogram of lowest discernible value 1 and
 * 3 significant figures (the layout of hist.h):
 * - HdrHistogram_c test/hdr_histogram_test.c (HdrHistogram/HdrHistogram_c, commit
 *   4ab9462eb18d69b9409fb118b53a4bf08afb5885), test_create: hdr_init(1, 3600000000, 3) has
 *   counts_len 23552, i.e. the bucket of the largest value below 2^32 is 23551;
 * - HdrHistogram_py test/test_hdrhistogram.py (HdrHistogram/HdrHistogram_py, commit
 *   b18247acad11cda2664674dc5267e652d6850b7d), test_scaled_highest_equiv_value and
 *   test_highest_equivalent_value;
 * - HdrHistogram (Java) src/test/java/org/HdrHistogram/HistogramTest.java (HdrHistogram/HdrHistogram,
 *   commit ec0b873e3179f2584465782b0bcf816b21d3ed13), testLowestEquivalentValue and
 *   testMedianEquivalentValue. */
static void
check_reference(void)
{
	static const uint64_t highest[][2] = {
		{8180, 8183}, {8191, 8191}, {8193, 8199}, {9995, 9999}, {10007, 10007}, {10008, 10015},
		{8180 * 1024, 8183 * 1024 + 1023}, {8191 * 1024, 8191 * 1024 + 1023},
		{8193 * 1024, 8199 * 1024 + 1023}, {9995 * 1024, 9999 * 1024 + 1023},
		{10007 * 1024, 10007 * 1024 + 1023}, {10008 * 1024, 10015 * 1024 + 1023},
	};
	static const uint64_t lowest[][2] = {{10000, 10000}, {10007, 10000}, {10009, 10008}};
	static const uint64_t median[][2] = {{4, 4}, {5, 5}, {4000, 4001}, {8000, 8002}, {10007, 10004}};
	size_t k;

	CHECK(tg_hist_index(UINT32_MAX) + 1 == 23552, "counts_len for 3600000000 is %u, not 23552",
	      tg_hist_index(UINT32_MAX) + 1);
	for (k = 0; k < sizeof(highest) / sizeof(highest[0]); k++)
		CHECK(tg_hist_bucket_highest(tg_hist_index(highest[k][0])) == highest[k][1],
		      "highest equivalent value of %lu is %lu, not %lu", (unsigned long)highest[k][0],
		      (unsigned long)tg_hist_bucket_highest(tg_hist_index(highest[k][0])),
		      (unsigned long)highest[k][1]);
	for (k = 0; k < sizeof(lowest) / sizeof(lowest[0]); k++)
		CHECK(tg_hist_bucket_lowest(tg_hist_index(lowest[k][0])) == lowest[k][1],
		      "lowest equivalent value of %lu is not %lu", (unsigned long)lowest[k][0],
		      (unsigned long)lowest[k][1]);
	for (k = 0; k < sizeof(median) / sizeof(median[0]); k++)
		CHECK(tg_hist_bucket_mid(tg_hist_index(median[k][0])) == (double)median[k][1],
		      "median equivalent value of %lu is %.1f, not %lu", (unsigned long)median[k][0],
		      tg_hist_bucket_mid(tg_hist_index(median[k][0])), (unsigned long)median[k][1]);
}

static void
check_buckets(void)
{
	unsigned int prev = 0;
	uint64_t v;

	for (v = 0; v < 2 * TG_HIST_SUB; v++)
		CHECK(tg_hist_bucket_mid(tg_hist_index(v)) == (double)v,
		      "small value %lu not exact", (unsigned long)v);
	/* Monotonic index; a value lies within its bucket, whose middle is within 1/2048 of it. */
	for (v = 1; v < (UINT64_C(1) << 50); v += v / 97 + 1) {
		unsigned int idx = tg_hist_index(v);
		double mid = tg_hist_bucket_mid(idx);

		CHECK(idx >= prev, "index not monotonic at %lu", (unsigned long)v);
		CHECK(idx < TG_HIST_BUCKETS, "index %u out of range", idx);
		CHECK(tg_hist_bucket_lowest(idx) <= v && v <= tg_hist_bucket_highest(idx),
		      "value %lu outside its bucket", (unsigned long)v);
		CHECK(fabs(mid - (double)v) <= (double)v / 2048,
		      "value %lu in bucket mid %.1f", (unsigned long)v, mid);
		prev = idx;
	}
	CHECK(tg_hist_index(UINT64_MAX) == TG_HIST_BUCKETS - 1, "UINT64_MAX not in last bucket");
	CHECK(tg_hist_bucket_highest(TG_HIST_BUCKETS - 1) == UINT64_MAX, "last bucket does not end at 2^64-1");
}

/* TSC cycles to ns: exact for a 1 GHz TSC, 2.5 GHz gives 0.4 ns per cycle, and 60 s at 3 GHz. */
static void
check_ns(void)
{
	CHECK(tg_hist_ns(123456789, tg_hist_ns_mult(1000000000)) == 123456789, "1 GHz");
	CHECK(tg_hist_ns(2500000000u, tg_hist_ns_mult(2500000000u)) == 999999999 ||
	      tg_hist_ns(2500000000u, tg_hist_ns_mult(2500000000u)) == 1000000000, "2.5 GHz");
	CHECK(tg_hist_ns(180000000000u, tg_hist_ns_mult(3000000000u)) / 1000 == 59999999 ||
	      tg_hist_ns(180000000000u, tg_hist_ns_mult(3000000000u)) / 1000 == 60000000, "60 s");
	CHECK(tg_hist_ns(UINT64_MAX, tg_hist_ns_mult(1)) == UINT64_MAX, "overflow saturates");
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
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.5) - 50000) < 50000 / 2048.0,
	      "p50 %.1f", tg_hist_quantile(hist, n, 1, 100000, 0.5));
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.99) - 99000) < 99000 / 2048.0,
	      "p99 %.1f", tg_hist_quantile(hist, n, 1, 100000, 0.99));
	CHECK(fabs(tg_hist_quantile(hist, n, 1, 100000, 0.999) - 99900) < 99900 / 2048.0,
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
	CHECK(tg_hist_quantile(hist, 1000, 1000, 5000000, 0.999) == 1000, "p99.9 of 999+1");
	CHECK(tg_hist_quantile(hist, 1000, 1000, 5000000, 1.0) == 5000000, "p100 of 999+1");
	/* HdrHistogram_c test_percentiles (raw histogram of load_histograms, commit above): 10,000
	 * values of 1,000 and one of 100,000,000; p30, p99 and p99.99 are 1,000 and p99.999 and p100
	 * 100,000,000, each within 0.1 %. */
	memset(hist, 0, TG_HIST_BUCKETS * sizeof(*hist));
	hist[tg_hist_index(1000)] = 10000;
	hist[tg_hist_index(100000000)] = 1;
	CHECK(fabs(tg_hist_quantile(hist, 10001, 1000, 100000000, 0.30) - 1000) <= 1, "p30");
	CHECK(fabs(tg_hist_quantile(hist, 10001, 1000, 100000000, 0.99) - 1000) <= 1, "p99");
	CHECK(fabs(tg_hist_quantile(hist, 10001, 1000, 100000000, 0.9999) - 1000) <= 1, "p99.99");
	CHECK(fabs(tg_hist_quantile(hist, 10001, 1000, 100000000, 0.99999) - 1e8) <= 1e5, "p99.999");
	CHECK(tg_hist_quantile(hist, 10001, 1000, 100000000, 1.0) == 1e8, "p100");
	/* A slow frame's bucket reaches above the exact maximum: the quantile stays at the maximum. */
	memset(hist, 0, TG_HIST_BUCKETS * sizeof(*hist));
	hist[tg_hist_index(100000000)] = 3;
	CHECK(tg_hist_bucket_lowest(tg_hist_index(100000000)) == 99942400 &&
	      tg_hist_bucket_highest(tg_hist_index(100000000)) == 100007935, "bucket of 1e8");
	CHECK(tg_hist_quantile(hist, 3, 99942400, 99950000, 0.5) == 99950000, "quantile above max");
	/* The receive path buckets tg_hist_ns() (rounded down, fixed point), while the reported
	 * minimum is the exact cycles * 1e9 / TSC Hz: frames of exactly 60 ns counted in the 59 ns
	 * bucket must still give a p50 that is not below the reported 60.0 (CI saw 60.0 > 59.0). */
	memset(hist, 0, TG_HIST_BUCKETS * sizeof(*hist));
	hist[tg_hist_index(59)] = 3;
	CHECK(tg_hist_quantile(hist, 3, 60.0, 60.0, 0.5) == 60.0, "p50 below the exact minimum");
	CHECK(tg_hist_quantile(hist, 3, 59.7, 61.2, 0.5) >= 59.7, "p50 below a fractional minimum");
	free(hist);
}

int
main(void)
{
	check_reference();
	check_buckets();
	check_ns();
	check_quantiles();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
