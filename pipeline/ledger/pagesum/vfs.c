/*
 * A VFS shim that keeps a checksum in the last 8 bytes of every page of an
 * SQLite database file and checks it on every read. It sits on top of the
 * default VFS (it becomes the default itself), wraps only main database
 * files, and acts only on files whose header reserves exactly 8 bytes per
 * page: every other database passes through untouched.
 *
 * Why a shim and not per-row checks: a flipped byte anywhere in a page (a
 * cell, a child pointer, an overflow chain) can change what a query returns
 * without SQLite noticing, so the only way to be sure that nothing read from
 * a damaged page reaches an output is to check the page itself as it comes
 * off the disk. See pagesum.go for how the ledger uses it.
 *
 * The sum covers the page's content and its page number, so a page that was
 * written to the wrong place, or zeroed, fails too. Pages in the write-ahead
 * log are not checked here (the log has its own frame checksums, verified
 * when it is replayed); they get their sum when a checkpoint copies them into
 * the database file.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "vfs.h"

/* The VFS this shim registers. SQLite keeps a pointer to it for the life of
 * the process, so it is static; it is filled once, by ac3_pagesum_register. */
static ps_vfs shim;

#define REAL_VFS ((ps_vfs *)shim.pAppData)

typedef struct sum_file {
	ps_file base;     /* our methods */
	const char *name; /* for the log line on a mismatch */
	int on;           /* the header reserves 8 bytes: sums are kept and checked */
	int unchecked;    /* ac3_verify=0: sums are kept but not checked (benchmarks) */
	/* With the URI parameter ac3_pad=1, the size the file's header gives
	 * (0 otherwise). SQLite refuses a whole file that is shorter than its
	 * header says, before a query can run; reporting the header's size
	 * instead lets a salvage read the pages that are there. The missing ones
	 * read as zeros, which SQLite finds malformed where it meets them. */
	ps_int64 header_size;
} sum_file;

/* The wrapped VFS's own file object follows ours in the same allocation. */
#define REAL_FILE(f) ((ps_file *)(((sum_file *)(f)) + 1))

static uint64_t load_le64(const unsigned char *p) {
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static void store_le64(unsigned char *p, uint64_t v) {
	for (int i = 0; i < 8; i++) {
		p[i] = (unsigned char)(v >> (8 * i));
	}
}

/*
 * ac3_pagesum hashes n bytes (a multiple of 8) of page number pgno. Two
 * independent lanes take alternate words so the multiplies overlap; each step
 * (xor the word in, multiply by an odd constant, fold the high half down) is
 * a bijection of the lane, so one changed word always changes that lane, and
 * the fold carries high bits into low ones so changes cannot cancel in the
 * top bits. The seeds are nonzero and mixed with pgno, so an all-zero page or
 * a page at the wrong offset does not match.
 */
uint64_t ac3_pagesum(const unsigned char *p, int n, uint64_t pgno) {
	const uint64_t k1 = 0xff51afd7ed558ccdULL, k2 = 0xc4ceb9fe1a85ec53ULL;
	uint64_t a = 0x6a09e667f3bcc908ULL ^ (pgno * 0x9e3779b97f4a7c15ULL);
	uint64_t b = 0xbb67ae8584caa73bULL + pgno;
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		a = (a ^ load_le64(p + i)) * k1;
		a ^= a >> 32;
		b = (b ^ load_le64(p + i + 8)) * k2;
		b ^= b >> 29;
	}
	for (; i + 8 <= n; i += 8) {
		a = (a ^ load_le64(p + i)) * k1;
		a ^= a >> 32;
	}
	uint64_t h = a ^ (b * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)n;
	h ^= h >> 33;
	h *= k1;
	h ^= h >> 29;
	return h;
}

/* A whole page: a power of two from 512 to 65536 bytes, at a page boundary. */
static int is_page(int amt, ps_int64 off) {
	return amt >= 512 && amt <= 65536 && (amt & (amt - 1)) == 0 && off % amt == 0;
}

static int is_header(const void *buf, int amt, ps_int64 off) {
	return off == 0 && amt >= 100 && memcmp(buf, "SQLite format 3", 16) == 0;
}

static int all_zero(const unsigned char *p, int n) {
	for (int i = 0; i < n; i++) {
		if (p[i]) {
			return 0;
		}
	}
	return 1;
}

/*
 * The files a page failed its sum in, most recent last. SQLite passes the
 * fault up as SQLITE_IOERR_DATA, but some of its paths (reading the schema
 * while preparing a statement) hand the caller only the plain SQLITE_IOERR;
 * the Go side asks here whether that error was a failed sum in its file.
 */
#define FAULTS 16
#define FAULT_NAME 1024
static pthread_mutex_t faults_mu = PTHREAD_MUTEX_INITIALIZER;
static char faults[FAULTS][FAULT_NAME];
static int faults_next;

static void note_fault(const char *name) {
	if (!name) {
		return;
	}
	pthread_mutex_lock(&faults_mu);
	strncpy(faults[faults_next], name, FAULT_NAME - 1);
	faults[faults_next][FAULT_NAME - 1] = 0;
	faults_next = (faults_next + 1) % FAULTS;
	pthread_mutex_unlock(&faults_mu);
}

int ac3_pagesum_faulted(const char *name) {
	int found = 0;
	pthread_mutex_lock(&faults_mu);
	for (int i = 0; i < FAULTS && !found; i++) {
		found = faults[i][0] && strcmp(faults[i], name) == 0;
	}
	pthread_mutex_unlock(&faults_mu);
	return found;
}

/* Public for the Go side, which checks whole files page by page. */
int ac3_pagesum_ok(const unsigned char *page, int size, uint64_t pgno) {
	return ac3_pagesum(page, size - 8, pgno) == load_le64(page + size - 8);
}

static int sum_close(ps_file *pf) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xClose(r);
}

static int sum_read(ps_file *pf, void *buf, int amt, ps_int64 off) {
	sum_file *f = (sum_file *)pf;
	ps_file *r = REAL_FILE(pf);
	int rc = r->pMethods->xRead(r, buf, amt, off);
	if (rc != PS_OK && rc != PS_IOERR_SHORT_READ) {
		return rc;
	}
	if (rc == PS_OK && is_header(buf, amt, off)) {
		f->on = ((const unsigned char *)buf)[20] == 8;
	}
	if (!f->on || f->unchecked || !is_page(amt, off)) {
		return rc;
	}
	/* A read wholly past the end is how SQLite learns a page is new: it
	 * gets zeros and a short read, and that stays as it is. A page cut
	 * short has some of its bytes and fails its sum below. */
	if (rc == PS_IOERR_SHORT_READ && all_zero(buf, amt)) {
		return rc;
	}
	uint64_t pgno = (uint64_t)(off / amt) + 1;
	if (!ac3_pagesum_ok(buf, amt, pgno)) {
		sqlite3_log(PS_IOERR_DATA, "page %lld of %s fails its checksum", (long long)pgno, f->name ? f->name : "?");
		note_fault(f->name);
		return PS_IOERR_DATA;
	}
	return rc;
}

static int sum_write(ps_file *pf, const void *buf, int amt, ps_int64 off) {
	sum_file *f = (sum_file *)pf;
	ps_file *r = REAL_FILE(pf);
	if (is_header(buf, amt, off)) {
		f->on = ((const unsigned char *)buf)[20] == 8;
	}
	if (f->on && is_page(amt, off)) {
		/* The last 8 bytes of a page are reserved for us by the header, so
		 * writing them into SQLite's buffer changes nothing it uses. */
		unsigned char *p = (unsigned char *)buf;
		store_le64(p + amt - 8, ac3_pagesum(p, amt - 8, (uint64_t)(off / amt) + 1));
	}
	return r->pMethods->xWrite(r, buf, amt, off);
}

static int sum_truncate(ps_file *pf, ps_int64 size) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xTruncate(r, size);
}

static int sum_sync(ps_file *pf, int flags) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xSync(r, flags);
}

static int sum_file_size(ps_file *pf, ps_int64 *size) {
	sum_file *f = (sum_file *)pf;
	ps_file *r = REAL_FILE(pf);
	int rc = r->pMethods->xFileSize(r, size);
	if (rc == PS_OK && *size < f->header_size) {
		*size = f->header_size;
	}
	return rc;
}

static int sum_lock(ps_file *pf, int lock) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xLock(r, lock);
}

static int sum_unlock(ps_file *pf, int lock) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xUnlock(r, lock);
}

static int sum_check_reserved_lock(ps_file *pf, int *out) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xCheckReservedLock(r, out);
}

static int sum_file_control(ps_file *pf, int op, void *arg) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xFileControl(r, op, arg);
}

static int sum_sector_size(ps_file *pf) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xSectorSize(r);
}

/* Reads of part of a page would skip the check: tell SQLite not to make
 * them. */
static int sum_device_characteristics(ps_file *pf) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xDeviceCharacteristics(r) & ~PS_IOCAP_SUBPAGE_READ;
}

static int sum_shm_map(ps_file *pf, int region, int size, int extend, void volatile **pp) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xShmMap(r, region, size, extend, pp);
}

static int sum_shm_lock(ps_file *pf, int offset, int n, int flags) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xShmLock(r, offset, n, flags);
}

static void sum_shm_barrier(ps_file *pf) {
	ps_file *r = REAL_FILE(pf);
	r->pMethods->xShmBarrier(r);
}

static int sum_shm_unmap(ps_file *pf, int deleteFlag) {
	ps_file *r = REAL_FILE(pf);
	return r->pMethods->xShmUnmap(r, deleteFlag);
}

/* Pages mapped into memory would never pass through sum_read, so a file with
 * sums is never mapped: SQLite falls back to reads when no pointer comes back. */
static int sum_fetch(ps_file *pf, ps_int64 off, int amt, void **pp) {
	sum_file *f = (sum_file *)pf;
	ps_file *r = REAL_FILE(pf);
	if (f->on || r->pMethods->iVersion < 3 || !r->pMethods->xFetch) {
		*pp = 0;
		return PS_OK;
	}
	return r->pMethods->xFetch(r, off, amt, pp);
}

static int sum_unfetch(ps_file *pf, ps_int64 off, void *p) {
	ps_file *r = REAL_FILE(pf);
	if (r->pMethods->iVersion < 3 || !r->pMethods->xUnfetch) {
		return PS_OK;
	}
	return r->pMethods->xUnfetch(r, off, p);
}

static const ps_io_methods sum_methods = {
    3,
    sum_close,
    sum_read,
    sum_write,
    sum_truncate,
    sum_sync,
    sum_file_size,
    sum_lock,
    sum_unlock,
    sum_check_reserved_lock,
    sum_file_control,
    sum_sector_size,
    sum_device_characteristics,
    sum_shm_map,
    sum_shm_lock,
    sum_shm_barrier,
    sum_shm_unmap,
    sum_fetch,
    sum_unfetch,
};

static int shim_open(ps_vfs *vfs, const char *name, ps_file *pf, int flags, int *outFlags) {
	(void)vfs;
	if (!(flags & PS_OPEN_MAIN_DB)) {
		/* Journals, the WAL and temporary files are the wrapped VFS's own. */
		return REAL_VFS->xOpen(REAL_VFS, name, pf, flags, outFlags);
	}
	sum_file *f = (sum_file *)pf;
	memset(f, 0, sizeof(*f));
	int rc = REAL_VFS->xOpen(REAL_VFS, name, REAL_FILE(pf), flags, outFlags);
	if (rc != PS_OK) {
		pf->pMethods = 0;
		return rc;
	}
	f->name = name;
	pf->pMethods = &sum_methods;
	f->unchecked = !sqlite3_uri_boolean(name, "ac3_verify", 1);
	if (sqlite3_uri_boolean(name, "ac3_pad", 0)) {
		unsigned char h[100];
		ps_file *r = REAL_FILE(pf);
		if (r->pMethods->xRead(r, h, sizeof h, 0) == PS_OK && memcmp(h, "SQLite format 3", 16) == 0) {
			ps_int64 page = (ps_int64)h[16] << 8 | h[17];
			if (page == 1) {
				page = 65536;
			}
			ps_int64 pages = (ps_int64)h[28] << 24 | (ps_int64)h[29] << 16 | (ps_int64)h[30] << 8 | h[31];
			f->header_size = page * pages;
		}
	}
	return PS_OK;
}

static int shim_delete(ps_vfs *vfs, const char *name, int syncDir) {
	(void)vfs;
	return REAL_VFS->xDelete(REAL_VFS, name, syncDir);
}

static int shim_access(ps_vfs *vfs, const char *name, int flags, int *out) {
	(void)vfs;
	return REAL_VFS->xAccess(REAL_VFS, name, flags, out);
}

static int shim_full_pathname(ps_vfs *vfs, const char *name, int n, char *out) {
	(void)vfs;
	return REAL_VFS->xFullPathname(REAL_VFS, name, n, out);
}

static void *shim_dl_open(ps_vfs *vfs, const char *name) {
	(void)vfs;
	return REAL_VFS->xDlOpen(REAL_VFS, name);
}

static void shim_dl_error(ps_vfs *vfs, int n, char *msg) {
	(void)vfs;
	REAL_VFS->xDlError(REAL_VFS, n, msg);
}

static void (*shim_dl_sym(ps_vfs *vfs, void *h, const char *sym))(void) {
	(void)vfs;
	return REAL_VFS->xDlSym(REAL_VFS, h, sym);
}

static void shim_dl_close(ps_vfs *vfs, void *h) {
	(void)vfs;
	REAL_VFS->xDlClose(REAL_VFS, h);
}

static int shim_randomness(ps_vfs *vfs, int n, char *out) {
	(void)vfs;
	return REAL_VFS->xRandomness(REAL_VFS, n, out);
}

static int shim_sleep(ps_vfs *vfs, int micros) {
	(void)vfs;
	return REAL_VFS->xSleep(REAL_VFS, micros);
}

static int shim_current_time(ps_vfs *vfs, double *t) {
	(void)vfs;
	return REAL_VFS->xCurrentTime(REAL_VFS, t);
}

static int shim_get_last_error(ps_vfs *vfs, int n, char *msg) {
	(void)vfs;
	return REAL_VFS->xGetLastError(REAL_VFS, n, msg);
}

static int shim_current_time_int64(ps_vfs *vfs, ps_int64 *t) {
	(void)vfs;
	if (REAL_VFS->iVersion >= 2 && REAL_VFS->xCurrentTimeInt64) {
		return REAL_VFS->xCurrentTimeInt64(REAL_VFS, t);
	}
	double d;
	int rc = REAL_VFS->xCurrentTime(REAL_VFS, &d);
	*t = (ps_int64)(d * 86400000.0);
	return rc;
}

static int shim_set_system_call(ps_vfs *vfs, const char *name, ps_syscall_ptr fn) {
	(void)vfs;
	return REAL_VFS->xSetSystemCall(REAL_VFS, name, fn);
}

static ps_syscall_ptr shim_get_system_call(ps_vfs *vfs, const char *name) {
	(void)vfs;
	return REAL_VFS->xGetSystemCall(REAL_VFS, name);
}

static const char *shim_next_system_call(ps_vfs *vfs, const char *name) {
	(void)vfs;
	return REAL_VFS->xNextSystemCall(REAL_VFS, name);
}

/*
 * ac3_pagesum_register puts the shim on top of the current default VFS and
 * makes it the default, so every database this process opens (the ledger's
 * and any other) keeps the sums of files that carry them. It is idempotent.
 */
const char ac3_pagesum_vfs_name[] = "ac3sum";

int ac3_pagesum_register(void) {
	const char *name = ac3_pagesum_vfs_name;
	if (sqlite3_vfs_find(name)) {
		return PS_OK;
	}
	ps_vfs *real = sqlite3_vfs_find(0);
	if (!real) {
		return PS_ERROR;
	}
	shim.iVersion = real->iVersion < 3 ? real->iVersion : 3;
	shim.szOsFile = (int)sizeof(sum_file) + real->szOsFile;
	shim.mxPathname = real->mxPathname;
	shim.zName = name;
	shim.pAppData = real;
	shim.xOpen = shim_open;
	shim.xDelete = shim_delete;
	shim.xAccess = shim_access;
	shim.xFullPathname = shim_full_pathname;
	shim.xDlOpen = shim_dl_open;
	shim.xDlError = shim_dl_error;
	shim.xDlSym = shim_dl_sym;
	shim.xDlClose = shim_dl_close;
	shim.xRandomness = shim_randomness;
	shim.xSleep = shim_sleep;
	shim.xCurrentTime = shim_current_time;
	shim.xGetLastError = shim_get_last_error;
	shim.xCurrentTimeInt64 = shim_current_time_int64;
	shim.xSetSystemCall = shim_set_system_call;
	shim.xGetSystemCall = shim_get_system_call;
	shim.xNextSystemCall = shim_next_system_call;
	return sqlite3_vfs_register(&shim, 1);
}
