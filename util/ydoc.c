/*
 * ydoc.c -- libyaml events to a tree of positioned nodes (ydoc.h).
 *
 * One pass over yaml_parser_parse() with an explicit stack of open
 * containers.  Each node is one allocation (the scalar text follows the
 * struct), recorded in d->mem so that yd_release() frees everything even
 * after a failure half way through; a node shared by aliases (YD_LOADER)
 * is still one allocation, listed once.  In a map, the next node read is a
 * key when the map holds an even number of nodes so far.
 */
#include "util/ydoc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YD_MAXDEPTH 256		/* strict mode's limit */
#define YD_UNIQUE_DEPTH 64	/* levels YD_UNIQUE searches */

struct yd_frame {
	struct yd_node *node;
	size_t cap;		/* allocated slots in node->kid */
	size_t used;		/* slots filled */
};

struct yd_anchor {
	char *name;
	struct yd_node *node;
};

/* One read in progress. */
struct yd_rd {
	struct yd_doc *d;
	yaml_parser_t p;
	unsigned flags;
	char *err;
	size_t errlen;
	struct yd_frame *stack;	/* open containers */
	size_t depth, capstack;
	struct yd_anchor *anch;	/* YD_LOADER: this document's anchors */
	size_t nanch, capanch;
	struct yd_node **rootp;	/* where the document's root goes */
	int ndocs;
	bool ended;		/* the stream's end was read */
};

static kv_err
yd__err(struct yd_rd *r, unsigned long line, unsigned long col,
	const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* err = "NAME:LINE:COL: what"; the mark kept in the doc.  KV_EINVAL. */
static kv_err
yd__err(struct yd_rd *r, unsigned long line, unsigned long col,
	const char *fmt, ...)
{
	va_list ap;
	int n;

	r->d->err_line = line;
	r->d->err_col = col;
	if (r->errlen == 0)
		return KV_EINVAL;
	n = snprintf(r->err, r->errlen, "%s:%lu:%lu: ", r->d->name, line,
		     col);
	if (n < 0)
		return KV_EINVAL;
	r->d->err_what = (size_t)n < r->errlen ? (size_t)n : r->errlen - 1;
	if ((size_t)n >= r->errlen)
		return KV_EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

/* libyaml's complaint, at its mark. */
static kv_err
yd__parse_err(struct yd_rd *r)
{
	const yaml_mark_t *m = &r->p.problem_mark;
	const yaml_mark_t *c = &r->p.context_mark;
	const char *what = r->p.problem ? r->p.problem : "syntax error";

	if (r->p.error == YAML_MEMORY_ERROR)
		return KV_ENOMEM;
	if (r->p.context != NULL && !(r->flags & YD_LOADER))
		return yd__err(r, (unsigned long)m->line + 1,
			       (unsigned long)m->column + 1,
			       "%s %s started at %lu:%lu", what, r->p.context,
			       (unsigned long)c->line + 1,
			       (unsigned long)c->column + 1);
	return yd__err(r, (unsigned long)m->line + 1,
		       (unsigned long)m->column + 1, "%s", what);
}

/*
 * The array p of *cap elements of `size` bytes, n of them used, with room
 * for one more: p itself, or moved (*cap doubled, `first` at first).
 * NULL when out of memory, p still allocated.
 */
static void *
yd__grow(void *p, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t nc = *cap ? 2 * *cap : first;

	if (n < *cap)
		return p;
	p = realloc(p, nc * size);
	if (p != NULL)
		*cap = nc;
	return p;
}

static struct yd_node *
yd__node(struct yd_doc *d, enum yd_type t, const yaml_mark_t *m,
	 const char *s, size_t len)
{
	struct yd_node *n;
	void **mem = yd__grow(d->mem, &d->capmem, d->nmem, sizeof(*mem), 64);

	if (mem == NULL)
		return NULL;
	d->mem = mem;
	n = calloc(1, sizeof(*n) + (s ? len + 1 : 0));
	if (n == NULL)
		return NULL;
	d->mem[d->nmem++] = n;
	n->type = t;
	n->line = (unsigned long)m->line + 1;
	n->col = (unsigned long)m->column + 1;
	if (s != NULL) {
		char *text = (char *)(n + 1);

		memcpy(text, s, len);
		text[len] = '\0';
		n->str = text;
	}
	return n;
}

static struct yd_frame *
yd__top(struct yd_rd *r)
{
	return r->depth ? &r->stack[r->depth - 1] : NULL;
}

/* The next node read into the top container is a map's key. */
static bool
yd__want_key(const struct yd_frame *f)
{
	return f != NULL && f->node->type == YD_MAP && f->used % 2 == 0;
}

static bool
yd__add(struct yd_frame *f, struct yd_node *kid)
{
	struct yd_node **kids = yd__grow(f->node->kid, &f->cap, f->used,
					 sizeof(*kids), 8);

	if (kids == NULL)
		return false;
	f->node->kid = kids;
	f->node->kid[f->used++] = kid;
	if (f->node->type == YD_SEQ)
		f->node->n = f->used;
	else
		f->node->n = f->used / 2;
	return true;
}

/* A complete node: the root, an item, a key or a value. */
static kv_err
yd__attach(struct yd_rd *r, struct yd_node *n)
{
	struct yd_frame *top = yd__top(r);

	if (top == NULL) {
		*r->rootp = n;
		return KV_OK;
	}
	if (yd__want_key(top) && !(r->flags & YD_LOADER)) {
		for (size_t i = 0; i < top->node->n; i++)
			if (strcmp(top->node->kid[2 * i]->str, n->str) == 0)
				return yd__err(r, n->line, n->col,
					       "duplicate key '%s'", n->str);
	}
	return yd__add(top, n) ? KV_OK : KV_ENOMEM;
}

/* YD_LOADER: name the node n; a name used twice in a document is an
 * error at the second, in libyaml's words. */
static kv_err
yd__anchor(struct yd_rd *r, const yaml_char_t *name, struct yd_node *n)
{
	struct yd_anchor *anch;

	if (name == NULL || !(r->flags & YD_LOADER))
		return KV_OK;
	for (size_t i = 0; i < r->nanch; i++)
		if (strcmp(r->anch[i].name, (const char *)name) == 0)
			return yd__err(r, n->line, n->col, "second occurrence");
	anch = yd__grow(r->anch, &r->capanch, r->nanch, sizeof(*anch), 8);
	if (anch == NULL)
		return KV_ENOMEM;
	r->anch = anch;
	r->anch[r->nanch].name = strdup((const char *)name);
	if (r->anch[r->nanch].name == NULL)
		return KV_ENOMEM;
	r->anch[r->nanch++].node = n;
	return KV_OK;
}

static void
yd__forget_anchors(struct yd_rd *r)
{
	for (size_t i = 0; i < r->nanch; i++)
		free(r->anch[i].name);
	r->nanch = 0;
}

static kv_err
yd__alias(struct yd_rd *r, const yaml_event_t *e)
{
	const char *name = (const char *)e->data.alias.anchor;
	unsigned long line = (unsigned long)e->start_mark.line + 1;
	unsigned long col = (unsigned long)e->start_mark.column + 1;

	if (!(r->flags & YD_LOADER))
		return yd__err(r, line, col, "aliases (*%s) are not supported",
			       name);
	for (size_t i = 0; i < r->nanch; i++)
		if (strcmp(r->anch[i].name, name) == 0)
			return yd__attach(r, r->anch[i].node);
	return yd__err(r, line, col, "found undefined alias");
}

static kv_err
yd__scalar(struct yd_rd *r, const yaml_event_t *e)
{
	struct yd_node *n;
	kv_err rc;

	n = yd__node(r->d, YD_SCALAR, &e->start_mark,
		     (const char *)e->data.scalar.value, e->data.scalar.length);
	if (n == NULL)
		return KV_ENOMEM;
	n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if ((rc = yd__anchor(r, e->data.scalar.anchor, n)) != KV_OK)
		return rc;
	return yd__attach(r, n);
}

/* A map or sequence starts: a new open container. */
static kv_err
yd__open(struct yd_rd *r, const yaml_event_t *e)
{
	bool map = e->type == YAML_MAPPING_START_EVENT;
	unsigned long line = (unsigned long)e->start_mark.line + 1;
	unsigned long col = (unsigned long)e->start_mark.column + 1;
	struct yd_frame *stack;
	struct yd_node *n;
	kv_err rc;

	if (!(r->flags & YD_LOADER)) {
		if (r->depth == YD_MAXDEPTH)
			return yd__err(r, line, col,
				       "nesting deeper than %d levels",
				       YD_MAXDEPTH);
		if (yd__want_key(yd__top(r)))
			return yd__err(r, line, col,
				       "a key must be a plain value");
	}
	stack = yd__grow(r->stack, &r->capstack, r->depth, sizeof(*stack), 16);
	if (stack == NULL)
		return KV_ENOMEM;
	r->stack = stack;
	n = yd__node(r->d, map ? YD_MAP : YD_SEQ, &e->start_mark, NULL, 0);
	if (n == NULL)
		return KV_ENOMEM;
	rc = yd__anchor(r, map ? e->data.mapping_start.anchor :
			e->data.sequence_start.anchor, n);
	if (rc != KV_OK)
		return rc;
	r->stack[r->depth].node = n;
	r->stack[r->depth].cap = 0;
	r->stack[r->depth].used = 0;
	r->depth++;
	return KV_OK;
}

/* The container is complete: attach it where it belongs. */
static kv_err
yd__close(struct yd_rd *r)
{
	r->depth--;
	return yd__attach(r, r->stack[r->depth].node);
}

/* One event; *end when it ends what yd__doc reads. */
static kv_err
yd__event(struct yd_rd *r, const yaml_event_t *e, bool *end)
{
	switch (e->type) {
	case YAML_STREAM_END_EVENT:
		r->ended = true;
		*end = true;
		return KV_OK;
	case YAML_DOCUMENT_START_EVENT:
		if (++r->ndocs > 1 && !(r->flags & YD_LOADER))
			return yd__err(r, (unsigned long)e->start_mark.line + 1,
				       (unsigned long)e->start_mark.column + 1,
				       "only one document per file");
		return KV_OK;
	case YAML_DOCUMENT_END_EVENT:
		*end = (r->flags & YD_LOADER) != 0;
		return KV_OK;
	case YAML_ALIAS_EVENT:
		return yd__alias(r, e);
	case YAML_SCALAR_EVENT:
		return yd__scalar(r, e);
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		return yd__open(r, e);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return yd__close(r);
	default:
		return KV_OK;
	}
}

/*
 * Read events into *root: to the stream's end (strict: the one document
 * there is), or to the end of the next document (YD_LOADER).
 */
static kv_err
yd__doc(struct yd_rd *r, struct yd_node **root)
{
	bool end = r->ended;
	kv_err rc = KV_OK;

	r->rootp = root;
	while (!end && rc == KV_OK) {
		yaml_event_t e;

		if (!yaml_parser_parse(&r->p, &e))
			return yd__parse_err(r);
		rc = yd__event(r, &e, &end);
		yaml_event_delete(&e);
	}
	return rc;
}

/*
 * YD_UNIQUE: the first repeated scalar key in document order, at the
 * repeat.  Aliases make the tree a graph, maybe cyclic, so the search is
 * bounded in depth, and a container is searched again only from a
 * shallower depth than before (a second search from as deep finds what
 * the first found: nothing).  Without that, a mapping holding two aliases
 * of itself took 2^depth steps; now each container is searched at most
 * YD_UNIQUE_DEPTH times.
 */
static kv_err
yd__unique(struct yd_rd *r, struct yd_node *n, int depth)
{
	kv_err rc;

	if (n == NULL || depth > YD_UNIQUE_DEPTH || n->type == YD_SCALAR ||
	    (n->unique_depth > 0 && n->unique_depth <= depth + 1))
		return KV_OK;
	n->unique_depth = depth + 1;
	if (n->type == YD_SEQ) {
		for (size_t i = 0; i < n->n; i++)
			if ((rc = yd__unique(r, n->kid[i], depth + 1)))
				return rc;
		return KV_OK;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct yd_node *k = n->kid[2 * i];

		for (size_t j = 0; k->type == YD_SCALAR && j < i; j++) {
			const struct yd_node *kj = n->kid[2 * j];

			if (kj->type == YD_SCALAR &&
			    strcmp(kj->str, k->str) == 0)
				return yd__err(r, k->line, k->col,
					       "duplicate key '%s'", k->str);
		}
		if ((rc = yd__unique(r, n->kid[2 * i + 1], depth + 1)))
			return rc;
	}
	return KV_OK;
}

kv_err
yd_read(struct yd_doc *d, FILE *in, const char *name, unsigned flags,
	char *err, size_t errlen)
{
	struct yd_rd r;
	kv_err rc;

	memset(d, 0, sizeof(*d));
	d->name = name;
	if (errlen > 0)
		err[0] = '\0';
	memset(&r, 0, sizeof(r));
	r.d = d;
	r.flags = flags;
	r.err = err;
	r.errlen = errlen;
	if (!yaml_parser_initialize(&r.p))
		return KV_ENOMEM;
	yaml_parser_set_input_file(&r.p, in);
	rc = yd__doc(&r, &d->root);
	if (rc == KV_OK && (flags & YD_LOADER) && (flags & YD_UNIQUE))
		rc = yd__unique(&r, d->root, 0);
	if (rc == KV_OK && (flags & YD_LOADER) && (flags & YD_NEXTDOC)) {
		yd__forget_anchors(&r);
		rc = yd__doc(&r, &d->next);
	}
	yd__forget_anchors(&r);
	free(r.anch);
	free(r.stack);
	yaml_parser_delete(&r.p);
	if (rc != KV_OK)
		yd_release(d);
	return rc;
}

kv_err
yd_load(struct yd_doc *d, FILE *in, const char *name, char *err,
	size_t errlen)
{
	return yd_read(d, in, name, 0, err, errlen);
}

kv_err
yd_read_path(struct yd_doc *d, const char *path, unsigned flags, char *err,
	     size_t errlen)
{
	FILE *in = fopen(path, "r");
	kv_err rc;

	if (in == NULL) {
		size_t at = strlen(path) + 2;

		memset(d, 0, sizeof(*d));
		if (errlen > 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			d->err_what = at < strlen(err) ? at : strlen(err);
		}
		return KV_ENOENT;
	}
	rc = yd_read(d, in, path, flags, err, errlen);
	fclose(in);
	return rc;
}

kv_err
yd_load_path(struct yd_doc *d, const char *path, char *err, size_t errlen)
{
	return yd_read_path(d, path, 0, err, errlen);
}

void
yd_release(struct yd_doc *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nmem; i++) {
		struct yd_node *n = d->mem[i];

		free(n->kid);
		free(n);
	}
	free(d->mem);
	d->mem = NULL;
	d->nmem = d->capmem = 0;
	d->root = d->next = NULL;
}

const struct yd_node *
yd_get(const struct yd_node *map, const char *key)
{
	if (map == NULL || map->type != YD_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (map->kid[2 * i]->type == YD_SCALAR &&
		    strcmp(map->kid[2 * i]->str, key) == 0)
			return map->kid[2 * i + 1];
	return NULL;
}

const struct yd_node *
yd_key(const struct yd_node *map, size_t i)
{
	return map != NULL && map->type == YD_MAP && i < map->n ?
	       map->kid[2 * i] : NULL;
}

const struct yd_node *
yd_val(const struct yd_node *map, size_t i)
{
	return map != NULL && map->type == YD_MAP && i < map->n ?
	       map->kid[2 * i + 1] : NULL;
}

bool
yd_is_null(const struct yd_node *n)
{
	if (n == NULL || n->type != YD_SCALAR || !n->plain)
		return false;
	return n->str[0] == '\0' || strcmp(n->str, "~") == 0 ||
	       strcmp(n->str, "null") == 0 || strcmp(n->str, "Null") == 0 ||
	       strcmp(n->str, "NULL") == 0;
}
