/* Open MPI over UCX over uroce: two ranks exchange 1 MiB messages with every byte checked, every rank takes
 * part in an MPI_Allreduce whose result is checked, and then in one-sided operations on a window (osc ucx:
 * UCP puts as RDMA WRITEs; UCP's 64-bit atomics as active messages, since uct rc_verbs has fetch-add and
 * compare-swap but not the whole set UCP asks for): each rank puts a block into its right neighbour's window,
 * fetch-and-adds into a counter on rank 0 and takes turns at a compare-and-swap ticket there. Exits 0 only if
 * all data is right. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBytes = 1 << 20, kRounds = 200 };

static uint8_t pattern(int round, int rank, size_t i) { return (uint8_t)(round * 31 + rank * 7 + i * 13); }

enum { kBlock = 64 * 1024, kAdds = 100 };

/* Window layout: [0] the fetch-and-add counter, [1] the compare-and-swap ticket, then one block that the
 * left neighbour puts. */
static int one_sided(int rank, int size) {
  const MPI_Aint bytes = 2 * sizeof(long long) + kBlock;
  long long* base = NULL;
  MPI_Win win;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, bytes);
  uint8_t* block = (uint8_t*)(base + 2);
  uint8_t* mine = malloc(kBlock);
  for (size_t i = 0; i < kBlock; ++i) mine[i] = pattern(7, rank, i);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  MPI_Put(mine, kBlock, MPI_BYTE, right, 2 * sizeof(long long), kBlock, MPI_BYTE, win);
  MPI_Win_flush(right, win);
  long long seen_max = -1;
  for (int i = 0; i < kAdds; ++i) {
    const long long one = 1;
    long long before = -1;
    MPI_Fetch_and_op(&one, &before, MPI_LONG_LONG, 0, 0, MPI_SUM, win);
    MPI_Win_flush(0, win);
    if (before > seen_max) seen_max = before;
  }
  /* Tickets: rank r waits until the ticket is r, then moves it to r + 1, with compare-and-swap only. */
  for (;;) {
    const long long expect = rank, next = rank + 1;
    long long got = -1;
    MPI_Compare_and_swap(&next, &expect, &got, MPI_LONG_LONG, 0, sizeof(long long), win);
    MPI_Win_flush(0, win);
    if (got == rank) break;
    if (got > rank) {
      fprintf(stderr, "rank %d: ticket already at %lld\n", rank, got);
      break;
    }
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  int bad = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    if (block[i] != pattern(7, left, i)) {
      fprintf(stderr, "rank %d: put byte %zu is %u, expected %u\n", rank, i, block[i], pattern(7, left, i));
      bad = 1;
      break;
    }
  }
  if (seen_max < 0 || seen_max >= (long long)size * kAdds) bad = 1;
  if (rank == 0 && (base[0] != (long long)size * kAdds || base[1] != size)) {
    fprintf(stderr, "rank 0: counter %lld (expected %lld), ticket %lld (expected %d)\n", base[0],
            (long long)size * kAdds, base[1], size);
    bad = 1;
  }
  free(mine);
  MPI_Win_free(&win);
  if (!bad && rank == 0)
    printf("one-sided put, fetch-and-add and compare-and-swap over %d ranks checked\n", size);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = 0;
  if (size >= 2 && rank < 2) {
    uint8_t* out = malloc(kBytes);
    uint8_t* in = malloc(kBytes);
    const int peer = 1 - rank;
    for (int r = 0; r < kRounds && !bad; ++r) {
      for (size_t i = 0; i < kBytes; ++i) out[i] = pattern(r, rank, i);
      memset(in, 0, kBytes);
      MPI_Sendrecv(out, kBytes, MPI_BYTE, peer, r, in, kBytes, MPI_BYTE, peer, r, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      for (size_t i = 0; i < kBytes; ++i) {
        if (in[i] != pattern(r, peer, i)) {
          fprintf(stderr, "rank %d: round %d byte %zu is %u, expected %u\n", rank, r, i, in[i],
                  pattern(r, peer, i));
          bad = 1;
          break;
        }
      }
    }
    free(out);
    free(in);
    if (!bad) printf("rank %d: %d exchanges of %d bytes, data checked\n", rank, kRounds, kBytes);
  }
  long long mine[1024], sum[1024];
  for (int i = 0; i < 1024; ++i) mine[i] = (long long)(rank + 1) * (i + 1);
  MPI_Allreduce(mine, sum, 1024, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  const long long ranks_sum = (long long)size * (size + 1) / 2;
  for (int i = 0; i < 1024; ++i) {
    if (sum[i] != ranks_sum * (i + 1)) {
      fprintf(stderr, "rank %d: allreduce[%d] = %lld, expected %lld\n", rank, i, sum[i], ranks_sum * (i + 1));
      bad = 1;
      break;
    }
  }
  if (!bad && rank == 0) printf("allreduce over %d ranks checked\n", size);
  bad |= one_sided(rank, size);
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_bad;
}
