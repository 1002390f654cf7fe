// Whether the libibverbs that programs will load can load uroce's provider.
//
// A provider is tied to libibverbs' private provider ABI, not to its public one: uroce's registers through
// verbs_register_driver_34, which libibverbs exports under the version IBVERBS_PRIVATE_34. rdma-core 34
// through 56 have that ABI (Debian 12 ships 44, the release uroce is built and tested with); 57 and later
// changed it, and their libibverbs looks for liburoce-rdmav<N>.so, which does not exist, and lists no
// uroce device with no more than a warning about a driver it could not load.
#pragma once

#include <string>

namespace uroce::tools {

// "" when the libibverbs.so.1 the dynamic linker finds exports the provider ABI; else one line saying
// which library was found, its rdma-core release where its file name tells, and what to do.
std::string verbs_abi_problem();

}  // namespace uroce::tools
