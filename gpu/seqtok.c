/*
 * seqtok.c -- the token ids of a sequence, for the verifier's content
 * keys.  libkvcore keeps them (kv_int.h) but kvcore.h does not export
 * them; this one function is the only place in gpu/ that reads core's
 * internals, and goes once kvcore.h has a kvc_seq_tokens().
 */
#include "config.h"

#include "core/kv_int.h"
#include "gpu/kvval.h"

const uint32_t *
kvval_seq_tokens(const kvc *k, int32_t s, size_t *n)
{
	const struct kvc_seq *q = kvc__seq(k, s);

	*n = q->ntok;
	return q->tok;
}
