#include "store/sqlite.h"

#include <fmt/format.h>

namespace gputriage::store::sqlite {

core::Error DbError(sqlite3* db, const std::string& path, std::string_view what) {
  int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
  const char* message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return core::MakeError("{}: not an SQLite database ({})", path, message);
    case SQLITE_CORRUPT:
      return core::MakeError("{}: the database is corrupt ({}); move it aside to start afresh", path, message);
    default:
      return core::MakeError("{}: {}: {} (SQLite code {})", path, what, message, code);
  }
}

core::Result<Connection> Connection::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  // sqlite3_open_v2 hands back a handle (to be closed) even when it fails.
  Connection connection(raw, path);
  if (rc != SQLITE_OK) return DbError(raw, path, "cannot open");
  sqlite3_extended_result_codes(raw, 1);
  return connection;
}

core::Result<void> Connection::Exec(const std::string& sql, std::string_view what) {
  if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return DbError(db_.get(), path_, what);
  }
  return {};
}

core::Result<Statement> Statement::Prepare(const Connection& connection, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(connection.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  Statement statement(raw, connection);
  if (rc != SQLITE_OK) {
    return DbError(connection.get(), connection.path(), fmt::format("cannot prepare '{}'", sql));
  }
  return statement;
}

void Statement::BindText(int index, std::optional<std::string_view> value) {
  if (!value) {
    BindNull(index);
    return;
  }
  sqlite3_bind_text64(stmt_.get(), index, value->data(), value->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

core::Result<bool> Statement::Step(std::string_view what) {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return DbError(db_, path_, what);
}

std::optional<std::string> Statement::ColumnText(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  const unsigned char* text = sqlite3_column_text(stmt_.get(), column);
  int size = sqlite3_column_bytes(stmt_.get(), column);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

core::Result<Transaction> Transaction::Begin(Connection* connection) {
  core::Result<void> begun = connection->Exec("BEGIN IMMEDIATE", "cannot begin a transaction");
  if (!begun.ok()) return begun.error();
  return Transaction(connection);
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(connection_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

core::Result<void> Transaction::Commit() {
  core::Result<void> done = connection_->Exec("COMMIT", "cannot commit");
  if (done.ok()) open_ = false;
  return done;
}

}  // namespace gputriage::store::sqlite
