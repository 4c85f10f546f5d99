/* Plugins that must not load, one per way of being broken (BROKEN_KIND, set by
 * tests/plugins/CMakeLists.txt): each load error must be a clear message naming the file,
 * exit code 2, never a crash of the command. */
#include <stdlib.h>
#include <unistd.h>

#include "sdpa_cts/plugin.h"

#define NO_ENTRY 1
#define ABI_MAJOR 2
#define RETURNS_NULL 3
#define SMALL_STRUCT 4
#define DUPLICATE_BUILTIN 5
#define ABORTS 6
#define HANGS 7
#define NO_RUN 8
#define BAD_PYTORCH_KERNEL 9
#define BACKWARD_WITHOUT_ENTRY 10

static int32_t precision(void* s, int32_t dtype, sdpa_cts_precision* out) {
  (void)s;
  (void)dtype;
  out->accumulate = out->p_type = SDPA_CTS_DTYPE_F64;
  return 0;
}
static void supports(void* s, const sdpa_cts_params* p, const sdpa_cts_device* d,
                     sdpa_cts_decline_fn decline, void* ctx) {
  (void)s;
  (void)p;
  (void)d;
  (void)decline;
  (void)ctx;
}
#if BROKEN_KIND != NO_RUN /* NO_RUN's backend has no run() at all */
static int32_t run(void* s, const sdpa_cts_params* p, const sdpa_cts_device* d, int32_t t, char* e,
                   size_t n) {
  (void)s;
  (void)p;
  (void)d;
  (void)t;
  (void)e;
  (void)n;
  return 1;
}
#endif

static const sdpa_cts_backend kBackends[] = {{
    sizeof(sdpa_cts_backend),
#if BROKEN_KIND == DUPLICATE_BUILTIN
    "cpu.flash",
#else
    "broken.backend",
#endif
    NULL,
    {sizeof(sdpa_cts_capabilities), 1u << SDPA_CTS_DTYPE_F32, SDPA_CTS_DEVICE_CPU, 0, 1,
#if BROKEN_KIND == BACKWARD_WITHOUT_ENTRY
     SDPA_CTS_CAP_BACKWARD,
#else
     0,
#endif
     0, SDPA_CTS_MEMORY_HOST,
#if BROKEN_KIND == BAD_PYTORCH_KERNEL
     7 /* no such SDPA_CTS_PYTORCH_* */},
#else
     SDPA_CTS_PYTORCH_NONE},
#endif
    precision,
    supports,
#if BROKEN_KIND == NO_RUN
    NULL,
#else
    run,
#endif
    NULL, /* no run_backward (BACKWARD_WITHOUT_ENTRY declares the capability all the same) */
}};

#if BROKEN_KIND != NO_ENTRY
static sdpa_cts_plugin plugin = {SDPA_CTS_PLUGIN_ABI_FIELDS, "broken", "0", 1, kBackends};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t major,
                                                                    uint32_t minor) {
  (void)major;
  (void)minor;
#if BROKEN_KIND == ABI_MAJOR
  plugin.abi_major = SDPA_CTS_PLUGIN_ABI_MAJOR + 1;
#elif BROKEN_KIND == RETURNS_NULL
  return NULL;
#elif BROKEN_KIND == SMALL_STRUCT
  plugin.sizeof_params = 16;
#elif BROKEN_KIND == ABORTS
  abort();
#elif BROKEN_KIND == HANGS
  for (;;) pause();
#endif
  return &plugin;
}
#else
/* Exported, but not the entry; it keeps the backend table referenced. */
SDPA_CTS_PLUGIN_EXPORT const void* not_the_entry = kBackends;
#endif
