#include <gtest/gtest.h>

#include <string>

#include "forensics/capture.h"

namespace gputriage::forensics {
namespace {

std::string Environ(std::initializer_list<const char*> entries) {
  std::string block;
  for (const char* e : entries) {
    block += e;
    block.push_back('\0');
  }
  return block;
}

TEST(RankFromEnviron, TorchrunNames) {
  DistributedRank r = RankFromEnviron(Environ({"PATH=/usr/bin", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8"}));
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.local_rank, 1);
}

TEST(RankFromEnviron, MpiAndSlurmNamesAreFallbacks) {
  DistributedRank mpi = RankFromEnviron(Environ({"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_LOCAL_RANK=2"}));
  EXPECT_EQ(mpi.rank, 5);
  EXPECT_EQ(mpi.local_rank, 2);
  DistributedRank slurm = RankFromEnviron(Environ({"SLURM_PROCID=12", "SLURM_LOCALID=4"}));
  EXPECT_EQ(slurm.rank, 12);
  EXPECT_EQ(slurm.local_rank, 4);
  // RANK wins over the launcher's own name when both are set.
  EXPECT_EQ(RankFromEnviron(Environ({"SLURM_PROCID=12", "RANK=0"})).rank, 0);
}

TEST(RankFromEnviron, NotADistributedJobOrGarbage) {
  EXPECT_FALSE(RankFromEnviron(Environ({"HOME=/root", "PATH=/bin"})).rank.has_value());
  EXPECT_FALSE(RankFromEnviron("").rank.has_value());
  EXPECT_FALSE(RankFromEnviron(Environ({"RANK=-1"})).rank.has_value());
  EXPECT_FALSE(RankFromEnviron(Environ({"RANK=one"})).rank.has_value());
  EXPECT_FALSE(RankFromEnviron(Environ({"RANK=99999999999"})).rank.has_value());
  EXPECT_FALSE(RankFromEnviron(std::string("RANK", 4)).rank.has_value());  // no '=', no NUL
  // A bad RANK falls through to the next name.
  EXPECT_EQ(RankFromEnviron(Environ({"RANK=", "PMI_RANK=7"})).rank, 7);
}

}  // namespace
}  // namespace gputriage::forensics
