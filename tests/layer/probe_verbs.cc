// Must not compile in a pure layer (layer_rules): libibverbs.
#include <infiniband/verbs.h>
