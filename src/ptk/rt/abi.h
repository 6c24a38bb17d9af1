/* The boundary between a backend module (lib/ptk/backends/libptk_backend_<name>.so: the whole library and tool
   built against one Kokkos) and what loads it at run time, without Kokkos: the launcher (bin/ptk of an install)
   and the library API for callers (ptk/rt/backend.hpp).
   Plain C so that nothing of either side's C++ (Kokkos types, exceptions, the standard library's
   ABI) crosses it; a module exports these functions and nothing else (src/tools/backend_module.map).
   docs/design.md, "Backends chosen at run time". */
#ifndef PTK_RT_ABI_H
#define PTK_RT_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct below or a function's meaning changes; the launcher skips a module of
   another version with that reason. */
#define PTK_BACKEND_ABI_VERSION 1
#define PTK_BACKEND_MAX_DEVICES 16

/* Why a backend cannot run here; the launcher adds the reasons found before a module answers
   (not built: no file; library missing: the file or a library it needs does not load). */
enum ptk_backend_state {
  PTK_BACKEND_USABLE = 0,
  PTK_BACKEND_NO_DEVICE = 1,       /* the runtime works and reports no device */
  PTK_BACKEND_DRIVER_MISSING = 2,  /* the runtime finds no driver, or one too old for it */
  PTK_BACKEND_INIT_FAILED = 3      /* a device is there and could not be opened */
};

struct ptk_backend_device {
  char name[128];
  char arch[64];          /* "sm_90 (compute capability 9.0)", "gfx90a", the CPU's ISA */
  uint64_t total_bytes;
  uint64_t free_bytes;    /* what an allocation may still take: free device memory, host MemAvailable */
  int32_t unified_memory; /* 1: the device shares the host's memory */
  int32_t compute_units;  /* SMs, CUs, CPUs */
};

struct ptk_backend_info {
  int32_t abi_version;    /* PTK_BACKEND_ABI_VERSION of the module */
  int32_t state;          /* enum ptk_backend_state */
  char name[16];          /* "cpu", "cuda", "hip": what --backend calls it */
  char kokkos[64];        /* "Kokkos 4.6.1: Cuda, Serial" */
  char detail[256];       /* the runtime's own words when state != USABLE */
  int32_t device_count;
  struct ptk_backend_device devices[PTK_BACKEND_MAX_DEVICES];
};

/* The version the module was built with; checked before anything else is called. */
int ptk_backend_abi(void);
/* Fills *out without starting Kokkos (the launcher runs it in a child process: a driver that
   crashes or hangs costs that child only). Returns 0, or nonzero when *out could not be filled. */
int ptk_backend_probe(struct ptk_backend_info* out);
/* Runs `ptk <command> ...` (argv[0] is the launcher's path) in this backend and returns the exit
   status; Kokkos starts and ends inside, as in a one-backend build's ptk. */
int ptk_backend_main(int argc, char** argv);

/* The device memory `ptk <command> ...` needs (train, generate: their own estimate), 0 when there is none;
   the launcher calls it in a child process, which it may leave silenced. Optional (a module may lack it). */
int ptk_backend_need(int argc, char** argv, uint64_t* bytes);

/* The library API: ops of the op table on host tensors, run in the module's default execution space (the GPU
   of a GPU module), with the module's Kokkos started once for the process (and ended at its exit). */
#define PTK_BACKEND_MAX_RANK 8
enum ptk_backend_tensor_kind { PTK_TENSOR_F32 = 0, PTK_TENSOR_I64 = 1 };
struct ptk_backend_tensor {
  int32_t kind;                         /* enum ptk_backend_tensor_kind */
  int32_t rank;                         /* 0 ... PTK_BACKEND_MAX_RANK */
  int64_t shape[PTK_BACKEND_MAX_RANK];
  void* data;                           /* float or int64_t, C order; an output's is the module's (ptk_backend_free) */
};
/* Starts Kokkos in this process for the calls below (once; later calls return at once). Returns 0, or
   nonzero with a line in err. */
int ptk_backend_start(char* err, uint64_t err_size);
/* Runs op `name` with n_in inputs and settings keys[i]=values[i] (the op table's --set keys); writes up to
   max_out outputs into out and their count into *n_out. Returns 0, 2 for bad input (err says what, as
   `ptk op` would), 1 for an internal error. */
int ptk_backend_run_op(const char* name, int32_t n_in, const struct ptk_backend_tensor* in, int32_t n_set,
                       const char* const* keys, const char* const* values, int32_t max_out,
                       struct ptk_backend_tensor* out, int32_t* n_out, char* err, uint64_t err_size);
/* Frees an output's data. */
void ptk_backend_free(void* data);

#ifdef __cplusplus
}
#endif

#endif
