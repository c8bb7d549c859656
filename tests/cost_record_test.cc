// A run's cost phase kept by the store and by store export / import.
#include "perfgate/store/cost_record.h"

#include <gtest/gtest.h>

#include "perfgate/core/error.h"
#include "perfgate/store/baseline_store.h"
#include "perfgate/store/run_record.h"
#include "support/run_record_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

CostRun counted() {
  CostRun c;
  c.instrument = "callgrind";
  c.key = "callgrind valgrind-3.19.0 glibc-2.36 1000x1 #0123456789abcdef";
  c.requests = 1000;
  c.connections = 1;
  c.launches = {{{"instructions_per_request", 2392.5}, {"syscalls_per_request", 3}},
                {{"instructions_per_request", 2392.5}, {"syscalls_per_request", 3}}};
  c.seconds = 4.5;
  return c;
}

TEST(CostRecordTest, RoundTrips) {
  EXPECT_EQ(cost_to_json(CostRun{}), "");
  EXPECT_EQ(cost_from_json(""), CostRun{});
  EXPECT_EQ(cost_from_json(cost_to_json(counted())), counted());
  CostRun skipped;
  skipped.skipped = "valgrind is not installed";
  EXPECT_EQ(cost_from_json(cost_to_json(skipped)), skipped);
}

TEST(CostRecordTest, RefusesHostileCounts) {
  EXPECT_THROW(cost_from_json("[]"), Error);
  EXPECT_THROW(cost_from_json("{\"launches\": [{\"throughput_rps\": 1}]}"), Error);
  EXPECT_THROW(cost_from_json("{\"launches\": [{\"instructions_per_request\": -1}]}"), Error);
  EXPECT_THROW(cost_from_json("{\"launches\": [{\"instructions_per_request\": \"x\"}]}"), Error);
  EXPECT_THROW(cost_from_json("{\"launches\": 5}"), Error);
  EXPECT_THROW(cost_from_json("{\"requests\": -3}"), Error);
  EXPECT_THROW(cost_from_json("{\"key\": 7}"), Error);
  EXPECT_THROW(cost_from_json("{not json"), Error);
}

TEST(CostRecordTest, StoredAndExportedWithTheRun) {
  testing::TempDir dir;
  auto store = BaselineStore::open(dir / "s.db");
  RunRecord run = testing::synthetic_run(1, 1000, 2.0);
  run.cost = counted();
  auto id = store.record(run);
  auto back = store.run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cost, counted());
  auto line = to_json_line(*back);
  EXPECT_EQ(run_from_json_line(line).cost, counted());
}

}  // namespace
}  // namespace perfgate
