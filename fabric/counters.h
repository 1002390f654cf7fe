// Counter sets of the switch model and the simulator. Each set is a struct of named uint64_t fields
// generated from one X-macro list, so tests read `c.lost` and a stats dump walks every field with
// for_each(name, value). Single writer: the loop that drives the switch (virtual time or uroced's).
#pragma once

#include <cstdint>

#define UROCE_COUNTER_FIELD(name) uint64_t name = 0;
#define UROCE_COUNTER_VISIT(name) f(#name, name);

// Declares `struct Name` with the fields in LIST and a for_each over them.
#define UROCE_COUNTER_SET(Name, LIST) \
  struct Name {                       \
    LIST(UROCE_COUNTER_FIELD)         \
    template <class F>                \
    void for_each(F&& f) const {      \
      LIST(UROCE_COUNTER_VISIT)       \
    }                                 \
  }
