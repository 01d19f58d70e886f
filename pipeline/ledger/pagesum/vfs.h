/*
 * The parts of SQLite's VFS interface the page-checksum shim needs, declared
 * here so this package builds without SQLite's header: the amalgamation that
 * defines these functions is linked in by github.com/mattn/go-sqlite3. The
 * layouts follow SQLite's documented, stable ABI (sqlite3_vfs version 3,
 * sqlite3_io_methods version 3); a field added by a later SQLite goes after
 * these, so older layouts stay valid prefixes.
 */
#ifndef AC3_PAGESUM_VFS_H
#define AC3_PAGESUM_VFS_H

typedef long long ps_int64;

typedef struct ps_file ps_file;
typedef struct ps_io_methods ps_io_methods;
typedef struct ps_vfs ps_vfs;
typedef void (*ps_syscall_ptr)(void);

struct ps_file {
	const ps_io_methods *pMethods;
};

struct ps_io_methods {
	int iVersion;
	int (*xClose)(ps_file *);
	int (*xRead)(ps_file *, void *, int amt, ps_int64 off);
	int (*xWrite)(ps_file *, const void *, int amt, ps_int64 off);
	int (*xTruncate)(ps_file *, ps_int64 size);
	int (*xSync)(ps_file *, int flags);
	int (*xFileSize)(ps_file *, ps_int64 *size);
	int (*xLock)(ps_file *, int);
	int (*xUnlock)(ps_file *, int);
	int (*xCheckReservedLock)(ps_file *, int *out);
	int (*xFileControl)(ps_file *, int op, void *arg);
	int (*xSectorSize)(ps_file *);
	int (*xDeviceCharacteristics)(ps_file *);
	int (*xShmMap)(ps_file *, int region, int size, int extend, void volatile **pp);
	int (*xShmLock)(ps_file *, int offset, int n, int flags);
	void (*xShmBarrier)(ps_file *);
	int (*xShmUnmap)(ps_file *, int deleteFlag);
	int (*xFetch)(ps_file *, ps_int64 off, int amt, void **pp);
	int (*xUnfetch)(ps_file *, ps_int64 off, void *p);
};

struct ps_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	ps_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(ps_vfs *, const char *name, ps_file *, int flags, int *outFlags);
	int (*xDelete)(ps_vfs *, const char *name, int syncDir);
	int (*xAccess)(ps_vfs *, const char *name, int flags, int *out);
	int (*xFullPathname)(ps_vfs *, const char *name, int n, char *out);
	void *(*xDlOpen)(ps_vfs *, const char *name);
	void (*xDlError)(ps_vfs *, int n, char *msg);
	void (*(*xDlSym)(ps_vfs *, void *, const char *sym))(void);
	void (*xDlClose)(ps_vfs *, void *);
	int (*xRandomness)(ps_vfs *, int n, char *out);
	int (*xSleep)(ps_vfs *, int micros);
	int (*xCurrentTime)(ps_vfs *, double *);
	int (*xGetLastError)(ps_vfs *, int, char *);
	int (*xCurrentTimeInt64)(ps_vfs *, ps_int64 *);
	int (*xSetSystemCall)(ps_vfs *, const char *name, ps_syscall_ptr);
	ps_syscall_ptr (*xGetSystemCall)(ps_vfs *, const char *name);
	const char *(*xNextSystemCall)(ps_vfs *, const char *name);
};

/* From the linked SQLite library. */
ps_vfs *sqlite3_vfs_find(const char *name);
int sqlite3_vfs_register(ps_vfs *, int makeDefault);
void sqlite3_log(int code, const char *format, ...);
int sqlite3_uri_boolean(const char *file, const char *param, int dflt);

/* Result codes and flags, as SQLite numbers them. */
#define PS_OK 0
#define PS_ERROR 1
#define PS_IOERR_SHORT_READ (10 | (2 << 8))
#define PS_IOERR_DATA (10 | (32 << 8))
#define PS_OPEN_MAIN_DB 0x00000100
#define PS_IOCAP_SUBPAGE_READ 0x00008000

#endif
