// Back-to-back in-process links for tests (`ring:NAME` ports): the first two ports that name the same link
// get its two rte_rings crosswise, so what one transmits the other receives, by pointer (no copy).
// Registry calls are thread-safe; the rings themselves are multi-producer/multi-consumer.
#pragma once

#include <string>

struct rte_ring;

namespace uroce::glue::ring_pair {

// Takes a free end of link `name`, creating the link on first use. *rx / *tx: the rings this end dequeues
// from / enqueues to. False (with *err) when both ends are taken or a ring cannot be created.
bool attach(const std::string& name, rte_ring** rx, rte_ring** tx, std::string* err);

// Returns the end that transmits on `tx`. Frames still queued in either ring are freed now, while both pools
// still exist (the other end's pool may hold frames this end sent); the rings go when both ends are gone.
// Call only while neither end is polling.
void detach(const std::string& name, rte_ring* tx);

}  // namespace uroce::glue::ring_pair
