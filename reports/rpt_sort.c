/*
 * rpt_sort.c -- sorting a metric's samples for its quantiles (rpt_int.h
 * rpt__sort).
 *
 * GSL's gsl_sort is a heapsort: at 10^6 samples and more its sift-downs
 * miss the cache at every level, and it took 8% of a 10^6-request run.
 * This is a most-significant-digit radix sort in place (the "American
 * flag" permutation, one byte a pass), so it needs no second buffer and
 * peak memory does not grow.  A double's bits, with the sign bit flipped
 * for a positive number and every bit flipped for a negative one, compare
 * as unsigned integers in the numbers' order; the samples are finite, so
 * the result is the order gsl_sort gives (equal numbers have equal bits,
 * but for 0 and -0, which no sample takes: they are integer nanoseconds
 * divided by 10^9).  Buckets of few samples finish by insertion sort.
 */
#include "config.h"

#include "reports/rpt_int.h"

#include <stdint.h>
#include <string.h>

#define SORT_SMALL 48		/* insertion sort at or below this */

static inline uint64_t
ld(const double *p)
{
	uint64_t u;

	memcpy(&u, p, sizeof(u));
	return u;
}

static inline void
st(double *p, uint64_t u)
{
	memcpy(p, &u, sizeof(u));
}

static void
insertion(double *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t x = ld(&v[i]);
		size_t j = i;

		for (; j > 0 && ld(&v[j - 1]) > x; j--)
			st(&v[j], ld(&v[j - 1]));
		st(&v[j], x);
	}
}

/* v[0..n) hold keys equal above bit shift + 8; sort them by the rest. */
static void
radix(double *v, size_t n, int shift)
{
	size_t count[256], next[256], end[256];
	unsigned d;

	for (;;) {
		if (n <= SORT_SMALL) {
			insertion(v, n);
			return;
		}
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(ld(&v[i]) >> shift) & 0xff]++;
		d = (ld(&v[0]) >> shift) & 0xff;
		if (count[d] != n)
			break;
		if (shift == 0)	/* all equal */
			return;
		shift -= 8;	/* one bucket: the next byte */
	}
	for (size_t b = 0, at = 0; b < 256; b++) {
		next[b] = at;
		at += count[b];
		end[b] = at;
	}
	/* each element to its bucket, cycle by cycle */
	for (size_t b = 0; b < 256; b++)
		while (next[b] < end[b]) {
			uint64_t x = ld(&v[next[b]]);

			while ((d = (x >> shift) & 0xff) != b) {
				uint64_t y = ld(&v[next[d]]);

				st(&v[next[d]++], x);
				x = y;
			}
			st(&v[next[b]++], x);
		}
	if (shift == 0)
		return;
	for (size_t b = 0, at = 0; b < 256; at += count[b], b++)
		if (count[b] > 1)
			radix(v + at, count[b], shift - 8);
}

void
rpt__sort(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t u = ld(&v[i]);

		st(&v[i], u >> 63 ? ~u : u | (UINT64_C(1) << 63));
	}
	if (n > 1)
		radix(v, n, 56);
	for (size_t i = 0; i < n; i++) {
		uint64_t u = ld(&v[i]);

		st(&v[i], u >> 63 ? u & ~(UINT64_C(1) << 63) : ~u);
	}
}
