// What this build of sdpa-cts was built from (certification manifests record it).
#pragma once

namespace sdpa {

// The git commit of the source tree at build time: "<sha>", "<sha>-dirty" when tracked files
// had uncommitted changes, or "unknown" when built outside a git checkout.
const char* build_commit();

}  // namespace sdpa
