//go:build linux && cgo

package main

// SQLite allocates through glibc's malloc from whichever OS thread the Go
// scheduler runs a cgo call on, and glibc gives threads up to eight arenas
// per core. Pages freed in one arena cannot serve another, so over a long
// run every arena keeps its own high-water mark: annotating 100k
// conversations peaked at 41 MB of anonymous memory with the default and
// at 35 MB with one arena, in the same time. The limit must be set before
// any thread starts (glibc fixes it when it makes its second arena), hence
// a constructor rather than a call from main. MALLOC_ARENA_MAX in the
// environment still wins.

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
