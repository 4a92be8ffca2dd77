/*
 * check_replica.c -- the replica's invariants (replica_check, sim/replica.h).
 *
 * A small real configuration per built-in policy (a 64-block allocator,
 * prompts up to 400 tokens, some sharing a prefix: preemptions and prefix
 * hits happen) is driven one call at a time, as the run's event loop
 * drives it, and replica_check() must be 0 after every add, every step
 * half and the close.  Then each invariant is broken on purpose in a live
 * state and must be reported by its own number, and the state restored
 * must pass again and run to the end.
 *
 * The test includes replica.c itself (and libkvcore's internal header) to
 * reach the fields it breaks; everything else comes from the libraries.
 */
#include "sim/replica.c"

#include "core/kv_int.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define NREQ 24
#define BASE_TOKENS 1024

/* The configurations: every built-in policy, and swap preemption where
 * the policy has it. */
static const struct config {
	const char *policy;
	int64_t preemption;		/* 1 swap; KVS_UNSET the default */
	bool fanout;			/* n > 1 as child requests */
} configs[] = {
	{ "vllm-v0", KVS_UNSET, false }, { "vllm-v0", 1, false },
	{ "vllm-v1", KVS_UNSET, false }, { "sarathi", KVS_UNSET, false },
	{ "deepspeed-fastgen", KVS_UNSET, false },
	{ "kvsim", KVS_UNSET, false }, { "kvsim", 1, false },
};

/* Parallel sampling fanned out (replica_cfg.fanout): n = 1 to 4. */
static const struct config nsamp_configs[] = {
	{ "vllm-v0", KVS_UNSET, true }, { "vllm-v0", 1, true },
	{ "vllm-v1", KVS_UNSET, true }, { "sarathi", KVS_UNSET, true },
	{ "kvsim", 1, true },
};

/* One replica and its workload, driven one call at a time. */
struct drive {
	const char *policy;
	bool fanout;			/* replica_cfg.fanout */
	struct kvs_config sc;
	struct kvc_config kc;
	replica *rp;
	rpt *rep;
	uint32_t base[BASE_TOKENS];	/* prompts are slices of it */
	struct wl_request req[NREQ];
	size_t next;			/* the next request to arrive */
	int64_t now;
	int64_t dt;			/* the step in flight's duration */
	bool in_step;			/* between begin and end */
	uint64_t calls;
};

static void
drive_init(struct drive *d, const struct config *c)
{
	const char *policy = c->policy;
	const struct kvs_policy *p = kvs_builtin_policy(policy);
	struct replica_cfg rc;
	uint64_t x = 12345;
	char why[512];

	ck_assert_ptr_nonnull(p);
	memset(d, 0, sizeof(*d));
	d->policy = policy;
	d->fanout = c->fanout;
	kvc_config_default(&d->kc, p->mode);
	d->kc.block_size = 16;
	d->kc.gpu_blocks = 64;
	d->kc.max_model_len = 512;
	d->kc.prefix_caching = p->mode != KVC_DEEPSPEED;
	if (p->mode != KVC_VLLM_V1 && p->mode != KVC_DEEPSPEED)
		d->kc.cpu_blocks = 64;
	kvs_config_init(&d->sc);
	snprintf(d->sc.policy, sizeof(d->sc.policy), "%s", policy);
	d->sc.max_num_seqs = 8;
	d->sc.max_num_batched_tokens = 512;
	d->sc.preemption = c->preemption;
	for (uint32_t i = 0; i < BASE_TOKENS; i++)
		d->base[i] = 100 + i;
	for (size_t i = 0; i < NREQ; i++) {
		struct wl_request *r = &d->req[i];

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		r->id = i;
		r->arrival_ns = (int64_t)i * 2000000;
		r->prompt_tokens = 20 + (uint32_t)((x >> 33) % 380);
		r->output_tokens = 1 + (uint32_t)((x >> 13) % 40);
		/* with fanout, requests of 1 to 4 samples */
		r->n = c->fanout ? 1 + (uint32_t)(i % 4) : 1;
		r->out_key = 7919 * i + 1;
		/* every third prompt starts with the first one's tokens */
		r->tokens = d->base + (i % 3 == 0 ? 0 : 7 * i);
	}
	memset(&rc, 0, sizeof(rc));
	rc.sc = &d->sc;
	rc.kc = &d->kc;
	rc.policy = p;
	rc.step_ns = 1000000;
	rc.vocab = 32000;
	rc.fanout = d->fanout;
	d->rp = replica_new(&rc, why, sizeof(why));
	ck_assert_msg(d->rp != NULL, "%s: %s", policy, why);
	d->rep = rpt_new("check_replica", NULL, NULL);
	ck_assert_ptr_nonnull(d->rep);
}

static void
drive_release(struct drive *d)
{
	replica_free(d->rp);
	rpt_free(d->rep);
}

/* One call on the replica, as the run's loop makes them.  false: the
 * workload is over (every request finished, the replica closed). */
static bool
drive_step(struct drive *d)
{
	char why[512];
	int64_t dt;
	bool rej, started;

	d->calls++;
	if (d->in_step) {
		d->now += d->dt;
		ck_assert_int_eq(replica_end(d->rp, d->now, d->rep, why,
					     sizeof(why)), KV_OK);
		d->in_step = false;
		return true;
	}
	if (d->next < NREQ && d->req[d->next].arrival_ns <= d->now) {
		ck_assert_int_eq(replica_add(d->rp, &d->req[d->next++], &rej,
					     why, sizeof(why)), KV_OK);
		ck_assert(!rej);
		return true;
	}
	if (replica_has_work(d->rp)) {
		ck_assert_int_eq(replica_begin(d->rp, d->now, &dt, &started,
					       why, sizeof(why)), KV_OK);
		if (started) {
			d->dt = dt;
			d->in_step = true;
			return true;
		}
	}
	if (d->next < NREQ) {
		d->now = d->req[d->next].arrival_ns;
		return true;
	}
	ck_assert_msg(!replica_has_work(d->rp), "%s stalled", d->policy);
	replica_close(d->rp, d->now);
	return false;
}

static void
assert_check(const struct drive *d, int want)
{
	char why[512] = "";
	int got = replica_check(d->rp, why, sizeof(why));

	ck_assert_msg(got == want, "%s, call %llu: invariant %d (%s), "
		      "expected %d", d->policy, (unsigned long long)d->calls,
		      got, why, want);
}

/* Every call of a whole run keeps every invariant. */
START_TEST(test_run_checked)
{
	struct drive d;
	bool more;

	drive_init(&d, &configs[_i]);
	assert_check(&d, 0);
	do {
		more = drive_step(&d);
		assert_check(&d, 0);
	} while (more);
	ck_assert_uint_eq(replica_stats(d.rp)->finished, NREQ);
	ck_assert_uint_eq(replica_outstanding(d.rp), 0);
	drive_release(&d);
}
END_TEST

/* Drive until a step is in flight with a request that has generated. */
static void
drive_to_busy(struct drive *d)
{
	for (;;) {
		ck_assert(drive_step(d));
		if (!d->rp->busy || d->rp->nsched == 0 ||
		    kvs_queue_len(d->rp->s, KVS_Q_RUNNING) == 0)
			continue;
		if (d->rp->byreq[d->rp->sreq[0]]->gen > 0)
			return;
	}
}

/* Each invariant broken on purpose is reported by its number. */
START_TEST(test_broken)
{
	struct drive d;
	replica *rp;
	kvc *k;
	struct rq *q;
	kvs_req h;
	int32_t link;
	uint64_t u64;
	int64_t t;
	double u;

	drive_init(&d, &configs[_i]);
	drive_to_busy(&d);
	rp = d.rp;
	assert_check(&d, 0);

	/* 1: a bad request link */
	k = kvs_kv(rp->s);
	link = k->seq[0].req;
	k->seq[0].req = -1;
	assert_check(&d, 1);
	k->seq[0].req = link;

	/* 2: unqueued */
	h = kvs_queue_remove(rp->s, KVS_Q_RUNNING, 0);
	assert_check(&d, 2);
	ck_assert_int_eq(kvs_queue_insert(rp->s, KVS_Q_RUNNING, 0, h), KV_OK);

	/* 3: a live request unrecorded */
	h = rp->sreq[0];
	q = rp->byreq[h];
	rp->byreq[h] = NULL;
	assert_check(&d, 3);
	rp->byreq[h] = q;

	/* 4: counts disagree */
	u64 = rp->st.added++;
	assert_check(&d, 4);
	rp->st.added = u64;

	/* 5: outstanding tokens */
	rp->outstanding++;
	assert_check(&d, 5);
	rp->outstanding--;

	/* 6: usage off the allocator */
	u = rp->st.usage_now;
	rp->st.usage_now = u + 0.25;
	assert_check(&d, 6);
	rp->st.usage_now = u;

	/* 7: scheduled before arrival */
	t = q->first_sched;
	q->first_sched = q->arrival - 1;
	assert_check(&d, 7);
	q->first_sched = t;
	/* 7: the clock set back */
	t = rp->st.usage_t;
	rp->st.usage_t = q->last_tok - 1;
	assert_check(&d, 7);
	rp->st.usage_t = t;

	/* 8: over the token budget */
	rp->seq[0].q += 100000;
	assert_check(&d, 8);
	rp->seq[0].q -= 100000;
	/* 8: not the scheduler's step */
	u64 = rp->nsched;
	rp->nsched = 0;
	assert_check(&d, 8);
	rp->nsched = (uint32_t)u64;

	assert_check(&d, 0);
	while (drive_step(&d))
		assert_check(&d, 0);
	ck_assert_uint_eq(replica_stats(rp)->finished, NREQ);
	drive_release(&d);
}
END_TEST

/* Rebuild d's replica on d->sc and d->kc (changed by the caller). */
static void
drive_rebuild(struct drive *d)
{
	struct replica_cfg rc;
	char why[512];

	replica_free(d->rp);
	memset(&rc, 0, sizeof(rc));
	rc.sc = &d->sc;
	rc.kc = &d->kc;
	rc.policy = kvs_builtin_policy(d->policy);
	rc.step_ns = 1000000;
	rc.vocab = 32000;
	rc.fanout = d->fanout;
	d->rp = replica_new(&rc, why, sizeof(why));
	ck_assert_msg(d->rp != NULL, "%s: %s", d->policy, why);
}

/* Add r now; run steps until the replica is idle. */
static void
drive_one(struct drive *d, struct wl_request *r, bool want_rejected)
{
	char why[512];
	int64_t dt;
	bool rej, started;

	r->arrival_ns = d->now;
	ck_assert_int_eq(replica_add(d->rp, r, &rej, why, sizeof(why)),
			 KV_OK);
	ck_assert_msg(rej == want_rejected, "%s: prompt of %u tokens %s",
		      d->policy, r->prompt_tokens,
		      rej ? "rejected" : "queued");
	for (int n = 0; replica_has_work(d->rp); n++) {
		ck_assert_int_lt(n, 1000);
		ck_assert_int_eq(replica_begin(d->rp, d->now, &dt, &started,
					       why, sizeof(why)), KV_OK);
		assert_check(d, 0);	/* an idle step completes at once */
		if (!started)
			continue;
		d->now += dt;
		ck_assert_int_eq(replica_end(d->rp, d->now, d->rep, why,
					     sizeof(why)), KV_OK);
		assert_check(d, 0);
	}
}

/*
 * Prompt limits as the engines have them: vllm-v0 runs a prompt of exactly
 * max_model_len, vllm-v1 rejects it; and a request vllm-v0's step ignores
 * (can_allocate NEVER: here a pool without the start-up capacity check)
 * is counted with the rejected ones, never as added or finished.
 */
START_TEST(test_prompt_limits)
{
	struct drive d;
	const struct replica_stats *st;

	drive_init(&d, &configs[0]);		/* vllm-v0 */
	d.req[0].prompt_tokens = 512;		/* max_model_len */
	drive_one(&d, &d.req[0], false);
	st = replica_stats(d.rp);
	ck_assert_uint_eq(st->finished, 1);
	ck_assert_uint_eq(st->rejected, 0);
	d.sc.capacity_check = 0;
	d.kc.gpu_blocks = 8;
	d.kc.watermark = 0;
	drive_rebuild(&d);
	d.req[1].prompt_tokens = 200;		/* 13 blocks of 8: NEVER */
	d.req[2].prompt_tokens = 50;
	drive_one(&d, &d.req[1], false);
	drive_one(&d, &d.req[2], false);
	st = replica_stats(d.rp);
	ck_assert_uint_eq(st->rejected, 1);
	ck_assert_uint_eq(st->added, 1);
	ck_assert_uint_eq(st->finished, 1);
	ck_assert_uint_eq(replica_outstanding(d.rp), 0);
	drive_release(&d);

	drive_init(&d, &configs[2]);		/* vllm-v1 */
	d.req[0].prompt_tokens = 512;
	drive_one(&d, &d.req[0], true);
	ck_assert_uint_eq(replica_stats(d.rp)->rejected, 1);
	drive_release(&d);
}
END_TEST

/*
 * Parallel sampling: a whole run with requests of 1 to 4 samples keeps
 * every invariant (preemptions of children included); each request gives
 * one row, whatever its samples.
 */
START_TEST(test_nsamp_checked)
{
	struct drive d;
	bool more;
	uint64_t samples = 0;

	drive_init(&d, &nsamp_configs[_i]);
	for (size_t i = 0; i < NREQ; i++)
		samples += d.req[i].n;
	do {
		more = drive_step(&d);
		assert_check(&d, 0);
	} while (more);
	ck_assert_uint_eq(replica_stats(d.rp)->finished, samples);
	ck_assert_uint_eq(rpt_completed(d.rep), NREQ);
	ck_assert_uint_eq(replica_stats(d.rp)->ends, NREQ);
	ck_assert_uint_eq(replica_outstanding(d.rp), 0);
	drive_release(&d);
}
END_TEST

/*
 * A request of 4 samples is one request to the client: late once for the
 * early stop (replica_late), failed once by its client (every child
 * aborted), rejected once when the scheduler drops its prompt.
 */
START_TEST(test_nsamp_once)
{
	struct drive d;
	struct wl_request *r;
	char why[512];
	bool rej, ended;

	drive_init(&d, &nsamp_configs[0]);	/* vllm-v0 */
	r = &d.req[3];				/* n = 4 */
	ck_assert_uint_eq(r->n, 4);
	r->arrival_ns = 0;
	ck_assert_int_eq(replica_add(d.rp, r, &rej, why, sizeof(why)), KV_OK);
	ck_assert(!rej);
	ck_assert_uint_eq(kvs_nreqs(d.rp->s), 4);
	ck_assert_uint_eq(replica_late(d.rp, 10, SIM_W_TTFT, 0), 1);
	ck_assert_uint_eq(replica_late(d.rp, 10, SIM_W_E2E, 0), 1);
	ck_assert_uint_eq(replica_late(d.rp, 10, SIM_W_QUEUE, 0), 1);
	ck_assert_int_eq(replica_fail(d.rp, replica_last_handle(d.rp), 10,
				      d.rep, &ended, why, sizeof(why)), KV_OK);
	ck_assert(ended);
	ck_assert_uint_eq(replica_stats(d.rp)->failed, 4);
	ck_assert_uint_eq(rpt_failed(d.rep), 1);
	ck_assert_uint_eq(kvs_nunfinished(d.rp->s), 0);
	assert_check(&d, 0);
	ck_assert_uint_eq(replica_late(d.rp, 10, SIM_W_E2E, 0), 0);
	/* its client leaving again ends nothing */
	ck_assert_int_eq(replica_fail(d.rp, replica_last_handle(d.rp), 11,
				      d.rep, &ended, why, sizeof(why)), KV_OK);
	ck_assert(!ended);
	/* dropped by the scheduler (can_allocate NEVER): rejected once */
	d.sc.capacity_check = 0;
	d.kc.gpu_blocks = 8;
	d.kc.watermark = 0;
	drive_rebuild(&d);
	r->prompt_tokens = 200;
	drive_one(&d, r, false);
	ck_assert_uint_eq(replica_stats(d.rp)->rejected, 1);
	ck_assert_uint_eq(replica_stats(d.rp)->ends, 1);
	ck_assert_uint_eq(replica_outstanding(d.rp), 0);
	drive_release(&d);
}
END_TEST

static Suite *
replica_suite(void)
{
	Suite *s = suite_create("replica");
	TCase *tc = tcase_create("invariants");
	int n = (int)(sizeof(configs) / sizeof(configs[0]));

	tcase_add_loop_test(tc, test_run_checked, 0, n);
	tcase_add_loop_test(tc, test_broken, 0, n);
	tcase_add_test(tc, test_prompt_limits);
	tcase_add_loop_test(tc, test_nsamp_checked, 0,
			    (int)(sizeof(nsamp_configs) /
				  sizeof(nsamp_configs[0])));
	tcase_add_test(tc, test_nsamp_once);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(replica_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
