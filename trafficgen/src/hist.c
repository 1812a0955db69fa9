/* SPDX-License-Identifier: Apache-2.0
 * Quantiles of the log-linear latency histogram (hist.h).
 */
#include <math.h>

#include "hist.h"

/* Return the middle of bucket idx: exact below TG_HIST_SUB, else lower + (width - 1) / 2. */
double
tg_hist_bucket_mid(unsigned int idx)
{
	unsigned int e, sub;
	double lower, width;

	if (idx < TG_HIST_SUB)
		return idx;
	e = idx / TG_HIST_SUB + TG_HIST_SUB_BITS - 1;
	sub = idx % TG_HIST_SUB;
	width = ldexp(1.0, (int)(e - TG_HIST_SUB_BITS));
	lower = (double)(TG_HIST_SUB + sub) * width;
	return lower + (width - 1) / 2;
}

/* Return the p-quantile (0 < p <= 1) of n values counted in hist: the middle of the bucket that
 * holds the ceil(p * n)-th smallest value (nearest-rank definition), clamped to [min, max];
 * exactly min or max for the first or last rank. NaN when n is 0. */
double
tg_hist_quantile(const uint64_t *hist, uint64_t n, uint64_t min, uint64_t max, double p)
{
	uint64_t target, cum = 0;
	unsigned int i;
	double v;

	if (n == 0)
		return NAN;
	target = (uint64_t)ceil(p * (double)n);
	if (target <= 1)
		return (double)min;	/* the extremes are known exactly */
	if (target >= n)
		return (double)max;
	for (i = 0; i < TG_HIST_BUCKETS - 1; i++) {
		cum += hist[i];
		if (cum >= target)
			break;
	}
	v = tg_hist_bucket_mid(i);
	if (v < (double)min)
		v = (double)min;
	if (v > (double)max)
		v = (double)max;
	return v;
}
