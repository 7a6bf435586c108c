/* target teams distribute parallel for (saxpy) and target teams with num_teams/thread_limit clauses. */
#include "common.h"

#define N 10000

int main(void) {
  static float x[N], y[N];
  int on_device = 0;
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 100);
    y[i] = (float)(i % 7);
  }
  float a = 2.0f;
#pragma omp target teams distribute parallel for map(to : x[0:N]) map(tofrom : y[0:N])
  for (int i = 0; i < N; i++)
    y[i] = a * x[i] + y[i];
  long sum = 0;
  int bad = 0;
  for (int i = 0; i < N; i++) {
    sum += (long)y[i];
    bad += y[i] != 2.0f * (float)(i % 100) + (float)(i % 7);
  }
  printf("saxpy checksum: %ld\n", sum);
  printf("saxpy mismatches: %d\n", bad);

  /* Every team records its id; thread counts are bounded by thread_limit. The clause values stay
   * small so that libomp never has to shrink the league (it warns on stderr when it does). */
  int team_seen[2] = {0, 0};
  int nteams = 0, max_threads = 0, over_limit = 0;
#pragma omp target teams num_teams(2) thread_limit(1) \
    map(tofrom : team_seen, nteams, max_threads, over_limit, on_device)
  {
    int t = omp_get_team_num();
    if (t == 0) {
      nteams = omp_get_num_teams();
      on_device = ON_DEVICE();
    }
#pragma omp atomic
    team_seen[t] += 1;
#pragma omp parallel
    {
      int n = omp_get_num_threads();
      if (n > 1) {
#pragma omp atomic write
        over_limit = 1;
      }
      if (t == 0 && omp_get_thread_num() == 0)
        max_threads = n;
    }
  }
  int teams_ok = nteams >= 1 && nteams <= 2;
  for (int t = 0; t < nteams && t < 2; t++)
    teams_ok &= team_seen[t] == 1;
  printf("teams within num_teams, each ran once: %d\n", teams_ok);
  printf("threads within thread_limit: %d\n", !over_limit && max_threads >= 1 && max_threads <= 1);

  /* Distribute with a collapse and a per-team partial sum. */
  static int grid[100][100];
#pragma omp target teams distribute parallel for collapse(2) num_teams(2) map(from : grid)
  for (int i = 0; i < 100; i++)
    for (int j = 0; j < 100; j++)
      grid[i][j] = i * 100 + j;
  long gsum = 0;
  for (int i = 0; i < 100; i++)
    for (int j = 0; j < 100; j++)
      gsum += grid[i][j];
  printf("grid checksum: %ld\n", gsum);
  printf("ran on device: %d\n", on_device);
  return 0;
}
