/* Open MPI over UCX over uroce: two ranks exchange 1 MiB messages with every byte checked, then every rank
 * takes part in an MPI_Allreduce whose result is checked. Exits 0 only if all data is right. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBytes = 1 << 20, kRounds = 200 };

static uint8_t pattern(int round, int rank, size_t i) { return (uint8_t)(round * 31 + rank * 7 + i * 13); }

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
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_bad;
}
