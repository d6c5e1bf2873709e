// The libbpf oracle for btfkit's dedup tests, built at test time against
// Debian's libbpf-dev (1.1):
//
//   libbpf_dedup concat OUT [--base BASE] IN...
//       Concatenates the types of every IN, in order, into one BTF that is
//       not deduplicated (the same type appears once per input), and writes
//       it raw. Without --base this is btf__add_btf; with --base every IN is
//       split BTF over BASE, which btf__add_btf refuses, so each type is
//       copied with btf__add_type and its ids into the input's own part are
//       shifted to where that part now starts.
//   libbpf_dedup concat-dedup OUT IN...
//       concat, then btf__dedup in the same process, as pahole does: libbpf
//       then trusts the strings of a BTF it built itself to be unique and
//       keeps its string section as it is.
//   libbpf_dedup dedup OUT IN [--base BASE]
//       Runs btf__dedup on IN and writes btf__raw_data. Prints the wall and
//       CPU seconds spent in btf__dedup alone on stderr, for timing
//       comparisons.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

static void die(const char *what, const char *arg, long err)
{
	fprintf(stderr, "libbpf_dedup: %s %s: %s\n", what, arg ? arg : "", strerror(err < 0 ? -err : err));
	exit(1);
}

static struct btf *load(const char *path, struct btf *base)
{
	struct btf *btf = base ? btf__parse_split(path, base) : btf__parse(path, NULL);
	long err = libbpf_get_error(btf);

	if (err)
		die("cannot parse", path, err);
	return btf;
}

static void write_raw(const struct btf *btf, const char *path)
{
	__u32 size;
	const void *data = btf__raw_data(btf, &size);
	FILE *f;

	if (!data)
		die("no raw data for", path, ENOMEM);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		die("cannot write", path, errno);
}

static void shift(__u32 *id, __u32 start, __u32 delta)
{
	if (*id >= start)
		*id += delta;
}

// The ids a type refers to, as libbpf's internal btf_type_visit_type_ids.
static void shift_ids(struct btf_type *t, __u32 start, __u32 delta)
{
	int i;

	switch (btf_kind(t)) {
	case BTF_KIND_ARRAY:
		shift(&btf_array(t)->type, start, delta);
		shift(&btf_array(t)->index_type, start, delta);
		break;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		for (i = 0; i < btf_vlen(t); i++)
			shift(&btf_members(t)[i].type, start, delta);
		break;
	case BTF_KIND_FUNC_PROTO:
		shift(&t->type, start, delta);
		for (i = 0; i < btf_vlen(t); i++)
			shift(&btf_params(t)[i].type, start, delta);
		break;
	case BTF_KIND_DATASEC:
		for (i = 0; i < btf_vlen(t); i++)
			shift(&btf_var_secinfos(t)[i].type, start, delta);
		break;
	case BTF_KIND_PTR:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
	case BTF_KIND_TYPE_TAG:
		shift(&t->type, start, delta);
		break;
	default:
		break;
	}
}

static void add_split(struct btf *dst, const struct btf *src)
{
	__u32 start = btf__type_cnt(btf__base_btf(src));
	__u32 n = btf__type_cnt(src);
	__u32 delta = btf__type_cnt(dst) - start;
	__u32 id;

	for (id = start; id < n; id++) {
		int new_id = btf__add_type(dst, src, btf__type_by_id(src, id));

		if (new_id < 0)
			die("cannot add type from split BTF", NULL, new_id);
		// btf__type_by_id hands out a const view of memory the BTF owns
		// and that btf__add_type has just made writable.
		shift_ids((struct btf_type *)btf__type_by_id(dst, new_id), start, delta);
	}
}

int main(int argc, char **argv)
{
	struct btf *base = NULL, *btf;
	int i, first = 3;

	if (argc < 4) {
		fprintf(stderr, "usage: %s concat OUT [--base BASE] IN... | concat-dedup OUT IN... | dedup OUT IN [--base BASE]\n",
			argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "concat") || !strcmp(argv[1], "concat-dedup")) {
		if (!strcmp(argv[3], "--base")) {
			if (argc < 6)
				die("missing inputs", NULL, EINVAL);
			base = load(argv[4], NULL);
			first = 5;
			// btf__add_type looks every string up in the base with a
			// pointer into the base's own string memory, which the lookup
			// may reallocate the first time (libbpf 1.1): make that first
			// time happen now, before any pointer into it is taken.
			btf__find_str(base, "");
		}
		btf = base ? btf__new_empty_split(base) : btf__new_empty();
		if (libbpf_get_error(btf))
			die("cannot create BTF", NULL, ENOMEM);
		for (i = first; i < argc; i++) {
			struct btf *src = load(argv[i], base);
			int err;

			if (base) {
				add_split(btf, src);
			} else {
				err = btf__add_btf(btf, src);
				if (err < 0)
					die("cannot add", argv[i], err);
			}
			btf__free(src);
		}
		if (!strcmp(argv[1], "concat-dedup")) {
			int err = btf__dedup(btf, NULL);

			if (err)
				die("btf__dedup failed", NULL, err);
		}
	} else if (!strcmp(argv[1], "dedup")) {
		struct timespec t0, t1, c0, c1;
		int err;

		if (argc == 6 && !strcmp(argv[4], "--base"))
			base = load(argv[5], NULL);
		btf = load(argv[3], base);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		err = btf__dedup(btf, NULL);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (err)
			die("btf__dedup failed on", argv[3], err);
		fprintf(stderr, "btf__dedup: %.3f s wall, %.3f s cpu\n",
			(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
			(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9);
	} else {
		die("unknown mode", argv[1], EINVAL);
	}
	write_raw(btf, argv[2]);
	return 0;
}
