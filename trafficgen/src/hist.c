/* SPDX-License-Identifier: Apache-2.0
 * Bucket values and quantiles of the latency histogram (hist.h), named as HdrHistogram names them.
 */
#include <math.h>

#include "hist.h"

/* Width of bucket idx [ns]: 1 below 2 * TG_HIST_SUB, then doubling with every power of two. */
static uint64_t
bucket_width(unsigned int idx)
{
	if (idx < 2 * TG_HIST_SUB)
		return 1;
	return UINT64_C(1) << (idx / TG_HIST_SUB - 1);
}

/* HdrHistogram's lowest equivalent value: the smallest value counted in bucket idx [ns]. */
uint64_t
tg_hist_bucket_lowest(unsigned int idx)
{
	if (idx < 2 * TG_HIST_SUB)
		return idx;
	return (uint64_t)(TG_HIST_SUB + idx % TG_HIST_SUB) * bucket_width(idx);
}

/* HdrHistogram's highest equivalent value: the largest value counted in bucket idx [ns]. */
uint64_t
tg_hist_bucket_highest(unsigned int idx)
{
	return tg_hist_bucket_lowest(idx) + (bucket_width(idx) - 1);
}

/* HdrHistogram's median equivalent value: lowest + width / 2 (integer) [ns]; exact for
 * buckets one ns wide, within half a bucket (0.05 %) of every value in the bucket otherwise. */
double
tg_hist_bucket_mid(unsigned int idx)
{
	return (double)(tg_hist_bucket_lowest(idx) + bucket_width(idx) / 2);
}

/* Return the p-quantile (0 < p <= 1) of n values counted in hist [ns]: the median equivalent
 * value of the bucket that holds the ceil(p * n)-th smallest value (nearest-rank definition),
 * clamped to [min, max] [ns]; exactly min or max for the first or last rank. NaN when n is 0.
 * min and max are the exact extremes as reported (not their bucketed ns), so that a quantile is
 * never below the reported minimum nor above the reported maximum. */
double
tg_hist_quantile(const uint64_t *hist, uint64_t n, double min, double max, double p)
{
	uint64_t target, cum = 0;
	unsigned int i;
	double v;

	if (n == 0)
		return NAN;
	target = (uint64_t)ceil(p * (double)n);
	if (target <= 1)
		return min;	/* the extremes are known exactly */
	if (target >= n)
		return max;
	for (i = 0; i < TG_HIST_BUCKETS - 1; i++) {
		cum += hist[i];
		if (cum >= target)
			break;
	}
	v = tg_hist_bucket_mid(i);
	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}
