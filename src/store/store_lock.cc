#include "perfgate/store/store_lock.h"

#include <sqlite3.h>

#include "sqlite_handle.h"

namespace perfgate {

void set_store_lock_wait(std::chrono::milliseconds budget) {
  sqlite::set_lock_wait(budget);
}

void check_store_lock(BaselineStore& store) {
  sqlite::Db db{store.connection(), store.path()};
  if (sqlite3_db_readonly(db.handle, "main") == 1)
    throw Error(store.path().string() + ": store is read-only");
  sqlite::Transaction tx(db);  // rolled back: nothing written
}

}  // namespace perfgate
