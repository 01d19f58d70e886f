//go:build linux && cgo

package memgov

// SQLite allocates through glibc's malloc from whichever OS thread the Go
// scheduler runs a cgo call on, and glibc gives threads up to eight arenas
// per core. Pages freed in one arena cannot serve another, so over a long
// run every arena keeps its own high-water mark (about a sixth more
// anonymous memory when annotating 100k conversations). The limit must be
// set before any thread starts (glibc fixes it when it makes its second
// arena), hence a constructor, which runs in every program that links this
// package. MALLOC_ARENA_MAX in the environment still wins.

/*
#include <malloc.h>
#include <stdlib.h>

__attribute__((constructor)) static void ac3_limit_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 2);
	}
#endif
}
*/
import "C"
